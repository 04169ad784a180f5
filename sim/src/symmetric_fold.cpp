// Replicas that fold by symmetry (impl/symmetric_fold.hpp): the block, the checks and the folded groups. The
// argument: sim/README.md, "Replicas that fold by symmetry".
#include "impl/symmetric_fold.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/group_shape.hpp"
#include "edgc/sim/cost_model.hpp"
#include "edgc/sim/engine_info.hpp"
#include "edgc/sim/iteration.hpp"
#include "impl/closed_forms.hpp"

namespace edgc::sim::impl {
namespace {

// The GPU that `rank` becomes when every replica moves `block` replicas on (around the DP group).
int shifted(const Layout& layout, int rank, int block) {
  RankCoord c = layout.coord_of(rank);
  c.dp = (c.dp + block) % layout.dp();
  return layout.rank_of(c);
}

// Whether that shift maps every node the layout uses onto one node, GPU index for GPU index (then it maps every
// link of a star platform onto a link of the same kind: a node's NVLink and NIC links by GPU index).
bool shift_maps_nodes(const Layout& layout, int gpus_per_node, int block) {
  std::vector<int> image(static_cast<std::size_t>(layout.world_size() / gpus_per_node + 1), -1);
  for (int r = 0; r < layout.world_size(); ++r) {
    const int to = shifted(layout, r, block);
    if (to % gpus_per_node != r % gpus_per_node) return false;
    int& node = image[static_cast<std::size_t>(r / gpus_per_node)];
    if (node < 0) node = to / gpus_per_node;
    if (node != to / gpus_per_node) return false;
  }
  return true;
}

// Whether `group` (its ranks `ranks`), folded with `period` members per block, shifts with the blocks: member
// i + period is member i shifted, and so is every ring channel's successor.
bool group_shifts(const Layout& layout, int block, const RankGroup& ranks, const Group& group, int period) {
  const int d = group.size();
  if (period <= 0 || d % period != 0 || d / period < 2) return false;
  for (int i = 0; i < d; ++i)
    if (shifted(layout, ranks.ranks[static_cast<std::size_t>(i)], block) !=
        ranks.ranks[static_cast<std::size_t>((i + period) % d)])
      return false;
  const collectives::Shape& shape = collectives::shape_of(group);
  for (const std::vector<int>& next : shape.next)
    for (int i = 0; i < d; ++i)
      if (next[static_cast<std::size_t>((i + period) % d)] != (next[static_cast<std::size_t>(i)] + period) % d)
        return false;
  return true;
}

}  // namespace

int symmetric_block(const ClusterSpec& cluster, const ParallelSpec& par, const ComputeVariability& variability) {
  if (par.dp < 2 || cluster.fabric != Fabric::kStar || variability.compute_jitter_cv != 0.0 ||
      variability.straggler_probability != 0.0 || fused_embedding_sync_applies(par))
    return 0;
  const Layout layout(par, cluster.gpus_per_node);
  for (int block = folded_replicas(par); 2 * block <= par.dp; block += folded_replicas(par))
    if (par.dp % block == 0 && shift_maps_nodes(layout, cluster.gpus_per_node, block)) return block;
  return 0;
}

bool folds_by_symmetry(const Platform& platform, const ParallelSpec& par, const Layout& layout, int block,
                       const AllReduceSizes& sizes) {
  if (block <= 0) return false;
  for (int r = 0; r < layout.world_size(); ++r) {
    if (layout.coord_of(r).dp >= block) continue;
    if (platform.image(r) == nullptr) return false;
    for (const Exchange& e : sent_by(layout, par, r))
      if (layout.coord_of(e.dst).dp >= block && e.traffic != Traffic::kDataParallel &&
          e.traffic != Traffic::kExpertDataParallel)
        return false;
  }
  const auto all_shift = [&](const std::vector<RankGroup>& ranks, int period, const std::vector<std::uint64_t>& s) {
    for (const RankGroup& g : ranks) {
      const Group on = on_platform(platform, {g}).front();
      if (!allreduces_run_as_ring(on, s) || !group_shifts(layout, block, g, on, period)) return false;
    }
    return true;
  };
  if (!all_shift(dp_rank_groups(layout), block, sizes.dp)) return false;
  return !par.expert_groups || expert_dp_size(par) < 2 ||
         all_shift(edp_rank_groups(layout, par), block * par.tp / par.ep, sizes.edp);
}

void fold_groups(std::vector<Group>& groups, const std::vector<RankGroup>& ranks, int period,
                 const Platform& platform) {
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].size() < 2) continue;
    groups[g].period = period;
    groups[g].images.clear();
    for (int i = 0; i < period; ++i)
      groups[g].images.push_back(platform.image(ranks[g].ranks[static_cast<std::size_t>(i)]));
  }
}

}  // namespace edgc::sim::impl

namespace edgc::sim {
namespace {

// The block symmetric_fold_images() images (impl::symmetric_block), or 0 where there is none or the replicas fold
// from the description alone.
int imaged_block(const ClusterSpec& cluster, const ParallelSpec& parallel, const ComputeVariability& variability,
                 CollectiveAlgorithm algorithm) {
  const int block = impl::symmetric_block(cluster, parallel, variability);
  return block == 0 || replicas_fold(cluster, parallel, variability, algorithm) ? 0 : block;
}

}  // namespace

std::vector<int> symmetric_fold_images(const ClusterSpec& cluster, const ParallelSpec& parallel,
                                       const ComputeVariability& variability, CollectiveAlgorithm algorithm) {
  const int block = imaged_block(cluster, parallel, variability, algorithm);
  if (block == 0) return {};
  const Layout layout(parallel, cluster.gpus_per_node);
  std::vector<int> gpus;
  for (int r = 0; r < layout.world_size(); ++r)
    if (layout.coord_of(r).dp < block) gpus.push_back(r);
  return gpus;
}

std::int64_t symmetric_fold_actors(const ClusterSpec& cluster, const ParallelSpec& parallel,
                                   const ComputeVariability& variability, CollectiveAlgorithm algorithm) {
  const int block = imaged_block(cluster, parallel, variability, algorithm);
  if (block == 0 || algorithm == CollectiveAlgorithm::kTree) return 0;
  const Layout layout(parallel, cluster.gpus_per_node);
  const auto one_per_node = [&layout](const std::vector<impl::RankGroup>& groups) {
    return std::all_of(groups.begin(), groups.end(), [&layout](const impl::RankGroup& g) {
      return g.ranks.size() < 2 || impl::node_runs(layout, g.ranks) == 1;
    });
  };
  const std::vector<impl::RankGroup> dp = impl::dp_rank_groups(layout);
  const std::vector<impl::RankGroup> edp =
      parallel.expert_groups ? impl::edp_rank_groups(layout, parallel) : std::vector<impl::RankGroup>{};
  if (!one_per_node(dp) || !one_per_node(edp)) return 0;
  return replica_actors(parallel, block) + static_cast<std::int64_t>(dp.size() + edp.size());
}

Platform build_folding_platform(sg4::Engine& engine, const ClusterSpec& cluster, const NetworkProfile& profile,
                                const ParallelSpec& parallel, const IterationOptions& options) {
  const bool keep_all = options.all_replicas || options.record_timeline;
  return Platform::build(
      engine, cluster, profile,
      keep_all ? std::vector<int>{} : symmetric_fold_images(cluster, parallel, options.variability, profile.algorithm),
      keep_all || options.force_tp_ring ? 1 : tp_fold_fabric_copies(cluster, parallel, options.variability));
}

std::int64_t planned_actors(const ClusterSpec& cluster, const ParallelSpec& parallel, CollectiveAlgorithm algorithm,
                            const IterationOptions& options) {
  const ComputeVariability& variability = options.variability;
  const bool keep_all = options.all_replicas || options.record_timeline;
  const bool folded = !keep_all && !options.force_dp_ring && replicas_fold(cluster, parallel, variability, algorithm);
  const std::int64_t symmetric =
      keep_all || folded ? 0 : symmetric_fold_actors(cluster, parallel, variability, algorithm);
  const std::int64_t actors = symmetric > 0 ? symmetric : iteration_actors(parallel, folded);
  // Where the TP ranks fold, TP index 0 alone runs: a tp-th of the workers, bucket actors and image receivers.
  if (keep_all || options.force_tp_ring || !tp_ranks_fold(cluster, parallel, variability)) return actors;
  return (actors + parallel.tp - 1) / parallel.tp;
}

}  // namespace edgc::sim
