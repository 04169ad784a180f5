// engine::run_replay called directly (the `replay` command without its option parsing): the bundled trace's report
// is replay.json's golden, windows.csv has a line per window and stage, the console summary names the settings, and
// bad requests are refused before any iteration is read.
#include "edgc/engine/replay.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "edgc/core/error.hpp"
#include "edgc/kernels/backend.hpp"
#include "edgc/results/replay_report.hpp"
#include "golden.hpp"

namespace edgc::engine {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kSource = EDGC_SOURCE_DIR;

ReplayRequest bundled() {
  ReplayRequest request;
  request.trace = kSource + "/traces/bundled/tinygpt-licenses";
  request.scenario = kSource + "/scenarios/replay/tinygpt-licenses.json";
  return request;
}

// The option or key the InputError `f` throws names, with its message ("" when it throws none).
template <class F>
std::pair<std::string, std::string> refusal(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return {e.field(), e.what()};
  }
  return {"", ""};
}

TEST(RunReplay, ReportsTheBundledTraceAsTheGoldenFile) {
  const std::string why = kernels::backend_unavailable_reason(test::kGoldenCpuBackend);
  if (!why.empty()) GTEST_SKIP() << "the replay golden is written with " << test::kGoldenCpuBackend << ": " << why;
  ReplayRequest request = bundled();
  request.backend = test::kGoldenCpuBackend;
  ReplayOptions options = read_replay_options(request);
  ReplayResult result = run_replay(options);
  const std::size_t windows = result.windows.size();
  const results::ReplayReport report = replay_report(options, std::move(result));

  json got = json::parse(results::to_json(report).dump());
  EXPECT_EQ(got.at("trace"), kSource + "/traces/bundled/tinygpt-licenses");
  got.erase("trace");
  test::erase_keys(got, [](const std::string& k) { return k.find("seconds") != std::string::npos; });
  std::string text = got.dump();  // paths of this checkout, as the golden file writes them
  for (std::size_t at = text.find(kSource); at != std::string::npos; at = text.find(kSource, at))
    text.replace(at, kSource.size(), "<source>");
  test::expect_close(json::parse(text),
                     json::parse(traces::test::read_file(fs::path(kSource) / "tests/data/golden/replay.json")),
                     "replay.json");

  const std::string csv = results::windows_csv(report);
  EXPECT_EQ(static_cast<std::size_t>(std::count(csv.begin(), csv.end(), '\n')), 1 + windows * report.stages.size());
  std::ostringstream console;
  results::print_replay_summary(console, report);
  EXPECT_EQ(console.str().rfind("replay      " + kSource + "/traces/bundled/tinygpt-licenses · policy edgc", 0), 0U)
      << console.str();
}

TEST(RunReplay, ReadsTheTraceFromTheScenario) {
  ReplayRequest request = bundled();
  request.trace.clear();  // the scenario's trace.path, relative to the scenario file
  const ReplayOptions options = read_replay_options(request);
  EXPECT_EQ(fs::path(options.trace_dir), fs::path(kSource) / "traces/bundled/tinygpt-licenses");
  EXPECT_TRUE(options.scenario.contains("compression"));
}

TEST(RunReplay, RefusesBadRequestsBeforeReadingTheTrace) {
  EXPECT_EQ(refusal([] { read_replay_options({}); }).first, "--trace");
  ReplayRequest stages = bundled();
  stages.sets = {"replay.stages=-1"};
  EXPECT_EQ(refusal([&] { read_replay_options(stages); }).first, "replay.stages");
  ReplayRequest unknown = bundled();
  unknown.sets = {"replay.no_such_key=1"};
  EXPECT_EQ(refusal([&] { read_replay_options(unknown); }).first, "replay.no_such_key");
  ReplayRequest backend = bundled();
  backend.backend = "no-such-backend";
  EXPECT_EQ(refusal([&] { read_replay_options(backend); }).first, "--backend");
}

}  // namespace
}  // namespace edgc::engine
