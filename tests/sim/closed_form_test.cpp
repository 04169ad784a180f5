// The closed forms of the tensor-parallel and data-parallel all-reduces (a barrier of the group, then one sleep)
// against the rings they replace (IterationOptions::force_tp_ring, force_dp_ring): every figure of the iteration
// must agree within 1e-9 relative on layouts where a closed form applies, for every schedule, PowerSGD, the
// calibrated network profile, and compute jitter with stragglers (members then arrive at different times); and
// layouts where it does not apply must still run the ring. Each comparison simulates twice, each time in a forked
// child (one simulation per process).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "edgc/sim/cost_model.hpp"
#include "edgc/sim/iteration.hpp"
#include "edgc/sim/layout.hpp"
#include "edgc/sim/platform.hpp"
#include "iteration_test_util.hpp"
#include "sim_test_util.hpp"

namespace edgc::sim {
namespace {

using test::ChildResult;
using test::engine;
using test::h100_calibrated;

// A GPT-like shape that is quick to simulate: 16 layers of h = 4096 over pp 4, 1024-token sequences, so one TP
// all-reduce is 8 MiB and the TP rings take ~10 % of a pass.
ModelSpec gpt_like(int global_batch) {
  ModelSpec m;
  m.name = "gpt-like";
  m.layers = 16;
  m.hidden = 4096;
  m.heads = 32;
  m.seq_len = 1024;
  m.vocab = 51200;
  m.micro_batch_size = 1;
  m.global_batch_size = global_batch;
  return m;
}

ParallelSpec layout_of(int tp, int pp, int dp, PipelineSchedule schedule, int virtual_stages = 1) {
  ParallelSpec p;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.schedule = schedule;
  p.virtual_stages = virtual_stages;
  p.microbatches = 0;
  return p;
}

struct Scenario {
  ClusterSpec cluster = test::h100_like(8);  // 64 GPUs, NVSwitch nodes
  NetworkProfile profile;
  ParallelSpec parallel = layout_of(8, 4, 2, PipelineSchedule::kOneFOneB);
  int microbatches = 8;
  DpSyncPlan plan = uncompressed_plan(4);
  IterationOptions options;
};

// One simulation of `s`; the extra numbers are: comms posted, 1 when the TP closed form applies, 1 when the DP one
// does, 1 when the replicas fold, the same decided from the cluster's description (which must agree), and 1 when
// the TP ranks fold.
std::string simulate(const Scenario& s, bool force_ring, bool force_dp_ring = false, bool all_replicas = false) {
  std::uint64_t comms = 0;
  sg4::Comm::on_send_cb([&comms](const sg4::Comm&) { ++comms; });
  const Platform platform = Platform::build(engine(), s.cluster, s.profile);
  const ModelSpec model = gpt_like(s.microbatches * s.parallel.dp);
  const ParallelSpec par = validate(model, s.parallel, s.cluster);
  IterationOptions options = s.options;
  options.force_tp_ring = force_ring;
  options.force_dp_ring = force_dp_ring;
  options.all_replicas = s.options.all_replicas || all_replicas;
  const IterationResult r = simulate_iteration(engine(), platform, model, par, CostParams{}, s.plan, options);
  return test::to_text(r, {static_cast<double>(comms), tp_closed_form_applies(platform, par) ? 1.0 : 0.0,
                           dp_closed_form_applies(platform, par, options.variability) ? 1.0 : 0.0,
                           replicas_fold(platform, par, options.variability) ? 1.0 : 0.0,
                           replicas_fold(s.cluster, par, options.variability) ? 1.0 : 0.0,
                           tp_ranks_fold(platform, par, options.variability) ? 1.0 : 0.0});
}

// Simulates `s` with the closed form (where it applies) and with the forced ring, and compares every figure.
// Returns {closed-form run, ring run}.
// `which`: the collective whose ring is forced in the second run (the other keeps whatever applies in both).
enum class Rings { kTp, kDp };
std::pair<ChildResult, ChildResult> expect_closed_form_equals_ring(const Scenario& s, Rings which = Rings::kTp) {
  const ChildResult fast = test::simulate_in_child([&s] { return simulate(s, false); });
  const ChildResult ring =
      test::simulate_in_child([&s, which] { return simulate(s, which == Rings::kTp, which == Rings::kDp); });
  EXPECT_GT(fast.result.iteration_s, 0.0);
  test::expect_same_result(fast.result, ring.result);
  EXPECT_EQ(fast.extra.size(), 6U);
  if (fast.extra.size() == 6U) {
    // On a star fabric both decide alike; on a fat tree the routes decide, so the spec's answer is only "no".
    if (s.cluster.fabric == Fabric::kStar)
      EXPECT_EQ(fast.extra[3], fast.extra[4]) << "replicas_fold() from the platform and from the cluster spec differ";
    else
      EXPECT_EQ(fast.extra[4], 0.0) << "replicas_fold() from the cluster spec of a fat tree";
  }
  return {fast, ring};
}

// Where the closed form applies, the rings are gone: far fewer messages than with the forced ring.
void expect_closed_form_taken(const std::pair<ChildResult, ChildResult>& runs, Rings which = Rings::kTp) {
  ASSERT_EQ(runs.first.extra.size(), 6U);
  ASSERT_EQ(runs.second.extra.size(), 6U);
  EXPECT_EQ(runs.first.extra[which == Rings::kTp ? 1 : 2], 1.0)
      << (which == Rings::kTp ? "tp" : "dp") << "_closed_form_applies() should hold for this layout";
  // The TP rings carry most messages; the DP rings 2(dp − 1) per member and all-reduce, beside the pipeline's.
  EXPECT_LT(runs.first.extra[0] * (which == Rings::kTp ? 5 : 1), runs.second.extra[0])
      << "messages: " << runs.first.extra[0] << " with the closed form, " << runs.second.extra[0] << " with the ring";
}

TEST(TpClosedForm, EqualsRingOneFOneB) { expect_closed_form_taken(expect_closed_form_equals_ring(Scenario{})); }

TEST(TpClosedForm, EqualsRingWithPowerSgd) {
  Scenario s;
  s.plan = DpSyncPlan{StageSync{16}, StageSync{32}, StageSync{0}, StageSync{64}};
  expect_closed_form_taken(expect_closed_form_equals_ring(s));
}

TEST(TpClosedForm, EqualsRingWithCompressedPipelineMessages) {
  Scenario s;
  s.plan = DpSyncPlan{StageSync{16, 0}, StageSync{0, 8}, StageSync{32, 16}, StageSync{0, 4}};
  expect_closed_form_taken(expect_closed_form_equals_ring(s));
}

TEST(TpClosedForm, EqualsRingInterleaved) {
  Scenario s;
  s.parallel = layout_of(8, 4, 2, PipelineSchedule::kInterleaved, 2);
  expect_closed_form_taken(expect_closed_form_equals_ring(s));
}

TEST(TpClosedForm, EqualsRingGpipe) {
  Scenario s;
  s.parallel = layout_of(8, 4, 2, PipelineSchedule::kGpipe);
  s.plan = powersgd_plan(4, 32);
  expect_closed_form_taken(expect_closed_form_equals_ring(s));
}

// The calibrated profile's size-dependent efficiency and latency factor enter the closed form as SimGrid's factor
// callbacks apply them.
TEST(TpClosedForm, EqualsRingOnTheCalibratedProfile) {
  Scenario s;
  s.profile = h100_calibrated();
  s.plan = powersgd_plan(4, 64);
  expect_closed_form_taken(expect_closed_form_equals_ring(s));
}

// A fat tree with 2:1 oversubscribed leaf uplinks: the DP rings and pipeline transfers contend there, which the TP
// rings inside the nodes never see.
TEST(TpClosedForm, EqualsRingOnAnOversubscribedFatTree) {
  Scenario s;
  s.cluster.fabric = Fabric::kFatTree;
  s.cluster.fat_tree_nodes_per_leaf = 4;
  s.cluster.oversubscription = 2;
  s.plan = powersgd_plan(4, 16);
  expect_closed_form_taken(expect_closed_form_equals_ring(s));
}

// Jitter and stragglers make TP members arrive at different times: a ring step waits for its predecessor's chunk,
// so the ring still ends (latest arrival) + closed form for every member.
TEST(TpClosedForm, EqualsRingWithJitterAndStragglers) {
  Scenario s;
  s.plan = powersgd_plan(4, 32);
  s.options.variability = {0.3, 0.25, 1.7, 11};
  expect_closed_form_taken(expect_closed_form_equals_ring(s));
}

TEST(TpClosedForm, EqualsRingInterleavedWithJitterOnTheCalibratedProfile) {
  Scenario s;
  s.profile = h100_calibrated();
  s.parallel = layout_of(8, 4, 2, PipelineSchedule::kInterleaved, 2);
  s.options.variability.compute_jitter_cv = 0.2;
  s.options.variability.seed = 5;
  expect_closed_form_taken(expect_closed_form_equals_ring(s));
}

// The timeline keeps one "tp F<mb>" / "tp B<mb>" interval of category "tp" per pass and GPU, at the same times.
TEST(TpClosedForm, TimelineKeepsTheTpIntervals) {
  Scenario s;
  s.options.record_timeline = true;
  const auto runs = expect_closed_form_equals_ring(s);
  expect_closed_form_taken(runs);
  int tp_events = 0;
  for (const TimelineEvent& e : runs.first.result.timeline) {
    if (e.category != "tp") continue;
    ++tp_events;
    EXPECT_TRUE(e.name.rfind("tp F", 0) == 0 || e.name.rfind("tp B", 0) == 0) << e.name;
    EXPECT_GT(e.end_s, e.start_s) << e.name;
  }
  EXPECT_EQ(tp_events, 64 * 2 * s.microbatches);
}

// A layout whose closed form must not apply still sends the ring messages, the same ones as the forced ring.
void expect_ring_kept(const Scenario& s, Rings which = Rings::kTp) {
  const auto [fast, ring] = expect_closed_form_equals_ring(s, which);
  ASSERT_EQ(fast.extra.size(), 6U);
  ASSERT_EQ(ring.extra.size(), 6U);
  EXPECT_EQ(fast.extra[which == Rings::kTp ? 1 : 2], 0.0)
      << (which == Rings::kTp ? "tp" : "dp") << "_closed_form_applies() should not hold for this layout";
  EXPECT_EQ(fast.extra[0], ring.extra[0]);
  EXPECT_GT(fast.extra[0], 0.0);
}

// tp 4 on 8-GPU NVSwitch nodes under tp-pp-dp: each node holds both stages of one pipeline, whose activations
// cross the NVLink links the TP rings use.
TEST(TpClosedForm, RingStaysWhenPipelinePeersShareTheNode) {
  Scenario s;
  s.cluster = test::h100_like(2);
  s.parallel = layout_of(4, 2, 2, PipelineSchedule::kOneFOneB);
  s.parallel.order = RankOrder::kTpPpDp;
  s.plan = uncompressed_plan(2);
  s.options.variability.compute_jitter_cv = 0.1;
  expect_ring_kept(s);
}

// tp 4 on 8-GPU NVSwitch nodes under tp-dp-pp: each node holds both DP replicas of one stage, whose gradient
// ring crosses the NVLink links the TP rings use.
TEST(TpClosedForm, RingStaysWhenDpPeersShareTheNode) {
  Scenario s;
  s.cluster = test::h100_like(2);
  s.parallel = layout_of(4, 2, 2, PipelineSchedule::kOneFOneB);
  s.plan = powersgd_plan(2, 16);
  expect_ring_kept(s);
}

// DGX-1 cube-mesh: ring neighbours may share lanes or detour through a third GPU.
TEST(TpClosedForm, RingStaysOnCubeMeshNodes) {
  Scenario s;
  s.cluster = test::dgx1_like(2);
  s.parallel = layout_of(8, 1, 2, PipelineSchedule::kOneFOneB);
  s.plan = uncompressed_plan(1);
  expect_ring_kept(s);
}

// ---- the DP all-reduces' closed form (dp_closed_form_applies) against the DP ring it replaces ----
// 8 nodes of 8 GPUs (one NIC each, star fabric): tp 8 × pp 2 × dp 4, every DP ring across four nodes.
Scenario dp_scenario() {
  Scenario s;
  s.parallel = layout_of(8, 2, 4, PipelineSchedule::kOneFOneB);
  s.plan = uncompressed_plan(2);
  return s;
}

// dp_scenario at tp 8, pp 1, dp 8 with 20 M-parameter gradient buckets overlapped with the last backward pass.
Scenario overlapped_buckets_at_pp1() {
  Scenario s = dp_scenario();
  s.parallel = layout_of(8, 1, 8, PipelineSchedule::kOneFOneB);
  s.parallel.overlap_grad_reduce = true;
  s.parallel.grad_bucket_params = 20000000;
  s.plan = uncompressed_plan(1);
  return s;
}

TEST(DpClosedForm, EqualsRingOneFOneB) {
  Scenario s = dp_scenario();
  s.options.all_replicas = true;  // every replica's pipeline messages in both runs
  const auto runs = expect_closed_form_equals_ring(s, Rings::kDp);
  expect_closed_form_taken(runs, Rings::kDp);
  // Exactly the DP ring messages are gone: pp · tp rings of dp members, 2(dp − 1) sends each.
  EXPECT_EQ(runs.second.extra[0] - runs.first.extra[0], 2 * 8 * 4 * 2 * (4 - 1));
}

TEST(DpClosedForm, EqualsRingWithPowerSgdPerStage) {
  Scenario s = dp_scenario();
  s.plan = DpSyncPlan{StageSync{16}, StageSync{0}};
  expect_closed_form_taken(expect_closed_form_equals_ring(s, Rings::kDp), Rings::kDp);
}

TEST(DpClosedForm, EqualsRingInterleavedOnTheCalibratedProfile) {
  Scenario s = dp_scenario();
  s.parallel = layout_of(8, 2, 4, PipelineSchedule::kInterleaved, 2);
  s.profile = h100_calibrated();
  s.plan = powersgd_plan(2, 32);
  expect_closed_form_taken(expect_closed_form_equals_ring(s, Rings::kDp), Rings::kDp);
}

// Jitter and stragglers: DP members reach their sync at different times.
TEST(DpClosedForm, EqualsRingWithJitterAndStragglers) {
  Scenario s = dp_scenario();
  s.plan = powersgd_plan(2, 16);
  s.options.variability = {0.3, 0.25, 1.7, 11};
  expect_closed_form_taken(expect_closed_form_equals_ring(s, Rings::kDp), Rings::kDp);
}

// TP and pipeline peers inside a node (tp 4, pp 2, tp-pp-dp order): the DP rings still only cross NICs.
TEST(DpClosedForm, EqualsRingWhenPipelinePeersShareTheNode) {
  Scenario s = dp_scenario();
  s.parallel = layout_of(4, 2, 8, PipelineSchedule::kOneFOneB);
  s.parallel.order = RankOrder::kTpPpDp;
  s.options.variability.compute_jitter_cv = 0.1;
  expect_closed_form_taken(expect_closed_form_equals_ring(s, Rings::kDp), Rings::kDp);
}

// pp 1 with gradient buckets overlapped with the last backward pass: no pipeline sends share the NICs.
TEST(DpClosedForm, EqualsRingWithOverlappedBucketsAtPp1) {
  Scenario s = overlapped_buckets_at_pp1();
  s.options.variability.compute_jitter_cv = 0.2;
  expect_closed_form_taken(expect_closed_form_equals_ring(s, Rings::kDp), Rings::kDp);
}

// The same on GPUs whose SM count is known: the final backward pass and the buckets' NCCL kernels share the GPU
// (SimGrid Execs), and the closed form still equals the ring.
TEST(DpClosedForm, EqualsRingWithOverlappedBucketsTakingSms) {
  Scenario s = overlapped_buckets_at_pp1();
  s.cluster.gpu.sm_count = 132;
  s.options.variability.compute_jitter_cv = 0.2;
  expect_closed_form_taken(expect_closed_form_equals_ring(s, Rings::kDp), Rings::kDp);
}

// Overlapped buckets with pp > 1: the final backward's pipeline send leaves by the NIC the buckets use.
TEST(DpClosedForm, RingStaysWithOverlappedBucketsAndPipelineSends) {
  Scenario s = dp_scenario();
  s.parallel.overlap_grad_reduce = true;
  s.parallel.grad_bucket_params = 20000000;
  expect_ring_kept(s, Rings::kDp);
}

// Two GPUs per NIC (DGX-1-like NICs on NVSwitch nodes): DP rings of neighbouring GPUs share a NIC.
TEST(DpClosedForm, RingStaysWhenGpusShareANic) {
  Scenario s = dp_scenario();
  s.cluster.nics_per_node = 4;
  expect_ring_kept(s, Rings::kDp);
}

// A fat tree: routes between nodes cross leaf and spine links that other rings share.
TEST(DpClosedForm, RingStaysOnAFatTree) {
  Scenario s = dp_scenario();
  s.cluster.fabric = Fabric::kFatTree;
  s.cluster.fat_tree_nodes_per_leaf = 4;
  s.cluster.oversubscription = 2;
  expect_ring_kept(s, Rings::kDp);
}

// A non-blocking fat tree (4 nodes per leaf, as many spines): each leaf holds one stage's four replicas, the DP rings
// stay inside a leaf and each pipeline transfer crosses a spine link no other GPU's traffic uses, so no fabric link
// can bind (fabric_never_binds) and every hop is limited by its two NIC links, as on a star.
Scenario non_blocking_fat_tree() {
  Scenario s = dp_scenario();
  s.cluster.fabric = Fabric::kFatTree;
  s.cluster.fat_tree_nodes_per_leaf = 4;
  s.cluster.oversubscription = 1;
  return s;
}

TEST(DpClosedForm, EqualsRingOnANonBlockingFatTree) {
  Scenario s = non_blocking_fat_tree();
  s.options.all_replicas = true;
  expect_closed_form_taken(expect_closed_form_equals_ring(s, Rings::kDp), Rings::kDp);
}

// Jitter and stragglers: the bound must hold whatever runs together, and it does here.
TEST(DpClosedForm, EqualsRingOnANonBlockingFatTreeWithJitterAndPowerSgd) {
  Scenario s = non_blocking_fat_tree();
  s.parallel = layout_of(8, 2, 4, PipelineSchedule::kInterleaved, 2);
  s.plan = powersgd_plan(2, 16);
  s.options.variability = {0.3, 0.25, 1.7, 11};
  expect_closed_form_taken(expect_closed_form_equals_ring(s, Rings::kDp), Rings::kDp);
}

// 16 nodes, tp 8 × pp 2 × dp 8: a leaf holds four replicas of one stage, and the DP ring's hop out of the leaf
// shares a spine link with another node's pipeline transfers. Any transfers running together could load that link
// twice over, so with jitter the ring stays; with the replicas in step a node is never in its pipeline while another
// node of its stage is in its DP sync, so the link never binds, the closed form applies and the replicas fold.
Scenario shared_spine_link() {
  Scenario s = non_blocking_fat_tree();
  s.cluster = test::h100_like(16);
  s.cluster.fabric = Fabric::kFatTree;
  s.cluster.fat_tree_nodes_per_leaf = 4;
  s.parallel = layout_of(8, 2, 8, PipelineSchedule::kOneFOneB);
  return s;
}

TEST(DpClosedForm, RingStaysOnAFatTreeLinkSharedAcrossPhasesWithJitter) {
  Scenario s = shared_spine_link();
  s.options.variability.compute_jitter_cv = 0.1;
  expect_ring_kept(s, Rings::kDp);
}

TEST(DpClosedForm, EqualsRingOnAFatTreeLinkSharedAcrossPhasesInStep) {
  Scenario s = shared_spine_link();
  s.options.all_replicas = true;
  expect_closed_form_taken(expect_closed_form_equals_ring(s, Rings::kDp), Rings::kDp);
}

// tp-dp-pp order with tp 4: both DP replicas of a stage on one node, their ring inside it.
TEST(DpClosedForm, RingStaysWhenDpPeersShareTheNode) {
  Scenario s;
  s.cluster = test::h100_like(2);
  s.parallel = layout_of(4, 2, 2, PipelineSchedule::kOneFOneB);
  s.plan = powersgd_plan(2, 16);
  expect_ring_kept(s, Rings::kDp);
}

// ---- DP replica 0 alone (replicas_fold) against every replica, both with the DP closed form ----
// Returns {folded run, all replicas}; checks that folding applied and left a dp-th of the pipeline messages.
void expect_folding_exact(const Scenario& s) {
  const ChildResult folded = test::simulate_in_child([&s] { return simulate(s, false, false, false); });
  const ChildResult all = test::simulate_in_child([&s] { return simulate(s, false, false, true); });
  EXPECT_GT(folded.result.iteration_s, 0.0);
  test::expect_same_result(folded.result, all.result);
  ASSERT_EQ(folded.extra.size(), 6U);
  ASSERT_EQ(all.extra.size(), 6U);
  EXPECT_EQ(folded.extra[3], 1.0) << "replicas_fold() should hold for this layout";
  EXPECT_EQ(folded.extra[4], s.cluster.fabric == Fabric::kStar ? 1.0 : 0.0)
      << "replicas_fold() from the cluster spec: as the platform's on a star, conservative on a fat tree";
  // Each replica sends the same messages, and so does each TP index where the TP ranks fold too.
  EXPECT_DOUBLE_EQ(folded.extra[0] * s.parallel.dp * (folded.extra[5] == 1.0 ? s.parallel.tp : 1), all.extra[0]);
}

TEST(ReplicaFolding, EqualsAllReplicasOneFOneB) { expect_folding_exact(dp_scenario()); }

TEST(ReplicaFolding, EqualsAllReplicasWithPowerSgdOnTheCalibratedProfile) {
  Scenario s = dp_scenario();
  s.profile = h100_calibrated();
  s.plan = DpSyncPlan{StageSync{32}, StageSync{0}};
  expect_folding_exact(s);
}

TEST(ReplicaFolding, EqualsAllReplicasInterleavedWithPipelinePeersInANode) {
  Scenario s = dp_scenario();
  s.parallel = layout_of(4, 2, 8, PipelineSchedule::kInterleaved, 2);
  s.parallel.order = RankOrder::kTpPpDp;
  s.plan = powersgd_plan(2, 16);
  expect_folding_exact(s);
}

TEST(ReplicaFolding, EqualsAllReplicasWithOverlappedBucketsAtPp1) { expect_folding_exact(overlapped_buckets_at_pp1()); }

TEST(ReplicaFolding, EqualsAllReplicasWithOverlappedBucketsTakingSms) {
  Scenario s = overlapped_buckets_at_pp1();
  s.cluster.gpu.sm_count = 132;
  expect_folding_exact(s);
}

TEST(ReplicaFolding, EqualsAllReplicasOnANonBlockingFatTree) { expect_folding_exact(non_blocking_fat_tree()); }

TEST(ReplicaFolding, EqualsAllReplicasInterleavedWithPowerSgdOnAFatTreeOnTheCalibratedProfile) {
  Scenario s = non_blocking_fat_tree();
  s.parallel = layout_of(8, 2, 4, PipelineSchedule::kInterleaved, 2);
  s.profile = h100_calibrated();
  s.plan = DpSyncPlan{StageSync{32}, StageSync{0}};
  expect_folding_exact(s);
}

TEST(ReplicaFolding, EqualsAllReplicasOnAFatTreeLinkSharedAcrossPhases) {
  Scenario s = shared_spine_link();
  s.plan = powersgd_plan(2, 16);
  expect_folding_exact(s);
}

// Jitter makes replicas differ: every replica is simulated (the DP closed form still applies).
TEST(ReplicaFolding, NotWithComputeJitter) {
  Scenario s = dp_scenario();
  s.options.variability.compute_jitter_cv = 0.1;
  const ChildResult run = test::simulate_in_child([&s] { return simulate(s, false); });
  ASSERT_EQ(run.extra.size(), 6U);
  EXPECT_EQ(run.extra[2], 1.0);
  EXPECT_EQ(run.extra[3], 0.0);
  EXPECT_EQ(run.extra[4], 0.0);
}

}  // namespace
}  // namespace edgc::sim
