#pragma once
// What the collective algorithms need to know about a group, derived once from its hosts' routes (shape_of): the
// ring channels and, where a tree can run, the trees. Shared by the algorithms' files (ring.cpp, tree.cpp); the
// rules are collectives.hpp's header comment.
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "edgc/sim/collectives.hpp"
#include "edgc/sim/platform.hpp"
#include "transfer_payload.hpp"

namespace edgc::sim::collectives {

// The mailbox of `member` (the plain one: one-channel rings and send/recv).
sg4::Mailbox* inbox(const Group& group, int member);
// Channel c's mailbox of `member` (channel 0 is the plain one, so one-channel rings keep their names).
sg4::Mailbox* channel_inbox(const Group& group, int channel, int member);
// The tree's mailbox of `member`.
sg4::Mailbox* tree_inbox(const Group& group, int member);

// Throws InternalError unless `my_index` is a member of `group` that runs (below its period, Group::period).
void check_member(const Group& group, int my_index);

// Throws InternalError when `group` is folded by symmetry (Group::period > 0): `what` runs only over whole groups.
void check_whole(const Group& group, const char* what);

// Replicas folded by symmetry (Group::period): channel c's mailbox on `member`'s image host, where a ring transfer to
// one of member's counterparts in another block goes.
sg4::Mailbox* image_inbox(const Group& group, int channel, int member);
// The receiving end of image_inbox(group, c, member): a daemon actor on member's image host, made on first use, that
// takes one transfer each time post() is called and signals its arrival to arrived(); the member posts its receive
// with post() and waits with arrived(), as it would get_async() and wait() a transfer from a member that runs.
class ImageReceiver {
 public:
  static ImageReceiver& of(const Group& group, int channel, int member);
  void post() const { go_->release(); }
  void arrived() const { done_->acquire(); }

 private:
  sg4::SemaphorePtr go_;
  sg4::SemaphorePtr done_;
};

struct Shape {
  std::vector<sg4::Host*> hosts;  // the group it was made for (the cache is keyed by tag; a different group with
                                  // the same tag gets a new shape)
  int channels = 1;
  std::vector<std::vector<int>> next;        // [channel][member]: ring successor
  std::vector<std::vector<int>> prev;        // [channel][member]: ring predecessor
  bool tree = false;                         // a tree can run (see tree_estimate_s)
  int per_node = 0;                          // members on each node (0: the group is not regular)
  std::vector<std::vector<int>> tree_peers;  // [member]: the other end of each (channel, tree) edge it is on
  double tree_latency_s = 0.0;               // a root-to-leaf path up and down
  double tree_rest_s = 0.0;            // of that, what the flows have not paid (each paid its own route's latency)
  double ring_latency_s = 0.0;         // per ring step: the slowest hop's latency
  double ring_s_per_chunk_byte = 0.0;  // per ring step and byte of the chunk: the most loaded link's time
  double tree_s_per_byte = std::numeric_limits<double>::infinity();
  sg4::BarrierPtr barrier;  // the tree's "everyone received the broadcast"
};

// The group's members by node: contiguous segments of one node zone each, and whether they are regular (two or more
// NVSwitch nodes, the same member count k on each, every segment using the same number of NICs).
struct NodeSegments {
  std::vector<std::pair<int, int>> segments;  // [first, last] member
  int k = 0;                                  // members per segment
  bool regular = false;
  std::vector<std::vector<int>> heads;  // [segment][channel] → position of the member on the channel's NIC

  int nodes() const { return static_cast<int>(segments.size()); }
  // The member of node `node` at `offset` after the head of `channel` (offset 0 = the head). Only when regular.
  int member(int node, int channel, int offset) const {
    return segments[static_cast<std::size_t>(node)].first +
           (heads[static_cast<std::size_t>(node)][static_cast<std::size_t>(channel)] + offset) % k;
  }
};

// Accumulates bytes per link (a split-duplex direction is its own link) and returns the most loaded link's time.
class LinkLoad {
 public:
  void add(const Route& r, double bytes) {
    for (const sg4::Link* l : r.links) load_[l] += bytes / l->get_bandwidth();
  }
  double worst_s() const {
    double w = 0.0;
    for (const auto& [link, s] : load_) w = std::max(w, s);
    return w;
  }

 private:
  std::unordered_map<const sg4::Link*, double> load_;
};

// Fills the tree fields of `shape` (tree.cpp) for a regular group with `nics` channels.
void add_trees(Shape& shape, const Group& group, const NodeSegments& nodes, int nics);

// The shape of `group`, made on first use. Actors are not threads: the cache needs no lock.
const Shape& shape_of(const Group& group);

}  // namespace edgc::sim::collectives
