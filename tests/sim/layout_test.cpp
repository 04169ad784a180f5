#include "edgc/sim/layout.hpp"

#include <gtest/gtest.h>

#include "model_test_util.hpp"

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"

namespace edgc::sim {
namespace {

using test::layout;
using test::small_model;

ClusterSpec cluster(int nodes, int gpus_per_node) {
  ClusterSpec c;
  c.nodes = nodes;
  c.gpus_per_node = gpus_per_node;
  return c;
}

TEST(Layout, CoordinatesRoundTripInMegatronOrder) {
  const Layout l(layout(2, 4, 3), 8);
  ASSERT_EQ(l.world_size(), 24);
  for (int rank = 0; rank < l.world_size(); ++rank) EXPECT_EQ(l.rank_of(l.coord_of(rank)), rank);
  // TP innermost, then DP, then PP.
  EXPECT_EQ(l.rank_of({.tp = 1, .pp = 0, .dp = 0}), 1);
  EXPECT_EQ(l.rank_of({.tp = 0, .pp = 0, .dp = 1}), 2);
  EXPECT_EQ(l.rank_of({.tp = 0, .pp = 1, .dp = 0}), 6);
  EXPECT_EQ(l.rank_of({.tp = 1, .pp = 3, .dp = 2}), 23);
  EXPECT_THROW((void)l.rank_of({.tp = 2, .pp = 0, .dp = 0}), InternalError);
  EXPECT_THROW((void)l.coord_of(24), InternalError);
}

TEST(Layout, GroupsPartitionTheRanks) {
  const Layout l(layout(4, 2, 4), 8);
  const std::vector<std::function<std::vector<int>(int)>> kinds = {
      [&](int r) { return l.tp_group(r); }, [&](int r) { return l.dp_group(r); }, [&](int r) { return l.pipeline(r); }};
  const std::vector<int> sizes = {4, 4, 2};
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    std::set<std::vector<int>> groups;
    for (int rank = 0; rank < l.world_size(); ++rank) {
      const auto g = kinds[k](rank);
      EXPECT_EQ(static_cast<int>(g.size()), sizes[k]);
      EXPECT_NE(std::find(g.begin(), g.end(), rank), g.end());
      groups.insert(g);
    }
    EXPECT_EQ(static_cast<int>(groups.size()) * sizes[k], l.world_size());  // disjoint cover
  }
  EXPECT_EQ(l.tp_group(5), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(l.dp_group(5), (std::vector<int>{1, 5, 9, 13}));
  EXPECT_EQ(l.pipeline(5), (std::vector<int>{5, 21}));
}

TEST(Layout, TensorGroupsStayInsideANode) {
  const Layout l(layout(4, 4, 2), 8);
  for (int rank = 0; rank < l.world_size(); ++rank) {
    for (int peer : l.tp_group(rank)) EXPECT_EQ(l.node_of(peer), l.node_of(rank));
  }
  // With tp·dp = 8 = gpus_per_node each pipeline stage owns one node.
  for (int rank = 0; rank < l.world_size(); ++rank) EXPECT_EQ(l.node_of(rank), l.coord_of(rank).pp);
}

TEST(Layout, TpPpDpOrderPutsDataParallelPeersOnOtherNodes) {
  ParallelSpec p = layout(4, 4, 2);
  p.order = RankOrder::kTpPpDp;
  const Layout l(p, 8);
  for (int rank = 0; rank < l.world_size(); ++rank) EXPECT_EQ(l.rank_of(l.coord_of(rank)), rank);
  // TP innermost, then PP, then DP.
  EXPECT_EQ(l.rank_of({.tp = 0, .pp = 1, .dp = 0}), 4);
  EXPECT_EQ(l.rank_of({.tp = 0, .pp = 0, .dp = 1}), 16);
  EXPECT_EQ(l.rank_of({.tp = 3, .pp = 3, .dp = 1}), 31);
  for (int rank = 0; rank < l.world_size(); ++rank) {
    for (int peer : l.tp_group(rank)) EXPECT_EQ(l.node_of(peer), l.node_of(rank));
    for (int peer : l.dp_group(rank)) {
      if (peer != rank) {
        EXPECT_NE(l.node_of(peer), l.node_of(rank));
      }
    }
  }
  EXPECT_EQ(l.dp_group(5), (std::vector<int>{5, 21}));
  EXPECT_EQ(l.pipeline(5), (std::vector<int>{1, 5, 9, 13}));
}

TEST(LayoutValidate, AcceptsAndDerivesMicrobatches) {
  const ParallelSpec p = validate(small_model(), layout(2, 4, 2), cluster(2, 8));
  EXPECT_EQ(p.microbatches, 32 / (2 * 2));
  EXPECT_EQ(layers_per_stage(small_model(), p), 2);
  ParallelSpec given = layout(2, 4, 2);
  given.microbatches = 8;
  EXPECT_EQ(validate(small_model(), given, cluster(2, 8)).microbatches, 8);
}

TEST(LayoutValidate, InterleavedSplitsLayersIntoChunks) {
  ParallelSpec p = layout(2, 2, 4);
  p.schedule = PipelineSchedule::kInterleaved;
  p.virtual_stages = 2;
  const ParallelSpec ok = validate(small_model(), p, cluster(2, 8));
  EXPECT_EQ(ok.microbatches, 4);
  EXPECT_EQ(layers_per_stage(small_model(), ok), 4);
  EXPECT_EQ(layers_per_chunk(small_model(), ok), 2);
}

// Runs validate and returns the field of its ConfigError ("" when it did not throw one).
std::string failing_field(const ModelSpec& m, const ParallelSpec& p, const ClusterSpec& c) {
  try {
    (void)validate(m, p, c, "scenario.json");
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.where(), "scenario.json");
    EXPECT_NE(std::string(e.what()).find(e.field()), std::string::npos);
    return e.field();
  }
  return "";
}

TEST(LayoutValidate, EveryErrorNamesItsKey) {
  const ModelSpec m = small_model();
  const ParallelSpec p = layout(2, 4, 2);
  const ClusterSpec c = cluster(2, 8);
  auto with_model = [&](auto edit) {
    ModelSpec x = m;
    edit(x);
    return failing_field(x, p, c);
  };
  auto with_parallel = [&](auto edit) {
    ParallelSpec x = p;
    edit(x);
    return failing_field(m, x, c);
  };
  EXPECT_EQ(failing_field(m, p, c), "");
  EXPECT_EQ(failing_field(m, layout(2, 4, 4), c), "parallelism.dp");  // 32 GPUs on 16
  EXPECT_EQ(failing_field(m, layout(2, 2, 2), cluster(1, 8)), "");
  EXPECT_EQ(failing_field(m, layout(4, 2, 1), cluster(1, 8)), "");
  EXPECT_EQ(failing_field(m, layout(3, 1, 2), cluster(1, 6)), "model.heads");  // 8 heads over tp 3
  EXPECT_EQ(failing_field(m, layout(3, 2, 2), cluster(2, 6)), "model.heads");
  ModelSpec m12 = m;
  m12.heads = 12;
  m12.hidden = 252;
  EXPECT_EQ(failing_field(m12, layout(4, 1, 3), cluster(2, 6)), "parallelism.tp");  // 4 ∤ 6 GPUs per node
  EXPECT_EQ(failing_field(m, layout(1, 3, 2), cluster(1, 6)), "model.layers");      // 8 layers over pp 3
  EXPECT_EQ(with_model([](ModelSpec& x) { x.hidden = 260; }), "model.hidden");
  EXPECT_EQ(with_model([](ModelSpec& x) { x.global_batch_size = 30; }), "model.global_batch_size");
  EXPECT_EQ(with_parallel([](ParallelSpec& x) { x.microbatches = 7; }), "parallelism.microbatches");
  EXPECT_EQ(with_parallel([](ParallelSpec& x) { x.microbatches = -1; }), "parallelism.microbatches");
  EXPECT_EQ(with_parallel([](ParallelSpec& x) { x.virtual_stages = 2; }), "parallelism.virtual_stages");
  EXPECT_EQ(with_parallel([](ParallelSpec& x) {
              x.schedule = PipelineSchedule::kInterleaved;
              x.virtual_stages = 4;
            }),
            "model.layers");  // 8 layers over pp·v = 16 chunks
  // 32 / (2·2) = 8 micro-batches divisible by pp 4, but 12 / (2·2) = 3 is not.
  EXPECT_EQ(with_parallel([](ParallelSpec& x) { x.schedule = PipelineSchedule::kInterleaved; }), "");
  {
    ModelSpec x = m;
    x.global_batch_size = 12;
    ParallelSpec y = p;
    y.schedule = PipelineSchedule::kInterleaved;
    EXPECT_EQ(failing_field(x, y, c), "parallelism.microbatches");
  }
  {
    ParallelSpec y = layout(2, 1, 8);
    y.schedule = PipelineSchedule::kInterleaved;
    EXPECT_EQ(failing_field(m, y, c), "parallelism.pp");  // interleaving needs a pipeline
  }
  EXPECT_EQ(with_model([](ModelSpec& x) { x.dtype = "int8"; }), "model.dtype");
  // Non-positive sizes.
  EXPECT_EQ(with_model([](ModelSpec& x) { x.layers = 0; }), "model.layers");
  EXPECT_EQ(with_model([](ModelSpec& x) { x.hidden = -256; }), "model.hidden");
  EXPECT_EQ(with_model([](ModelSpec& x) { x.heads = 0; }), "model.heads");
  EXPECT_EQ(with_model([](ModelSpec& x) { x.seq_len = 0; }), "model.seq_len");
  EXPECT_EQ(with_model([](ModelSpec& x) { x.vocab = 0; }), "model.vocab");
  EXPECT_EQ(with_model([](ModelSpec& x) { x.micro_batch_size = 0; }), "model.micro_batch_size");
  EXPECT_EQ(with_model([](ModelSpec& x) { x.global_batch_size = 0; }), "model.global_batch_size");
  EXPECT_EQ(with_parallel([](ParallelSpec& x) { x.tp = 0; }), "parallelism.tp");
  EXPECT_EQ(with_parallel([](ParallelSpec& x) { x.pp = -1; }), "parallelism.pp");
  EXPECT_EQ(with_parallel([](ParallelSpec& x) { x.dp = 0; }), "parallelism.dp");
  EXPECT_EQ(with_parallel([](ParallelSpec& x) { x.virtual_stages = 0; }), "parallelism.virtual_stages");
  EXPECT_EQ(failing_field(m, p, cluster(0, 8)), "cluster.nodes");
  EXPECT_EQ(failing_field(m, p, cluster(2, 0)), "cluster.gpus_per_node");
}

}  // namespace
}  // namespace edgc::sim
