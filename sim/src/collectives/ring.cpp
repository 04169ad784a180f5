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

// One channel of a member's ring: where it sends (its successor's inbox, or the image of a successor in another
// block: Group::period) and where it receives (its own inbox, or through its image receiver when the predecessor is
// in another block).
struct ChannelEnds {
  sg4::Mailbox* out = nullptr;
  sg4::Mailbox* in = nullptr;
  const ImageReceiver* image = nullptr;
};

std::vector<ChannelEnds> channel_ends(const Group& group, const Shape& shape, int my_index) {
  const int p = group.period;
  std::vector<ChannelEnds> ends(static_cast<std::size_t>(shape.channels));
  for (int c = 0; c < shape.channels; ++c) {
    ChannelEnds& e = ends[static_cast<std::size_t>(c)];
    const int next = shape.next[static_cast<std::size_t>(c)][static_cast<std::size_t>(my_index)];
    const int prev = shape.prev[static_cast<std::size_t>(c)][static_cast<std::size_t>(my_index)];
    e.out = p > 0 && next >= p ? image_inbox(group, c, next % p) : channel_inbox(group, c, next);
    if (p > 0 && prev >= p)
      e.image = &ImageReceiver::of(group, c, my_index);
    else
      e.in = channel_inbox(group, c, my_index);
  }
  return ends;
}

// `steps` ring steps of `chunk` bytes over every channel at once: post the sends first so that neighbours'
// rendezvous can match in any order.
void ring_steps_of(const Group& group, int my_index, int steps, std::uint64_t chunk) {
  check_member(group, my_index);
  const int d = group.size();
  if (d == 1 || chunk == 0) return;
  const Shape& shape = shape_of(group);
  const std::uint64_t part = ring_channel_part_bytes(chunk, shape.channels);
  const std::vector<ChannelEnds> ends = channel_ends(group, shape, my_index);
  if (ends.size() == 1 && ends[0].image == nullptr) {
    for (int s = 0; s < steps; ++s) {
      sg4::CommPtr out = ends[0].out->put_async(&g_payload, part);
      ends[0].in->get<int>();
      out->wait();
    }
  } else {
    // Every receive is posted before any is waited for: a transfer starts only once its receive is posted.
    std::vector<sg4::CommPtr> comms;
    std::vector<int*> got(ends.size());
    for (int s = 0; s < steps; ++s) {
      comms.clear();
      for (std::size_t c = 0; c < ends.size(); ++c) {
        comms.push_back(ends[c].out->put_async(&g_payload, part));
        if (ends[c].image != nullptr)
          ends[c].image->post();
        else
          comms.push_back(ends[c].in->get_async<int>(&got[c]));
      }
      for (const sg4::CommPtr& comm : comms) comm->wait();
      for (const ChannelEnds& e : ends)
        if (e.image != nullptr) e.image->arrived();
    }
  }
  XBT_DEBUG("%s: member %d done after %d steps of %llu B on %d channel(s)", group.tag.c_str(), my_index, steps,
            static_cast<unsigned long long>(chunk), shape.channels);
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
