// measurements.json (tools/src/live_format.hpp) and the pure parts of `edgc validate` (tools/src/validate.hpp):
// round trip of every field, the fixture read back, step-pattern extraction, error statistics, the modelled
// compute (one code path with the simulator's powersgd_compress_s) and the placement checks.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "edgc/core/error.hpp"
#include "edgc/results/measurements.hpp"
#include "expect_error.hpp"
#include "measurements_sample.hpp"
#include "trace_test_util.hpp"

namespace edgc::results {
namespace {

using test::sample;
using traces::test::TempDir;
using traces::test::write_file;

const std::string kFixture = std::string(EDGC_SOURCE_DIR) + "/tests/data/live/measurements.json";

void expect_equal(const results::Measurements& a, const results::Measurements& b) {
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
  const results::Measurements m = sample();
  const auto j = results::to_json(m);
  EXPECT_EQ(j.at("schema"), results::kMeasurementsSchema);
  EXPECT_EQ(j.begin().key(), "schema");
  write_file(tmp / "measurements.json", j.dump(1));
  const results::Measurements back = results::read_measurements((tmp / "measurements.json").string());
  expect_equal(m, back);
  EXPECT_EQ(results::to_json(back), j);
}

TEST(LiveFormat, ReadsTheValidateFixture) {
  const results::Measurements m = results::read_measurements(kFixture);
  EXPECT_EQ(m.world_size, 4);
  ASSERT_EQ(m.runs.size(), 2U);
  EXPECT_EQ(m.runs[1].policy, "edgc");
  ASSERT_EQ(m.runs[1].steps.size(), 3U);
  EXPECT_EQ(m.runs[1].steps[0].stages[0].collectives[1].kind, "P");
}

TEST(LiveFormat, ErrorsNameFileAndField) {
  const TempDir tmp;
  auto j = results::to_json(sample());
  j["runs"][0]["steps"][0]["stages"][1]["collectives"][2]["time_s"] = -1.0;
  write_file(tmp / "m.json", j.dump());
  edgc::test::expect_config_error([&] { results::read_measurements((tmp / "m.json").string()); },
                                  (tmp / "m.json").string(), "runs[0].steps[0].stages[1].collectives[2].time_s");
  EXPECT_THROW(results::read_measurements((tmp / "absent.json").string()), ConfigError);
}

}  // namespace
}  // namespace edgc::results
