// TP ranks that fold (tp_ranks_fold, impl::tp_ranks_run_alike): where the TP all-reduces take their closed form on
// NVSwitch nodes with one NIC per GPU, on a star or on a fat tree whose links carry each flow for every TP index
// (tp_fold_fabric_copies), simulating the GPUs at TP index 0 alone must give every figure of the iteration within
// 1e-9 relative of simulating every GPU (IterationOptions::all_replicas), with tp times fewer messages (dp · tp where
// the replicas fold too). Layouts outside the argument (compute jitter, stragglers, two GPUs per NIC) keep every TP
// index. Each comparison simulates twice, each time in a forked child (one simulation per
// process).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "edgc/core/error.hpp"
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
  ParallelSpec parallel = test::layout(8, 4, 2);
  int microbatches = 4;
  DpSyncPlan plan = uncompressed_plan(4);
  ComputeVariability variability;
};

// One simulation of `s`; the extra numbers are the messages posted, 1 where tp_ranks_fold(), 1 where
// replicas_fold(), the actors created and planned_actors().
std::string simulate(const Scenario& s, bool all_replicas) {
  std::uint64_t comms = 0;
  std::uint64_t actors = 0;
  sg4::Comm::on_send_cb([&comms](const sg4::Comm&) { ++comms; });
  sg4::Actor::on_creation_cb([&actors](sg4::Actor&) { ++actors; });
  ModelSpec model = test::small_gpt(1024, 512, 4096, s.microbatches * s.parallel.dp);
  model.layers = 8;
  const ParallelSpec par = validate(model, s.parallel, s.cluster);
  IterationOptions options;
  options.variability = s.variability;
  options.all_replicas = all_replicas;
  // A fat tree's links carry each flow for every TP index left out (tp_fold_fabric_copies()); no images, so that
  // the replicas fold only as they would without the symmetric fold.
  const int copies = all_replicas ? 1 : tp_fold_fabric_copies(s.cluster, par, s.variability);
  const Platform platform = Platform::build(engine(), s.cluster, s.profile, {}, copies);
  CostParams params;
  params.compute_efficiency = 0.5;
  const IterationResult r = simulate_iteration(engine(), platform, model, par, params, s.plan, options);
  return test::to_text(r, {static_cast<double>(comms), tp_ranks_fold(platform, par, s.variability) ? 1.0 : 0.0,
                           replicas_fold(platform, par, s.variability) ? 1.0 : 0.0, static_cast<double>(actors),
                           static_cast<double>(planned_actors(s.cluster, par, s.profile.algorithm, options))});
}

// `s` on a fat tree of `per_leaf` nodes per leaf, `oversubscription` at the leaf uplinks.
Scenario on_fat_tree(int per_leaf, double oversubscription = 1.0, Scenario s = {}) {
  s.cluster.fabric = Fabric::kFatTree;
  s.cluster.fat_tree_nodes_per_leaf = per_leaf;
  s.cluster.oversubscription = oversubscription;
  return s;
}

// TP index 0 alone against every GPU: every figure alike, and tp times fewer messages (each TP index sends the
// same ones), dp · tp where the replicas fold as well.
void expect_tp_fold_exact(const Scenario& s) {
  const ChildResult folded = test::simulate_in_child([&s] { return simulate(s, false); });
  const ChildResult all = test::simulate_in_child([&s] { return simulate(s, true); });
  EXPECT_GT(folded.result.iteration_s, 0.0);
  test::expect_same_result(folded.result, all.result);
  ASSERT_EQ(folded.extra.size(), 5U);
  ASSERT_EQ(all.extra.size(), 5U);
  EXPECT_EQ(folded.extra[1], 1.0) << "tp_ranks_fold() should hold for this layout";
  EXPECT_GT(folded.extra[0], 0.0);
  const int replicas = folded.extra[2] == 1.0 ? s.parallel.dp : 1;
  EXPECT_DOUBLE_EQ(folded.extra[0] * s.parallel.tp * replicas, all.extra[0]) << "each TP index sends alike";
  // One worker per simulated GPU (no buckets here): what the actor-stack check counts, a tp-th of the replicas'.
  EXPECT_DOUBLE_EQ(folded.extra[3] * s.parallel.tp * replicas, all.extra[3]);
  EXPECT_DOUBLE_EQ(folded.extra[3], s.parallel.pp * s.parallel.dp / replicas);
  // planned_actors(): exact on a star, where the description decides both folds; an upper bound on a fat tree, where
  // it leaves the replicas to the routes.
  if (s.cluster.fabric == Fabric::kStar)
    EXPECT_EQ(folded.extra[4], folded.extra[3]);
  else
    EXPECT_GE(folded.extra[4], folded.extra[3]);
  EXPECT_EQ(all.extra[4], all.extra[3]) << "every GPU with all_replicas";
}

// Outside the argument: tp_ranks_fold() says no, every TP index runs, and the figures are the same.
void expect_every_tp_index(const Scenario& s) {
  const ChildResult run = test::simulate_in_child([&s] { return simulate(s, false); });
  const ChildResult all = test::simulate_in_child([&s] { return simulate(s, true); });
  test::expect_same_result(run.result, all.result);
  ASSERT_EQ(run.extra.size(), 5U);
  ASSERT_EQ(all.extra.size(), 5U);
  EXPECT_GE(run.extra[4], run.extra[3]) << "planned_actors() never counts fewer than run";
  EXPECT_EQ(run.extra[1], 0.0) << "tp_ranks_fold() should not hold for this layout";
  const int replicas = run.extra[2] == 1.0 ? s.parallel.dp : 1;
  EXPECT_DOUBLE_EQ(run.extra[0] * replicas, all.extra[0]) << "every TP index's messages";
}

// tp 8 × pp 4 × dp 2, 1F1B, uncompressed: the replicas fold too (DP closed form).
TEST(TpFold, OneFOneBWithTheReplicasFolded) { expect_tp_fold_exact(Scenario{}); }

// PowerSGD on two of the four stages, on the calibrated profile (its factors per link class and size).
TEST(TpFold, PowerSgdPerStageOnTheCalibratedProfile) {
  Scenario s;
  s.profile = test::h100_calibrated();
  s.plan = DpSyncPlan{StageSync{16}, StageSync{0}, StageSync{64}, StageSync{0}};
  expect_tp_fold_exact(s);
}

// The interleaved schedule (wrap-around sends from the last stage to the first).
TEST(TpFold, Interleaved) {
  Scenario s;
  s.parallel.schedule = PipelineSchedule::kInterleaved;
  s.parallel.virtual_stages = 2;
  expect_tp_fold_exact(s);
}

// Optimus-CC's fused embedding sync: one ring per TP index over the first and last stages' replicas, so the
// replicas do not fold (replicas_can_run_in_step), but each TP index still runs alike.
TEST(TpFold, FusedEmbeddingSyncKeepsTheReplicas) {
  Scenario s;
  s.parallel.fused_embedding_sync = true;
  ASSERT_TRUE(fused_embedding_sync_applies(s.parallel));
  expect_tp_fold_exact(s);
}

// tp 4 on nodes of 4 GPUs (4 NICs): TP groups fill their nodes.
TEST(TpFold, FourGpuNodes) {
  Scenario s;
  s.cluster.gpus_per_node = 4;
  s.cluster.nics_per_node = 4;
  s.cluster.nodes = 8;
  s.parallel = test::layout(4, 2, 4);
  s.plan = powersgd_plan(2, 32);
  expect_tp_fold_exact(s);
}

TEST(TpFold, NotWithComputeJitter) {
  Scenario s;
  s.variability.compute_jitter_cv = 0.1;
  expect_every_tp_index(s);
}

TEST(TpFold, NotWithStragglers) {
  Scenario s;
  s.variability.straggler_probability = 0.2;
  s.variability.straggler_slowdown = 1.5;
  expect_every_tp_index(s);
}

// Two GPUs per NIC: the pipeline sends of TP indices 2i and 2i + 1 share a NIC.
TEST(TpFold, NotWithGpusSharingANic) {
  Scenario s;
  s.cluster.nics_per_node = 4;
  expect_every_tp_index(s);
}

// Fat trees (2 nodes per leaf): every TP index of a node shares the node's, leaf and spine links alike, so TP index 0
// runs alone on a tree whose links carry each flow for all tp of them. Non-blocking: the fabric never binds, the
// replicas fold too.
TEST(TpFold, NonBlockingFatTree) {
  Scenario s = on_fat_tree(2);
  s.plan = DpSyncPlan{StageSync{16}, StageSync{0}, StageSync{64}, StageSync{0}};
  expect_tp_fold_exact(s);
}

// 2:1 oversubscribed (one spine for two nodes per leaf): the fabric binds, every replica runs, its DP rings as
// messages sharing the spine with the pipelines of others.
TEST(TpFold, OversubscribedFatTree) {
  Scenario s = on_fat_tree(2, 2);
  s.plan = DpSyncPlan{StageSync{16}, StageSync{0}, StageSync{64}, StageSync{0}};
  expect_tp_fold_exact(s);
}

TEST(TpFold, OversubscribedFatTreeInterleavedOnTheCalibratedProfile) {
  Scenario s = on_fat_tree(4, 2);
  s.profile = test::h100_calibrated();
  s.parallel.schedule = PipelineSchedule::kInterleaved;
  s.parallel.virtual_stages = 2;
  expect_tp_fold_exact(s);
}

// A fat tree with two GPUs per NIC, or with jitter: no copies, every TP index.
TEST(TpFold, NotOnAFatTreeWithGpusSharingANicOrJitter) {
  Scenario s = on_fat_tree(2);
  s.cluster.nics_per_node = 4;
  EXPECT_EQ(tp_fold_fabric_copies(s.cluster, validate(test::small_gpt(1024, 512, 4096, 8), s.parallel, s.cluster),
                                  s.variability),
            1);
  expect_every_tp_index(s);
  s.cluster.nics_per_node = 8;
  s.variability.compute_jitter_cv = 0.1;
  expect_every_tp_index(s);
}

// The description's answer (tp_ranks_fold(ClusterSpec, …), tp_fold_fabric_copies()) is the platform's, on stars and
// fat trees, where the ranks fold and where they do not.
TEST(TpFold, TheDescriptionAgreesWithThePlatform) {
  std::vector<std::pair<std::string, Scenario>> cases;
  Scenario s;
  cases.emplace_back("star", s);
  s.parallel.overlap_grad_reduce = true;  // the replicas fold by symmetry there, the TP ranks as well
  s.parallel.grad_bucket_params = 5000000;
  cases.emplace_back("overlapped buckets", s);
  s = Scenario{};
  s.parallel.fused_embedding_sync = true;
  cases.emplace_back("fused embedding sync", s);
  s = Scenario{};
  s.parallel = test::layout(4, 4, 4);  // two TP groups per node: pipeline neighbours inside a node
  cases.emplace_back("tp 4 on 8-GPU nodes", s);
  s = Scenario{};
  s.cluster.nics_per_node = 4;
  cases.emplace_back("two GPUs per NIC", s);
  s = Scenario{};
  s.variability.compute_jitter_cv = 0.1;
  cases.emplace_back("jitter", s);
  s = Scenario{};
  s.cluster = test::dgx1_like(8);
  cases.emplace_back("cube-mesh nodes", s);
  const std::size_t stars = cases.size();
  for (std::size_t i = 0; i < stars; ++i)
    cases.emplace_back(cases[i].first + ", 2:1 fat tree", on_fat_tree(2, 2, cases[i].second));
  int folding = 0;
  for (const auto& entry : cases) {
    const std::string& name = entry.first;
    const Scenario& c = entry.second;  // a plain reference: lambdas may capture it (structured bindings: C++20 only)
    const ModelSpec model = test::small_gpt(1024, 512, 4096, 8 * c.parallel.dp);
    const ParallelSpec par = validate(model, c.parallel, c.cluster);
    const bool described = tp_ranks_fold(c.cluster, par, c.variability);
    const int copies = tp_fold_fabric_copies(c.cluster, par, c.variability);
    EXPECT_EQ(copies, described && c.cluster.fabric == Fabric::kFatTree ? par.tp : 1) << name;
    const std::string platform =
        test::in_child([&c, &par, copies] {
          const Platform p = Platform::build(engine(), c.cluster, c.profile, {}, copies);
          return std::string(tp_closed_form_applies(p, par) && tp_ranks_fold(p, par, c.variability) ? "fold" : "keep");
        }).value_or("child failed");
    EXPECT_EQ(platform, described ? "fold" : "keep") << name;
    folding += described ? 1 : 0;
  }
  EXPECT_EQ(folding, 6) << "star, overlapped buckets and the fused embedding sync fold on both fabrics";
}

// A tree built for TP index 0 alone cannot run every TP index: refused, not silently wrong.
TEST(TpFold, ATreeBuiltForTpIndexZeroRefusesEveryTpIndex) {
  const Scenario s = on_fat_tree(2);
  const std::string text = test::in_child([&s] {
                             ModelSpec model = test::small_gpt(1024, 512, 4096, s.microbatches * s.parallel.dp);
                             const ParallelSpec par = validate(model, s.parallel, s.cluster);
                             const Platform platform = Platform::build(engine(), s.cluster, s.profile, {}, 8);
                             IterationOptions options;
                             options.all_replicas = true;
                             try {
                               simulate_iteration(engine(), platform, model, par, CostParams{}, s.plan, options);
                             } catch (const InternalError& e) {
                               return std::string(e.what());
                             }
                             return std::string("simulated");
                           }).value_or("child failed");
  EXPECT_NE(text.find("built for TP index 0 alone"), std::string::npos) << text;
}

}  // namespace
}  // namespace edgc::sim
