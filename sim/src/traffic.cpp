#include "impl/traffic.hpp"

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "edgc/sim/cost_model.hpp"

namespace edgc::sim::impl {

namespace {

// The global rank at position j of stage s (stage_position).
int at_position(const Layout& layout, int s, int j) { return layout.rank_of({j % layout.tp(), s, j / layout.tp()}); }

}  // namespace

std::vector<Exchange> sent_by(const Layout& layout, const ParallelSpec& parallel, int rank) {
  std::vector<Exchange> out;
  const RankCoord c = layout.coord_of(rank);
  const int pp = layout.pp();
  if (pp > 1) {
    const std::vector<int> pipe = layout.pipeline(rank);
    const auto stage = [&](int s) { return pipe[static_cast<std::size_t>(s)]; };
    out.push_back({rank, stage((c.pp + 1) % pp), Phase::kPipeline, Traffic::kPipelineP2p});
    out.push_back({rank, stage((c.pp + pp - 1) % pp), Phase::kPipeline, Traffic::kPipelineP2p});
    if (c.pp == 0 || c.pp == pp - 1)
      out.push_back({rank, stage(pp - 1 - c.pp), Phase::kEmbedding, Traffic::kEmbedding});
    if ((c.pp == 0 || c.pp == pp - 1) && fused_embedding_sync_applies(parallel)) {
      // The fused ring over stage 0's dp GPUs, then stage pp − 1's (embedding_rank_groups): this GPU's successor.
      const int dp = layout.dp();
      const int next = ((c.pp == 0 ? 0 : dp) + c.dp + 1) % (2 * dp);
      out.push_back(
          {rank, layout.rank_of({c.tp, next < dp ? 0 : pp - 1, next % dp}), Phase::kEmbedding, Traffic::kEmbedding});
    }
  }
  if (layout.dp() > 1) {
    const std::vector<int> dp = layout.dp_group(rank);
    out.push_back(
        {rank, dp[static_cast<std::size_t>((c.dp + 1) % layout.dp())], Phase::kDpSync, Traffic::kDataParallel});
  }
  for (const int q : layout.tp_group(rank))
    if (q != rank) out.push_back({rank, q, Phase::kPipeline, Traffic::kTensorParallel});
  if (parallel.expert_groups) {  // ep_rank_groups and edp_rank_groups, this GPU's members only
    const int j = stage_position(c, layout.tp());
    const int ep = parallel.ep, expert_dp = layout.tp() * layout.dp() / ep;
    const auto at = [&](int position) {
      return layout.rank_of({position % layout.tp(), c.pp, position / layout.tp()});
    };
    for (int e = 0; e < ep && ep > 1; ++e)
      if (const int q = at(j / ep * ep + e); q != rank)
        out.push_back({rank, q, Phase::kPipeline, Traffic::kExpertParallel});
    if (expert_dp > 1)
      out.push_back({rank, at((j / ep + 1) % expert_dp * ep + j % ep), Phase::kDpSync, Traffic::kExpertDataParallel});
  }
  return out;
}

std::optional<ChunkAt> activation_receiver(const ParallelSpec& parallel, int stage, int chunk) {
  if (stage < parallel.pp - 1) return ChunkAt{stage + 1, chunk};
  if (chunk < parallel.virtual_stages - 1) return ChunkAt{0, chunk + 1};
  return std::nullopt;
}

std::optional<ChunkAt> gradient_receiver(const ParallelSpec& parallel, int stage, int chunk) {
  if (stage > 0) return ChunkAt{stage - 1, chunk};
  if (chunk > 0) return ChunkAt{parallel.pp - 1, chunk - 1};
  return std::nullopt;
}

std::vector<RankGroup> tp_rank_groups(const Layout& layout) {
  std::vector<RankGroup> groups;
  for (int s = 0; s < layout.pp(); ++s)
    for (int d = 0; d < layout.dp(); ++d)
      groups.push_back(
          {layout.tp_group(layout.rank_of({0, s, d})), "tp-s" + std::to_string(s) + "d" + std::to_string(d)});
  return groups;
}

std::vector<RankGroup> dp_rank_groups(const Layout& layout) {
  std::vector<RankGroup> groups;
  for (int s = 0; s < layout.pp(); ++s)
    for (int t = 0; t < layout.tp(); ++t)
      groups.push_back(
          {layout.dp_group(layout.rank_of({t, s, 0})), "dp-s" + std::to_string(s) + "t" + std::to_string(t)});
  return groups;
}

std::vector<RankGroup> ep_rank_groups(const Layout& layout, const ParallelSpec& parallel) {
  std::vector<RankGroup> groups;
  if (!parallel.expert_groups || parallel.ep < 2) return groups;
  for (int s = 0; s < layout.pp(); ++s)
    for (int g = 0; g < expert_dp_size(parallel); ++g) {
      RankGroup rg{{}, "ep-s" + std::to_string(s) + "g" + std::to_string(g)};
      for (int e = 0; e < parallel.ep; ++e) rg.ranks.push_back(at_position(layout, s, g * parallel.ep + e));
      groups.push_back(std::move(rg));
    }
  return groups;
}

std::vector<RankGroup> edp_rank_groups(const Layout& layout, const ParallelSpec& parallel) {
  std::vector<RankGroup> groups;
  if (!parallel.expert_groups) return groups;
  for (int s = 0; s < layout.pp(); ++s)
    for (int e = 0; e < parallel.ep; ++e) {
      RankGroup rg{{}, "edp-s" + std::to_string(s) + "e" + std::to_string(e)};
      for (int k = 0; k < expert_dp_size(parallel); ++k)
        rg.ranks.push_back(at_position(layout, s, k * parallel.ep + e));
      groups.push_back(std::move(rg));
    }
  return groups;
}

std::vector<RankGroup> embedding_rank_groups(const Layout& layout, bool fused) {
  std::vector<RankGroup> groups;
  const int last = layout.pp() - 1;
  if (fused) {
    for (int t = 0; t < layout.tp(); ++t) {
      RankGroup g{{}, "femb-t" + std::to_string(t)};
      for (const int stage : {0, last})
        for (int d = 0; d < layout.dp(); ++d) g.ranks.push_back(layout.rank_of({t, stage, d}));
      groups.push_back(std::move(g));
    }
    return groups;
  }
  for (int d = 0; d < layout.dp(); ++d)
    for (int t = 0; t < layout.tp(); ++t)
      groups.push_back({{layout.rank_of({t, 0, d}), layout.rank_of({t, last, d})},
                        "emb-d" + std::to_string(d) + "t" + std::to_string(t)});
  return groups;
}

std::vector<Group> on_platform(const Platform& platform, const std::vector<RankGroup>& groups) {
  std::vector<Group> out;
  out.reserve(groups.size());
  for (const RankGroup& rg : groups) {
    Group g{{}, rg.tag};
    for (const int r : rg.ranks) g.hosts.push_back(platform.gpu(r));
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace edgc::sim::impl
