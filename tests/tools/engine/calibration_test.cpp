// engine::run_calibration called directly (the `calibrate` command without its option parsing): the fit of the two
// H100 logs reproduces them, a class without a log keeps the line rate, the writers lay the report out, and bad
// requests are refused before anything is simulated. The simulations run in forked children (core::run_isolated),
// so the test process may call it directly.
#include "edgc/engine/calibration.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "edgc/results/calibration_report.hpp"
#include "refusal.hpp"
#include "trace_test_util.hpp"

namespace edgc::engine {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::refusal;

const std::string kSource = EDGC_SOURCE_DIR;
const std::string kIntraLog = kSource + "/tests/data/nccl/h100-1node-8gpu.log";
const std::string kInterLog = kSource + "/tests/data/nccl/h100-2node-16gpu.log";

CalibrateRequest h100(const fs::path& dir) {
  CalibrateRequest request;
  request.cluster = kSource + "/scenarios/clusters/dgx-h100.json";
  request.out = (dir / "calibration.json").string();
  return request;
}

TEST(RunCalibration, FitsBothLogsSoThatTheirRoundTripReproducesThem) {
  traces::test::TempDir tmp;
  CalibrateRequest request = h100(tmp.path());
  request.logs = {kInterLog, kIntraLog};  // the curves follow the logs' order
  const results::CalibrationReport report = run_calibration(request);
  EXPECT_EQ(report.cluster, "dgx-h100");
  EXPECT_EQ(report.algorithm, "auto");
  EXPECT_EQ(report.logs, 2);
  EXPECT_EQ(report.skipped_lines, 0);
  ASSERT_EQ(report.curves.size(), 2U);
  const results::CalibrationCurve& inter = report.curves[0];
  const results::CalibrationCurve& intra = report.curves[1];
  EXPECT_EQ(inter.kind, "inter");
  EXPECT_EQ(intra.kind, "intra");
  EXPECT_EQ(inter.ranks, 16);
  EXPECT_EQ(intra.ranks, 8);
  EXPECT_EQ(inter.source, kInterLog);
  EXPECT_FALSE(inter.round_trip.empty());
  for (const results::CalibrationTripRow& row : inter.round_trip) {
    EXPECT_NEAR(row.error, 0.0, 0.01) << row.bytes;
    EXPECT_NEAR(row.simulated_us / row.measured_us - 1.0, row.error, 1e-12);
    EXPECT_EQ(row.algorithm, "tree");
  }
  // Inside a node the log's busbw exceeds what a ring over NVLink carries above ~256 MiB (in-switch reduction).
  for (const results::CalibrationTripRow& row : intra.round_trip)
    EXPECT_NEAR(row.error, 0.0, row.bytes < 2.6e8 ? 0.01 : 0.08) << row.bytes;
  for (const results::CalibrationCurve* c : {&inter, &intra}) {
    EXPECT_TRUE(c->from_log);
    EXPECT_GT(c->latency_factor, 0.0);
    for (std::size_t i = 0; i < c->points.size(); ++i) {
      EXPECT_GT(c->points[i].second, 0.0);
      EXPECT_LE(c->points[i].second, 1.0);
      if (i > 0) {
        EXPECT_LT(c->points[i - 1].first, c->points[i].first);  // keyed by transfer bytes, sorted
      }
    }
  }

  const json j = json::parse(results::to_json(report).dump());
  EXPECT_EQ(j.at("schema"), "edgc.calibration/1");
  EXPECT_EQ(j.at("inter").at("round_trip").size(), inter.round_trip.size());
  EXPECT_EQ(j.at("intra").at("latency_factor").get<double>(), intra.latency_factor);
  EXPECT_FALSE(fs::exists(request.out));  // writing is the caller's
}

TEST(RunCalibration, KeepsTheLineRateForAClassWithoutALog) {
  traces::test::TempDir tmp;
  CalibrateRequest request = h100(tmp.path());
  request.logs = {kIntraLog};
  request.algorithm = "ring";
  const results::CalibrationReport report = run_calibration(request);
  ASSERT_EQ(report.curves.size(), 2U);
  EXPECT_EQ(report.curves[0].kind, "intra");
  EXPECT_EQ(report.curves[1].kind, "inter");
  EXPECT_FALSE(report.curves[1].from_log);
  for (const results::CalibrationTripRow& row : report.curves[0].round_trip) EXPECT_EQ(row.algorithm, "ring");

  const std::string text = results::to_json(report).dump();
  EXPECT_NE(text.find(R"("inter":{"points":[[1,1.0]],"latency_factor":1.0,"note":"no log given: line rate"})"),
            std::string::npos)
      << text;
  std::ostringstream console;
  results::print_calibration_report(console, report);
  EXPECT_EQ(console.str().rfind("# " + kIntraLog + ": 8 ranks, intra-node curve; simulated with the fitted", 0), 0U)
      << console.str();
  std::ostringstream written;
  results::print_calibration_written(written, report, "cal.json");
  EXPECT_EQ(written.str(), "wrote cal.json (1 log)\n");
}

TEST(RunCalibration, RefusesBadRequestsBeforeSimulating) {
  traces::test::TempDir tmp;
  CalibrateRequest algorithm = h100(tmp.path());
  algorithm.logs = {kIntraLog};
  algorithm.algorithm = "nvls";
  EXPECT_EQ(refusal([&] { run_calibration(algorithm); }).field, "--algorithm");

  CalibrateRequest wide = h100(tmp.path());
  wide.logs = {kIntraLog};
  wide.ranks_per_node = 16;  // the cluster's nodes hold 8
  EXPECT_EQ(refusal([&] { run_calibration(wide); }).field, "--ranks-per-node");

  CalibrateRequest one = h100(tmp.path());
  one.logs = {kIntraLog};
  one.ranks = 1;
  EXPECT_EQ(refusal([&] { run_calibration(one); }).field, "--ranks");

  CalibrateRequest twice = h100(tmp.path());
  twice.logs = {kIntraLog, kIntraLog};
  const test::Refusal r = refusal([&] { run_calibration(twice); });
  EXPECT_EQ(r.field, "--nccl-tests");
  EXPECT_NE(r.message.find("two logs for the intra-node curve"), std::string::npos) << r.message;

  CalibrateRequest nowhere = h100(tmp.path());
  nowhere.logs = {kIntraLog};
  nowhere.out = (tmp.path() / "no-such-dir" / "calibration.json").string();
  const test::Refusal out = refusal([&] { run_calibration(nowhere); });
  EXPECT_NE(out.message.find("no-such-dir"), std::string::npos) << out.message;  // names the path and --out
  EXPECT_NE(out.message.find("--out"), std::string::npos) << out.message;
}

}  // namespace
}  // namespace edgc::engine
