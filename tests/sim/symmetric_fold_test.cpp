// Replicas that fold by symmetry (symmetric_fold_images, impl/symmetric_fold.hpp): where the DP rings share links
// with the pipelines (overlapped gradient buckets with pp > 1, two GPUs per NIC, cube-mesh nodes), the first block
// of replicas alone, its ring transfers into other blocks sent to image hosts, must give every figure of the
// iteration within 1e-9 relative of simulating every replica (IterationOptions::all_replicas), with dp / R times
// fewer messages. Layouts outside the argument (compute jitter, a fat tree, a tree all-reduce, the fused embedding
// sync) keep every replica. Each comparison simulates twice, each time in a forked child (one simulation per
// process).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "edgc/sim/collectives.hpp"
#include "edgc/sim/cost_model.hpp"
#include "edgc/sim/iteration.hpp"
#include "edgc/sim/layout.hpp"
#include "edgc/sim/platform.hpp"
#include "iteration_test_util.hpp"
#include "model_test_util.hpp"
#include "sim_test_util.hpp"

namespace edgc::sim {
namespace {

using test::ChildResult;
using test::engine;

struct Scenario {
  ClusterSpec cluster = test::h100_like(8);  // 64 GPUs, NVSwitch nodes, one NIC per GPU, star fabric
  NetworkProfile profile;
  ParallelSpec parallel = test::layout(8, 2, 4);
  int microbatches = 4;
  DpSyncPlan plan = uncompressed_plan(2);
  ComputeVariability variability;
  bool moe = false;
  int layers = 8;
};

// tp 8 × pp 2 × dp 4 on 8 nodes with Megatron-Core's overlapped gradient buckets: the final backward pass's pipeline
// send leaves by the NIC the buckets' rings use, so neither the DP closed form nor the ordinary folding applies.
Scenario overlapped() {
  Scenario s;
  s.parallel.overlap_grad_reduce = true;
  s.parallel.grad_bucket_params = 5000000;
  return s;
}

ModelSpec model_of(const Scenario& s) {
  ModelSpec m = test::small_gpt(1024, 512, 4096, s.microbatches * s.parallel.dp);
  m.layers = s.layers;
  if (s.moe) {
    m.heads = 8;
    m.experts = 8;
    m.top_k = 2;
    m.moe_ffn_hidden = 1024;
  }
  return m;
}

// One simulation of `s` on a platform with the images symmetric_fold_images() asks for; the extra numbers are the
// messages posted, the number of imaged GPUs, the actors created, symmetric_fold_actors() and 1 where the TP ranks
// fold as well (tp_ranks_fold()).
std::string simulate(const Scenario& s, bool all_replicas) {
  std::uint64_t comms = 0;
  std::uint64_t actors = 0;
  sg4::Comm::on_send_cb([&comms](const sg4::Comm&) { ++comms; });
  sg4::Actor::on_creation_cb([&actors](sg4::Actor&) { ++actors; });
  const ModelSpec model = model_of(s);
  const ParallelSpec par = validate(model, s.parallel, s.cluster);
  const std::vector<int> images =
      all_replicas ? std::vector<int>{} : symmetric_fold_images(s.cluster, par, s.variability, s.profile.algorithm);
  const Platform platform = Platform::build(engine(), s.cluster, s.profile, images);
  IterationOptions options;
  options.variability = s.variability;
  options.all_replicas = all_replicas;
  CostParams params;
  params.compute_efficiency = 0.5;
  const IterationResult r = simulate_iteration(engine(), platform, model, par, params, s.plan, options);
  return test::to_text(r,
                       {static_cast<double>(comms), static_cast<double>(images.size()), static_cast<double>(actors),
                        static_cast<double>(symmetric_fold_actors(s.cluster, par, s.variability, s.profile.algorithm)),
                        tp_ranks_fold(platform, par, s.variability) ? 1.0 : 0.0});
}

// Folded by symmetry in blocks of `block` replicas against every replica: every figure alike, the first block's GPUs
// imaged, and dp / block times fewer messages (each block's members send what they would, some to images; tp times
// fewer again where the TP ranks fold, which symmetric_fold_actors() does not count on). Where
// the description alone proves the fold (`certain`: every DP group one member per node), symmetric_fold_actors()
// bounds the actors the run created (a stage compressed by PowerSGD has no bucket actor); elsewhere it is 0.
// Returns the folded run.
ChildResult expect_symmetric_fold_exact(const Scenario& s, int block, bool certain = true) {
  const ChildResult folded = test::simulate_in_child([&s] { return simulate(s, false); });
  const ChildResult all = test::simulate_in_child([&s] { return simulate(s, true); });
  EXPECT_GT(folded.result.iteration_s, 0.0);
  test::expect_same_result(folded.result, all.result);
  EXPECT_EQ(folded.extra.size(), 5U);
  EXPECT_EQ(all.extra.size(), 5U);
  if (folded.extra.size() != 5U || all.extra.size() != 5U) return folded;
  EXPECT_EQ(folded.extra[1], s.parallel.tp * s.parallel.pp * block) << "the first block's GPUs have images";
  const int tp_fold = folded.extra[4] == 1.0 ? s.parallel.tp : 1;
  EXPECT_DOUBLE_EQ(folded.extra[0] * s.parallel.dp / block * tp_fold, all.extra[0])
      << "each block (and TP index) sends the same messages";
  if (certain)
    EXPECT_GE(folded.extra[3], folded.extra[2]) << "symmetric_fold_actors() against the actors created";
  else
    EXPECT_EQ(folded.extra[3], 0.0);
  return folded;
}

// Outside the argument: every replica runs (as many messages as with all_replicas, but for TP indices folded), and
// the figures are the same.
void expect_every_replica(const Scenario& s) {
  const ChildResult run = test::simulate_in_child([&s] { return simulate(s, false); });
  const ChildResult all = test::simulate_in_child([&s] { return simulate(s, true); });
  test::expect_same_result(run.result, all.result);
  ASSERT_EQ(run.extra.size(), 5U);
  ASSERT_EQ(all.extra.size(), 5U);
  EXPECT_EQ(run.extra[0] * (run.extra[4] == 1.0 ? s.parallel.tp : 1), all.extra[0]) << "every replica's messages";
}

// The GPUs of replica 0 at TP index 0 (the TP ranks fold too) run their workers and bucket actors, and each of
// their 2 DP groups one image receiver; symmetric_fold_actors() counts every TP index: 16 · 2 + 16.
TEST(SymmetricFold, OverlappedBucketsWithPipelineSends) {
  const ChildResult folded = expect_symmetric_fold_exact(overlapped(), 1);
  ASSERT_EQ(folded.extra.size(), 5U);
  EXPECT_EQ(folded.extra[4], 1.0) << "tp_ranks_fold()";
  EXPECT_EQ(folded.extra[2], 2 * 2 + 2);
  EXPECT_EQ(folded.extra[3], 16 * 2 + 16);
}

TEST(SymmetricFold, OverlappedBucketsWithPowerSgdPerStageOnTheCalibratedProfile) {
  Scenario s = overlapped();
  s.profile = test::h100_calibrated();
  s.plan = DpSyncPlan{StageSync{16}, StageSync{0}};
  expect_symmetric_fold_exact(s, 1);
}

TEST(SymmetricFold, OverlappedBucketsInterleavedTakingSms) {
  Scenario s = overlapped();
  s.parallel = test::layout(8, 2, 4);
  s.parallel.schedule = PipelineSchedule::kInterleaved;
  s.parallel.virtual_stages = 2;
  s.parallel.overlap_grad_reduce = true;
  s.parallel.grad_bucket_params = 5000000;
  s.cluster.gpu.sm_count = 132;
  expect_symmetric_fold_exact(s, 1);
}

// The distributed optimizer with both overlaps: reduce-scattered buckets beside the last backward pass, all-gathered
// parameters beside the first forward pass (a second actor per GPU).
TEST(SymmetricFold, DistributedOptimizerWithBothOverlaps) {
  Scenario s = overlapped();
  s.parallel.distributed_optimizer = true;
  s.parallel.overlap_param_gather = true;
  expect_symmetric_fold_exact(s, 1);
}

// Two GPUs per NIC on NVSwitch nodes: the DP rings of a TP group's neighbours share a NIC (no closed form).
TEST(SymmetricFold, GpusSharingANic) {
  Scenario s;
  s.cluster.nics_per_node = 4;
  s.plan = powersgd_plan(2, 16);
  expect_symmetric_fold_exact(s, 1);
}

// DGX-1 cube-mesh nodes (TP rings over direct NVLinks, simulated) with two GPUs per NIC.
TEST(SymmetricFold, CubeMeshNodes) {
  Scenario s;
  s.cluster = test::dgx1_like(8);
  expect_symmetric_fold_exact(s, 1);
}

// tp 4 on nodes of 8: a node holds two replicas of a stage, so blocks are two replicas, and each DP ring has two
// members per node (two rings, one per NIC, with NVLink hops inside a block and NIC hops into the next). Ring
// forced: auto may pick the tree there, which does not shift with the blocks.
TEST(SymmetricFold, BlocksOfTwoReplicasPerNode) {
  Scenario s = overlapped();
  s.parallel = test::layout(4, 2, 8);
  s.parallel.overlap_grad_reduce = true;
  s.parallel.grad_bucket_params = 5000000;
  s.profile.algorithm = CollectiveAlgorithm::kRing;
  expect_symmetric_fold_exact(s, 2, false);
}

// A mixture of experts (tp 1, ep 4, expert-parallel groups inside a node) with overlapped buckets beside the
// all-to-alls: blocks of one node's 8 replicas per stage; the dense and expert-DP rings cross between nodes.
TEST(SymmetricFold, MixtureOfExpertsWithOverlappedBuckets) {
  Scenario s = overlapped();
  s.moe = true;
  s.layers = 4;
  s.parallel = test::layout(1, 2, 32);
  s.parallel.ep = 4;
  s.parallel.overlap_grad_reduce = true;
  s.parallel.grad_bucket_params = 2000000;
  s.profile.algorithm = CollectiveAlgorithm::kRing;
  s.plan = powersgd_plan(2, 8);
  expect_symmetric_fold_exact(s, 8, false);
}

// Megatron's tp-pp-dp rank order: a replica's stages are neighbouring nodes, and its pipeline sends stay inside it;
// moving one replica on moves pp nodes at once.
TEST(SymmetricFold, TpPpDpOrder) {
  Scenario s = overlapped();
  s.parallel.order = RankOrder::kTpPpDp;
  expect_symmetric_fold_exact(s, 1);
}

TEST(SymmetricFold, NotWithComputeJitter) {
  Scenario s = overlapped();
  s.variability.compute_jitter_cv = 0.1;
  const ChildResult run = test::simulate_in_child([&s] { return simulate(s, false); });
  ASSERT_EQ(run.extra.size(), 5U);
  EXPECT_EQ(run.extra[1], 0.0) << "no images under jitter";
  EXPECT_EQ(run.extra[3], 0.0);
}

TEST(SymmetricFold, NotOnAFatTree) {
  Scenario s = overlapped();
  s.cluster.fabric = Fabric::kFatTree;
  s.cluster.fat_tree_nodes_per_leaf = 4;
  const ParallelSpec par = validate(model_of(s), s.parallel, s.cluster);
  EXPECT_TRUE(symmetric_fold_images(s.cluster, par, s.variability).empty());
}

// Where the replicas fold anyway (the DP closed form applies), no images are asked for.
TEST(SymmetricFold, NoImagesWhereTheReplicasFold) {
  const Scenario s;
  const ParallelSpec par = validate(model_of(s), s.parallel, s.cluster);
  EXPECT_TRUE(replicas_fold(s.cluster, par, s.variability));
  EXPECT_TRUE(symmetric_fold_images(s.cluster, par, s.variability).empty());
}

// Blocks of two replicas under auto: where auto picks the tree for the DP rings (two members per node), every
// replica runs, with the same figures.
TEST(SymmetricFold, NotWhereAutoPicksTheTree) {
  Scenario s = overlapped();
  s.parallel = test::layout(4, 2, 8);
  s.parallel.overlap_grad_reduce = true;
  s.parallel.grad_bucket_params = 5000000;
  expect_every_replica(s);
}

// Mirrors whose pipelines fold by symmetry: where PowerSGD's P and Q all-reduces run the tree (auto picks it for DP
// groups with several members per node), which keeps the replicas from folding, and the distributed optimizer's
// parameter all-gather runs beside the first forward pass, which keeps plain mirrors out, the first block's
// pipelines (their all-gathers imaged) and every GPU's sync from its counterpart's arrival on must give every figure
// of every replica in full, with fewer messages.
void expect_mirrors_exact(const Scenario& s) {
  const ChildResult mirrored = test::simulate_in_child([&s] { return simulate(s, false); });
  const ChildResult all = test::simulate_in_child([&s] { return simulate(s, true); });
  EXPECT_GT(mirrored.result.iteration_s, 0.0);
  test::expect_same_result(mirrored.result, all.result);
  ASSERT_EQ(mirrored.extra.size(), 5U);
  ASSERT_EQ(all.extra.size(), 5U);
  EXPECT_GT(mirrored.extra[1], 0.0) << "the first block's GPUs have images";
  EXPECT_LT(mirrored.extra[0], all.extra[0]) << "the other blocks' pipeline messages are gone";
  EXPECT_LT(mirrored.extra[2], all.extra[2]) << "no pipeline or all-gather actors for the other blocks";
}

Scenario powersgd_beside_param_gather(Scenario s) {
  s.parallel.distributed_optimizer = true;
  s.parallel.overlap_param_gather = true;
  s.plan = powersgd_plan(2, 8);
  return s;
}

// A mixture of experts at tp 1 × pp 2 × dp 32 with expert parallelism `ep`: one node's 8 replicas per block and
// stage, each DP group 8 members on each of 4 nodes.
Scenario moe_tp1(int ep) {
  Scenario s;
  s.moe = true;
  s.layers = 4;
  s.parallel = test::layout(1, 2, 32);
  s.parallel.ep = ep;
  return powersgd_beside_param_gather(s);
}

// ep 4: each expert-DP group two GPUs per node, its syncs as messages.
TEST(SymmetricFold, MirrorsFoldTheirPipelinesForAMixtureOfExpertsWherePowerSgdRunsTheTree) {
  expect_mirrors_exact(moe_tp1(4));
}

// ep 8: each expert-DP group one GPU per node, so the expert syncs take their closed form while the dense sync runs
// the tree (expert_sync_rings_alone).
TEST(SymmetricFold, MirrorsTakeTheExpertSyncsClosedFormBesideTheDenseTree) {
  Scenario s = moe_tp1(8);
  expect_mirrors_exact(s);
  s.plan = DpSyncPlan{StageSync{8, 0, 0}, StageSync{8, 0, 0}};  // the experts' gradients reduce-scattered whole
  expect_mirrors_exact(s);
}

// A dense model at tp 2: blocks of 4 replicas (one node per stage), DP groups of 16 with 4 members per node.
TEST(SymmetricFold, MirrorsFoldTheirPipelinesForADenseModelWherePowerSgdRunsTheTree) {
  Scenario s;
  s.parallel = test::layout(2, 2, 16);
  expect_mirrors_exact(powersgd_beside_param_gather(s));
}

// Interleaved, on the calibrated profile, with the GPU's SMs shared by the all-gather's kernel.
TEST(SymmetricFold, MirrorsFoldTheirPipelinesInterleavedOnTheCalibratedProfile) {
  Scenario s = moe_tp1(4);
  s.parallel.schedule = PipelineSchedule::kInterleaved;
  s.parallel.virtual_stages = 2;
  s.profile = test::h100_calibrated();
  s.cluster.gpu.sm_count = 132;
  expect_mirrors_exact(s);
}

// A stage left uncompressed reduce-scatters its gradient buckets beside its last backward pass: its sync starts
// inside the pipeline phase, so every replica runs.
TEST(SymmetricFold, NoMirrorsWhereAStageSyncsBesideItsPasses) {
  Scenario s;
  s.parallel = test::layout(2, 2, 16);
  s.parallel.overlap_grad_reduce = true;
  s.parallel.grad_bucket_params = 5000000;
  s = powersgd_beside_param_gather(s);
  s.plan = DpSyncPlan{StageSync{8}, StageSync{0}};
  expect_every_replica(s);
}

// The first block's GPUs are imaged: for tp 8 × pp 2 × dp 4 replica 0 (one node per stage).
TEST(SymmetricFold, ImagesTheFirstBlock) {
  const Scenario s = overlapped();
  const ParallelSpec par = validate(model_of(s), s.parallel, s.cluster);
  const Layout layout(par, s.cluster.gpus_per_node);
  const std::vector<int> images = symmetric_fold_images(s.cluster, par, s.variability);
  ASSERT_EQ(images.size(), 16U);
  for (const int r : images) EXPECT_EQ(layout.coord_of(r).dp, 0) << "rank " << r;
}

}  // namespace
}  // namespace edgc::sim
