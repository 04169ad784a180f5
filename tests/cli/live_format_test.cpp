// measurements.json (tools/src/live_format.hpp) and the pure parts of `edgc validate` (tools/src/validate.hpp):
// round trip of every field, the fixture read back, step-pattern extraction, error statistics, the modelled
// compute (one code path with the simulator's powersgd_compress_s) and the placement checks.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "../traces/trace_test_util.hpp"
#include "edgc/core/error.hpp"
#include "edgc/sim/cost_model.hpp"
#include "live_format.hpp"
#include "validate.hpp"

namespace edgc::cli {
namespace {

using traces::test::TempDir;
using traces::test::write_file;

const std::string kFixture = std::string(EDGC_SOURCE_DIR) + "/tests/data/live/measurements.json";

// Every field different from its default, so a field the writer or the reader drops shows up.
live::Measurements sample() {
  live::Measurements m;
  m.world_size = 4;
  m.pp = 2;
  m.dp = 2;
  m.comm = "nccl";
  m.backend = "cuda";
  m.element_bytes = 2;
  m.cluster_file = "machines/cluster.json";
  m.trace = "/traces/tinygpt";
  for (int g = 0; g < 4; ++g) m.placement.push_back({g, "host" + std::to_string(g / 2), g / 2, g % 2, g / 2, g % 2});
  m.calibration.ranks = 2;
  m.calibration.rows = {{1024, 1.25e-5}, {1 << 20, 3.0000000000000004e-4}};
  m.calibration.latency_s = 6.1e-6;
  m.calibration.bandwidth_Bps = 9.87654321e9;
  live::PolicyRun run;
  run.policy = "edgc";
  live::Step step;
  step.step = 3;
  step.iteration = 300;
  step.iteration_s = 0.1 + 0.2;  // not exactly representable: the round trip must keep every bit
  for (int s = 0; s < 2; ++s) {
    live::StageStep st;
    st.rank = 8 * (s + 1);
    st.sync_s = 0.01 * (s + 1);
    st.compute_s = 1e-3 / 3;
    st.wire_bytes = 123456 + s;
    st.dense_bytes = 9876543210LL;  // past 2^32
    st.collectives = {{"dense", 4096, 1e-5}, {"P", 40960, 2.5e-5}, {"Q", 40961, 2.75e-5}};
    st.matrices = {{256, 1024, st.rank, 2}, {1024, 256, st.rank, 3}};
    step.stages.push_back(st);
  }
  run.steps.push_back(step);
  m.runs.push_back(run);
  m.runs.push_back({"none", {}});
  m.tcom_points = {{0, 4, 1.5e-4, 2e-5}, {1, 8, 1.75e-4, 3e-5}};
  m.tcom_fit = {{0, 4.1e-6, -1.2e-5, 0.987, 3}, {1, 0.0, 1.75e-4, 1.0, 1}};
  return m;
}

void expect_equal(const live::Measurements& a, const live::Measurements& b) {
  EXPECT_EQ(a.world_size, b.world_size);
  EXPECT_EQ(a.pp, b.pp);
  EXPECT_EQ(a.dp, b.dp);
  EXPECT_EQ(a.comm, b.comm);
  EXPECT_EQ(a.backend, b.backend);
  EXPECT_EQ(a.element_bytes, b.element_bytes);
  EXPECT_EQ(a.cluster_file, b.cluster_file);
  EXPECT_EQ(a.trace, b.trace);
  ASSERT_EQ(a.placement.size(), b.placement.size());
  for (std::size_t i = 0; i < a.placement.size(); ++i) {
    const auto &x = a.placement[i], &y = b.placement[i];
    EXPECT_EQ(std::tie(x.rank, x.host, x.node, x.local, x.stage, x.replica),
              std::tie(y.rank, y.host, y.node, y.local, y.stage, y.replica));
  }
  EXPECT_EQ(a.calibration.ranks, b.calibration.ranks);
  ASSERT_EQ(a.calibration.rows.size(), b.calibration.rows.size());
  for (std::size_t i = 0; i < a.calibration.rows.size(); ++i) {
    EXPECT_EQ(a.calibration.rows[i].bytes, b.calibration.rows[i].bytes);
    EXPECT_EQ(a.calibration.rows[i].time_s, b.calibration.rows[i].time_s);
  }
  EXPECT_EQ(a.calibration.latency_s, b.calibration.latency_s);
  EXPECT_EQ(a.calibration.bandwidth_Bps, b.calibration.bandwidth_Bps);
  ASSERT_EQ(a.runs.size(), b.runs.size());
  for (std::size_t r = 0; r < a.runs.size(); ++r) {
    EXPECT_EQ(a.runs[r].policy, b.runs[r].policy);
    ASSERT_EQ(a.runs[r].steps.size(), b.runs[r].steps.size());
    for (std::size_t k = 0; k < a.runs[r].steps.size(); ++k) {
      const auto &x = a.runs[r].steps[k], &y = b.runs[r].steps[k];
      EXPECT_EQ(std::tie(x.step, x.iteration, x.iteration_s), std::tie(y.step, y.iteration, y.iteration_s));
      ASSERT_EQ(x.stages.size(), y.stages.size());
      for (std::size_t s = 0; s < x.stages.size(); ++s) {
        const auto &p = x.stages[s], &q = y.stages[s];
        EXPECT_EQ(std::tie(p.rank, p.sync_s, p.compute_s, p.wire_bytes, p.dense_bytes),
                  std::tie(q.rank, q.sync_s, q.compute_s, q.wire_bytes, q.dense_bytes));
        ASSERT_EQ(p.collectives.size(), q.collectives.size());
        for (std::size_t i = 0; i < p.collectives.size(); ++i)
          EXPECT_EQ(std::tie(p.collectives[i].kind, p.collectives[i].bytes, p.collectives[i].time_s),
                    std::tie(q.collectives[i].kind, q.collectives[i].bytes, q.collectives[i].time_s));
        ASSERT_EQ(p.matrices.size(), q.matrices.size());
        for (std::size_t i = 0; i < p.matrices.size(); ++i)
          EXPECT_EQ(std::tie(p.matrices[i].rows, p.matrices[i].cols, p.matrices[i].rank, p.matrices[i].count),
                    std::tie(q.matrices[i].rows, q.matrices[i].cols, q.matrices[i].rank, q.matrices[i].count));
      }
    }
  }
  ASSERT_EQ(a.tcom_points.size(), b.tcom_points.size());
  for (std::size_t i = 0; i < a.tcom_points.size(); ++i) {
    const auto &x = a.tcom_points[i], &y = b.tcom_points[i];
    EXPECT_EQ(std::tie(x.stage, x.rank, x.comm_s, x.compute_s), std::tie(y.stage, y.rank, y.comm_s, y.compute_s));
  }
  ASSERT_EQ(a.tcom_fit.size(), b.tcom_fit.size());
  for (std::size_t i = 0; i < a.tcom_fit.size(); ++i) {
    const auto &x = a.tcom_fit[i], &y = b.tcom_fit[i];
    EXPECT_EQ(std::tie(x.stage, x.eta_s, x.c_s, x.r2, x.points), std::tie(y.stage, y.eta_s, y.c_s, y.r2, y.points));
  }
}

TEST(LiveFormat, RoundTripKeepsEveryField) {
  const TempDir tmp;
  const live::Measurements m = sample();
  const auto j = live::to_json(m);
  EXPECT_EQ(j.at("schema"), live::kMeasurementsSchema);
  EXPECT_EQ(j.begin().key(), "schema");
  write_file(tmp / "measurements.json", j.dump(1));
  const live::Measurements back = live::read_measurements((tmp / "measurements.json").string());
  expect_equal(m, back);
  EXPECT_EQ(live::to_json(back), j);
}

TEST(LiveFormat, ReadsTheValidateFixture) {
  const live::Measurements m = live::read_measurements(kFixture);
  EXPECT_EQ(m.world_size, 4);
  ASSERT_EQ(m.runs.size(), 2U);
  EXPECT_EQ(m.runs[1].policy, "edgc");
  ASSERT_EQ(m.runs[1].steps.size(), 3U);
  EXPECT_EQ(m.runs[1].steps[0].stages[0].collectives[1].kind, "P");
}

TEST(LiveFormat, ErrorsNameFileAndField) {
  const TempDir tmp;
  auto j = live::to_json(sample());
  j["runs"][0]["steps"][0]["stages"][1]["collectives"][2]["time_s"] = -1.0;
  write_file(tmp / "m.json", j.dump());
  try {
    live::read_measurements((tmp / "m.json").string());
    FAIL() << "accepted a negative time";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.where(), (tmp / "m.json").string());
    EXPECT_EQ(e.field(), "runs[0].steps[0].stages[1].collectives[2].time_s");
  }
  EXPECT_THROW(live::read_measurements((tmp / "absent.json").string()), ConfigError);
}

TEST(ValidatePatterns, SameCollectivesAndMatricesShareOnePattern) {
  const live::Measurements m = live::read_measurements(kFixture);
  const validate::Patterns p = validate::extract_patterns(m);
  ASSERT_EQ(p.distinct.size(), 3U);  // none; edgc at ranks (4, 8); edgc at (8, 8)
  ASSERT_EQ(p.of_step.size(), 2U);
  EXPECT_EQ(p.of_step[0], (std::vector<std::size_t>{0, 0}));
  EXPECT_EQ(p.of_step[1], (std::vector<std::size_t>{1, 1, 2}));
  ASSERT_EQ(p.distinct[1].stages.size(), 2U);
  EXPECT_EQ(p.distinct[1].stages[0].collectives.size(), 3U);
  EXPECT_EQ(p.distinct[1].stages[0].matrices[0], (validate::MatrixBatch{256, 1024, 4, 2}));
  EXPECT_EQ(validate::stage_groups(m), (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
}

TEST(ValidateStats, MapeSkipsZeroMeasurementsButCountsThem) {
  validate::ErrorStats s;
  EXPECT_TRUE(std::isnan(s.mape_pct()));
  EXPECT_TRUE(std::isnan(s.mean_measured()));
  s.add(2.0, 3.0);  // 50 %
  s.add(4.0, 3.0);  // 25 %
  s.add(0.0, 1.0);  // no percentage
  EXPECT_EQ(s.count, 3);
  EXPECT_EQ(s.ape_count, 2);
  EXPECT_DOUBLE_EQ(s.mape_pct(), 37.5);
  EXPECT_DOUBLE_EQ(s.max_ape_pct, 50.0);
  EXPECT_DOUBLE_EQ(s.mean_measured(), 2.0);
  EXPECT_DOUBLE_EQ(s.mean_predicted(), 7.0 / 3.0);
}

// The modelled compute of a stage is the simulator's PowerSGD cost: powersgd_compress_s is the sum of
// powersgd_batch_s over the stage's compressed matrices, bit for bit.
TEST(ValidateCompute, OneCodePathWithTheSimulator) {
  sim::ModelSpec model;
  model.layers = 4;
  model.hidden = 256;
  model.heads = 4;
  model.seq_len = 128;
  model.vocab = 1024;
  model.micro_batch_size = 2;
  model.global_batch_size = 16;
  sim::ParallelSpec par;
  par.pp = 2;
  par.dp = 2;
  const sim::GpuSpec gpu{"g", 100.0, 1000.0};
  sim::CostParams params;
  params.orth_column_latency_s = 3e-5;
  for (int stage = 0; stage < 2; ++stage)
    for (int rank : {1, 4, 32}) {
      validate::StagePattern sp;
      for (const sim::WeightMatrix& w : sim::stage_matrices(model, par, stage))
        if (sim::powersgd_compresses(w.rows, w.cols, rank)) sp.matrices.push_back({w.rows, w.cols, rank, w.count});
      EXPECT_EQ(validate::modelled_compute_s(sp, 2, gpu, params),
                sim::powersgd_compress_s(model, par, gpu, params, stage, rank))
          << "stage " << stage << " rank " << rank;
    }
  // Memory-bound closed form: 8 passes of m·n fp32 elements over HBM, plus the orthogonalisation's FLOPs.
  validate::StagePattern one;
  one.matrices.push_back({1000, 2000, 2, 3});
  sim::CostParams unit;
  unit.compute_efficiency = 1.0;
  unit.hbm_efficiency = 1.0;
  const double expected = 3 * (8.0 * 1000 * 2000 * 4 / 1e12 + 2.0 * 1000 * 4 / 1e14);
  EXPECT_NEAR(validate::modelled_compute_s(one, 4, gpu, unit), expected, 1e-15);
}

TEST(ValidatePlacement, RankGoesToNodeTimesGpusPerNodePlusLocal) {
  live::Measurements m = sample();  // ranks on node g / 2, local g % 2
  sim::ClusterSpec c;
  c.gpus_per_node = 4;
  c.nodes = 2;
  EXPECT_EQ(validate::platform_gpus(m, c, "c.json"), (std::vector<int>{0, 1, 4, 5}));
  c.nodes = 1;
  try {
    validate::platform_gpus(m, c, "c.json");
    FAIL() << "a node index past the cluster was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.where(), "c.json");
    EXPECT_EQ(e.field(), "cluster.nodes");
  }
  c.nodes = 4;
  c.gpus_per_node = 1;
  try {
    validate::platform_gpus(m, c, "c.json");
    FAIL() << "a local index past the node was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "cluster.gpus_per_node");
  }
}

}  // namespace
}  // namespace edgc::cli
