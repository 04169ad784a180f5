// Folding the DP replicas of a mixture of experts (replicas_fold, folded_replicas): where the dense and the expert
// sync take their closed form, the first ep / gcd(ep, tp) replicas (whole expert-parallel groups) alone must give
// every figure of the iteration within 1e-9 relative of simulating every replica (IterationOptions::all_replicas),
// for 1F1B and interleaved schedules, PowerSGD per stage on dense and expert gradients, dense layers among MoE ones,
// the combined 1F1B all-to-all overlap, expert-parallel groups inside a node and across nodes, and the calibrated
// network profile; the closed forms themselves must match the rings (force_dp_ring). Layouts outside the argument
// (compute jitter, a shared NIC, expert-DP peers inside a node, overlapped buckets beside the all-to-alls) keep
// every replica. Each comparison simulates twice, each time in a forked child (one simulation per process).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "edgc/sim/collectives.hpp"
#include "edgc/sim/engine_info.hpp"
#include "edgc/sim/iteration.hpp"
#include "edgc/sim/layout.hpp"
#include "edgc/sim/platform.hpp"
#include "iteration_test_util.hpp"
#include "sim_test_util.hpp"

namespace edgc::sim {
namespace {

using test::ChildResult;
using test::engine;

// 4 MoE layers of `hidden` (256 by default), 8 experts, top 2, 128-token sequences.
ModelSpec small_moe(int global_batch, int hidden = 256) {
  ModelSpec m = test::small_gpt(hidden, 128, 1024, global_batch);
  m.layers = 4;
  m.heads = 8;
  m.experts = 8;
  m.top_k = 2;
  m.moe_ffn_hidden = 512;
  return m;
}

// NVSwitch nodes of `gpus_per_node` GPUs, one NIC each (h100_like's links), 16 GPUs in all by default.
ClusterSpec nodes_of(int gpus_per_node, int gpus = 16) {
  ClusterSpec c = test::h100_like(gpus / gpus_per_node);
  c.gpus_per_node = gpus_per_node;
  c.nics_per_node = gpus_per_node;
  return c;
}

struct Scenario {
  ClusterSpec cluster = nodes_of(2);
  NetworkProfile profile;
  ParallelSpec parallel;
  int microbatches = 4;
  DpSyncPlan plan = uncompressed_plan(2);
  std::vector<std::uint8_t> moe_layer_pattern;
  IterationOptions options;
  bool ring_algorithm = false;  // network.algorithm = ring instead of auto
  int hidden = 256;
};

ParallelSpec layout_of(int tp, int pp, int dp, int ep, PipelineSchedule schedule = PipelineSchedule::kOneFOneB,
                       int virtual_stages = 1) {
  ParallelSpec p;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.ep = ep;
  p.sequence_parallel = tp > 1;  // Megatron-Core's requirement for a mixture of experts
  p.microbatches = 0;
  p.schedule = schedule;
  p.virtual_stages = virtual_stages;
  return p;
}

// tp 2 × pp 2 × dp 4, ep 4 on nodes of 2 GPUs (one TP group each): every DP and expert-DP peer on another node, each
// expert-parallel group over two nodes (its all-to-alls on the NICs); folds to 2 of the 4 replicas.
Scenario across_nodes() {
  Scenario s;
  s.parallel = layout_of(2, 2, 4, 4);
  return s;
}

// Megatron-Core's Mixtral layout in small: tp 1 × pp 2 × dp 8, ep 4 on nodes of 4 GPUs (tp-dp-pp): each
// expert-parallel group is one node (its all-to-alls on NVLink), each DP group two runs of 4 members on two nodes
// (a ring of 4 channels, NVLink and NIC hops), each expert-DP group one GPU per node; folds to 4 of the 8
// replicas, one node per stage. The ring forced (auto may pick the tree for groups with several members per node).
Scenario runs_per_node() {
  Scenario s;
  s.cluster = nodes_of(4);
  s.parallel = layout_of(1, 2, 8, 4);
  s.ring_algorithm = true;
  return s;
}

// One simulation of `s`; the extra numbers are: comms posted, 1 when the DP closed form applies, 1 when the
// replicas fold (from the platform), the same from the cluster's description, and folded_replicas().
std::string simulate(const Scenario& s, bool force_dp_ring, bool all_replicas) {
  std::uint64_t comms = 0;
  sg4::Comm::on_send_cb([&comms](const sg4::Comm&) { ++comms; });
  NetworkProfile profile = s.profile;
  if (s.ring_algorithm) profile.algorithm = CollectiveAlgorithm::kRing;
  const Platform platform = Platform::build(engine(), s.cluster, profile);
  ModelSpec model = small_moe(s.microbatches * s.parallel.dp, s.hidden);
  model.moe_layer_pattern = s.moe_layer_pattern;
  const ParallelSpec par = validate(model, s.parallel, s.cluster);
  IterationOptions options = s.options;
  options.force_dp_ring = force_dp_ring;
  options.all_replicas = s.options.all_replicas || all_replicas;
  CostParams params;
  params.compute_efficiency = 0.5;
  const IterationResult r = simulate_iteration(engine(), platform, model, par, params, s.plan, options);
  return test::to_text(
      r, {static_cast<double>(comms), dp_closed_form_applies(platform, par, options.variability) ? 1.0 : 0.0,
          replicas_fold(platform, par, options.variability) ? 1.0 : 0.0,
          replicas_fold(s.cluster, par, options.variability, profile.algorithm) ? 1.0 : 0.0,
          static_cast<double>(folded_replicas(par)), replicas_mirror(platform, par, options.variability) ? 1.0 : 0.0});
}

// The folded run against every replica (both with the closed forms): every figure alike, fold decided alike from
// the platform and the description, and dp / R times fewer messages.
void expect_folding_exact(const Scenario& s, int replicas) {
  const ChildResult folded = test::simulate_in_child([&s] { return simulate(s, false, false); });
  const ChildResult all = test::simulate_in_child([&s] { return simulate(s, false, true); });
  EXPECT_GT(folded.result.iteration_s, 0.0);
  test::expect_same_result(folded.result, all.result);
  ASSERT_EQ(folded.extra.size(), 6U);
  ASSERT_EQ(all.extra.size(), 6U);
  EXPECT_EQ(folded.extra[1], 1.0) << "dp_closed_form_applies() should hold for this layout";
  EXPECT_EQ(folded.extra[2], 1.0) << "replicas_fold() should hold for this layout";
  EXPECT_EQ(folded.extra[3], 1.0) << "replicas_fold() from the cluster spec should agree";
  EXPECT_EQ(folded.extra[4], replicas);
  EXPECT_DOUBLE_EQ(folded.extra[0] * s.parallel.dp / replicas, all.extra[0]) << "each block sends the same messages";
}

// Every replica, the closed forms against the rings they replace (dense and expert sync).
void expect_closed_form_equals_ring(Scenario s) {
  s.options.all_replicas = true;
  const ChildResult closed = test::simulate_in_child([&s] { return simulate(s, false, true); });
  const ChildResult ring = test::simulate_in_child([&s] { return simulate(s, true, true); });
  EXPECT_GT(closed.result.iteration_s, 0.0);
  EXPECT_GT(closed.result.stages.back().expert_sync_s, 0.0);
  test::expect_same_result(closed.result, ring.result);
  ASSERT_EQ(closed.extra.size(), 6U);
  EXPECT_EQ(closed.extra[1], 1.0) << "dp_closed_form_applies() should hold for this layout";
  EXPECT_LT(closed.extra[0], ring.extra[0]) << "the rings' messages are gone";
}

// Outside the argument: every replica simulated, as replicas_fold() says from the platform and the description.
void expect_no_folding(const Scenario& s, bool dp_closed_form) {
  const ChildResult run = test::simulate_in_child([&s] { return simulate(s, false, false); });
  EXPECT_GT(run.result.iteration_s, 0.0);
  ASSERT_EQ(run.extra.size(), 6U);
  EXPECT_EQ(run.extra[1], dp_closed_form ? 1.0 : 0.0);
  EXPECT_EQ(run.extra[2], 0.0);
  EXPECT_EQ(run.extra[3], 0.0);
  EXPECT_EQ(run.extra[5], 0.0) << "replicas_mirror() should not hold either";
}

// Mirrors (replicas_mirror): the first block's pipelines and every GPU's sync against every replica in full; every
// figure alike, fewer messages (the other blocks' pipelines), the closed-form folding off.
void expect_mirrors_exact(const Scenario& s) {
  const ChildResult mirrored = test::simulate_in_child([&s] { return simulate(s, false, false); });
  const ChildResult all = test::simulate_in_child([&s] { return simulate(s, false, true); });
  EXPECT_GT(mirrored.result.iteration_s, 0.0);
  test::expect_same_result(mirrored.result, all.result);
  ASSERT_EQ(mirrored.extra.size(), 6U);
  ASSERT_EQ(all.extra.size(), 6U);
  EXPECT_EQ(mirrored.extra[2], 0.0) << "replicas_fold() should not hold for this layout";
  EXPECT_EQ(mirrored.extra[3], 0.0) << "replicas_fold() from the cluster spec should not hold either";
  EXPECT_EQ(mirrored.extra[5], 1.0) << "replicas_mirror() should hold for this layout";
  EXPECT_LT(mirrored.extra[0], all.extra[0]) << "the other blocks' pipeline messages are gone";
}

TEST(MoeClosedForm, EqualsRingsWithExpertGroupsAcrossNodes) { expect_closed_form_equals_ring(across_nodes()); }

TEST(MoeClosedForm, EqualsRingsWithPowerSgdOnDenseAndExpertGradients) {
  Scenario s = across_nodes();
  s.plan = DpSyncPlan{StageSync{16}, StageSync{0}};
  s.plan[1].expert_rank = 8;
  expect_closed_form_equals_ring(s);
}

TEST(MoeFolding, EqualsAllReplicasOneFOneBAcrossNodes) { expect_folding_exact(across_nodes(), 2); }

TEST(MoeFolding, EqualsAllReplicasInterleavedWithPowerSgdPerStage) {
  Scenario s = across_nodes();
  s.parallel = layout_of(2, 2, 4, 4, PipelineSchedule::kInterleaved, 2);
  s.plan = DpSyncPlan{StageSync{16}, StageSync{0}};
  s.plan[0].expert_rank = 0;  // stage 0's experts uncompressed, its dense gradients at rank 16
  s.plan[1].expert_rank = 8;
  expect_folding_exact(s, 2);
}

// Megatron-Core's Mixtral layout in small: tp 1, expert-parallel groups of 4 replicas across 4 nodes (tp-pp-dp
// puts both stages of a replica on one node), the pipeline on NVLink.
TEST(MoeFolding, EqualsAllReplicasAtTp1InterleavedWithPipelinePeersInANode) {
  Scenario s;
  s.parallel = layout_of(1, 2, 8, 4, PipelineSchedule::kInterleaved, 2);
  s.parallel.order = RankOrder::kTpPpDp;
  s.plan = powersgd_plan(2, 16);
  expect_folding_exact(s, 4);
}

TEST(MoeFolding, EqualsAllReplicasWithDenseLayersAmongMoeLayers) {
  Scenario s = across_nodes();
  s.moe_layer_pattern = {0, 1, 1, 0};  // stage 0: dense, MoE; stage 1: MoE, dense
  s.plan = powersgd_plan(2, 16);
  expect_folding_exact(s, 2);
}

TEST(MoeFolding, EqualsAllReplicasWithCombinedOneFOneBAtPp1) {
  Scenario s;
  s.parallel = layout_of(2, 1, 8, 4);
  s.parallel.moe_a2a_overlap = true;
  s.plan = uncompressed_plan(1);
  s.plan[0].expert_rank = 8;
  expect_folding_exact(s, 2);
}

// ep = tp = 8 on 8-GPU nodes: each expert-parallel group is one TP group inside one node, so the replicas fold to
// replica 0 as a dense model's do; the expert-DP groups are the DP groups' members of one TP index.
TEST(MoeFolding, EqualsAllReplicasWithExpertGroupsInsideANode) {
  Scenario s;
  s.cluster = test::h100_like(4);
  s.parallel = layout_of(8, 2, 2, 8);
  s.plan = powersgd_plan(2, 16);
  expect_folding_exact(s, 1);
}

TEST(MoeFolding, EqualsAllReplicasOnTheCalibratedProfile) {
  Scenario s = across_nodes();
  s.profile = test::h100_calibrated();
  s.plan = DpSyncPlan{StageSync{16}, StageSync{0}};
  s.plan[1].expert_rank = 8;
  expect_folding_exact(s, 2);
}

TEST(MoeClosedForm, EqualsRingsWithDpGroupsInRunsPerNode) { expect_closed_form_equals_ring(runs_per_node()); }

TEST(MoeClosedForm, EqualsRingsWithDpGroupsInRunsPerNodeOnTheCalibratedProfile) {
  Scenario s = runs_per_node();
  s.profile = test::h100_calibrated();
  s.plan = DpSyncPlan{StageSync{16}, StageSync{0}};
  s.plan[1].expert_rank = 8;
  expect_closed_form_equals_ring(s);
}

TEST(MoeFolding, EqualsAllReplicasWithDpGroupsInRunsPerNode) { expect_folding_exact(runs_per_node(), 4); }

TEST(MoeFolding, EqualsAllReplicasInterleavedWithDpGroupsInRunsPerNodeAndPowerSgd) {
  Scenario s = runs_per_node();
  s.parallel = layout_of(1, 2, 8, 4, PipelineSchedule::kInterleaved, 2);
  s.plan = powersgd_plan(2, 16);
  expect_folding_exact(s, 4);
}

TEST(MoeFolding, EqualsAllReplicasWithDpGroupsInRunsPerNodeOnTheCalibratedProfile) {
  Scenario s = runs_per_node();
  s.profile = test::h100_calibrated();
  s.plan = DpSyncPlan{StageSync{0}, StageSync{16}};
  expect_folding_exact(s, 4);
}

// Under auto the simulation checks that the ring is chosen for each of its all-reduce sizes, which the public checks
// do not know (they say no). For groups with several members per node auto picks the tree even for a sync of
// hundreds of MB (hidden 4096): no closed form, and the replicas mirror instead.
TEST(MoeFolding, MirrorsWithDpGroupsInRunsPerNodeUnderAuto) {
  Scenario s = runs_per_node();
  s.ring_algorithm = false;
  s.hidden = 4096;
  expect_mirrors_exact(s);
}

TEST(MoeFolding, MirrorsInterleavedWithPowerSgdPerStageUnderAuto) {
  Scenario s = runs_per_node();
  s.ring_algorithm = false;
  s.parallel = layout_of(1, 2, 8, 4, PipelineSchedule::kInterleaved, 2);
  s.plan = DpSyncPlan{StageSync{16}, StageSync{0}};
  s.plan[1].expert_rank = 8;
  expect_mirrors_exact(s);
}

TEST(MoeFolding, MirrorsOnTheCalibratedProfileUnderAuto) {
  Scenario s = runs_per_node();
  s.ring_algorithm = false;
  s.profile = test::h100_calibrated();
  s.moe_layer_pattern = {1, 0, 0, 1};
  expect_mirrors_exact(s);
}

TEST(MoeFolding, MirrorsWithCombinedOneFOneBAtPp1UnderAuto) {
  Scenario s = runs_per_node();
  s.ring_algorithm = false;
  s.parallel = layout_of(1, 1, 16, 4);
  s.parallel.moe_a2a_overlap = true;
  s.plan = uncompressed_plan(1);
  expect_mirrors_exact(s);
}

// With the DP rings as messages (force_dp_ring) the replicas mirror where they would fold.
TEST(MoeFolding, MirrorsWithTheDpRingsForced) {
  Scenario s = across_nodes();
  const ChildResult mirrored = test::simulate_in_child([&s] { return simulate(s, true, false); });
  const ChildResult all = test::simulate_in_child([&s] { return simulate(s, true, true); });
  test::expect_same_result(mirrored.result, all.result);
  ASSERT_EQ(mirrored.extra.size(), 6U);
  EXPECT_LT(mirrored.extra[0], all.extra[0]);
}

// Runs of 2 members per node, blocks of 4 replicas: a node's members need not arrive as the next node's do, so no
// closed form for the ring in runs; the replicas mirror.
TEST(MoeFolding, MirrorsWhereTheBlockDoesNotDivideTheRuns) {
  Scenario s = runs_per_node();
  s.cluster = nodes_of(2);
  expect_mirrors_exact(s);
}

TEST(MoeFolding, NotWithStragglersAndDpGroupsInRunsPerNode) {
  Scenario s = runs_per_node();
  s.options.variability.straggler_probability = 0.5;
  s.options.variability.straggler_slowdown = 1.5;
  expect_no_folding(s, false);
}

TEST(MoeFolding, IterationActorsCountTheFoldedBlock) {
  Scenario s = across_nodes();
  ModelSpec model = small_moe(s.microbatches * s.parallel.dp);
  const ParallelSpec par = validate(model, s.parallel, s.cluster);
  EXPECT_EQ(folded_replicas(par), 2);
  EXPECT_EQ(iteration_actors(par, true), 2 * 2 * 2);
  EXPECT_EQ(iteration_actors(par, false), 2 * 2 * 4);
}

TEST(MoeFolding, NotWithComputeJitter) {
  Scenario s = across_nodes();
  s.options.variability.compute_jitter_cv = 0.1;
  expect_no_folding(s, true);
}

TEST(MoeFolding, NotWhenGpusShareANic) {
  Scenario s = across_nodes();
  s.cluster.nics_per_node = 1;
  expect_no_folding(s, false);
}

// tp 2, ep 1: every stage's expert-DP group is all its tp·dp GPUs, TP peers on one node among them: no closed form,
// so no folding; the replicas (blocks of one) mirror.
TEST(MoeFolding, MirrorsWhereExpertDpPeersShareANode) {
  Scenario s = across_nodes();
  s.parallel.ep = 1;
  expect_mirrors_exact(s);
}

// Buckets overlapped with the last backward pass would run beside its token all-to-alls on the same NICs.
TEST(MoeFolding, NotWithBucketsBesideTheAllToAlls) {
  Scenario s;
  s.parallel = layout_of(2, 1, 8, 4);
  s.parallel.overlap_grad_reduce = true;
  s.parallel.grad_bucket_params = 100000;
  s.plan = uncompressed_plan(1);
  expect_no_folding(s, false);
}

}  // namespace
}  // namespace edgc::sim
