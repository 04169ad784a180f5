// The reports written only (validate.json, replay.json): figures that do not exist are null in JSON and "-" on the
// console, rows keep their optional keys only where they apply, and the console ends in the verdict. The reports of
// real runs against their golden files: tests/tools/engine/validation_test.cpp and replay_test.cpp.
#include <gtest/gtest.h>

#include <limits>
#include <sstream>
#include <string>

#include "edgc/results/replay_report.hpp"
#include "edgc/results/validate_report.hpp"

namespace edgc::results {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

ValidateReport tiny_validate_report() {
  ValidateReport r;
  r.measurements = "run/measurements.json";
  r.measured_runs = {r.measurements, "again/measurements.json"};
  r.world_size = 2;
  r.pp = 1;
  r.dp = 2;
  r.comm = "mpi";
  r.backend = "cpu";
  r.cluster_name = "box";
  r.network = "ideal";
  ValidateRow sync;
  sync.category = "sync";
  sync.policy = "edgc";
  sync.stage = 0;
  sync.count = 4;
  sync.median_measured_s = 2e-3;
  sync.mean_predicted_s = 1e-3;
  sync.error_pct = 50.0;
  sync.has_parts = true;
  sync.mean_difference_collectives_s = -1e-3;
  sync.dominant = "collectives";
  r.rows = {sync};
  ValidateRow calibration;  // no step had a percentage error: every figure but the count is missing
  calibration.category = "calibration";
  calibration.count = 1;
  r.overall = {calibration};
  r.calibration.ranks = 2;
  r.calibration.rows = {{1024, 1e-4, kNaN, 2e-4, 100.0}};
  r.verdict = "nothing to compare";
  return r;
}

TEST(ValidateReport, WritesMissingFiguresAsNullAndOptionalKeysWhereTheyApply) {
  const nlohmann::ordered_json j = to_json(tiny_validate_report());
  EXPECT_EQ(j.at("schema"), kValidateSchema);
  EXPECT_TRUE(j.at("calibration_drift").is_null());
  const auto& sync = j.at("rows").at(0);
  EXPECT_EQ(sync.at("stage"), 0);
  EXPECT_FALSE(sync.contains("kind"));
  EXPECT_EQ(sync.at("mean_difference_s").at("collectives"), -1e-3);
  EXPECT_EQ(sync.at("dominant"), "collectives");
  EXPECT_TRUE(sync.at("mape_pct").is_null());
  const auto& calibration = j.at("overall").at(0);
  EXPECT_FALSE(calibration.contains("policy"));
  EXPECT_FALSE(calibration.contains("stage"));
  EXPECT_FALSE(calibration.contains("mean_difference_s"));
  EXPECT_TRUE(j.at("calibration").at("rows").at(0).at("fit_s").is_null());
  EXPECT_EQ(j.at("calibration").at("step_rows").size(), 0U);
  EXPECT_EQ(j.at("verdict"), "nothing to compare");
}

TEST(ValidateReport, PrintsTheProvenanceTheTablesAndTheVerdict) {
  std::ostringstream os;
  print_validate_report(os, tiny_validate_report());
  const std::string text = os.str();
  EXPECT_EQ(
      text.rfind("validate    run/measurements.json and 1 more run(s), pooled: 2 ranks (pp 1 x dp 2, mpi/cpu)", 0), 0U)
      << text;
  EXPECT_NE(text.find("collectives -1 ms"), std::string::npos) << text;  // the dominant part, mean per step
  EXPECT_NE(text.find("calibration: dense all-reduce over 2 ranks"), std::string::npos);
  EXPECT_EQ(text.find("T_com probes"), std::string::npos);  // none measured
  EXPECT_EQ(text.substr(text.size() - 29), "\nverdict: nothing to compare\n");
}

TEST(ReplayReport, SummarisesStagesAndBoundariesAsReplayJson) {
  ReplayReport r;
  r.trace = "t";
  r.controller.policy = "edgc-pp";
  r.stages.resize(2);
  r.stages[0].cqm_matrix = {8, 4};
  r.stages[1].error_sum = 0.5;
  r.stages[1].error_n = 2;
  r.stages[1].rank_min = 4;
  r.stages[1].rank_max = 8;
  r.stages[1].boundary = ReplayBoundarySummary{"b1", {16, 8}, 2, {0.2, 0.4, 0.6, 0.8}};
  r.windows.resize(4);
  r.agreeing = 3;
  const nlohmann::ordered_json j = to_json(r);
  EXPECT_EQ(j.at("schema"), kReplaySchema);
  EXPECT_EQ(j.at("policy"), "edgc-pp");
  EXPECT_TRUE(j.at("stages").at(0).at("rank_min").is_null());  // never compressed
  EXPECT_FALSE(j.at("stages").at(0).contains("boundary"));
  EXPECT_EQ(j.at("stages").at(1).at("mean_relative_error"), 0.25);
  EXPECT_EQ(j.at("stages").at(1).at("boundary").at("mean_accumulated_error"), 0.3);
  EXPECT_EQ(j.at("summary").at("windows"), 4);
  EXPECT_EQ(j.at("summary").at("agreement_with_full_sampling"), 0.75);
  EXPECT_FALSE(ReplayBoundarySummary{}.mean(0).has_value());
}

}  // namespace
}  // namespace edgc::results
