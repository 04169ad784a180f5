// engine::run_plan called directly (the `plan` command without its option parsing): a cluster entry with its own GPU
// counts yields exactly those options, each simulated on its own cluster, with the iteration time and the peak
// memory per GPU against the capacity that plan.json and the console table show. Points run in forked children
// (core::ChildPool), so the test process calls run_plan directly.
#include "edgc/engine/plan.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <tuple>

#include "edgc/engine/console.hpp"
#include "edgc/results/plan_document.hpp"
#include "edgc/scenario/plan_spec.hpp"
#include "trace_test_util.hpp"

namespace edgc::engine {
namespace {

const std::string kData = std::string(EDGC_SOURCE_DIR) + "/tests/data/";

TEST(RunPlan, PerClusterGpuCountsAreExactlyTheOptionsSimulated) {
  traces::test::TempDir tmp;
  // Top-level 8 for the slow cluster; the fast one (capacity set here) at 16 only: 2 options, not 2 x 2.
  const auto path = tmp / "plan.json";
  std::ofstream(path) << R"({"base": ")" << kData << R"(simulate/small.json", "target": {"iterations": 20},
    "policies": ["none"],
    "clusters": [")" << kData
                      << R"(plan/slow-net.json",
                 {"cluster": ")"
                      << kData << R"(plan/fast-net.json", "label": "fast", "gpus": [16],
                  "set": {"cluster.gpu.memory_GiB": 40}}],
    "gpus": [8], "layouts": [{"tp": 2, "pp": 2}]})";
  const scenario::PlanSpec plan = scenario::read_plan_spec(path.string());
  ASSERT_EQ(plan.options.size(), 2U);
  SweepOptions options;
  options.out = (tmp / "out").string();
  options.jobs = 2;
  options.quiet = true;
  const std::optional<PlanOutcome> outcome = run_plan(plan, options, nullptr);
  ASSERT_TRUE(outcome.has_value());
  EXPECT_TRUE(outcome->infeasible.empty());
  std::set<std::tuple<std::string, int, int>> got;  // label, GPUs, dp
  for (const PlanEntry& e : outcome->entries) {
    got.emplace(e.option->gpu, e.option->gpus, e.option->dp);
    EXPECT_GT(e.iteration_time_s, 0.0);
    EXPECT_NEAR(e.time_s, 20 * e.iteration_time_s, 1e-9 * e.time_s);  // no compression: every iteration alike
    EXPECT_GT(e.peak_memory_GiB, 0.0);
  }
  EXPECT_EQ(got, (std::set<std::tuple<std::string, int, int>>{{"slow-net-gpu", 8, 2}, {"fast", 16, 4}}));
  ASSERT_EQ(outcome->entries.size(), 2U);

  // The capacity is the cluster's where it has one (the fast entry's set), unknown where not; both reach plan.json.
  const results::PlanDocument doc = plan_document(plan, *outcome);
  for (const results::PlanDocument::Option& o : doc.options) {
    if (o.gpu == "fast") {
      EXPECT_EQ(o.memory_capacity_GiB, 40.0);
      EXPECT_LT(o.peak_memory_GiB, 40.0);
    } else {
      EXPECT_TRUE(std::isnan(o.memory_capacity_GiB));
    }
    EXPECT_GT(o.iteration_time_s, 0.0);
  }
  const nlohmann::ordered_json written = nlohmann::ordered_json::parse(results::to_json(doc).dump());
  const results::PlanDocument back = results::parse_plan_document(results::JsonNode(written, "plan.json"));
  ASSERT_EQ(back.options.size(), doc.options.size());
  for (std::size_t i = 0; i < doc.options.size(); ++i) {
    EXPECT_EQ(back.options[i].iteration_time_s, doc.options[i].iteration_time_s);
    EXPECT_EQ(back.options[i].peak_memory_GiB, doc.options[i].peak_memory_GiB);
    EXPECT_EQ(std::isnan(back.options[i].memory_capacity_GiB), std::isnan(doc.options[i].memory_capacity_GiB));
  }

  // The console table shows the iteration time and the memory headroom per option.
  std::ostringstream table;
  print_plan_outcome(table, path.string(), plan, *outcome);
  EXPECT_NE(table.str().find("iter s"), std::string::npos) << table.str();
  EXPECT_NE(table.str().find("mem GiB peak/cap"), std::string::npos) << table.str();
  EXPECT_NE(table.str().find("/40"), std::string::npos) << table.str();
  EXPECT_NE(table.str().find("/-"), std::string::npos) << table.str();
}

}  // namespace
}  // namespace edgc::engine
