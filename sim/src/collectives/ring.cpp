// Ring collectives as NCCL's Ring/Simple runs them, over every channel of the group's shape at once (group_shape.hpp).
// The rules: collectives.hpp's header comment.
#include <xbt/log.h>

#include <cstdint>
#include <vector>

#include "collectives/algorithms.hpp"
#include "collectives/group_shape.hpp"

XBT_LOG_NEW_DEFAULT_SUBCATEGORY(edgc_ring, edgc_collectives, "edgc: ring collectives over mailboxes");

namespace edgc::sim {
namespace collectives {
namespace {

// `steps` ring steps of `chunk` bytes over every channel at once: post the sends first so that neighbours'
// rendezvous can match in any order.
void ring_steps_of(const Group& group, int my_index, int steps, std::uint64_t chunk) {
  check_member(group, my_index);
  const int d = group.size();
  if (d == 1 || chunk == 0) return;
  const Shape& shape = shape_of(group);
  const int channels = shape.channels;
  const std::uint64_t part = ring_channel_part_bytes(chunk, channels);
  std::vector<sg4::Mailbox*> next(static_cast<std::size_t>(channels));
  std::vector<sg4::Mailbox*> mine(static_cast<std::size_t>(channels));
  for (int c = 0; c < channels; ++c) {
    next[static_cast<std::size_t>(c)] =
        channel_inbox(group, c, shape.next[static_cast<std::size_t>(c)][static_cast<std::size_t>(my_index)]);
    mine[static_cast<std::size_t>(c)] = channel_inbox(group, c, my_index);
  }
  if (channels == 1) {
    for (int s = 0; s < steps; ++s) {
      sg4::CommPtr out = next[0]->put_async(&g_payload, part);
      mine[0]->get<int>();
      out->wait();
    }
  } else {
    // Every receive is posted before any is waited for: a transfer starts only once its receive is posted.
    std::vector<sg4::CommPtr> comms(2 * static_cast<std::size_t>(channels));
    std::vector<int*> got(static_cast<std::size_t>(channels));
    for (int s = 0; s < steps; ++s) {
      for (std::size_t c = 0; c < next.size(); ++c) {
        comms[2 * c] = next[c]->put_async(&g_payload, part);
        comms[2 * c + 1] = mine[c]->get_async<int>(&got[c]);
      }
      for (const sg4::CommPtr& comm : comms) comm->wait();
    }
  }
  XBT_DEBUG("%s: member %d done after %d steps of %llu B on %d channel(s)", group.tag.c_str(), my_index, steps,
            static_cast<unsigned long long>(chunk), channels);
}

bool ring_runs_over(const Group&) { return true; }

// A ring step's chunk per channel: S/(D·C).
std::uint64_t ring_transfer_bytes(const Group& group, std::uint64_t bytes) {
  return ring_channel_part_bytes(ring_chunk_bytes(CollectiveOp::kAllReduce, group.size(), bytes), ring_channels(group));
}

}  // namespace

const AllReduceAlgorithm& ring_algorithm() {
  static const AllReduceAlgorithm ring{CollectiveAlgorithm::kRing,
                                       "ring",
                                       ring_runs_over,
                                       ring_runs_over,
                                       ring_estimate_s,
                                       ring_all_reduce,
                                       ring_transfer_bytes,
                                       /*ring_closed_form=*/true,
                                       /*auto_weighs_spread_groups=*/true};
  return ring;
}

}  // namespace collectives

int ring_channels(const Group& group) { return group.size() < 2 ? 1 : collectives::shape_of(group).channels; }

double ring_estimate_s(const Group& group, std::uint64_t bytes) {
  if (group.size() < 2) return 0.0;
  const collectives::Shape& shape = collectives::shape_of(group);
  const CollectiveOp op = CollectiveOp::kAllReduce;
  const double chunk = static_cast<double>(ring_chunk_bytes(op, group.size(), bytes));
  return ring_steps(op, group.size()) * (shape.ring_latency_s + chunk * shape.ring_s_per_chunk_byte);
}

void ring_all_reduce(const Group& group, int my_index, std::uint64_t bytes) {
  const CollectiveOp op = CollectiveOp::kAllReduce;
  collectives::ring_steps_of(group, my_index, ring_steps(op, group.size()), ring_chunk_bytes(op, group.size(), bytes));
}

void ring_reduce_scatter(const Group& group, int my_index, std::uint64_t bytes) {
  const CollectiveOp op = CollectiveOp::kReduceScatter;
  collectives::ring_steps_of(group, my_index, ring_steps(op, group.size()), ring_chunk_bytes(op, group.size(), bytes));
}

void ring_all_gather(const Group& group, int my_index, std::uint64_t bytes) {
  const CollectiveOp op = CollectiveOp::kAllGather;
  collectives::ring_steps_of(group, my_index, ring_steps(op, group.size()), ring_chunk_bytes(op, group.size(), bytes));
}

}  // namespace edgc::sim
