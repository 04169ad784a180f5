// The shape of a group (group_shape.hpp): its node segments, ring channels and ring estimate; the trees are added by
// tree.cpp.
#include "collectives/group_shape.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "edgc/core/error.hpp"

namespace edgc::sim::collectives {

sg4::Mailbox* inbox(const Group& group, int member) {
  return sg4::Mailbox::by_name(group.tag + "/" + std::to_string(member));
}

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
  if (group.period > 0 && (my_index >= group.period || group.period >= group.size() ||
                           group.images.size() != static_cast<std::size_t>(group.period)))
    throw InternalError("collective '" + group.tag + "': member " + std::to_string(my_index) + " of a group of " +
                        std::to_string(group.size()) + " folded with period " + std::to_string(group.period) + " and " +
                        std::to_string(group.images.size()) + " images");
}

void check_whole(const Group& group, const char* what) {
  if (group.period > 0)
    throw InternalError(std::string(what) + " over '" + group.tag + "', a group folded by symmetry (period " +
                        std::to_string(group.period) + "): only rings run over such groups");
}

sg4::Mailbox* image_inbox(const Group& group, int channel, int member) {
  return sg4::Mailbox::by_name(group.tag + "/image/c" + std::to_string(channel) + "/" + std::to_string(member));
}

ImageReceiver& ImageReceiver::of(const Group& group, int channel, int member) {
  // One simulation per process, and actors are not threads: a plain map keyed by the mailbox.
  static std::unordered_map<sg4::Mailbox*, ImageReceiver> receivers;
  sg4::Mailbox* box = image_inbox(group, channel, member);
  auto [it, fresh] = receivers.try_emplace(box);
  ImageReceiver& r = it->second;
  if (fresh) {
    r.go_ = sg4::Semaphore::create(0);
    r.done_ = sg4::Semaphore::create(0);
    sg4::Host* host = group.images.at(static_cast<std::size_t>(member));
    if (host == nullptr)
      throw InternalError("collective '" + group.tag + "': member " + std::to_string(member) + " has no image host");
    sg4::Actor::create(box->get_name() + "/receiver", host, [box, go = r.go_, done = r.done_] {
      while (true) {
        go->acquire();
        box->get<int>();
        done->release();
      }
    })->daemonize();
  }
  return r;
}

namespace {

// Rings over a node whose GPUs are wired pair by pair (the DGX-1 cube-mesh: a route of one link is a direct NVLink,
// two links a detour through another GPU). NCCL builds several rings over the direct links and runs each also
// reversed, so every lane carries traffic both ways. Here: every Hamiltonian cycle over direct links, each taken in
// both directions, and of all multisets of at most kMaxCycles cycles the one whose most loaded link in one ring
// step (each of the 2u rings carrying 1/(2u) of the chunk) is least, fewest cycles on ties. Empty when the group is
// not such a node or has no such cycle.
constexpr int kMaxCycles = 4;
constexpr int kMaxCubeMembers = 8;

std::string wiring_key(const std::vector<std::vector<Route>>& route);
std::vector<std::vector<int>> search_direct_link_rings(const std::vector<std::vector<Route>>& route);

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
  // Every node of a cluster is wired alike: the search below depends only on the routes' links (which pairs share
  // which link, and each link's bandwidth), so its result is kept per wiring and reused by every such group.
  static std::unordered_map<std::string, std::vector<std::vector<int>>> by_wiring;
  const std::string wiring = wiring_key(route);
  if (const auto it = by_wiring.find(wiring); it != by_wiring.end()) return it->second;
  std::vector<std::vector<int>> rings = search_direct_link_rings(route);
  by_wiring.emplace(wiring, rings);
  return rings;
}

// The routes' links as a key: per ordered pair, each link's first-seen index and its bandwidth (exact, hex).
std::string wiring_key(const std::vector<std::vector<Route>>& route) {
  std::unordered_map<const sg4::Link*, std::size_t> id;
  std::string key;
  char buf[64];
  for (const std::vector<Route>& from : route)
    for (const Route& r : from) {
      key += '|';
      for (const sg4::Link* l : r.links) {
        const std::size_t n = id.emplace(l, id.size()).first->second;
        std::snprintf(buf, sizeof buf, "%zu:%a,", n, l->get_bandwidth());
        key += buf;
      }
    }
  return key;
}

std::vector<std::vector<int>> search_direct_link_rings(const std::vector<std::vector<Route>>& route) {
  const int d = static_cast<int>(route.size());
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

// Node segments: members of one node zone, contiguous in member order, the same count on every node, on NVSwitch
// nodes, and each segment's members' NICs (the first link of a route to another node), by position.
NodeSegments node_segments(const Group& group) {
  NodeSegments n;
  const int d = group.size();
  std::vector<std::pair<int, int>>& segments = n.segments;
  for (int i = 0; i < d; ++i) {
    const bool same = i > 0 && group.hosts[static_cast<std::size_t>(i)]->get_englobing_zone() ==
                                   group.hosts[static_cast<std::size_t>(i - 1)]->get_englobing_zone();
    if (same)
      segments.back().second = i;
    else
      segments.emplace_back(i, i);
  }
  const int k = d / std::max<int>(1, static_cast<int>(segments.size()));
  n.k = k;
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
  std::vector<std::vector<int>>& heads = n.heads;
  if (regular) {
    for (std::size_t s = 0; s < segments.size() && regular; ++s) {
      const sg4::Host* other = group.hosts[static_cast<std::size_t>(segments[(s + 1) % segments.size()].first)];
      std::vector<const sg4::Link*> nics;
      std::vector<int> first_on;
      for (int p = 0; p < k; ++p) {
        const Route r = route_between(
            group.hosts[static_cast<std::size_t>(segments[s].first) + static_cast<std::size_t>(p)], other);
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
  n.regular = regular;
  return n;
}

// The rings: one per NIC over regular nodes (ring c enters each node after its head on NIC c and leaves through
// it), over direct NVLinks inside one cube-mesh node, else one in member order.
std::vector<std::vector<int>> rings_of(const Group& group, const NodeSegments& n, int nics) {
  const int d = group.size();
  std::vector<int> plain(static_cast<std::size_t>(d));
  for (int i = 0; i < d; ++i) plain[static_cast<std::size_t>(i)] = (i + 1) % d;
  std::vector<std::vector<int>> next = {plain};
  const int nodes = n.nodes();
  const int k = n.k;
  if (nics > 1) {
    next.assign(static_cast<std::size_t>(nics), std::vector<int>(static_cast<std::size_t>(d)));
    for (int c = 0; c < nics; ++c)
      for (int node = 0; node < nodes; ++node)
        for (int off = 1; off <= k; ++off) {
          // Inside the node: head+1, …, head; the head leaves for the next node's head+1.
          const int to = off < k ? n.member(node, c, off + 1) : n.member((node + 1) % nodes, c, 1);
          next[static_cast<std::size_t>(c)][static_cast<std::size_t>(n.member(node, c, off))] = to;
        }
  } else if (nodes == 1) {
    std::vector<std::vector<int>> rings = direct_link_rings(group);
    if (rings.size() > 1) next = std::move(rings);
  }
  return next;
}

std::shared_ptr<Shape> make_shape(const Group& group) {
  auto shape = std::make_shared<Shape>();
  shape->hosts = group.hosts;
  const int d = group.size();
  const NodeSegments nodes = node_segments(group);
  const int nics = nodes.regular ? static_cast<int>(nodes.heads.front().size()) : 1;
  shape->next = rings_of(group, nodes, nics);
  shape->channels = static_cast<int>(shape->next.size());
  shape->prev.assign(shape->next.size(), std::vector<int>(static_cast<std::size_t>(d)));
  for (std::size_t c = 0; c < shape->next.size(); ++c)
    for (int i = 0; i < d; ++i)
      shape->prev[c][static_cast<std::size_t>(shape->next[c][static_cast<std::size_t>(i)])] = i;
  LinkLoad step;
  for (const std::vector<int>& next : shape->next)
    for (int i = 0; i < d; ++i) {
      const Route r = route_between(group.hosts[static_cast<std::size_t>(i)],
                                    group.hosts[static_cast<std::size_t>(next[static_cast<std::size_t>(i)])]);
      shape->ring_latency_s = std::max(shape->ring_latency_s, r.latency_s);
      step.add(r, 1.0 / shape->channels);
    }
  shape->ring_s_per_chunk_byte = step.worst_s();
  if (nodes.regular) add_trees(*shape, group, nodes, nics);
  return shape;
}

}  // namespace

const Shape& shape_of(const Group& group) {
  static std::unordered_map<std::string, std::shared_ptr<Shape>> cache;
  std::shared_ptr<Shape>& s = cache[group.tag];
  if (!s || s->hosts != group.hosts) s = make_shape(group);
  return *s;
}

}  // namespace edgc::sim::collectives
