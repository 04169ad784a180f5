// engine::run_validation called directly (the `validate` command without its option parsing): the report of the
// live fixture is validate.json's golden, its console tables end in the verdict, and bad requests are refused
// before anything is simulated. The simulation runs in a forked child (SimGrid runs one simulation per process), so
// this binary may hold many tests.
#include "edgc/engine/validation.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "edgc/core/error.hpp"
#include "edgc/core/isolated.hpp"
#include "edgc/results/validate_report.hpp"
#include "golden.hpp"

namespace edgc::engine {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kSource = EDGC_SOURCE_DIR;
const std::string kLive = kSource + "/tests/data/live";

// The outcome of run_validation(request), computed in a child: {"report", "console", "out_path"}.
json validate_in_child(const ValidateRequest& request) {
  const std::vector<std::string> out =
      core::run_isolated({[&] {
                           const ValidateOutcome outcome = run_validation(request);
                           std::ostringstream console;
                           results::print_validate_report(console, outcome.report);
                           return json{{"report", json::parse(results::to_json(outcome.report).dump())},
                                       {"console", console.str()},
                                       {"out_path", outcome.out_path}}
                               .dump();
                         }},
                         1);
  return json::parse(out.front());
}

// Paths of this checkout become "<source>", as in the golden file.
json relocated(const json& j) {
  std::string text = j.dump();
  for (std::size_t at = text.find(kSource); at != std::string::npos; at = text.find(kSource, at))
    text.replace(at, kSource.size(), "<source>");
  return json::parse(text);
}

// The message of the InputError `f` throws ("" when it throws none), and the option or key it names.
template <class F>
std::pair<std::string, std::string> refusal(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return {e.what(), e.field()};
  }
  return {"", ""};
}

TEST(RunValidation, ReportsTheLiveFixtureAsTheGoldenFile) {
  ValidateRequest request;
  request.measured = {kLive};
  const json got = validate_in_child(request);
  EXPECT_EQ(got.at("out_path"), (fs::path(kLive) / "validate.json").string());  // the default: beside the run
  json report = got.at("report");
  EXPECT_EQ(report.at("measurements"), kLive + "/measurements.json");
  for (const char* k : {"measurements", "cluster_file", "simgrid"}) report.erase(k);
  test::expect_close(relocated(report),
                     json::parse(traces::test::read_file(fs::path(kSource) / "tests/data/golden/validate.json")),
                     "validate.json");
  const std::string console = got.at("console");
  EXPECT_EQ(console.rfind("validate    " + kLive + "/measurements.json: 4 ranks (pp 2 x dp 2", 0), 0U) << console;
  EXPECT_NE(console.find("\nverdict: " + report.at("verdict").get<std::string>() + "\n"), std::string::npos);
}

TEST(RunValidation, PoolsRepeatedRunsAndNamesThePricingRuns) {
  ValidateRequest request;
  request.measured = {kLive, kLive};
  request.calibration = {kLive, kLive};
  const json report = validate_in_child(request).at("report");
  EXPECT_EQ(report.at("measured_runs").size(), 2U);
  EXPECT_EQ(report.at("steps"), 10);  // the fixture's 5 steps, twice
  EXPECT_EQ(report.at("calibrated_on"), "the live runs " + kLive + ", " + kLive + " (pooled by medians)");
  EXPECT_EQ(report.at("network"), "calibrated");  // the pooled ring fit
  EXPECT_EQ(report.at("calibration_drift"), 1.0);
}

TEST(RunValidation, RefusesBadRequestsBeforeSimulating) {
  ValidateRequest both;
  both.measured = {kLive};
  both.calibration = {kLive};
  both.scenario = kSource + "/scenarios/clusters/dgx-h100.json";
  EXPECT_EQ(refusal([&] { run_validation(both); }).second, "--calibration");

  ValidateRequest missing;
  missing.measured = {kSource + "/tests/data/no-such-run"};
  const auto [message, option] = refusal([&] { run_validation(missing); });
  EXPECT_EQ(option, "--measured");
  EXPECT_NE(message.find("no-such-run' is not a directory"), std::string::npos) << message;

  ValidateRequest nowhere;
  nowhere.measured = {kLive};
  nowhere.out = kSource + "/tests/data/no-such-dir/validate.json";
  EXPECT_EQ(refusal([&] { run_validation(nowhere); }).second, "--out");

  ValidateRequest model;  // a whole scenario: its model and layout are not validate's to read
  model.measured = {kLive};
  model.scenario = kSource + "/tests/data/simulate/small.json";
  const std::string what = refusal([&] { run_validation(model); }).first;
  EXPECT_NE(what.find("not read by 'edgc validate'"), std::string::npos) << what;
}

}  // namespace
}  // namespace edgc::engine
