// The pure parts of `edgc validate` (edgc/engine/validate.hpp, live_calibration.hpp) on measurements.json
// (edgc/results/measurements.hpp): step-pattern extraction, error statistics, speed shift and drift, the modelled
// compute (one code path with the simulator's powersgd_compress_s), the placement checks and pooled runs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "edgc/core/error.hpp"
#include "edgc/engine/live_calibration.hpp"
#include "edgc/engine/validate.hpp"
#include "edgc/results/measurements.hpp"
#include "edgc/sim/cost_model.hpp"
#include "measurements_sample.hpp"

namespace edgc::engine {
namespace {

using results::test::sample;

const std::string kFixture = std::string(EDGC_SOURCE_DIR) + "/tests/data/live/measurements.json";

TEST(ValidatePatterns, SameCollectivesAndMatricesShareOnePattern) {
  const results::Measurements m = results::read_measurements(kFixture);
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

// The error of the typical step: per group (pairs sharing a prediction) the median measured against the prediction,
// weighted by the group's pairs; quantiles interpolate between order statistics.
TEST(ValidateStats, ErrorOfTheMedianStepPerGroupAndQuantiles) {
  validate::ErrorStats s;
  EXPECT_TRUE(std::isnan(s.error_pct()));
  EXPECT_TRUE(std::isnan(s.quantile_measured(0.5)));
  for (const double x : {1.0, 1.0, 1.0, 9.0}) s.add(x, 1.0, 7);  // one outlier: median 1, prediction exact
  s.add(2.0, 3.0, 8);                                            // 50 %
  EXPECT_DOUBLE_EQ(s.error_pct(), (4 * 0.0 + 1 * 50.0) / 5);
  EXPECT_DOUBLE_EQ(s.mape_pct(), (3 * 0.0 + 800.0 / 9 + 50.0) / 5);  // per step, the outlier counts (|1 − 9| / 9)
  EXPECT_DOUBLE_EQ(s.quantile_measured(0.5), 1.0);
  EXPECT_DOUBLE_EQ(s.quantile_measured(0.0), 1.0);
  EXPECT_DOUBLE_EQ(s.quantile_measured(1.0), 9.0);
  EXPECT_DOUBLE_EQ(s.quantile_measured(0.9), 2.0 + 0.6 * 7.0);  // at 3.6 of 0..4: between 2 and 9
  validate::ErrorStats even;
  even.add(1.0, 2.5, 1);
  even.add(3.0, 2.5, 1);  // median 2 (between order statistics): 25 %
  EXPECT_DOUBLE_EQ(even.error_pct(), 25.0);
  validate::ErrorStats own;  // no group given: each pair its own
  own.add(2.0, 3.0);
  own.add(4.0, 3.0);
  EXPECT_DOUBLE_EQ(own.error_pct(), own.mape_pct());
}

// A run whose steps of one pattern slow from 1 to 2 ms (first vs last third) moved 2x; a run of fewer than 30 steps
// is not judged. Drift compares like rows at the sizes both runs timed.
TEST(ValidateMachine, SpeedShiftAndDriftFromTheMeasurementsAlone) {
  results::Measurements m;
  m.runs.push_back({"none", {}});
  for (int k = 0; k < 30; ++k)
    m.runs[0].steps.push_back(results::Step{k, k, k < 10 ? 1e-3 : k < 20 ? 1.5e-3 : 2e-3, {}});
  m.runs.push_back({"edgc", {}});
  for (int k = 0; k < 29; ++k) m.runs[1].steps.push_back(results::Step{k, k, k < 10 ? 1e-3 : 9e-3, {}});
  const validate::SpeedShift s = validate::speed_shift(m, validate::extract_patterns(m));
  EXPECT_DOUBLE_EQ(s.ratio, 2.0);
  EXPECT_EQ(s.policy, "none");
  EXPECT_DOUBLE_EQ(s.early_s, 1e-3);
  EXPECT_DOUBLE_EQ(s.late_s, 2e-3);

  results::Measurements other = m;
  m.calibration.rows = {{64, 2.0}, {128, 3.0}};
  m.calibration.step_rows = {{64, 8.0}};
  other.calibration.rows = {{64, 1.0}, {256, 1.0}};
  other.calibration.step_rows = {{64, 2.0}};
  EXPECT_DOUBLE_EQ(validate::calibration_drift(m, other), 3.0);  // ratios 2 and 4
  other.calibration = {};
  EXPECT_TRUE(std::isnan(validate::calibration_drift(m, other)));
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
      EXPECT_EQ(validate::modelled_compute(sp, 2, gpu, params).batch_s,
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
  EXPECT_NEAR(validate::modelled_compute(one, 4, gpu, unit).batch_s, expected, 1e-15);
  EXPECT_EQ(validate::modelled_compute(one, 4, gpu, unit).copy_s, 0.0);  // no dense all-reduce, no copies

  // The dense buffer: two copies (read + write each) at HBM speed, or the measured copy profile.
  validate::StagePattern dense;
  dense.collectives.push_back({"dense", 1000000});
  EXPECT_NEAR(validate::modelled_compute(dense, 4, gpu, unit).copy_s, 4.0 * 1e6 / 1e12, 1e-18);
  unit.copy_profile = {{500000, 1e-4}, {2000000, 4e-4}};
  EXPECT_NEAR(validate::modelled_compute(dense, 4, gpu, unit).copy_s, 2e-4, 1e-15);
  EXPECT_NEAR(validate::modelled_compute(dense, 4, gpu, unit).total_s(), 2e-4, 1e-15);
}

TEST(ValidatePlacement, RankGoesToNodeTimesGpusPerNodePlusLocal) {
  results::Measurements m = sample();  // ranks on node g / 2, local g % 2
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
}  // namespace edgc::engine

namespace edgc::engine {
namespace {

// Repeated runs pooled: calibration rows by the median per size over the runs that timed it, kernel batches and
// copies the same, steps of each policy one run after another; a run of another configuration is refused naming
// its file and field.
TEST(PoolRuns, MediansPerSizeAndStepsOneRunAfterAnother) {
  results::Calibration a, b, c;
  a.ranks = b.ranks = c.ranks = 2;
  a.rows = {{64, 1.0}, {4096, 4.0}};
  b.rows = {{64, 3.0}, {4096, 5.0}, {65536, 9.0}};
  c.rows = {{64, 2.0}, {4096, 9.0}};
  a.step_rows = {{1024, 1.0}};
  const results::Calibration p = pool_calibrations({a, b, c}, {"a", "b", "c"});
  ASSERT_EQ(p.rows.size(), 3U);
  EXPECT_DOUBLE_EQ(p.rows[0].time_s, 2.0);
  EXPECT_DOUBLE_EQ(p.rows[1].time_s, 5.0);
  EXPECT_DOUBLE_EQ(p.rows[2].time_s, 9.0);  // timed by one run only
  ASSERT_EQ(p.step_rows.size(), 1U);
  c.ranks = 4;
  try {
    pool_calibrations({a, c}, {"a", "c"});
    FAIL() << "pooled calibrations of different group sizes";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.where(), "c");
    EXPECT_EQ(e.field(), "calibration.ranks");
  }

  const scenario::KernelProfile k1{{{64, 64, 4, 1.0, 4}, {64, 64, 8, 2.0, 4}}, {{1000, 1.0}}};
  const scenario::KernelProfile k2{{{64, 64, 4, 3.0, 4}}, {{1000, 2.0}, {2000, 5.0}}};
  const scenario::KernelProfile kp = pool_kernel_profiles({k1, k2});
  ASSERT_EQ(kp.entries.size(), 2U);
  EXPECT_DOUBLE_EQ(kp.entries[0].step_s, 2.0);  // median of 1 and 3
  EXPECT_EQ(kp.entries[0].count, 4);
  EXPECT_DOUBLE_EQ(kp.entries[1].step_s, 2.0);
  ASSERT_EQ(kp.copies.size(), 2U);
  EXPECT_DOUBLE_EQ(kp.copies[0].seconds, 1.5);

  results::Measurements m1;
  m1.world_size = 2;
  m1.dp = 2;
  m1.placement = {{0, "h", 0, 0, 0, 0, 2}, {1, "h", 0, 1, 0, 1, 2}};
  m1.calibration = a;
  m1.runs = {{"none", {results::Step{0, 0, 1.0, {}}, results::Step{1, 2, 1.0, {}}}}};
  results::Measurements m2 = m1;
  m2.calibration = b;
  m2.runs[0].steps.pop_back();
  const results::Measurements pooled = pool_measurements({m1, m2}, {"m1", "m2"});
  ASSERT_EQ(pooled.runs[0].steps.size(), 3U);
  EXPECT_EQ(pooled.runs[0].steps[2].step, 2);                // renumbered after the first run's
  EXPECT_DOUBLE_EQ(pooled.calibration.rows[0].time_s, 2.0);  // (1 + 3) / 2
  m2.runs[0].policy = "edgc";
  try {
    pool_measurements({m1, m2}, {"m1", "m2"});
    FAIL() << "pooled runs of different policies";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.where(), "m2");
    EXPECT_EQ(e.field(), "runs[0].policy");
  }
}

}  // namespace
}  // namespace edgc::engine
