#pragma once
// Collectives as code that runs inside actors: every member of a group calls the same function with its own
// index, the way every rank calls ncclAllReduce. Transfers go over mailboxes, one per (receiver, purpose), named
// "<tag>/<receiver index>", so concurrent collectives of different groups or purposes never match each other's
// messages. Each call returns when this member's part is done; the simulated clock then says how long it took.
//
// Ring algorithms as NCCL's Ring/Simple runs them (one channel): with D members and S bytes,
//   all-reduce      2(D-1) steps of S/D  (reduce-scatter then all-gather),
//   reduce-scatter   (D-1) steps of S/D  (S = the full input array),
//   all-gather       (D-1) steps of S/D  (S = the full output array).
// In each step every member sends one chunk to the next member and receives one from the previous, so with a
// contention-free platform a collective takes steps · (L + (S/D)/B), L and B being the route latency and
// bottleneck bandwidth between neighbours. Chunks are rounded up to whole bytes.
#include <cstdint>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

namespace edgc::sim {

namespace sg4 = simgrid::s4u;

/// The members of a collective in ring order: member i sends to member (i + 1) % size.
struct Group {
  std::vector<sg4::Host*> hosts;  ///< one per member, not owned; hosts[i] runs member i's actor
  std::string tag;                ///< unique per group and purpose among concurrent collectives, e.g. "dp0", "tp3"

  int size() const noexcept { return static_cast<int>(hosts.size()); }
};

/// Collective kinds, as nccl-tests names them.
enum class CollectiveOp { kAllReduce, kReduceScatter, kAllGather, kSendRecv };

/// "all_reduce" → kAllReduce, …; throws edgc::UsageError for an unknown name.
CollectiveOp collective_op_from_name(const std::string& name);
std::string collective_op_name(CollectiveOp op);

/// nccl-tests bus-bandwidth factor: 2(n-1)/n for all-reduce, (n-1)/n for reduce-scatter and all-gather,
/// 1 for send/recv.
double bus_bandwidth_factor(CollectiveOp op, int ranks);

/// Ring steps and bytes per step of one collective of `bytes` over `ranks` members (sendrecv: 1 step of bytes).
int ring_steps(CollectiveOp op, int ranks);
std::uint64_t ring_chunk_bytes(CollectiveOp op, int ranks, std::uint64_t bytes);

void ring_all_reduce(const Group& group, int my_index, std::uint64_t bytes);
void ring_reduce_scatter(const Group& group, int my_index, std::uint64_t bytes);
void ring_all_gather(const Group& group, int my_index, std::uint64_t bytes);

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

}  // namespace edgc::sim
