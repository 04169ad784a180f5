#pragma once
// Replicas that fold by symmetry: where the DP replicas' rings share links with the pipelines (overlapped gradient
// buckets with pp > 1, NICs shared by two GPUs, cube-mesh nodes), no closed form applies and the replicas do not fold,
// but every block of replicas still runs the same timeline, because shifting the blocks maps the platform, the
// traffic and the rings onto themselves. simulate_iteration then runs the first block alone, and a ring transfer
// that would cross into another block goes to the image of its receiver in the first block (Platform::image,
// Group::period). The argument: sim/README.md, "Replicas that fold by symmetry".
#include <cstdint>
#include <vector>

#include "edgc/sim/collectives.hpp"
#include "edgc/sim/layout.hpp"
#include "edgc/sim/platform.hpp"
#include "edgc/sim/spec.hpp"
#include "edgc/sim/variability.hpp"
#include "impl/traffic.hpp"

namespace edgc::sim::impl {

// The block of replicas that folding by symmetry simulates: the fewest replicas R, a multiple of folded_replicas()
// dividing dp with dp / R ≥ 2, whose shift (dp index d → d + R mod dp, same stage and TP index) maps every node the
// layout uses onto a node, GPU index for GPU index; with dp ≥ 2, a star fabric, no compute variability and no fused
// embedding sync (its ring over two stages does not shift with the blocks). 0 where there is none.
int symmetric_block(const ClusterSpec& cluster, const ParallelSpec& par, const ComputeVariability& variability);

// The sizes of every all-reduce the iteration runs over a DP group and over an expert-DP group.
struct AllReduceSizes {
  std::vector<std::uint64_t> dp;
  std::vector<std::uint64_t> edp;
};

// Whether an iteration whose replicas symmetric_block() would fold in blocks of `block` does so on `platform`: every
// GPU of the first block has an image host, the only declared pairs that cross between blocks are DP and expert-DP
// ring successors, every all-reduce over those groups runs as the ring (the setting, or auto's choice for each of
// `sizes`: a tree does not shift with the blocks), and each such group's members and ring channels shift with the
// blocks (member i + p of the group is member i shifted, ring successors likewise; p = its members per block).
bool folds_by_symmetry(const Platform& platform, const ParallelSpec& par, const Layout& layout, int block,
                       const AllReduceSizes& sizes);

// Folds `groups` (by the same index as `ranks`) by symmetry with `period` members per block: Group::period and the
// images of their first `period` members.
void fold_groups(std::vector<Group>& groups, const std::vector<RankGroup>& ranks, int period, const Platform& platform);

}  // namespace edgc::sim::impl
