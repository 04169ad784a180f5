// engine::run_simulation and engine::run_sweep called directly (the `simulate` and `sweep` commands without their
// option parsing): the small scenario's result is the golden result.json, every figure of a sweep point is that of a
// single simulation of the same settings, and bad requests are refused. Both simulate in forked children
// (core::run_isolated, core::ChildPool), so the test process calls them directly.
#include "edgc/engine/simulation.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "edgc/engine/sweep.hpp"
#include "edgc/results/figure_table.hpp"
#include "edgc/results/result_document.hpp"
#include "edgc/results/sweep_document.hpp"
#include "edgc/scenario/sweep_spec.hpp"
#include "golden.hpp"
#include "refusal.hpp"
#include "trace_test_util.hpp"

namespace edgc::engine {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::refusal;

const std::string kSource = EDGC_SOURCE_DIR;
const std::string kSmall = kSource + "/tests/data/simulate/small.json";

TEST(RunSimulation, SmallScenarioIsTheGoldenResult) {
  SimulateRequest request;
  request.scenario = kSmall;
  request.jobs = 2;
  request.timeline = true;         // as the golden file was made (`simulate --timeline`: every plan simulated exactly)
  request.bandwidth_curve = true;  // as the simulate command does
  const SimulateOutcome outcome = run_simulation(request);
  json got = json::parse(results::to_json(outcome.result).dump());
  EXPECT_EQ(got.at("scenario"), kSmall);
  got.erase("scenario");
  got.erase("simgrid");
  for (json& w : got.at("warnings")) {  // warnings name the scenario by its path inside the source tree
    std::string line = w.get<std::string>();
    for (std::size_t at = line.find(kSource + "/"); at != std::string::npos; at = line.find(kSource + "/", at))
      line.erase(at, kSource.size() + 1);
    w = line;
  }
  edgc::test::expect_close(
      got, json::parse(traces::test::read_file(kSource + "/tests/data/simulate/small-result.golden.json")),
      "small-result.golden.json");
  EXPECT_EQ(outcome.warnings, outcome.result.warnings);
  EXPECT_EQ(outcome.simulated, outcome.result.simulated_iterations.value_or(-1));
  EXPECT_TRUE(outcome.timeline.is_object() || outcome.timeline.is_array());
}

TEST(RunSimulation, RefusesBadRequests) {
  SimulateRequest jobs;
  jobs.scenario = kSmall;
  jobs.jobs = 0;
  EXPECT_EQ(refusal([&] { run_simulation(jobs); }).field, "--jobs");

  SimulateRequest iterations;
  iterations.scenario = kSmall;
  iterations.sets = {"run.iterations=0"};
  EXPECT_EQ(refusal([&] { run_simulation(iterations); }).field, "run.iterations");

  SimulateRequest policy;
  policy.scenario = kSmall;
  policy.policies = "none,no-such-policy";
  const std::string what = refusal([&] { run_simulation(policy); }).message;
  EXPECT_NE(what.find("no-such-policy"), std::string::npos) << what;

  SimulateRequest misspelt;
  misspelt.scenario = kSmall;
  misspelt.sets = {"fidelity.measrue=false"};
  EXPECT_EQ(refusal([&] { run_simulation(misspelt); }).field, "fidelity.measrue");
}

// compression.r_max "auto" takes the break-even rank per stage, and a slower NIC (a dearer uncompressed sync) raises
// it on every stage; the policies then run with it. The small model's sync is short: its break-even lies between
// NICs of 100 GB/s (compression faster at every rank that compresses) and 200 GB/s (slower even at rank 2).
TEST(RunSimulation, AutoRMaxIsTheBreakEvenRankAndRisesAsTheNicSlowsDown) {
  const auto section = [](const std::string& nic_GBps) {
    SimulateRequest r;
    r.scenario = kSmall;
    r.jobs = 2;
    r.policies = "static";
    r.sets = {"compression.r_max=auto", "compression.r_min=4", "fidelity.measure=false",
              "cluster.inter_node.nic_bandwidth_GBps=" + nic_GBps};
    const SimulateOutcome o = run_simulation(r);
    const json b = json::parse(o.result.sections.at("break_even").dump());
    EXPECT_EQ(b.at("r_max_from"), "break_even");
    EXPECT_EQ(b.at("r_max"), b.at("r_max_auto"));
    EXPECT_EQ(o.result.run->r_max, b.at("r_max").get<std::int64_t>());  // the policies ran with it
    double lowest = 1e9;
    for (const json& s : b.at("stages")) {
      EXPECT_EQ(s.at("kind"), "crossed") << b.dump();
      lowest = std::min(lowest, s.at("rank").get<double>());
    }
    EXPECT_EQ(b.at("r_max").get<int>(), static_cast<int>(lowest / 4) * 4);  // floored to a multiple of 4
    return b;
  };
  const json fast = section("160");  // break-even ≈ 25
  const json slow = section("130");  // ≈ 77
  for (std::size_t s = 0; s < fast.at("stages").size(); ++s)
    EXPECT_GT(slow["stages"][s]["rank"].get<double>(), fast["stages"][s]["rank"].get<double>()) << s;
  EXPECT_GT(slow.at("r_max").get<int>(), fast.at("r_max").get<int>());
  // A NIC so fast that compression is slower at rank 2: no rank pays, and "auto" says so naming the key.
  SimulateRequest fastest;
  fastest.scenario = kSmall;
  fastest.sets = {"compression.r_max=auto", "cluster.inter_node.nic_bandwidth_GBps=400"};
  const auto refused = refusal([&] { run_simulation(fastest); });
  EXPECT_EQ(refused.field, "compression.r_max");
  EXPECT_NE(refused.message.find("no rank shortens the sync here"), std::string::npos) << refused.message;
  SimulateRequest bad;
  bad.scenario = kSmall;
  bad.sets = {"compression.r_max=biggest"};
  EXPECT_EQ(refusal([&] { run_simulation(bad); }).field, "compression.r_max");
}

TEST(RunSweep, EveryPointIsTheSimulationOfItsSettings) {
  traces::test::TempDir tmp;
  const scenario::SweepSpec spec = scenario::read_sweep_spec(kSource + "/tests/data/sweep/small-grid.json");
  SweepOptions options;
  options.out = (tmp / "sweep").string();
  options.jobs = 2;
  options.quiet = true;
  const SweepOutcome outcome = run_sweep(spec, options, nullptr);
  EXPECT_EQ(outcome.points, 12);  // 3 windows x 2 r_min x 2 alpha
  EXPECT_EQ(outcome.already_done, 0);
  EXPECT_EQ(outcome.ran, 12);
  EXPECT_EQ(outcome.failed, 0);
  ASSERT_EQ(outcome.results.size(), 12U);
  for (const char* file : {"sweep.json", "results.jsonl", "summary.csv"})
    EXPECT_TRUE(fs::exists(tmp / "sweep" / file)) << file;

  const std::vector<scenario::SweepPoint> points = scenario::expand_points(spec);
  for (const std::size_t i : {std::size_t{0}, std::size_t{7}, std::size_t{11}}) {
    const results::SweepRecord& record = outcome.results[i];
    ASSERT_EQ(record.point, points[i].index);
    EXPECT_EQ(json::parse(record.params.dump()), json::parse(points[i].params.dump()));  // keys in any order
    SimulateRequest single;
    single.scenario = spec.base;
    single.sets = points[i].sets;
    single.policies = spec.policies;
    const results::ResultDocument result = run_simulation(single).result;
    EXPECT_EQ(record.gpus, result.cluster->gpus);
    ASSERT_EQ(record.runs.size(), result.runs.size()) << "point " << i;
    for (const results::ResultRun& run : result.runs) {
      const results::SweepRun* swept = record.find_run(run.policy);
      ASSERT_NE(swept, nullptr) << run.policy;
      EXPECT_DOUBLE_EQ(swept->iteration_time_s, run.iteration_time_s) << "point " << i << " " << run.policy;
      EXPECT_DOUBLE_EQ(swept->training_time_s, run.training_time_s) << "point " << i << " " << run.policy;
      EXPECT_DOUBLE_EQ(swept->speedup_vs_none, run.speedup_vs_none) << "point " << i << " " << run.policy;
      EXPECT_DOUBLE_EQ(swept->cost_usd, run.cost_usd) << "point " << i << " " << run.policy;
    }
  }
}

TEST(RunSweep, RefusesADirectoryHoldingSomethingElse) {
  traces::test::TempDir tmp;
  traces::test::write_file(tmp / "notes.txt", "not a sweep\n");
  EXPECT_EQ(refusal([&] { check_sweep_out(tmp.path().string(), false); }).field, "--out");
}

}  // namespace
}  // namespace edgc::engine
