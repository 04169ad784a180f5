#include "edgc/sim/collectives.hpp"

#include <xbt/log.h>

#include <algorithm>
#include <array>
#include <limits>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "edgc/core/error.hpp"
#include "edgc/sim/platform.hpp"

XBT_LOG_NEW_DEFAULT_CATEGORY(edgc_collectives, "edgc: collectives over mailboxes");

namespace edgc::sim {
namespace {

// put_async refuses a null payload; nobody reads it, so every transfer carries the address of this one.
int g_payload = 0;

CollectiveAlgorithm g_algorithm = CollectiveAlgorithm::kAuto;

sg4::Mailbox* inbox(const Group& group, int member) {
  return sg4::Mailbox::by_name(group.tag + "/" + std::to_string(member));
}

// Channel c's mailbox of `member` (channel 0 is the plain one, so one-channel rings keep their names).
sg4::Mailbox* channel_inbox(const Group& group, int channel, int member) {
  if (channel == 0) return inbox(group, member);
  return sg4::Mailbox::by_name(group.tag + "/c" + std::to_string(channel) + "/" + std::to_string(member));
}

sg4::Mailbox* tree_inbox(const Group& group, int member) {
  return sg4::Mailbox::by_name(group.tag + "/tree/" + std::to_string(member));
}

void check_member(const Group& group, int my_index) {
  if (group.size() < 1 || my_index < 0 || my_index >= group.size())
    throw InternalError("collective '" + group.tag + "': member " + std::to_string(my_index) + " of a group of " +
                        std::to_string(group.size()));
}

// What the channel and tree algorithms need to know about a group, derived once from its hosts' routes.
struct Shape {
  std::vector<sg4::Host*> hosts;  // the group it was made for (the cache is keyed by tag; a different group with
                                  // the same tag gets a new shape)
  int channels = 1;
  std::vector<std::vector<int>> next;        // [channel][member]: ring successor
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

// Rings over a node whose GPUs are wired pair by pair (the DGX-1 cube-mesh: a route of one link is a direct NVLink,
// two links a detour through another GPU). NCCL builds several rings over the direct links and runs each also
// reversed, so every lane carries traffic both ways. Here: every Hamiltonian cycle over direct links, each taken in
// both directions, and of all multisets of at most kMaxCycles cycles the one whose most loaded link in one ring
// step (each of the 2u rings carrying 1/(2u) of the chunk) is least, fewest cycles on ties. Empty when the group is
// not such a node or has no such cycle.
constexpr int kMaxCycles = 4;
constexpr int kMaxCubeMembers = 8;

std::vector<std::vector<int>> direct_link_rings(const Group& group) {
  const int d = group.size();
  if (d < 3 || d > kMaxCubeMembers) return {};
  std::vector<std::vector<Route>> route(static_cast<std::size_t>(d), std::vector<Route>(static_cast<std::size_t>(d)));
  bool wired = false;
  for (int a = 0; a < d; ++a)
    for (int b = 0; b < d; ++b)
      if (a != b) {
        route[a][b] = route_between(group.hosts[static_cast<std::size_t>(a)], group.hosts[static_cast<std::size_t>(b)]);
        wired = wired || route[a][b].links.size() == 1;
      }
  if (!wired) return {};
  // Undirected cycles (member 0 first, second member below the last), each as its two directed successor arrays.
  std::vector<std::array<std::vector<int>, 2>> cycles;
  std::vector<int> order(static_cast<std::size_t>(d));
  for (int i = 0; i < d; ++i) order[static_cast<std::size_t>(i)] = i;
  do {
    if (order[1] > order[static_cast<std::size_t>(d - 1)]) continue;
    bool direct = true;
    for (int i = 0; i < d && direct; ++i) direct = route[order[i]][order[(i + 1) % d]].links.size() == 1;
    if (!direct) continue;
    std::array<std::vector<int>, 2> both{std::vector<int>(static_cast<std::size_t>(d)),
                                         std::vector<int>(static_cast<std::size_t>(d))};
    for (int i = 0; i < d; ++i) {
      both[0][static_cast<std::size_t>(order[i])] = order[(i + 1) % d];
      both[1][static_cast<std::size_t>(order[(i + 1) % d])] = order[i];
    }
    cycles.push_back(both);
  } while (std::next_permutation(order.begin() + 1, order.end()));
  if (cycles.empty()) return {};
  const auto step_s = [&](const std::vector<std::size_t>& pick) {
    LinkLoad load;
    const double share = 1.0 / (2.0 * static_cast<double>(pick.size()));
    for (const std::size_t c : pick)
      for (const std::vector<int>& next : cycles[c])
        for (int i = 0; i < d; ++i) load.add(route[i][next[static_cast<std::size_t>(i)]], share);
    return load.worst_s();
  };
  std::vector<std::size_t> best;
  double best_s = std::numeric_limits<double>::infinity();
  // Multisets of u cycles as non-decreasing index vectors.
  for (int u = 1; u <= kMaxCycles; ++u) {
    std::vector<std::size_t> pick(static_cast<std::size_t>(u), 0);
    while (true) {
      const double t = step_s(pick);
      if (t < best_s * (1 - 1e-9)) {
        best_s = t;
        best = pick;
      }
      int i = u - 1;
      while (i >= 0 && pick[static_cast<std::size_t>(i)] + 1 == cycles.size()) --i;
      if (i < 0) break;
      ++pick[static_cast<std::size_t>(i)];
      for (int j = i + 1; j < u; ++j) pick[static_cast<std::size_t>(j)] = pick[static_cast<std::size_t>(i)];
    }
  }
  std::vector<std::vector<int>> rings;
  for (const std::size_t c : best)
    for (const std::vector<int>& next : cycles[c]) rings.push_back(next);
  return rings;
}

std::shared_ptr<Shape> make_shape(const Group& group) {
  auto shape = std::make_shared<Shape>();
  shape->hosts = group.hosts;
  const int d = group.size();
  std::vector<int> plain(static_cast<std::size_t>(d));
  for (int i = 0; i < d; ++i) plain[static_cast<std::size_t>(i)] = (i + 1) % d;
  shape->next = {plain};

  // Node segments: members of one node zone, contiguous in member order, the same count on every node.
  std::vector<std::pair<int, int>> segments;  // [first, last] member
  for (int i = 0; i < d; ++i) {
    const bool same = i > 0 && group.hosts[static_cast<std::size_t>(i)]->get_englobing_zone() ==
                                   group.hosts[static_cast<std::size_t>(i - 1)]->get_englobing_zone();
    if (same)
      segments.back().second = i;
    else
      segments.emplace_back(i, i);
  }
  const int k = d / std::max<int>(1, static_cast<int>(segments.size()));
  bool regular = segments.size() >= 2;
  std::unordered_set<const sg4::NetZone*> zones;
  for (const auto& [first, last] : segments) {
    regular = regular && last - first + 1 == k &&
              zones.insert(group.hosts[static_cast<std::size_t>(first)]->get_englobing_zone()).second;
  }
  // NVSwitch nodes: every pair of members of a node is two links apart (up to the switch, down from it).
  for (int a = 0; regular && a < k; ++a)
    for (int b = 0; regular && b < k; ++b)
      if (a != b)
        regular = route_between(group.hosts[static_cast<std::size_t>(a)], group.hosts[static_cast<std::size_t>(b)])
                      .links.size() == 2;

  // Each segment's members' NICs (the first link of a route to another node), by position.
  std::vector<std::vector<int>> heads;  // [segment][channel] → position of the member on the channel's NIC
  if (regular) {
    for (std::size_t s = 0; s < segments.size() && regular; ++s) {
      const sg4::Host* other = group.hosts[static_cast<std::size_t>(segments[(s + 1) % segments.size()].first)];
      std::vector<const sg4::Link*> nics;
      std::vector<int> first_on;
      for (int p = 0; p < k; ++p) {
        const Route r = route_between(group.hosts[static_cast<std::size_t>(segments[s].first + p)], other);
        const sg4::Link* nic = r.links.empty() ? nullptr : r.links.front();
        if (std::find(nics.begin(), nics.end(), nic) == nics.end()) {
          nics.push_back(nic);
          first_on.push_back(p);
        }
      }
      regular = heads.empty() || first_on.size() == heads.front().size();
      heads.push_back(first_on);
    }
  }
  // The rings: one per NIC over regular nodes, over direct NVLinks inside one cube-mesh node, else one in order.
  const int nodes = static_cast<int>(segments.size());
  const int nics = regular ? static_cast<int>(heads.front().size()) : 1;
  const auto member = [&](int node, int channel, int offset) {  // offset 0 = the channel's head
    return segments[static_cast<std::size_t>(node)].first +
           (heads[static_cast<std::size_t>(node)][static_cast<std::size_t>(channel)] + offset) % k;
  };
  if (nics > 1) {
    shape->next.assign(static_cast<std::size_t>(nics), std::vector<int>(static_cast<std::size_t>(d)));
    for (int c = 0; c < nics; ++c)
      for (int n = 0; n < nodes; ++n)
        for (int off = 1; off <= k; ++off) {
          // Inside node n: head+1, …, head; the head leaves for node n+1's head+1.
          const int to = off < k ? member(n, c, off + 1) : member((n + 1) % nodes, c, 1);
          shape->next[static_cast<std::size_t>(c)][static_cast<std::size_t>(member(n, c, off))] = to;
        }
  } else if (nodes == 1) {
    std::vector<std::vector<int>> rings = direct_link_rings(group);
    if (rings.size() > 1) shape->next = std::move(rings);
  }
  shape->channels = static_cast<int>(shape->next.size());
  LinkLoad step;
  for (const std::vector<int>& next : shape->next)
    for (int i = 0; i < d; ++i) {
      const Route r = route_between(group.hosts[static_cast<std::size_t>(i)],
                                    group.hosts[static_cast<std::size_t>(next[static_cast<std::size_t>(i)])]);
      shape->ring_latency_s = std::max(shape->ring_latency_s, r.latency_s);
      step.add(r, 1.0 / shape->channels);
    }
  shape->ring_s_per_chunk_byte = step.worst_s();
  if (!regular) return shape;

  // Trees: per channel, tree 0 the in-order binary tree over node positions, tree 1 the same over positions
  // shifted by one (so that, as in NCCL's double binary tree, most inner nodes of one are leaves of the other).
  // Each edge carries S/(2C) up and down, so both of its ends get the other as a peer.
  shape->tree = true;
  shape->per_node = k;
  std::vector<int> parent0(static_cast<std::size_t>(nodes), -1);
  binary_tree(0, nodes - 1, -1, parent0);
  int depth = 0;
  for (int n = 0; n < nodes; ++n) depth = std::max(depth, tree_depth(parent0, n));
  shape->tree_peers.assign(static_cast<std::size_t>(d), {});
  LinkLoad tree_load;
  double latency[2] = {0.0, 0.0};  // the slowest edge inside a node, between nodes
  const auto edge = [&](int child, int parent) {
    shape->tree_peers[static_cast<std::size_t>(child)].push_back(parent);
    shape->tree_peers[static_cast<std::size_t>(parent)].push_back(child);
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
        if (up >= 0) edge(member(node, c, 0), member((up + t) % nodes, c, 0));
        for (int off = 1; off < k; ++off) edge(member(node, c, off), member(node, c, off - 1));
      }
  shape->tree_s_per_byte = tree_load.worst_s();
  shape->tree_latency_s = 2.0 * (depth * latency[1] + (k - 1) * latency[0]);
  shape->tree_rest_s = std::max(0.0, shape->tree_latency_s - std::max(latency[0], latency[1]));
  shape->barrier = sg4::Barrier::create(static_cast<unsigned>(d));
  return shape;
}

// The shape of `group`, made on first use. Actors are not threads: the cache needs no lock.
const Shape& shape_of(const Group& group) {
  static std::unordered_map<std::string, std::shared_ptr<Shape>> cache;
  std::shared_ptr<Shape>& s = cache[group.tag];
  if (!s || s->hosts != group.hosts) s = make_shape(group);
  return *s;
}

// `steps` ring steps of `chunk` bytes over every channel at once: post the sends first so that neighbours'
// rendezvous can match in any order.
void ring_steps_of(const Group& group, int my_index, int steps, std::uint64_t chunk) {
  check_member(group, my_index);
  const int d = group.size();
  if (d == 1 || chunk == 0) return;
  const Shape& shape = shape_of(group);
  const int channels = shape.channels;
  const std::uint64_t part = (chunk + static_cast<std::uint64_t>(channels) - 1) / static_cast<std::uint64_t>(channels);
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
  throw UsageError("--op", "unknown collective '" + name + "' (all_reduce, reduce_scatter, all_gather, sendrecv)");
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
      return ranks > 1 ? 1 : 0;
  }
  return 0;
}

std::uint64_t ring_chunk_bytes(CollectiveOp op, int ranks, std::uint64_t bytes) {
  if (op == CollectiveOp::kSendRecv || ranks <= 1) return bytes;
  const auto d = static_cast<std::uint64_t>(ranks);
  return (bytes + d - 1) / d;
}

std::optional<CollectiveAlgorithm> allreduce_algorithm_from_name(const std::string& name) {
  if (name == "auto") return CollectiveAlgorithm::kAuto;
  if (name == "ring") return CollectiveAlgorithm::kRing;
  if (name == "tree") return CollectiveAlgorithm::kTree;
  return std::nullopt;
}

std::string allreduce_algorithm_name(CollectiveAlgorithm algorithm) {
  switch (algorithm) {
    case CollectiveAlgorithm::kAuto:
      return "auto";
    case CollectiveAlgorithm::kRing:
      return "ring";
    case CollectiveAlgorithm::kTree:
      return "tree";
  }
  return "?";
}

void set_allreduce_algorithm(CollectiveAlgorithm algorithm) { g_algorithm = algorithm; }
CollectiveAlgorithm allreduce_algorithm() { return g_algorithm; }

int ring_channels(const Group& group) { return group.size() < 2 ? 1 : shape_of(group).channels; }

double ring_estimate_s(const Group& group, std::uint64_t bytes) {
  if (group.size() < 2) return 0.0;
  const Shape& shape = shape_of(group);
  const CollectiveOp op = CollectiveOp::kAllReduce;
  const double chunk = static_cast<double>(ring_chunk_bytes(op, group.size(), bytes));
  return ring_steps(op, group.size()) * (shape.ring_latency_s + chunk * shape.ring_s_per_chunk_byte);
}

double tree_estimate_s(const Group& group, std::uint64_t bytes) {
  if (group.size() < 2) return std::numeric_limits<double>::infinity();
  const Shape& shape = shape_of(group);
  if (!shape.tree) return std::numeric_limits<double>::infinity();
  return shape.tree_latency_s + static_cast<double>(bytes) * shape.tree_s_per_byte;
}

CollectiveAlgorithm chosen_allreduce_algorithm(const Group& group, std::uint64_t bytes) {
  if (group.size() < 2 || g_algorithm == CollectiveAlgorithm::kRing) return CollectiveAlgorithm::kRing;
  const Shape& shape = shape_of(group);
  if (!shape.tree) return CollectiveAlgorithm::kRing;
  if (g_algorithm == CollectiveAlgorithm::kTree) return CollectiveAlgorithm::kTree;
  // Auto: the tree only with several members per node (see the header), and only where it is estimated faster.
  if (shape.per_node < 2) return CollectiveAlgorithm::kRing;
  return tree_estimate_s(group, bytes) < ring_estimate_s(group, bytes) ? CollectiveAlgorithm::kTree
                                                                       : CollectiveAlgorithm::kRing;
}

void all_reduce(const Group& group, int my_index, std::uint64_t bytes) {
  if (chosen_allreduce_algorithm(group, bytes) == CollectiveAlgorithm::kTree)
    tree_all_reduce(group, my_index, bytes);
  else
    ring_all_reduce(group, my_index, bytes);
}

void tree_all_reduce(const Group& group, int my_index, std::uint64_t bytes) {
  check_member(group, my_index);
  if (group.size() < 2 || bytes == 0) return;
  const Shape& shape = shape_of(group);
  if (!shape.tree) throw InternalError("collective '" + group.tag + "': no tree over this group");
  const auto parts = static_cast<std::uint64_t>(2 * shape.channels);
  const std::uint64_t part = (bytes + parts - 1) / parts;
  // Every edge at once, both ways (reduction up, broadcast down): one flow to and one from each tree peer, every
  // receive posted before any is waited for (a transfer starts once its receive is posted).
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

void ring_all_reduce(const Group& group, int my_index, std::uint64_t bytes) {
  const CollectiveOp op = CollectiveOp::kAllReduce;
  ring_steps_of(group, my_index, ring_steps(op, group.size()), ring_chunk_bytes(op, group.size(), bytes));
}

void ring_reduce_scatter(const Group& group, int my_index, std::uint64_t bytes) {
  const CollectiveOp op = CollectiveOp::kReduceScatter;
  ring_steps_of(group, my_index, ring_steps(op, group.size()), ring_chunk_bytes(op, group.size(), bytes));
}

void ring_all_gather(const Group& group, int my_index, std::uint64_t bytes) {
  const CollectiveOp op = CollectiveOp::kAllGather;
  ring_steps_of(group, my_index, ring_steps(op, group.size()), ring_chunk_bytes(op, group.size(), bytes));
}

void sendrecv(const Group& group, int my_index, int to, int from, std::uint64_t bytes) {
  check_member(group, my_index);
  sg4::CommPtr out;
  if (to >= 0) {
    check_member(group, to);
    out = inbox(group, to)->put_async(&g_payload, bytes);
  }
  if (from >= 0) {
    check_member(group, from);
    inbox(group, my_index)->get<int>();
  }
  if (out) out->wait();
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

}  // namespace edgc::sim
