#include "edgc/sim/platform.hpp"

#include <xbt/log.h>
#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <xbt/config.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "edgc/core/error.hpp"
#include "edgc/sim/collectives.hpp"

XBT_LOG_NEW_DEFAULT_CATEGORY(edgc_platform, "edgc: building the cluster platform");

namespace edgc::sim {
namespace {

using Dir = sg4::LinkInRoute::Direction;

constexpr double kGBps = 1e9;
constexpr double kUs = 1e-6;

// DGX-1 V100 hybrid cube-mesh: NVLink lanes between GPU pairs (scenarios/SOURCES.md §3, from the measured
// p2p matrix). Every GPU has 6 lanes. Pairs not listed have no NVLink.
// clang-format off
constexpr std::array<std::array<int, 3>, 16> kCubeMeshLanes = {{
    {0, 2, 2}, {0, 4, 2}, {1, 3, 2}, {1, 5, 2}, {2, 3, 2}, {4, 6, 2}, {5, 7, 2}, {6, 7, 2},
    {0, 1, 1}, {0, 3, 1}, {1, 2, 1}, {2, 6, 1}, {3, 7, 1}, {4, 5, 1}, {4, 7, 1}, {5, 6, 1}}};
// clang-format on
constexpr int kCubeMeshGpus = 8;

int cube_mesh_lanes(int a, int b) {
  for (const auto& [i, j, lanes] : kCubeMeshLanes)
    if ((i == a && j == b) || (i == b && j == a)) return lanes;
  return 0;
}

// Intermediate GPU for a pair without NVLink: the one whose two links are widest (the smaller of the two lane
// counts), lowest index on ties. NCCL never routes through a GPU like this (it builds rings over direct links
// only); the detour stands in for "no direct path" so that rank orders which are not NCCL rings pay for it.
int cube_mesh_via(int a, int b) {
  int best = -1;
  int best_lanes = 0;
  for (int k = 0; k < kCubeMeshGpus; ++k) {
    if (k == a || k == b) continue;
    const int lanes = std::min(cube_mesh_lanes(a, k), cube_mesh_lanes(k, b));
    if (lanes > best_lanes) {
      best = k;
      best_lanes = lanes;
    }
  }
  return best;
}

void require(bool ok, const std::string& where, const std::string& key, const std::string& detail) {
  if (!ok) throw ConfigError(where, key, detail);
}

std::string num(double x) {
  std::string s = std::to_string(x);
  while (s.size() > 1 && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

// The links of node `n`: its NICs, and its NVSwitch links (one per GPU) or cube-mesh links (one per wired pair,
// [i][j] with i < j).
struct NodeLinks {
  std::vector<sg4::Link*> nics;
  std::vector<sg4::Link*> nvl;
  std::array<std::array<sg4::Link*, kCubeMeshGpus>, kCubeMeshGpus> cube{};
};

// Builds node zone `n` under `parent` and records its GPU hosts by global rank. Returns (zone netpoint, gateway).
//
// SimGrid 3.32 checks every new link's name against every zone of the platform (Engine::link_by_name_or_null walks
// the whole zone tree), so creating the links of node n inside its zone, after n − 1 node zones exist, costs O(n)
// each and the whole build O(nodes²): 16 s at 2,048 nodes. make_links() can therefore create a node's links in
// another zone that has no child zones yet (the star fabric, before any node is attached): each check is then one
// map lookup. Routes of a node zone may use links of any zone.
class NodeBuilder {
 public:
  NodeBuilder(const ClusterSpec& spec, std::vector<sg4::Host*>& hosts) : spec_(spec), hosts_(hosts) {}

  NodeLinks make_links(sg4::NetZone* zone, int n) const {
    const std::string prefix = "n" + std::to_string(n);
    NodeLinks l;
    for (int k = 0; k < spec_.nics_per_node; ++k)
      l.nics.push_back(
          zone->create_split_duplex_link(prefix + "-nic" + std::to_string(k), spec_.nic_bandwidth_GBps * kGBps)
              ->set_latency(spec_.inter_latency_us * kUs / 2)
              ->seal());
    if (spec_.intra_topology == IntraNodeTopology::kSwitch) {
      for (int g = 0; g < spec_.gpus_per_node; ++g)
        l.nvl.push_back(
            zone->create_split_duplex_link(prefix + "-nvl" + std::to_string(g), spec_.intra_bandwidth_GBps * kGBps)
                ->set_latency(spec_.intra_latency_us * kUs / 2)
                ->seal());
    } else {
      for (const auto& [i, j, lanes] : kCubeMeshLanes)
        l.cube[i][j] = zone->create_split_duplex_link(prefix + "-nvl" + std::to_string(i) + "-" + std::to_string(j),
                                                      lanes * spec_.intra_bandwidth_GBps * kGBps)
                           ->set_latency(spec_.intra_latency_us * kUs)
                           ->seal();
    }
    return l;
  }

  /// `links`: made by make_links() beforehand, or nullptr to make them inside the node zone.
  std::pair<simgrid::kernel::routing::NetPoint*, simgrid::kernel::routing::NetPoint*> operator()(
      sg4::NetZone* parent, int n, const NodeLinks* links = nullptr) const {
    const std::string prefix = "n" + std::to_string(n);
    auto* node = sg4::create_full_zone("node" + std::to_string(n));
    node->set_parent(parent);
    const NodeLinks own = links == nullptr ? make_links(node, n) : NodeLinks{};
    const NodeLinks& l = links == nullptr ? own : *links;

    std::vector<sg4::Host*> gpus;
    for (int g = 0; g < spec_.gpus_per_node; ++g) {
      sg4::Host* h = node->create_host(prefix + "-g" + std::to_string(g), spec_.gpu.peak_tflops * 1e12);
      h->seal();
      gpus.push_back(h);
      hosts_[static_cast<std::size_t>(n) * static_cast<std::size_t>(spec_.gpus_per_node) +
             static_cast<std::size_t>(g)] = h;
    }
    if (spec_.intra_topology == IntraNodeTopology::kSwitch)
      add_switch_routes(node, l, gpus);
    else
      add_cube_mesh_routes(node, l, gpus);

    auto* rtr = node->create_router("node" + std::to_string(n) + "-rtr");
    const int share = spec_.gpus_per_node / spec_.nics_per_node;
    for (int g = 0; g < spec_.gpus_per_node; ++g) {
      sg4::Link* nic = l.nics[static_cast<std::size_t>(g / share)];
      node->add_route(gpus[g]->get_netpoint(), rtr, nullptr, nullptr, {{nic, Dir::UP}}, false);
      node->add_route(rtr, gpus[g]->get_netpoint(), nullptr, nullptr, {{nic, Dir::DOWN}}, false);
    }
    node->seal();
    return {node->get_netpoint(), rtr};
  }

 private:
  // NVSwitch: GPU i → j crosses i's link up to the switch and j's link down; the switch itself never limits.
  static void add_switch_routes(sg4::NetZone* node, const NodeLinks& l, const std::vector<sg4::Host*>& gpus) {
    for (std::size_t i = 0; i < gpus.size(); ++i)
      for (std::size_t j = 0; j < gpus.size(); ++j)
        if (i != j)
          node->add_route(gpus[i]->get_netpoint(), gpus[j]->get_netpoint(), nullptr, nullptr,
                          {{l.nvl[i], Dir::UP}, {l.nvl[j], Dir::DOWN}}, false);
  }

  // Cube-mesh: one link per wired pair with the bandwidth of its lanes (1 or 2 × bandwidth_GBps); unwired pairs
  // take the two links through cube_mesh_via(). A link (i, j) with i < j is UP in the direction i → j.
  static void add_cube_mesh_routes(sg4::NetZone* node, const NodeLinks& l, const std::vector<sg4::Host*>& gpus) {
    auto hop = [&](int a, int b) -> sg4::LinkInRoute {
      return a < b ? sg4::LinkInRoute{l.cube[a][b], Dir::UP} : sg4::LinkInRoute{l.cube[b][a], Dir::DOWN};
    };
    for (int i = 0; i < kCubeMeshGpus; ++i) {
      for (int j = 0; j < kCubeMeshGpus; ++j) {
        if (i == j) continue;
        std::vector<sg4::LinkInRoute> path;
        if (cube_mesh_lanes(i, j) > 0) {
          path = {hop(i, j)};
        } else {
          const int k = cube_mesh_via(i, j);
          path = {hop(i, k), hop(k, j)};
        }
        node->add_route(gpus[i]->get_netpoint(), gpus[j]->get_netpoint(), nullptr, nullptr, path, false);
      }
    }
  }

  const ClusterSpec& spec_;
  std::vector<sg4::Host*>& hosts_;
};

void configure_models() {
  // Hide SimGrid's INFO lines (configuration changes included) before touching the configuration.
  xbt_log_control_set("root.thres:critical");
  // Both profiles start from CM02 without the TCP artefacts (ack cross-traffic, gamma window cap, LV08's
  // slow-start latency factor): NVLink and InfiniBand are not TCP, and with these settings a lone transfer takes
  // exactly latency + bytes / bandwidth, which is what the calibrated factors then scale.
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");
}

// A transfer is inter-node when its endpoints live in different node zones, i.e. its route leaves the node.
const EfficiencyCurve& curve_for(const NetworkProfile& profile, const sg4::Host* src, const sg4::Host* dst) {
  const bool same_node = src != nullptr && dst != nullptr && src->get_englobing_zone() == dst->get_englobing_zone();
  return same_node ? profile.intra : profile.inter;
}

void install_factors(sg4::Engine& engine, const NetworkProfile& profile) {
  if (profile.kind != NetworkProfileKind::kCalibrated) return;
  auto* model = engine.get_netzone_root()->get_network_model();
  model->set_bw_factor_cb([profile](double size, const sg4::Host* src, const sg4::Host* dst,
                                    const std::vector<sg4::Link*>&, const std::unordered_set<sg4::NetZone*>&) {
    return efficiency_at(curve_for(profile, src, dst), size);
  });
  model->set_lat_factor_cb(
      [profile](double, const sg4::Host* src, const sg4::Host* dst, const std::vector<sg4::Link*>&,
                const std::unordered_set<sg4::NetZone*>&) { return curve_for(profile, src, dst).latency_factor; });
}

}  // namespace

void validate(const ClusterSpec& s, const std::string& where) {
  require(s.gpus_per_node >= 1, where, "cluster.gpus_per_node", "must be >= 1, got " + std::to_string(s.gpus_per_node));
  require(s.nodes >= 1, where, "cluster.nodes", "must be >= 1, got " + std::to_string(s.nodes));
  require(s.gpu.peak_tflops > 0, where, "cluster.gpu.peak_tflops", "must be > 0, got " + num(s.gpu.peak_tflops));
  require(s.gpu.hbm_GBps > 0, where, "cluster.gpu.hbm_GBps", "must be > 0, got " + num(s.gpu.hbm_GBps));
  require(s.intra_bandwidth_GBps > 0, where, "cluster.intra_node.bandwidth_GBps",
          "must be > 0, got " + num(s.intra_bandwidth_GBps));
  require(s.intra_latency_us >= 0, where, "cluster.intra_node.latency_us",
          "must be >= 0, got " + num(s.intra_latency_us));
  require(s.intra_topology != IntraNodeTopology::kDgx1CubeMesh || s.gpus_per_node == kCubeMeshGpus, where,
          "cluster.gpus_per_node",
          "the dgx1-cube-mesh topology has 8 GPUs per node, got " + std::to_string(s.gpus_per_node));
  require(s.nics_per_node >= 1, where, "cluster.inter_node.nics_per_node",
          "must be >= 1, got " + std::to_string(s.nics_per_node));
  require(
      s.gpus_per_node % s.nics_per_node == 0, where, "cluster.inter_node.nics_per_node",
      "must divide gpus_per_node (" + std::to_string(s.gpus_per_node) + "), got " + std::to_string(s.nics_per_node));
  require(s.nic_bandwidth_GBps > 0, where, "cluster.inter_node.nic_bandwidth_GBps",
          "must be > 0, got " + num(s.nic_bandwidth_GBps));
  require(s.inter_latency_us >= 0, where, "cluster.inter_node.latency_us",
          "must be >= 0, got " + num(s.inter_latency_us));
  require(s.price_per_gpu_hour_usd >= 0, where, "cluster.price_per_gpu_hour_usd",
          "must be >= 0, got " + num(s.price_per_gpu_hour_usd));
  if (s.fabric == Fabric::kFatTree) {
    const int per_leaf = s.fat_tree_nodes_per_leaf;
    require(per_leaf >= 1, where, "cluster.inter_node.nodes_per_leaf", "must be >= 1, got " + std::to_string(per_leaf));
    require(s.nodes % per_leaf == 0, where, "cluster.inter_node.nodes_per_leaf",
            "must divide nodes (" + std::to_string(s.nodes) + "), got " + std::to_string(per_leaf));
    const double spines = per_leaf / s.oversubscription;
    require(
        s.oversubscription >= 1 && std::abs(spines - std::round(spines)) < 1e-9, where,
        "cluster.inter_node.oversubscription",
        "must be >= 1 and divide nodes_per_leaf (" + std::to_string(per_leaf) + "), got " + num(s.oversubscription));
  }
}

double efficiency_at(const EfficiencyCurve& curve, double bytes) {
  const auto& p = curve.points;
  if (p.empty()) return 1.0;
  if (bytes <= p.front().first) return p.front().second;
  if (bytes >= p.back().first) return p.back().second;
  const auto hi = std::upper_bound(p.begin(), p.end(), bytes,
                                   [](double b, const std::pair<double, double>& q) { return b < q.first; });
  const auto lo = hi - 1;
  const double t = (std::log(bytes) - std::log(lo->first)) / (std::log(hi->first) - std::log(lo->first));
  return lo->second + t * (hi->second - lo->second);
}

Route route_between(const sg4::Host* src, const sg4::Host* dst) {
  Route r;
  src->route_to(dst, r.links, &r.latency_s);
  double bw = std::numeric_limits<double>::infinity();
  for (const auto* l : r.links) bw = std::min(bw, l->get_bandwidth());
  r.bottleneck_Bps = r.links.empty() ? 0.0 : bw;
  return r;
}

bool plain_cm02() {
  namespace cfg = simgrid::config;
  return cfg::get_value<std::string>("network/model") == "CM02" && !cfg::get_value<bool>("network/crosstraffic") &&
         cfg::get_value<double>("network/TCP-gamma") == 0.0;
}

namespace {

// Gives `zone`, made without a parent, the models of `from`, as NetZone::set_parent would: hosts and links can then be
// made in it before it is attached (which set_parent does later, copying the same models again).
void adopt_models(const sg4::NetZone& zone, const sg4::NetZone& from) {
  simgrid::kernel::routing::NetZoneImpl* to = zone.get_impl();
  const simgrid::kernel::routing::NetZoneImpl* of = from.get_impl();
  to->set_network_model(of->get_network_model());
  to->set_cpu_pm_model(of->get_cpu_pm_model());
  to->set_cpu_vm_model(of->get_cpu_vm_model());
  to->set_disk_model(of->get_disk_model());
  to->set_host_model(of->get_host_model());
}

// The images zone of a star fabric (Platform::build's image_gpus): host "n<n>-g<g>-image" per imaged GPU, whose
// route from the zone's router is that GPU's NIC down-link. Every route into it comes from a node zone, so it is the
// sender's NIC up-link, the star (no links), then the imaged GPU's NIC down-link.
void add_images(sg4::NetZone* fabric, const ClusterSpec& spec, const std::vector<NodeLinks>& links,
                const std::vector<int>& image_gpus, std::vector<sg4::Host*>& images) {
  auto* zone = sg4::create_full_zone("images");
  zone->set_parent(fabric);
  auto* rtr = zone->create_router("images-rtr");
  const int share = spec.gpus_per_node / spec.nics_per_node;
  images.assign(static_cast<std::size_t>(spec.total_gpus()), nullptr);
  for (const int r : image_gpus) {
    if (r < 0 || r >= spec.total_gpus())
      throw InternalError("image GPU " + std::to_string(r) + " out of range [0, " + std::to_string(spec.total_gpus()) +
                          ")");
    sg4::Host*& image = images[static_cast<std::size_t>(r)];
    if (image != nullptr) continue;
    const int n = r / spec.gpus_per_node;
    const int g = r % spec.gpus_per_node;
    image =
        zone->create_host("n" + std::to_string(n) + "-g" + std::to_string(g) + "-image", spec.gpu.peak_tflops * 1e12);
    image->seal();
    sg4::Link* nic = links[static_cast<std::size_t>(n)].nics[static_cast<std::size_t>(g / share)];
    zone->add_route(rtr, image->get_netpoint(), nullptr, nullptr, {{nic, Dir::DOWN}}, false);
  }
  zone->seal();
  fabric->add_route(zone->get_netpoint(), nullptr, rtr, nullptr, {}, true);
}

}  // namespace

Platform Platform::build(sg4::Engine& engine, const ClusterSpec& spec, const NetworkProfile& profile,
                         const std::vector<int>& image_gpus, int fabric_copies) {
  validate(spec);
  if (fabric_copies < 1) throw InternalError("Platform::build: fabric_copies must be >= 1");
  configure_models();
  Platform p(spec, profile);
  if (spec.fabric == Fabric::kFatTree) p.fabric_copies_ = fabric_copies;
  p.hosts_.assign(static_cast<std::size_t>(spec.total_gpus()), nullptr);
  const NodeBuilder make_node(spec, p.hosts_);

  sg4::NetZone* fabric = nullptr;
  if (spec.fabric == Fabric::kStar) {
    // Non-blocking switch: routes between nodes add no links, so only the NICs (inside the nodes) limit. The star is
    // built apart from the platform's root and attached to it last: SimGrid 3.32 checks every new host's name
    // against every zone in the root's tree and makes each zone's seal() collect every host of that tree, which
    // made the build quadratic in the nodes (tools/README.md, the iteration benchmark). Apart, each node zone's
    // checks see only the root. Routes between GPUs stay the star's (their common ancestor).
    auto* root = sg4::create_star_zone("platform");
    auto* star = sg4::create_star_zone("fabric");
    adopt_models(*star, *root);
    // Every node's links first, in the star while it has no child zone (NodeBuilder).
    std::vector<NodeLinks> links;
    links.reserve(static_cast<std::size_t>(spec.nodes));
    for (int n = 0; n < spec.nodes; ++n) links.push_back(make_node.make_links(star, n));
    for (int n = 0; n < spec.nodes; ++n) {
      const auto [node, rtr] = make_node(star, n, &links[static_cast<std::size_t>(n)]);
      star->add_route(node, nullptr, rtr, nullptr, {}, true);
    }
    if (!image_gpus.empty()) add_images(star, spec, links, image_gpus, p.images_);
    star->set_parent(root);
    fabric = root;
  } else {
    // Two-level fat tree: each node has one link of its total NIC bandwidth to its leaf switch; a leaf has
    // nodes_per_leaf / oversubscription uplinks of the same bandwidth, one to each spine.
    // The nodes' links are made first, in a zone of their own beside the fabric, while no node zone exists yet
    // (NodeBuilder: keeps their part of the build linear); the fat tree's own links are checked against the zones
    // made before them as SimGrid does.
    const auto per_leaf = static_cast<unsigned>(spec.fat_tree_nodes_per_leaf);
    const auto leaves = static_cast<unsigned>(spec.nodes / spec.fat_tree_nodes_per_leaf);
    const auto spines = static_cast<unsigned>(std::lround(spec.fat_tree_nodes_per_leaf / spec.oversubscription));
    auto* root = sg4::create_star_zone("platform");
    auto* link_zone = sg4::create_star_zone("node-links");
    link_zone->set_parent(root);
    std::vector<NodeLinks> links;
    links.reserve(static_cast<std::size_t>(spec.nodes));
    for (int n = 0; n < spec.nodes; ++n) links.push_back(make_node.make_links(link_zone, n));
    link_zone->seal();
    const sg4::FatTreeParams params(2, {per_leaf, leaves}, {1, spines}, {1, 1});
    const sg4::ClusterCallbacks callbacks(
        [&make_node, &links](sg4::NetZone* zone, const std::vector<unsigned long>&, unsigned long id) {
          return make_node(zone, static_cast<int>(id), &links[id]);
        });
    // The tree and its node zones are built under a holder kept apart from the root until they are sealed, as the
    // star is (above): the build is then linear in the nodes.
    auto* holder = sg4::create_star_zone("fabric-holder");
    adopt_models(*holder, *root);
    fabric = sg4::create_fatTree_zone("fabric", holder, params, callbacks,
                                      spec.nics_per_node * spec.nic_bandwidth_GBps * kGBps / p.fabric_copies_, 0.0,
                                      sg4::Link::SharingPolicy::SPLITDUPLEX);
    fabric->seal();
    holder->set_parent(root);
    fabric = root;
  }
  fabric->seal();
  install_factors(engine, profile);
  set_allreduce_algorithm(profile.algorithm);
  XBT_DEBUG("platform '%s': %d nodes x %d GPUs", spec.name.c_str(), spec.nodes, spec.gpus_per_node);
  return p;
}

double Platform::lone_transfer_s(const sg4::Host* src, const sg4::Host* dst, double bytes) const {
  // The arithmetic of SimGrid 3.32's NetworkCm02Model for a flow alone on its links: latency = Σ link latencies ·
  // latency factor, then bytes at (bottleneck bandwidth, the max-min share) · bandwidth factor. With TCP gamma 0 the
  // flow has no rate bound of its own, so the factor scales the share (a factor > 1 would exceed the link).
  const Route r = route_between(src, dst);
  double latency_factor = 1.0;
  double bandwidth_factor = 1.0;
  if (profile_.kind == NetworkProfileKind::kCalibrated) {
    const EfficiencyCurve& curve = curve_for(profile_, src, dst);
    latency_factor = curve.latency_factor;
    bandwidth_factor = efficiency_at(curve, bytes);
  } else {
    latency_factor = simgrid::config::get_value<double>("network/latency-factor");
    bandwidth_factor = simgrid::config::get_value<double>("network/bandwidth-factor");
  }
  const double latency_s = r.latency_s * latency_factor;
  if (bytes <= 0) return latency_s;
  return latency_s + bytes / (r.bottleneck_Bps * bandwidth_factor);
}

sg4::Host* Platform::image(int global_rank) const {
  if (global_rank < 0 || static_cast<std::size_t>(global_rank) >= images_.size()) return nullptr;
  return images_[static_cast<std::size_t>(global_rank)];
}

sg4::Host* Platform::gpu(int global_rank) const {
  if (global_rank < 0 || global_rank >= gpus())
    throw InternalError("GPU rank " + std::to_string(global_rank) + " out of range [0, " + std::to_string(gpus()) +
                        ")");
  return hosts_[static_cast<std::size_t>(global_rank)];
}

}  // namespace edgc::sim
