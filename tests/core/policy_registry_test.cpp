// The policy registry: every row builds its controller, the capabilities are the documented ones, and an unknown
// name is refused naming the field it came from.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "edgc/core/controller.hpp"
#include "edgc/core/policy_registry.hpp"
#include "expect_error.hpp"

namespace edgc::core {
namespace {

ControllerConfig config_for(std::string_view policy) {
  ControllerConfig c;
  c.policy = std::string(policy);
  c.stages = 2;
  c.warmup.mode = WarmupConfig::Mode::kFixed;
  c.warmup.fixed_iters = 200;
  c.stage_shapes = {{1920, 7680}, {1920, 7680}};
  return c;
}

TEST(PolicyRegistry, ListsThePoliciesInMessageOrder) {
  std::vector<std::string> names;
  for (const PolicyInfo& p : policy_registry()) names.emplace_back(p.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"none", "static", "selective", "loss", "edgc", "edgc-pp", "edgc-megatron"}));
  EXPECT_EQ(policy_names(), names);
  EXPECT_EQ(policy_list(), "none, static, selective, loss, edgc, edgc-pp, edgc-megatron");
}

TEST(PolicyRegistry, EveryRowBuildsItsController) {
  for (const PolicyInfo& p : policy_registry()) {
    ASSERT_NE(p.factory, nullptr) << p.name;
    EXPECT_EQ(p.factory(config_for(p.name))->policy(), p.name);
    EXPECT_EQ(make_controller(config_for(p.name), "s.json")->policy(), p.name);
    EXPECT_EQ(find_policy(p.name), &p);
    EXPECT_EQ(&policy_info(p.name, "s.json", "compression.policy"), &p);
    EXPECT_TRUE(is_policy(p.name));
  }
}

TEST(PolicyRegistry, CapabilitiesAreTheDocumentedOnes) {
  struct Expected {
    const char* name;
    bool dp, entropy, pipeline, shapes, fixed;
  };
  for (const Expected& x :
       {Expected{"none", false, false, false, false, false}, Expected{"static", true, false, false, false, true},
        Expected{"selective", true, false, false, false, true}, Expected{"loss", true, false, false, false, false},
        Expected{"edgc", true, true, false, true, false}, Expected{"edgc-pp", true, true, true, true, false},
        Expected{"edgc-megatron", true, false, false, false, false}}) {
    const PolicyInfo* p = find_policy(x.name);
    ASSERT_NE(p, nullptr) << x.name;
    EXPECT_EQ(p->compresses_dp, x.dp) << x.name;
    EXPECT_EQ(p->reads_entropy, x.entropy) << x.name;
    EXPECT_EQ(reads_entropy(x.name), x.entropy) << x.name;
    EXPECT_EQ(p->compresses_pipeline, x.pipeline) << x.name;
    EXPECT_EQ(p->needs_stage_shapes, x.shapes) << x.name;
    EXPECT_EQ(p->fixed_rank, x.fixed) << x.name;
  }
}

// The baseline is the one policy that compresses nothing, and it never decides a rank.
TEST(PolicyRegistry, TheBaselineIsTheOnePolicyThatCompressesNothing) {
  EXPECT_EQ(baseline_policy().name, "none");
  EXPECT_TRUE(is_baseline_policy("none"));
  EXPECT_FALSE(is_baseline_policy("static"));
  EXPECT_FALSE(is_baseline_policy("magic"));  // a name read back from a file need not be known
  int uncompressed = 0;
  for (const PolicyInfo& p : policy_registry()) uncompressed += p.compresses_dp ? 0 : 1;
  EXPECT_EQ(uncompressed, 1);
  auto none = make_controller(config_for("none"), "s.json");
  WindowObservation obs;
  obs.end_iteration = 1000;
  obs.stages.resize(2);
  for (const RankDecision& d : none->decide(obs).stages) EXPECT_EQ(d.rank, 0);
}

// Only edgc-pp reads the pipeline settings: a pipeline rank of 0 is refused there and ignored elsewhere.
TEST(PolicyRegistry, PipelineSettingsApplyOnlyWherePipelineIsCompressed) {
  for (const PolicyInfo& p : policy_registry()) {
    ControllerConfig c = config_for(p.name);
    c.pipeline_rank = 0;
    if (p.compresses_pipeline)
      test::expect_config_error([&] { make_controller(c, "s.json"); }, "s.json", "compression.pp_rank",
                                {"must be >= 1 for the edgc-pp policy, got 0"});
    else
      EXPECT_NO_THROW(make_controller(c, "s.json")) << p.name;
  }
}

// Policies that need stage shapes refuse a config without them; the others do not ask.
TEST(PolicyRegistry, StageShapesAreRequiredExactlyWhereDocumented) {
  for (const PolicyInfo& p : policy_registry()) {
    ControllerConfig c = config_for(p.name);
    c.stage_shapes.clear();
    if (p.needs_stage_shapes)
      test::expect_config_error([&] { make_controller(c, "s.json"); }, "s.json", "stage_shapes",
                                {"one (m, n) per stage"});
    else
      EXPECT_NO_THROW(make_controller(c, "s.json")) << p.name;
  }
}

TEST(PolicyRegistry, AnUnknownNameIsRefusedNamingTheField) {
  EXPECT_EQ(find_policy("magic"), nullptr);
  EXPECT_EQ(find_policy("EDGC"), nullptr);  // names are case-sensitive
  EXPECT_FALSE(is_policy("magic"));
  EXPECT_FALSE(reads_entropy("magic"));
  test::expect_config_error([] { (void)policy_info("magic", "s.json", "simulate.policies"); }, "s.json",
                            "simulate.policies",
                            {"unknown policy 'magic' (none, static, selective, loss, edgc, edgc-pp, edgc-megatron)"});
  test::expect_config_error([] { make_controller(config_for("magic"), "t.json"); }, "t.json", "compression.policy",
                            {"unknown policy 'magic' (none, static, selective, loss, edgc, edgc-pp, edgc-megatron)"});
}

}  // namespace
}  // namespace edgc::core
