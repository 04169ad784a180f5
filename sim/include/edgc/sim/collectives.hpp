#pragma once
// Collectives as code that runs inside actors: every member of a group calls the same function with its own
// index, the way every rank calls ncclAllReduce. Transfers go over mailboxes, one per (receiver, purpose), named
// "<tag>/<receiver index>", so concurrent collectives of different groups or purposes never match each other's
// messages. Each call returns when this member's part is done; the simulated clock then says how long it took.
//
// Ring algorithms as NCCL's Ring/Simple runs them: with D members and S bytes,
//   all-reduce      2(D-1) steps of S/D  (reduce-scatter then all-gather),
//   reduce-scatter   (D-1) steps of S/D  (S = the full input array),
//   all-gather       (D-1) steps of S/D  (S = the full output array).
// In each step every member sends one chunk to the next member and receives one from the previous, so with a
// contention-free platform a one-channel collective takes steps · (L + (S/D)/B), L and B being the route latency
// and bottleneck bandwidth between neighbours. Chunks are rounded up to whole bytes.
//
// Channels (NCCL runs one ring per NIC): when a group spans several nodes of NVSwitch GPUs with the same number of
// members on each, contiguous in member order, and those members use C > 1 distinct NICs per node, the collective
// runs C rings at once, each carrying 1/C of every chunk. Ring c enters each node's members after the one that
// uses the node's c-th NIC and leaves the node through that member, so ring c crosses between nodes on NIC c and
// the C rings together use every NIC, as NCCL's rings do. Inside one DGX-1 cube-mesh node the rings follow direct
// NVLinks (Hamiltonian cycles, each run both ways, the set that loads the busiest link least). The rings advance
// step by step together. Otherwise (one member per node, one NIC, groups over several cube-mesh nodes, uneven
// groups) there is one ring, in member order.
//
// Tree all-reduce (NCCL's Tree: a chain through each node's members, double binary trees between the nodes): each
// channel runs two trees over the nodes, each carrying S/(2C); inside a node the chain starts at the member that
// uses the channel's NIC. Reduction up and broadcast down are pipelined in NCCL, so the simulation sends every
// tree edge's data up and down at once (one flow each way, S/(2C) bytes, sharing links under SimGrid's max-min
// model), waits for the whole group, then adds the latency of a root-to-leaf path up and down that the flows have
// not already paid. Not modelled: NCCL's pipeline fill (slices of a few hundred KiB), NVLS/CollNet in-network
// reduction.
//
// Which one runs (all_reduce): the network profile's `algorithm` — ring, tree, or auto: the one with the smaller
// line-rate estimate for this group and size (latency plus the most loaded link's bytes over its bandwidth), the
// way NCCL's tuner compares its own per-algorithm model. The algorithms are a table, one source file each
// (sim/src/collectives/; how to add one: sim/README.md, "How to add a collective algorithm"). Auto considers the tree
// only for groups with at least two members on each of at least two nodes, where its hierarchy moves less data over the
// NICs than a ring; with one member per node NCCL's tree wins only on latency for small messages at many nodes, which
// is not modelled (the iteration's closed forms rely on rings there: allreduce_ring_closed_form()).
#include <cstdint>
#include <optional>
#include <simgrid/s4u.hpp>
#include <string>
#include <utility>
#include <vector>

#include "edgc/sim/spec.hpp"

namespace edgc::sim {

namespace sg4 = simgrid::s4u;

class Platform;  // platform.hpp

/// The members of a collective in ring order: member i sends to member (i + 1) % size.
struct Group {
  Group() = default;
  Group(std::vector<sg4::Host*> members, std::string name) : hosts(std::move(members)), tag(std::move(name)) {}

  std::vector<sg4::Host*> hosts;  ///< one per member, not owned; hosts[i] runs member i's actor
  std::string tag;                ///< unique per group and purpose among concurrent collectives, e.g. "dp0", "tp3"
  /// Replicas folded by symmetry (sim/README.md, "Replicas that fold by symmetry"): 0 (every member runs), or p
  /// with 0 < p < size: only members [0, p) run, and the group with its rings is invariant under the shift i → i + p
  /// (mod size). A ring transfer to a member j ≥ p then goes to images[j % p] (Platform::image), and one that member
  /// i receives from a member ≥ p arrives there, taken by a proxy actor on images[i]. Rings only (reduce-scatter,
  /// all-gather, the ring all-reduce); the other collectives refuse such a group (InternalError).
  int period = 0;
  std::vector<sg4::Host*> images;  ///< [member < period]

  int size() const noexcept { return static_cast<int>(hosts.size()); }
};

/// "auto" | "ring" | "tree" → the algorithm; nullopt for anything else.
std::optional<CollectiveAlgorithm> allreduce_algorithm_from_name(const std::string& name);
std::string allreduce_algorithm_name(CollectiveAlgorithm algorithm);

/// The algorithm setting of this process's simulation (Platform::build sets it from the network profile; one
/// simulation per process).
void set_allreduce_algorithm(CollectiveAlgorithm algorithm);
CollectiveAlgorithm allreduce_algorithm();

/// What all_reduce() runs over `group` for `bytes`: kRing or kTree (never kAuto). A forced tree falls back to the
/// ring where no tree can run (tree_estimate_s() infinite).
CollectiveAlgorithm chosen_allreduce_algorithm(const Group& group, std::uint64_t bytes);

/// Bytes of one transfer of an all-reduce of `bytes` over `group` by `algorithm` (kAuto: the one
/// chosen_allreduce_algorithm() picks), as SimGrid's bandwidth and latency factor callbacks see it: a ring step's
/// chunk per channel, S/(D·C); a tree edge's S/(2C). What the calibrated profile's curves are keyed by.
std::uint64_t allreduce_transfer_bytes(CollectiveAlgorithm algorithm, const Group& group, std::uint64_t bytes);

/// Whether, under the setting `setting` (network.algorithm), every all-reduce over a group with one member per node
/// runs as the ring, whose contention-free closed form simulate_iteration's DP closed form and replica folding use
/// (sim/README.md, "Closed forms and folding"): true for ring and auto, false for a forced tree.
bool allreduce_ring_closed_form(CollectiveAlgorithm setting);

/// Ring channels of `group` (1 unless the conditions above hold).
int ring_channels(const Group& group);

/// Line-rate estimates (seconds) of a ring and of a tree all-reduce of `bytes` over `group` alone on the platform:
/// the latency of the path plus the most loaded link's bytes over its bandwidth. The tree estimate is +inf where no
/// tree can run (a group inside one node, or nodes that are not NVSwitch nodes with equal contiguous members).
double ring_estimate_s(const Group& group, std::uint64_t bytes);
double tree_estimate_s(const Group& group, std::uint64_t bytes);

/// Collective kinds, as nccl-tests names them.
enum class CollectiveOp { kAllReduce, kReduceScatter, kAllGather, kSendRecv, kAllToAll };

/// "all_reduce" → kAllReduce, …; throws edgc::UsageError for an unknown name.
CollectiveOp collective_op_from_name(const std::string& name);
std::string collective_op_name(CollectiveOp op);

/// nccl-tests bus-bandwidth factor: 2(n-1)/n for all-reduce, (n-1)/n for reduce-scatter, all-gather and
/// all-to-all, 1 for send/recv.
double bus_bandwidth_factor(CollectiveOp op, int ranks);

/// Ring steps and bytes per step of one collective of `bytes` over `ranks` members (sendrecv: 1 step of bytes).
int ring_steps(CollectiveOp op, int ranks);
std::uint64_t ring_chunk_bytes(CollectiveOp op, int ranks, std::uint64_t bytes);
/// One channel's part of a ring step's `chunk` over `channels` rings run at once (≥ 1): whole bytes, rounded up.
std::uint64_t ring_channel_part_bytes(std::uint64_t chunk, int channels);

/// All-reduce by the algorithm chosen_allreduce_algorithm() names.
void all_reduce(const Group& group, int my_index, std::uint64_t bytes);
void ring_all_reduce(const Group& group, int my_index, std::uint64_t bytes);
void tree_all_reduce(const Group& group, int my_index, std::uint64_t bytes);
void ring_reduce_scatter(const Group& group, int my_index, std::uint64_t bytes);
void ring_all_gather(const Group& group, int my_index, std::uint64_t bytes);

/// All-to-all as NCCL runs it (grouped sends and receives, every pair at once, nccl-tests' alltoall): `bytes` is
/// each member's whole send buffer, of which S/D goes to every other member (rounded up to whole bytes) and S/D
/// stays. All D(D − 1) transfers run together and share the links SimGrid routes them over, so on a contention-free
/// platform where a member's only bottleneck is its own link of bandwidth B it takes L + (D − 1)/D · S/B. Each pair
/// has its own mailbox ("<tag>/a2a/<receiver>/<sender>"): back-to-back all-to-alls of a group never match each
/// other's messages.
void all_to_all(const Group& group, int my_index, std::uint64_t bytes);

/// all_to_all's transfers posted and not yet waited for, so that the caller can compute meanwhile (Megatron-Core's
/// combined 1F1B schedule): wait() ends the collective. Must be waited for before it is destroyed.
class PendingAllToAll {
 public:
  PendingAllToAll() = default;
  PendingAllToAll(const Group& group, int my_index, std::uint64_t bytes);  ///< posts every send and receive
  /// Waits for every transfer; returns the simulated time the last one ended (now when none was posted).
  double wait();
  bool posted() const noexcept { return !comms_.empty(); }

 private:
  std::vector<simgrid::s4u::CommPtr> comms_;
  std::vector<int*> received_;  // where the receives store their payload pointers
};

/// Point-to-point: sends `bytes` to member `to` while receiving one message from member `from` (as nccl-tests'
/// sendrecv does with to = next, from = previous). Either may be -1 to only receive or only send.
void sendrecv(const Group& group, int my_index, int to, int from, std::uint64_t bytes);

/// Runs `op` as this member: the dispatcher behind the four functions above (sendrecv uses the ring neighbours).
void run_collective(CollectiveOp op, const Group& group, int my_index, std::uint64_t bytes);

/// Times `op` over `group` once per entry of `sizes`, in order, within ONE simulation (the engine cannot be reset):
/// starts one actor per member, runs `engine` to completion, and returns the seconds each collective took (from a
/// barrier that releases all members together to the last member's finish). Call after Platform::build, once.
std::vector<double> time_collective_sweep(sg4::Engine& engine, CollectiveOp op, const Group& group,
                                          const std::vector<std::uint64_t>& sizes);

/// Seconds `op` of `bytes` over `group` takes when every member starts it at the same moment and nothing else runs
/// on the platform, from its closed form, wherever that provably equals the simulated time (sim/README.md, "Closed
/// forms and folding", standalone collectives): plain CM02 (plain_cm02()), the ring (an all-reduce only where the
/// algorithm chosen for this size is the ring: allreduce_ring_closed_form), no link of the platform on the routes
/// of two transfers of one step (every channel's hops and, for sendrecv, the ring neighbours), and every transfer
/// of a step costing the same c = Platform::lone_transfer_s(its bytes); then the time is steps · c. 0 for a group of
/// one member. nullopt elsewhere (all-to-all, a tree, shared links, unequal hops, an empty sendrecv): simulate.
std::optional<double> lone_collective_s(const Platform& platform, CollectiveOp op, const Group& group,
                                        std::uint64_t bytes);

/// time_collective_sweep that takes every size where lone_collective_s() applies from the closed form and simulates
/// only the others (in one simulation, as above; none when every size has its closed form). `simulate_all`: simulate
/// every size. The times agree with the all-simulated sweep to rounding (≤ 1e-9 relative: each size starts on an
/// empty network after a barrier, so the others do not change it). Call after Platform::build, once.
std::vector<double> time_collective_sweep(sg4::Engine& engine, const Platform& platform, CollectiveOp op,
                                          const Group& group, const std::vector<std::uint64_t>& sizes,
                                          bool simulate_all);

}  // namespace edgc::sim
