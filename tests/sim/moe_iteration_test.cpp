// A mixture of experts in one simulated iteration: the token all-to-alls of every pass against their closed form
// on one NVSwitch node (all members arrive together, nothing else on the links), and the expert sync over the
// expert-data-parallel group (present with ep < tp·dp, absent with ep = tp·dp), compressed only where the plan
// says. Each TEST is one simulation and runs in its own process.
#include <gtest/gtest.h>

#include "edgc/sim/collectives.hpp"
#include "edgc/sim/cost_model.hpp"
#include "edgc/sim/iteration.hpp"
#include "edgc/sim/layout.hpp"
#include "edgc/sim/platform.hpp"
#include "sim_test_util.hpp"

namespace edgc::sim {
namespace {

using test::engine;

// 2 MoE layers of hidden 256, 8 experts, top 2, one micro-batch of 128 tokens per GPU.
ModelSpec small_moe(int global_batch) {
  ModelSpec m = test::small_gpt(256, 128, 1024, global_batch);
  m.layers = 2;
  m.heads = 8;
  m.experts = 8;
  m.top_k = 2;
  m.moe_ffn_hidden = 512;
  return m;
}

CostParams flops_only() {
  CostParams c;
  c.compute_efficiency = 0.5;
  c.optimizer_step_s = 0.0;
  return c;
}

TEST(MoeIteration, AllToAllsTakeTheirClosedForm) {
  const Platform platform = Platform::build(engine(), test::h100_like(1), NetworkProfile{});
  const ModelSpec m = small_moe(8);
  ParallelSpec par;
  par.dp = 8;
  par.ep = 8;
  const IterationResult r = simulate_iteration(engine(), platform, m, par, flops_only(), uncompressed_plan(1), {});
  // Per pass: 2 layers x 2 all-to-alls folded into one of all their bytes plus 3 more latencies. Each GPU's link
  // carries 7/8 of its buffer (b·s·k·h elements, 2 bytes) at 450 GB/s.
  const Route route = route_between(platform.gpu(0), platform.gpu(1));
  const double per_pass = 4 * route.latency_s +
                          moe_all_to_all_bytes(m, validate(m, par, test::h100_like(1), "t")) * 4 / route.bottleneck_Bps;
  ASSERT_EQ(r.stages.size(), 1U);
  EXPECT_NEAR(r.stages[0].all_to_all_s / (2 * per_pass), 1.0, 1e-3) << r.stages[0].all_to_all_s;
  EXPECT_EQ(r.stages[0].expert_sync_s, 0.0);  // ep = tp·dp: every expert on one GPU, nothing to synchronise
}

TEST(MoeIteration, ExpertSyncRunsOverExpertDataParallelGroupsAndCompressesAtItsRank) {
  const Platform platform = Platform::build(engine(), test::h100_like(1), NetworkProfile{});
  const ModelSpec m = small_moe(8);
  ParallelSpec par;
  par.dp = 8;
  par.ep = 4;  // two expert-parallel groups of 4; expert-DP groups of 2
  DpSyncPlan plan = uncompressed_plan(1);
  plan[0].expert_rank = 4;  // the experts' 256 x 1024 and 512 x 256 gradients at rank 4, the dense sync uncompressed
  const IterationResult r = simulate_iteration(engine(), platform, m, par, flops_only(), plan, {});
  EXPECT_GT(r.stages[0].expert_sync_s, 0.0);
  EXPECT_EQ(r.stages[0].expert_rank, 4);
  EXPECT_EQ(r.stages[0].powersgd_rank, 0);
  EXPECT_GT(r.stages[0].all_to_all_s, 0.0);
  EXPECT_GE(r.stages[0].dp_sync_s, r.stages[0].expert_sync_s);
}

// Megatron-Core's combined 1F1B without pipelining: passes F0 B0 F1 B1 F2 B2 F3 B3 run as F0, (B0 F1), (B1 F2),
// (B2 F3), B3. With compute far longer than a pass's all-to-alls, those of the combined steps hide entirely: only
// F0's and B3's stay exposed, 2 of the 8 passes' all-to-alls.
TEST(MoeIteration, CombinedOneFOneBHidesTheAllToAllsOfItsSteps) {
  const Platform platform = Platform::build(engine(), test::h100_like(1), NetworkProfile{});
  const ModelSpec m = small_moe(32);
  CostParams slow = flops_only();
  slow.compute_efficiency = 1e-4;  // about 0.1 ms of compute per pass, hundreds of times the all-to-alls
  ParallelSpec par;
  par.dp = 8;
  par.ep = 8;
  par.microbatches = 0;
  par.moe_a2a_overlap = true;
  const IterationResult r = simulate_iteration(engine(), platform, m, par, slow, uncompressed_plan(1), {});
  const Route route = route_between(platform.gpu(0), platform.gpu(1));
  const double per_pass = 4 * route.latency_s +
                          moe_all_to_all_bytes(m, validate(m, par, test::h100_like(1), "t")) * 4 / route.bottleneck_Bps;
  ASSERT_EQ(r.stages.size(), 1U);
  EXPECT_NEAR(r.stages[0].all_to_all_s / (2 * per_pass), 1.0, 1e-3) << r.stages[0].all_to_all_s;
}

TEST(MoeIteration, ADenseStageRunsNoAllToAllAndNoExpertSync) {
  const Platform platform = Platform::build(engine(), test::h100_like(1), NetworkProfile{});
  ModelSpec m = small_moe(8);
  m.moe_layer_pattern = {0, 1};  // stage 0 holds the dense layer 0, stage 1 the MoE layer 1
  ParallelSpec par;
  par.pp = 2;
  par.dp = 4;
  par.ep = 2;            // expert-DP groups of 2: an expert sync where there are experts
  par.microbatches = 0;  // derived: 8 sequences over dp 4
  const IterationResult r = simulate_iteration(engine(), platform, m, par, flops_only(), uncompressed_plan(2), {});
  ASSERT_EQ(r.stages.size(), 2U);
  EXPECT_EQ(r.stages[0].all_to_all_s, 0.0);
  EXPECT_EQ(r.stages[0].expert_sync_s, 0.0);
  EXPECT_GT(r.stages[1].all_to_all_s, 0.0);
  EXPECT_GT(r.stages[1].expert_sync_s, 0.0);
}

}  // namespace
}  // namespace edgc::sim
