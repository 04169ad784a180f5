// The collective kinds (names, busbw factors, ring step counts), send/recv, the dispatcher and the timed sweep (with
// the closed forms of closed_forms.cpp where they apply). The algorithms live in collectives/: the ring (ring.cpp),
// the tree (tree.cpp), the group shapes they share (group_shape.cpp) and the all-reduce table with its choice
// (algorithms.cpp).
#include "edgc/sim/collectives.hpp"

#include <xbt/log.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "collectives/group_shape.hpp"
#include "edgc/core/error.hpp"
#include "edgc/sim/platform.hpp"

XBT_LOG_NEW_CATEGORY(edgc_collectives, "edgc: collectives over mailboxes");

namespace edgc::sim {
namespace {

// One member of a timed sweep: for each size, meet the others at the barrier, run the collective, and record
// when it finished; the member with index 0 records the common start.
class SweepMember {
 public:
  SweepMember(CollectiveOp op, const Group* group, int index, const std::vector<std::uint64_t>* sizes,
              sg4::BarrierPtr barrier, std::vector<double>* start_s, std::vector<double>* end_s)
      : op_(op),
        group_(group),
        index_(index),
        sizes_(sizes),
        barrier_(std::move(barrier)),
        start_s_(start_s),
        end_s_(end_s) {}

  void operator()() const {
    for (std::size_t i = 0; i < sizes_->size(); ++i) {
      barrier_->wait();
      if (index_ == 0) (*start_s_)[i] = sg4::Engine::get_clock();
      run_collective(op_, *group_, index_, (*sizes_)[i]);
      (*end_s_)[i] = std::max((*end_s_)[i], sg4::Engine::get_clock());
    }
  }

 private:
  CollectiveOp op_;
  const Group* group_;
  int index_;
  const std::vector<std::uint64_t>* sizes_;
  sg4::BarrierPtr barrier_;
  std::vector<double>* start_s_;  // actors are not threads: plain shared vectors are safe
  std::vector<double>* end_s_;
};

}  // namespace

CollectiveOp collective_op_from_name(const std::string& name) {
  if (name == "all_reduce") return CollectiveOp::kAllReduce;
  if (name == "reduce_scatter") return CollectiveOp::kReduceScatter;
  if (name == "all_gather") return CollectiveOp::kAllGather;
  if (name == "sendrecv") return CollectiveOp::kSendRecv;
  if (name == "all_to_all") return CollectiveOp::kAllToAll;
  throw UsageError("--op",
                   "unknown collective '" + name + "' (all_reduce, reduce_scatter, all_gather, sendrecv, all_to_all)");
}

std::string collective_op_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return "all_reduce";
    case CollectiveOp::kReduceScatter:
      return "reduce_scatter";
    case CollectiveOp::kAllGather:
      return "all_gather";
    case CollectiveOp::kSendRecv:
      return "sendrecv";
    case CollectiveOp::kAllToAll:
      return "all_to_all";
  }
  return "?";
}

double bus_bandwidth_factor(CollectiveOp op, int ranks) {
  const double n = ranks;
  switch (op) {
    case CollectiveOp::kAllReduce:
      return 2.0 * (n - 1) / n;
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllGather:
    case CollectiveOp::kAllToAll:
      return (n - 1) / n;
    case CollectiveOp::kSendRecv:
      return 1.0;
  }
  return 1.0;
}

int ring_steps(CollectiveOp op, int ranks) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return 2 * (ranks - 1);
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllGather:
      return ranks - 1;
    case CollectiveOp::kSendRecv:
    case CollectiveOp::kAllToAll:  // every pair at once: one step
      return ranks > 1 ? 1 : 0;
  }
  return 0;
}

std::uint64_t ring_chunk_bytes(CollectiveOp op, int ranks, std::uint64_t bytes) {
  if (op == CollectiveOp::kSendRecv || ranks <= 1) return bytes;
  const auto d = static_cast<std::uint64_t>(ranks);
  return (bytes + d - 1) / d;
}

std::uint64_t ring_channel_part_bytes(std::uint64_t chunk, int channels) {
  const auto c = static_cast<std::uint64_t>(channels);
  return (chunk + c - 1) / c;
}

void sendrecv(const Group& group, int my_index, int to, int from, std::uint64_t bytes) {
  collectives::check_member(group, my_index);
  collectives::check_whole(group, "a send/recv");
  sg4::CommPtr out;
  if (to >= 0) {
    collectives::check_member(group, to);
    out = collectives::inbox(group, to)->put_async(&g_payload, bytes);
  }
  if (from >= 0) {
    collectives::check_member(group, from);
    collectives::inbox(group, my_index)->get<int>();
  }
  if (out) out->wait();
}

PendingAllToAll::PendingAllToAll(const Group& group, int my_index, std::uint64_t bytes) {
  collectives::check_member(group, my_index);
  collectives::check_whole(group, "an all-to-all");
  const int d = group.size();
  if (d == 1 || bytes == 0) return;
  const std::uint64_t part = (bytes + static_cast<std::uint64_t>(d) - 1) / static_cast<std::uint64_t>(d);
  const auto pair_box = [&](int to, int from) {
    return sg4::Mailbox::by_name(group.tag + "/a2a/" + std::to_string(to) + "/" + std::to_string(from));
  };
  // Every receive and send is posted before any is waited for: a transfer starts once both sides are posted.
  received_.resize(static_cast<std::size_t>(d));
  comms_.reserve(2 * static_cast<std::size_t>(d));
  for (int k = 1; k < d; ++k) {
    const int to = (my_index + k) % d, from = (my_index + d - k) % d;
    comms_.push_back(pair_box(to, my_index)->put_async(&g_payload, part));
    comms_.push_back(pair_box(my_index, from)->get_async<int>(&received_[static_cast<std::size_t>(k)]));
  }
}

double PendingAllToAll::wait() {
  double end = comms_.empty() ? sg4::Engine::get_clock() : 0.0;
  for (const sg4::CommPtr& c : comms_) {
    c->wait();
    end = std::max(end, c->get_finish_time());
  }
  comms_.clear();
  return end;
}

void all_to_all(const Group& group, int my_index, std::uint64_t bytes) {
  PendingAllToAll(group, my_index, bytes).wait();
}

void run_collective(CollectiveOp op, const Group& group, int my_index, std::uint64_t bytes) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      all_reduce(group, my_index, bytes);
      return;
    case CollectiveOp::kReduceScatter:
      ring_reduce_scatter(group, my_index, bytes);
      return;
    case CollectiveOp::kAllGather:
      ring_all_gather(group, my_index, bytes);
      return;
    case CollectiveOp::kSendRecv: {
      const int d = group.size();
      if (d > 1) sendrecv(group, my_index, (my_index + 1) % d, (my_index + d - 1) % d, bytes);
      return;
    }
    case CollectiveOp::kAllToAll:
      all_to_all(group, my_index, bytes);
      return;
  }
}

std::vector<double> time_collective_sweep(sg4::Engine& engine, CollectiveOp op, const Group& group,
                                          const std::vector<std::uint64_t>& sizes) {
  if (group.size() < 1) throw InternalError("time_collective_sweep: empty group '" + group.tag + "'");
  std::vector<double> start_s(sizes.size(), 0.0);
  std::vector<double> end_s(sizes.size(), 0.0);
  const sg4::BarrierPtr barrier = sg4::Barrier::create(static_cast<unsigned>(group.size()));
  for (int i = 0; i < group.size(); ++i) {
    sg4::Actor::create(group.tag + "-member" + std::to_string(i), group.hosts[static_cast<std::size_t>(i)],
                       SweepMember(op, &group, i, &sizes, barrier, &start_s, &end_s));
  }
  engine.run();
  std::vector<double> took_s(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) took_s[i] = end_s[i] - start_s[i];
  return took_s;
}

std::vector<double> time_collective_sweep(sg4::Engine& engine, const Platform& platform, CollectiveOp op,
                                          const Group& group, const std::vector<std::uint64_t>& sizes,
                                          bool simulate_all) {
  if (group.size() < 1) throw InternalError("time_collective_sweep: empty group '" + group.tag + "'");
  std::vector<double> took_s(sizes.size(), 0.0);
  std::vector<std::uint64_t> simulated;  // the sizes without a closed form, in order
  std::vector<std::size_t> row_of;       // their rows
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const std::optional<double> lone = simulate_all ? std::nullopt : lone_collective_s(platform, op, group, sizes[i]);
    if (lone) {
      took_s[i] = *lone;
    } else {
      simulated.push_back(sizes[i]);
      row_of.push_back(i);
    }
  }
  if (simulated.empty()) return took_s;
  const std::vector<double> simulated_s = time_collective_sweep(engine, op, group, simulated);
  for (std::size_t j = 0; j < simulated.size(); ++j) took_s[row_of[j]] = simulated_s[j];
  return took_s;
}

}  // namespace edgc::sim
