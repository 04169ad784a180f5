// Plan specs: per-cluster GPU counts (a cluster entry's own "gpus" instead of the top-level list crossed with every
// cluster), what is kept of the spec, and every refusal of a bad count naming the file and the field.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/scenario/plan_spec.hpp"
#include "expect_error.hpp"
#include "trace_test_util.hpp"

namespace {

using edgc::scenario::PlanOption;
using edgc::scenario::PlanSpec;
using edgc::scenario::read_plan_spec;
using edgc::traces::test::TempDir;

const std::string kData = std::string(EDGC_SOURCE_DIR) + "/tests/data/";

// A spec over the two 4-GPU-per-node test clusters with the small base scenario; `clusters` and `gpus` are JSON.
std::string write_spec(const TempDir& tmp, const std::string& name, const std::string& clusters,
                       const std::string& gpus) {
  const auto path = tmp / name;
  std::ofstream(path) << R"({"base": ")" << kData << R"(simulate/small.json", "target": {"iterations": 10},
    "policies": ["none"], "clusters": )"
                      << clusters << (gpus.empty() ? "" : R"(, "gpus": )" + gpus) << R"(,
    "layouts": [{"tp": 2, "pp": 2}]})";
  return path.string();
}

const std::string kSlow = R"(")" + kData + R"(plan/slow-net.json")";
const std::string kFast = R"(")" + kData + R"(plan/fast-net.json")";

std::vector<std::tuple<std::string, int>> options_of(const PlanSpec& spec) {
  std::vector<std::tuple<std::string, int>> out;
  for (const PlanOption& o : spec.options) out.emplace_back(o.gpu, o.gpus);
  return out;
}

TEST(PlanSpec, TopLevelGpusAreCrossedWithEveryCluster) {
  TempDir tmp;
  const PlanSpec spec = read_plan_spec(write_spec(tmp, "cross.json", "[" + kSlow + ", " + kFast + "]", "[8, 16]"));
  EXPECT_EQ(options_of(spec),
            (std::vector<std::tuple<std::string, int>>{
                {"slow-net-gpu", 8}, {"slow-net-gpu", 16}, {"fast-net-gpu", 8}, {"fast-net-gpu", 16}}));
}

TEST(PlanSpec, AClusterEntrysOwnGpusReplaceTheTopLevelListForThatClusterOnly) {
  TempDir tmp;
  const std::string clusters = "[" + kSlow + R"(, {"cluster": )" + kFast + R"(, "label": "fast", "gpus": [16, 4]}])";
  const PlanSpec spec = read_plan_spec(write_spec(tmp, "own.json", clusters, "[8, 12]"));
  EXPECT_EQ(options_of(spec), (std::vector<std::tuple<std::string, int>>{
                                  {"slow-net-gpu", 8}, {"slow-net-gpu", 12}, {"fast", 16}, {"fast", 4}}));
  EXPECT_TRUE(spec.skipped.empty());
  // Each option lays its own count out on its own cluster: nodes and dp follow it.
  const PlanOption& fast16 = spec.options[2];
  EXPECT_EQ(fast16.sets["cluster.nodes"], 4);
  EXPECT_EQ(fast16.dp, 4);
  EXPECT_EQ(fast16.label, "16xfast tp2 pp2 dp4");
  // The spec as read travels with the plan (plan.json, --resume), the entry's counts included.
  EXPECT_EQ(spec.document["clusters"][1]["gpus"].dump(), "[16,4]");
}

TEST(PlanSpec, WithEveryEntryCountedTheTopLevelListIsNotNeeded) {
  TempDir tmp;
  const std::string clusters =
      R"([{"cluster": )" + kSlow + R"(, "gpus": [8]}, {"cluster": )" + kFast + R"(, "gpus": [16]}])";
  const PlanSpec spec = read_plan_spec(write_spec(tmp, "all-own.json", clusters, ""));
  EXPECT_EQ(options_of(spec), (std::vector<std::tuple<std::string, int>>{{"slow-net-gpu", 8}, {"fast-net-gpu", 16}}));
}

TEST(PlanSpec, RefusesBadPerClusterCountsNamingTheFileAndField) {
  struct Bad {
    std::string gpus;   // the second entry's own "gpus"
    std::string field;  // the field named
    std::string says;
  };
  const std::vector<Bad> cases = {
      {"[]", "clusters[1].gpus", "non-empty list"},
      {"16", "clusters[1].gpus", "non-empty list"},
      {"[0]", "clusters[1].gpus[0]", "positive integer"},
      {"[-8]", "clusters[1].gpus[0]", "positive integer"},
      {"[8.5]", "clusters[1].gpus[0]", "positive integer"},
      {R"(["8"])", "clusters[1].gpus[0]", "positive integer"},
      {"[8, 6]", "clusters[1].gpus[1]", "6 GPUs are not whole nodes of 4"},
      {"[8, 16, 8]", "clusters[1].gpus[2]", "listed twice"},
  };
  TempDir tmp;
  int n = 0;
  for (const Bad& c : cases) {
    const std::string clusters = "[" + kSlow + R"(, {"cluster": )" + kFast + R"(, "gpus": )" + c.gpus + "}]";
    const std::string path = write_spec(tmp, "bad" + std::to_string(n++) + ".json", clusters, "[8]");
    SCOPED_TRACE(c.gpus);
    edgc::test::expect_config_error([&] { (void)read_plan_spec(path); }, path, c.field, {c.says});
  }
}

TEST(PlanSpec, RefusesAMissingTopLevelListWhenAnEntryHasNoCountsOfItsOwn) {
  TempDir tmp;
  const std::string clusters = "[" + kSlow + R"(, {"cluster": )" + kFast + R"(, "gpus": [16]}])";
  const std::string path = write_spec(tmp, "missing.json", clusters, "");
  edgc::test::expect_config_error([&] { (void)read_plan_spec(path); }, path, "gpus",
                                  {"clusters[0] gives no \"gpus\" of its own"});
}

TEST(PlanSpec, EveryBundledPlanReads) {
  int plans = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(EDGC_SOURCE_DIR) + "/scenarios/plans")) {
    if (e.path().extension() != ".json") continue;
    SCOPED_TRACE(e.path().string());
    const PlanSpec spec = read_plan_spec(e.path().string());
    EXPECT_FALSE(spec.options.empty());
    ++plans;
  }
  EXPECT_GE(plans, 3);
  // The generations plan: one option per count its entries give, 512 A100, 256 H100, 256 H200, 128 and 256 B200.
  const PlanSpec gens =
      read_plan_spec(std::string(EDGC_SOURCE_DIR) + "/scenarios/plans/gpt2-12.1b-a100-h100-h200-b200.json");
  EXPECT_EQ(options_of(gens), (std::vector<std::tuple<std::string, int>>{
                                  {"A100", 512}, {"H100", 256}, {"H200", 256}, {"B200", 128}, {"B200", 256}}));
  EXPECT_TRUE(gens.skipped.empty());
}

}  // namespace
