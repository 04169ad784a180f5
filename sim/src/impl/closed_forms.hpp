#pragma once
// Closed forms of contention-free rings, and the conditions under which simulate_iteration may use them (and fold
// the DP replicas) without changing any simulated time. The arguments are written once, in sim/README.md, section
// "Closed forms and folding"; each function below names the part it implements.
#include <cstdint>
#include <vector>

#include "edgc/sim/collectives.hpp"
#include "edgc/sim/layout.hpp"
#include "edgc/sim/platform.hpp"
#include "edgc/sim/spec.hpp"
#include "edgc/sim/variability.hpp"

namespace edgc::sim::impl {

// The latency part of one ring all-reduce over `group`: 2(D − 1) steps of the slowest neighbour route's latency.
double ring_latency_s(const Group& group);

// Seconds a ring all-reduce of `bytes` over `group` takes when its transfers never share a link and every
// neighbour transfer costs the same: 2(D − 1) steps of one lone chunk transfer; a reduce-scatter or all-gather
// (`op`) D − 1 of them.
double contention_free_ring_s(const Platform& platform, const Group& group, std::uint64_t bytes,
                              CollectiveOp op = CollectiveOp::kAllReduce);

// contention_free_ring_s with each step's chunk split over the ring's channels (ring_channels: e.g. two rings both
// ways over a DGX-1 quad's direct NVLinks). The same as contention_free_ring_s for a one-channel ring (NVSwitch).
double channel_ring_s(const Platform& platform, const Group& group, std::uint64_t bytes);

// The closed form a DP or expert-DP ring takes where dp_rings_are_contention_free: contention_free_ring_s where every
// member sits on its own node; where they come in runs of k ≥ 2 per node (mixture of experts, replicas in step),
// 2(D − 1) (all-reduce) or D − 1 steps of the slower of k − 1 chunk / k parts sharing one NVLink pair and one part
// over the NICs. Proof: sim/README.md, "Closed forms and folding", DP rings in runs per node.
double dp_ring_closed_form_s(const Platform& platform, const Group& group, std::uint64_t bytes, CollectiveOp op);

// Members per node of a group given by its ranks in member order: k when they come in contiguous runs of k on at
// least two distinct nodes (k = 1: every member on its own node), 0 otherwise.
int node_runs(const Layout& layout, const std::vector<int>& ranks);

// Whether every TP ring all-reduce may be replaced by "wait for the whole TP group, then sleep its closed form".
// Proof: sim/README.md, "Closed forms and folding", TP rings.
bool tp_rings_are_contention_free(const Platform& platform, const ParallelSpec& par, const Layout& layout,
                                  const std::vector<Group>& tp_groups);

// Likewise for the DP rings, and with expert groups for the expert-data-parallel rings too (one decision for both).
// `allreduce_sizes`: the bytes of every all-reduce the iteration runs over a DP group, so that auto's choice of the
// ring can be checked where it may choose the tree (DP groups in runs per node); nullptr where unknown (then such
// groups need the ring forced). Proof: sim/README.md, "Closed forms and folding", DP rings.
bool dp_rings_are_contention_free(const Platform& platform, const ParallelSpec& par, const Layout& layout,
                                  const std::vector<Group>& dp_groups, const ComputeVariability& variability,
                                  const std::vector<std::uint64_t>* allreduce_sizes = nullptr);

// Whether the DP replicas run identical iterations in blocks of folded_replicas() (layout.hpp; one replica for a
// dense model), so that simulating the first block alone gives every figure exactly. Proof: sim/README.md, "Closed
// forms and folding", replicas.
bool replicas_are_identical(const Platform& platform, const ParallelSpec& par, const ComputeVariability& variability,
                            bool dp_closed_form);

// Whether every link a transfer crosses belongs to one GPU (its NVLink up- or down-link, its own NIC's up- or
// down-link: a star of NVSwitch nodes with one NIC per GPU), under plain CM02 and without compute variability: the
// platform side of the mirrors' argument (blocks_run_alike, IterationState::mirrored).
bool links_are_private(const Platform& platform, const ComputeVariability& variability);

// Whether every all-reduce of `sizes` over `group` runs as the ring: the setting, or auto's choice for each size.
bool allreduces_run_as_ring(const Group& group, const std::vector<std::uint64_t>& sizes);

// Mixture of experts where every GPU's sync is simulated and no expert-DP collective runs beside a pass (the
// mirrors): whether the expert-DP rings take their closed form although the dense sync does not. Every hop of every
// such ring crosses between nodes on its two NIC links alone, alike, no NIC link carries two hops
// (rings_alone_across_nodes), and every all-reduce of `allreduce_sizes` over them runs as the ring. With
// links_are_private a GPU's links then carry nothing but the collective it is in. `edp_groups`: the whole groups on
// the platform. Proof: sim/README.md, mirrors.
bool expert_sync_rings_alone(const ParallelSpec& par, const std::vector<Group>& edp_groups,
                             const std::vector<std::uint64_t>& allreduce_sizes);

// Mixture of experts: whether the blocks of folded_replicas() replicas run their pipelines alike, whatever their DP
// syncs do, so that simulating the first block's pipelines and every GPU's sync from its counterpart's arrival on
// gives every figure exactly (IterationState::mirrored). Proof: sim/README.md, "Closed forms and folding", mirrors.
bool blocks_run_alike(const Platform& platform, const ParallelSpec& par, const ComputeVariability& variability);

// Where the TP all-reduces take their closed form (tp_rings_are_contention_free): whether every GPU runs the
// iteration of the GPU at TP index 0 of its (stage, replica), so that simulating TP index 0 alone gives every figure
// exactly (IterationState::tp_members): the description's tp_ranks_fold() on a star, or on a fat tree built with
// tp copies. Proof: sim/README.md, "Closed forms and folding", TP ranks.
bool tp_ranks_run_alike(const Platform& platform, const ParallelSpec& par, const ComputeVariability& variability);

}  // namespace edgc::sim::impl
