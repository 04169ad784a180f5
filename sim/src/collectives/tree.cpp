// Tree all-reduce (NCCL's Tree): per channel, a chain through each node's members starting at the member on the
// channel's NIC, and two binary trees over the nodes (in-order, the second shifted by one node, as NCCL's double
// binary tree), each carrying S/(2C). The rules: collectives.hpp's header comment.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "collectives/algorithms.hpp"
#include "collectives/group_shape.hpp"
#include "edgc/core/error.hpp"

namespace edgc::sim {
namespace collectives {
namespace {

// In-order balanced binary tree over positions [lo, hi]: parent[mid] = up, then both halves under mid.
void binary_tree(int lo, int hi, int up, std::vector<int>& parent) {
  if (lo > hi) return;
  const int mid = lo + (hi - lo) / 2;
  parent[static_cast<std::size_t>(mid)] = up;
  binary_tree(lo, mid - 1, mid, parent);
  binary_tree(mid + 1, hi, mid, parent);
}

int tree_depth(const std::vector<int>& parent, int node) {
  int depth = 0;
  for (int n = node; parent[static_cast<std::size_t>(n)] >= 0; n = parent[static_cast<std::size_t>(n)]) ++depth;
  return depth;
}

bool tree_runs_over(const Group& group) { return group.size() >= 2 && shape_of(group).tree; }

// Auto weighs the tree only with several members per node, where its hierarchy moves less over the NICs than a ring.
bool tree_auto_weighs(const Group& group) {
  if (group.size() < 2) return false;
  const Shape& shape = shape_of(group);
  return shape.tree && shape.per_node >= 2;
}

// A tree edge's share: S/(2C).
std::uint64_t tree_transfer_bytes(const Group& group, std::uint64_t bytes) {
  const auto channels = static_cast<std::uint64_t>(ring_channels(group));
  return (bytes + 2 * channels - 1) / (2 * channels);
}

}  // namespace

// Per channel, tree 0 the in-order binary tree over node positions, tree 1 the same over positions shifted by one
// (so that, as in NCCL's double binary tree, most inner nodes of one are leaves of the other). Each edge carries
// S/(2C) up and down, so both of its ends get the other as a peer.
void add_trees(Shape& shape, const Group& group, const NodeSegments& n, int nics) {
  const int d = group.size();
  const int nodes = n.nodes();
  const int k = n.k;
  shape.tree = true;
  shape.per_node = k;
  std::vector<int> parent0(static_cast<std::size_t>(nodes), -1);
  binary_tree(0, nodes - 1, -1, parent0);
  int depth = 0;
  for (int node = 0; node < nodes; ++node) depth = std::max(depth, tree_depth(parent0, node));
  shape.tree_peers.assign(static_cast<std::size_t>(d), {});
  LinkLoad tree_load;
  double latency[2] = {0.0, 0.0};  // the slowest edge inside a node, between nodes
  const auto edge = [&](int child, int parent) {
    shape.tree_peers[static_cast<std::size_t>(child)].push_back(parent);
    shape.tree_peers[static_cast<std::size_t>(parent)].push_back(child);
    const sg4::Host* c = group.hosts[static_cast<std::size_t>(child)];
    const sg4::Host* p = group.hosts[static_cast<std::size_t>(parent)];
    const Route up = route_between(c, p);
    tree_load.add(up, 1.0 / (2 * nics));
    tree_load.add(route_between(p, c), 1.0 / (2 * nics));
    double& worst = latency[c->get_englobing_zone() == p->get_englobing_zone() ? 0 : 1];
    worst = std::max(worst, up.latency_s);
  };
  for (int c = 0; c < nics; ++c)
    for (int t = 0; t < 2; ++t)
      for (int pos = 0; pos < nodes; ++pos) {
        const int up = parent0[static_cast<std::size_t>(pos)];
        const int node = (pos + t) % nodes;
        if (up >= 0) edge(n.member(node, c, 0), n.member((up + t) % nodes, c, 0));
        for (int off = 1; off < k; ++off) edge(n.member(node, c, off), n.member(node, c, off - 1));
      }
  shape.tree_s_per_byte = tree_load.worst_s();
  shape.tree_latency_s = 2.0 * (depth * latency[1] + (k - 1) * latency[0]);
  shape.tree_rest_s = std::max(0.0, shape.tree_latency_s - std::max(latency[0], latency[1]));
  shape.barrier = sg4::Barrier::create(static_cast<unsigned>(d));
}

const AllReduceAlgorithm& tree_algorithm() {
  static const AllReduceAlgorithm tree{CollectiveAlgorithm::kTree,
                                       "tree",
                                       tree_runs_over,
                                       tree_auto_weighs,
                                       tree_estimate_s,
                                       tree_all_reduce,
                                       tree_transfer_bytes,
                                       /*ring_closed_form=*/false,
                                       /*auto_weighs_spread_groups=*/false};
  return tree;
}

}  // namespace collectives

double tree_estimate_s(const Group& group, std::uint64_t bytes) {
  if (group.size() < 2) return std::numeric_limits<double>::infinity();
  const collectives::Shape& shape = collectives::shape_of(group);
  if (!shape.tree) return std::numeric_limits<double>::infinity();
  return shape.tree_latency_s + static_cast<double>(bytes) * shape.tree_s_per_byte;
}

// Reduction up and broadcast down are pipelined in NCCL, so every tree edge's data goes up and down at once (one
// flow each way, S/(2C) bytes, sharing links under SimGrid's max-min model); then the whole group meets and adds the
// latency of a root-to-leaf path up and down that the flows have not already paid.
void tree_all_reduce(const Group& group, int my_index, std::uint64_t bytes) {
  using namespace collectives;
  check_member(group, my_index);
  check_whole(group, "a tree all-reduce");
  if (group.size() < 2 || bytes == 0) return;
  const Shape& shape = shape_of(group);
  if (!shape.tree) throw InternalError("collective '" + group.tag + "': no tree over this group");
  const std::uint64_t parts = 2 * static_cast<std::uint64_t>(shape.channels);
  const std::uint64_t part = (bytes + parts - 1) / parts;
  // Every edge at once, both ways: one flow to and one from each tree peer, every receive posted before any is
  // waited for (a transfer starts once its receive is posted).
  const std::vector<int>& peers = shape.tree_peers[static_cast<std::size_t>(my_index)];
  sg4::Mailbox* mine = tree_inbox(group, my_index);
  std::vector<sg4::CommPtr> comms;
  std::vector<int*> got(peers.size());
  for (std::size_t i = 0; i < peers.size(); ++i) {
    comms.push_back(tree_inbox(group, peers[i])->put_async(&g_payload, part));
    comms.push_back(mine->get_async<int>(&got[i]));
  }
  for (const sg4::CommPtr& comm : comms) comm->wait();
  shape.barrier->wait();
  if (shape.tree_rest_s > 0) sg4::this_actor::sleep_for(shape.tree_rest_s);
}

}  // namespace edgc::sim
