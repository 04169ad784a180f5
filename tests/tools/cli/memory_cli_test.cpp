// The memory model end to end: `simulate` reports the peak per stage in result.json's "memory" and rejects a layout
// that does not fit (exit 2, the scenario and the figures in the message, no output); `sweep` records such a point
// as an error line with that message (and exits 2, as for any invalid point), `plan` lists it as infeasible; the
// bundled paper scenarios fit their GPUs.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_test_util.hpp"

namespace {

namespace fs = std::filesystem;
using edgc::cli::test::edgc;
using edgc::traces::test::read_file;
using edgc::traces::test::TempDir;
using nlohmann::json;

const std::string kSource = EDGC_SOURCE_DIR;
const std::string kSmall = kSource + "/tests/data/simulate/small.json";

void write(const fs::path& p, const json& j) { std::ofstream(p) << j.dump(2) << "\n"; }

TEST(MemoryCli, SimulateReportsPeakMemoryPerStage) {
  TempDir tmp;
  const auto r = edgc("simulate --scenario " + kSmall + " --set cluster.gpu.memory_GiB=80 --policies none --out " +
                          (tmp / "a").string(),
                      tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  const json m = json::parse(read_file(tmp / "a" / "result.json")).at("memory");
  EXPECT_EQ(m.at("capacity_GiB"), 80);
  EXPECT_TRUE(m.at("checked").get<bool>());
  ASSERT_EQ(m.at("stages").size(), 2U);  // pp 2
  double peak = 0;
  for (const json& s : m.at("stages")) {
    const double parts = s.at("weights_GiB").get<double>() + s.at("gradients_GiB").get<double>() +
                         s.at("optimizer_GiB").get<double>() + s.at("activations_GiB").get<double>() +
                         s.at("recompute_GiB").get<double>();
    EXPECT_NEAR(s.at("peak_GiB").get<double>(), parts, 1e-12);
    EXPECT_DOUBLE_EQ(s.at("optimizer_GiB").get<double>(), 6 * s.at("weights_GiB").get<double>());  // 12 vs 2 B
    peak = std::max(peak, s.at("peak_GiB").get<double>());
  }
  EXPECT_EQ(m.at("stages")[0].at("inflight_passes"), 2);  // 1F1B: pp − stage
  EXPECT_EQ(m.at("stages")[1].at("inflight_passes"), 1);
  EXPECT_DOUBLE_EQ(m.at("peak_GiB").get<double>(), peak);
}

TEST(MemoryCli, WithoutACapacityMemoryIsReportedNotChecked) {
  TempDir tmp;
  const auto r = edgc("simulate --scenario " + kSmall + " --policies none --out " + (tmp / "a").string(), tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  const json m = json::parse(read_file(tmp / "a" / "result.json")).at("memory");
  EXPECT_TRUE(m.at("capacity_GiB").is_null());
  EXPECT_FALSE(m.at("checked").get<bool>());
  EXPECT_NE(m.at("note").get<std::string>().find("not checked"), std::string::npos);
}

TEST(MemoryCli, SimulateRejectsALayoutThatDoesNotFit) {
  TempDir tmp;
  const auto r =
      edgc("simulate --scenario " + kSmall + " --set cluster.gpu.memory_GiB=0.01 --out " + (tmp / "out").string(), tmp);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("small.json: cluster.gpu.memory_GiB"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("GiB per GPU on stage 0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the GPU has 0.01 GiB"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(tmp / "out"));
  for (const std::string bad : {"0", "-4", "\\\"lots\\\""}) {
    const auto b = edgc(
        "simulate --scenario " + kSmall + " --set cluster.gpu.memory_GiB=" + bad + " --out " + (tmp / "out").string(),
        tmp);
    EXPECT_EQ(b.code, 2) << bad << ": " << b.err;
    EXPECT_NE(b.err.find("cluster.gpu.memory_GiB"), std::string::npos) << b.err;
    EXPECT_FALSE(fs::exists(tmp / "out"));
  }
}

TEST(MemoryCli, SweepRecordsAPointThatDoesNotFitAsAnError) {
  TempDir tmp;
  write(tmp / "spec.json", {{"base", kSmall},
                            {"policies", "none"},
                            {"axes", {{{"key", "cluster.gpu.memory_GiB"}, {"values", {0.01, 80}}}}}});
  // Every point runs; the sweep then exits 2 as for any point with an invalid scenario, naming results.jsonl.
  const auto r = edgc("sweep --spec " + (tmp / "spec.json").string() + " --out " + (tmp / "s").string(), tmp);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("1 sweep point(s) have invalid scenarios"), std::string::npos) << r.err;
  std::istringstream lines(read_file(tmp / "s" / "results.jsonl"));
  int errors = 0, runs = 0;
  for (std::string line; std::getline(lines, line);) {
    const json j = json::parse(line);
    if (j.contains("error")) {
      ++errors;
      EXPECT_EQ(j.at("params").at("cluster.gpu.memory_GiB"), 0.01);
      EXPECT_NE(j.at("error").get<std::string>().find("the GPU has 0.01 GiB"), std::string::npos) << line;
    } else {
      ++runs;
    }
  }
  EXPECT_EQ(errors, 1);
  EXPECT_EQ(runs, 1);
}

TEST(MemoryCli, PlanListsALayoutThatDoesNotFitAsInfeasible) {
  // The small model needs ≈ 0.17 GiB per GPU at tp 2 × pp 2 and ≈ 0.5 GiB at tp 1 × pp 1 (16 bytes per parameter
  // of its 26.4 M on one GPU, plus activations): a 0.3 GiB GPU takes the first and not the second.
  TempDir tmp;
  json cluster = json::parse(read_file(kSource + "/tests/data/plan/fast-net.json"));
  cluster["cluster"]["gpu"]["memory_GiB"] = 0.3;
  write(tmp / "small-gpu.json", cluster);
  write(tmp / "plan.json", {{"base", kSmall},
                            {"target", {{"iterations", 100}}},
                            {"policies", {"none"}},
                            {"clusters", {"small-gpu.json"}},
                            {"gpus", {8}},
                            {"layouts", {{{"tp", 2}, {"pp", 2}}, {{"tp", 1}, {"pp", 1}}}}});
  const auto r = edgc("plan --spec " + (tmp / "plan.json").string() + " --out " + (tmp / "p").string(), tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  const json plan = json::parse(read_file(tmp / "p" / "plan.json"));
  ASSERT_EQ(plan.at("options").size(), 1U);
  EXPECT_EQ(plan.at("options")[0].at("tp"), 2);
  ASSERT_EQ(plan.at("infeasible").size(), 1U);
  const std::string why = plan.at("infeasible")[0].get<std::string>();
  EXPECT_NE(why.find("tp1 pp1"), std::string::npos) << why;
  EXPECT_NE(why.find("GiB per GPU on stage 0"), std::string::npos) << why;
  EXPECT_NE(why.find("the GPU has 0.3 GiB"), std::string::npos) << why;
  EXPECT_NE(r.out.find("the GPU has 0.3 GiB"), std::string::npos) << r.out;
}

TEST(MemoryCli, BundledPaperScenariosFitTheirGpus) {
  for (const char* paper : {"gpt2-2.5b-32xv100.json", "gpt2-12.1b-64xh100.json"}) {
    TempDir tmp;
    const auto r = edgc("simulate --scenario " + kSource + "/scenarios/paper/" + paper +
                            " --policies none --set run.iterations=10 --set entropy.source=synthetic --out " +
                            (tmp / "a").string(),
                        tmp);
    ASSERT_EQ(r.code, 0) << paper << ": " << r.err;
    const json m = json::parse(read_file(tmp / "a" / "result.json")).at("memory");
    EXPECT_TRUE(m.at("checked").get<bool>()) << paper;
    EXPECT_LT(m.at("peak_GiB").get<double>(), m.at("capacity_GiB").get<double>()) << paper;
  }
}

}  // namespace
