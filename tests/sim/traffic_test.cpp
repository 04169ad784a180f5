// The traffic declaration (sim/src/impl/traffic.hpp) against what the GPU worker does: every pipeline message of
// every pass and every pair of every group the worker's collectives run over is a declared pair, in its phase, so
// that the closed-form and folding arguments that bound the declared pairs see all of the worker's traffic.
#include "impl/traffic.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "edgc/sim/cost_model.hpp"
#include "edgc/sim/pipeline_schedule.hpp"
#include "model_test_util.hpp"

namespace edgc::sim {
namespace {

using impl::Exchange;
using impl::Phase;
using impl::Traffic;

// (src, dst, phase, traffic) of every declared pair of the layout.
using Pair = std::tuple<int, int, Phase, Traffic>;

std::set<Pair> declared(const Layout& layout, const ParallelSpec& par) {
  std::set<Pair> pairs;
  for (int r = 0; r < layout.world_size(); ++r)
    for (const Exchange& e : impl::sent_by(layout, par, r)) {
      EXPECT_EQ(e.src, r);
      EXPECT_NE(e.dst, r) << "rank " << r << " declares a pair to itself";
      pairs.insert({e.src, e.dst, e.phase, e.traffic});
    }
  return pairs;
}

struct Case {
  std::string name;
  ParallelSpec par;
  int gpus_per_node = 8;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  ParallelSpec p = test::layout(2, 4, 2);
  p.microbatches = 8;
  out.push_back({"1f1b tp-dp-pp", p});
  p.order = RankOrder::kTpPpDp;
  out.push_back({"1f1b tp-pp-dp", p});
  ParallelSpec il = test::layout(1, 4, 2);
  il.microbatches = 8;
  il.schedule = PipelineSchedule::kInterleaved;
  il.virtual_stages = 2;
  out.push_back({"interleaved", il, 4});
  ParallelSpec fused = test::layout(2, 3, 4);
  fused.microbatches = 6;
  fused.fused_embedding_sync = true;
  out.push_back({"fused embedding", fused, 4});
  ParallelSpec gpipe = test::layout(4, 2, 1);
  gpipe.microbatches = 4;
  gpipe.schedule = PipelineSchedule::kGpipe;
  out.push_back({"gpipe dp 1", gpipe});
  ParallelSpec dp_only = test::layout(2, 1, 4);
  dp_only.microbatches = 2;
  out.push_back({"pp 1", dp_only, 2});
  return out;
}

TEST(Traffic, EveryPipelineMessageOfEveryPassIsDeclared) {
  for (const Case& c : cases()) {
    const Layout layout(c.par, c.gpus_per_node);
    const std::set<Pair> pairs = declared(layout, c.par);
    for (int r = 0; r < layout.world_size(); ++r) {
      const RankCoord rc = layout.coord_of(r);
      for (const Pass& pass : pass_order(c.par.schedule, c.par.pp, rc.pp, c.par.microbatches, c.par.virtual_stages)) {
        const bool forward = pass.kind == PassKind::kForward;
        const std::optional<impl::ChunkAt> to = forward ? impl::activation_receiver(c.par, rc.pp, pass.chunk)
                                                        : impl::gradient_receiver(c.par, rc.pp, pass.chunk);
        if (!to) continue;
        ASSERT_LT(to->chunk, model_chunks(c.par)) << c.name;
        const int dst = layout.rank_of({rc.tp, to->stage, rc.dp});
        EXPECT_TRUE(pairs.count({r, dst, Phase::kPipeline, Traffic::kPipelineP2p}))
            << c.name << ": rank " << r << " sends " << (forward ? "activations" : "gradients") << " to " << dst;
      }
    }
  }
}

TEST(Traffic, MessagesRunAlongTheVirtualPipeline) {
  ParallelSpec p = test::layout(1, 4, 1);
  p.schedule = PipelineSchedule::kInterleaved;
  p.virtual_stages = 3;
  ASSERT_TRUE(impl::activation_receiver(p, 3, 0).has_value());
  EXPECT_EQ(impl::activation_receiver(p, 3, 0)->stage, 0);  // the wrap to the next chunk
  EXPECT_EQ(impl::activation_receiver(p, 3, 0)->chunk, 1);
  EXPECT_FALSE(impl::activation_receiver(p, 3, 2).has_value());  // the model's last chunk
  EXPECT_EQ(impl::gradient_receiver(p, 0, 2)->stage, 3);
  EXPECT_EQ(impl::gradient_receiver(p, 0, 2)->chunk, 1);
  EXPECT_FALSE(impl::gradient_receiver(p, 0, 0).has_value());
}

// Every pair a ring over `group` in member order may use (each member to its successor), or with `all_pairs` every
// ordered pair of distinct members (rings inside a node may be several, in any order).
void expect_group_declared(const std::set<Pair>& pairs, const impl::RankGroup& group, Phase phase, Traffic traffic,
                           bool all_pairs, const std::string& name) {
  const auto n = group.ranks.size();
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j || (!all_pairs && j != (i + 1) % n)) continue;
      EXPECT_TRUE(pairs.count({group.ranks[i], group.ranks[j], phase, traffic}))
          << name << ": group " << group.tag << " sends " << group.ranks[i] << " → " << group.ranks[j];
    }
}

TEST(Traffic, EveryGroupOfTheWorkersCollectivesIsDeclared) {
  for (const Case& c : cases()) {
    const Layout layout(c.par, c.gpus_per_node);
    const std::set<Pair> pairs = declared(layout, c.par);
    for (const impl::RankGroup& g : impl::tp_rank_groups(layout))
      expect_group_declared(pairs, g, Phase::kPipeline, Traffic::kTensorParallel, true, c.name);
    for (const impl::RankGroup& g : impl::dp_rank_groups(layout))
      expect_group_declared(pairs, g, Phase::kDpSync, Traffic::kDataParallel, false, c.name);
    if (c.par.pp > 1)
      for (const impl::RankGroup& g : impl::embedding_rank_groups(layout, false))
        expect_group_declared(pairs, g, Phase::kEmbedding, Traffic::kEmbedding, false, c.name);
    if (fused_embedding_sync_applies(c.par))
      for (const impl::RankGroup& g : impl::embedding_rank_groups(layout, true))
        expect_group_declared(pairs, g, Phase::kEmbedding, Traffic::kEmbedding, false, c.name);
  }
}

TEST(Traffic, GroupsCoverEveryRankOnce) {
  for (const Case& c : cases()) {
    const Layout layout(c.par, c.gpus_per_node);
    for (const auto& groups : {impl::tp_rank_groups(layout), impl::dp_rank_groups(layout)}) {
      std::multiset<int> seen;
      for (const impl::RankGroup& g : groups) seen.insert(g.ranks.begin(), g.ranks.end());
      ASSERT_EQ(static_cast<int>(seen.size()), layout.world_size()) << c.name;
      for (int r = 0; r < layout.world_size(); ++r) EXPECT_EQ(seen.count(r), 1U) << c.name << ": rank " << r;
    }
  }
}

}  // namespace
}  // namespace edgc::sim
