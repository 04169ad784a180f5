#pragma once
// The simulated cluster as an S4U platform, built in C++ from a ClusterSpec.
//
// Shape (names are stable, tests and traces refer to them):
//   root StarZone "platform" (routes nothing: every route's common ancestor is the fabric)
//   fabric (StarZone "fabric", or a fat tree "fabric")
//   └─ node zone "node<n>" (FullZone, explicit routes), gateway = router "node<n>-rtr"
//      ├─ hosts "n<n>-g<g>", one per GPU, speed = peak FLOP/s (callers apply compute efficiency)
//      ├─ NVLink links: NVSwitch → one split-duplex link "n<n>-nvl<g>" per GPU to the switch;
//      │                DGX-1 cube-mesh → one split-duplex link "n<n>-nvl<i>-<j>" per directly wired pair
//      └─ NIC links "n<n>-nic<k>": gpus_per_node / nics_per_node GPUs share NIC k (GPU g uses NIC g / share)
//   └─ zone "images" (FullZone, only when build() is given image GPUs; star fabric only), gateway "images-rtr"
//      └─ hosts "n<n>-g<g>-image": the image of GPU (n, g), reached over that GPU's NIC down-link
// Global rank r is GPU r % gpus_per_node of node r / gpus_per_node.
//
// Latencies: a route inside a node costs `intra_latency_us` per GPU-to-GPU hop (split over the two NVSwitch links;
// the whole value on a cube-mesh link); a route between nodes costs `inter_latency_us` NIC to NIC (half on each
// NIC link; fat-tree links add none, so star and fat tree differ only in bandwidth sharing).
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "edgc/sim/spec.hpp"

namespace edgc::sim {

namespace sg4 = simgrid::s4u;

/// Throws edgc::ConfigError naming `where` and the scenario key of the first bad field
/// (e.g. "cluster.inter_node.nics_per_node"): non-positive sizes, bandwidths or latencies, gpus_per_node not a
/// multiple of nics_per_node, a cube-mesh node that is not 8 GPUs, a fat tree whose nodes or leaves do not divide.
void validate(const ClusterSpec& spec, const std::string& where = "cluster spec");

/// Efficiency of `curve` at a message of `bytes`: log-linear interpolation in bytes, held constant outside the
/// points; 1 when the curve has no points. With the calibrated profile `bytes` is the size of ONE transfer as
/// SimGrid sees it, i.e. a ring step's chunk (S/D of an all-reduce of S bytes over D ranks), not the collective's
/// size: `edgc calibrate` keys its points that way.
double efficiency_at(const EfficiencyCurve& curve, double bytes);

/// What the network model sees between two hosts: the links, their summed latency and the slowest link.
struct Route {
  std::vector<sg4::Link*> links;
  double latency_s = 0.0;
  double bottleneck_Bps = 0.0;  ///< smallest link bandwidth on the route (B/s); 0 for an empty route
};
Route route_between(const sg4::Host* src, const sg4::Host* dst);

/// True while SimGrid's network model is the one Platform::build() configures: CM02 without cross-traffic and
/// without the TCP gamma window bound. Only then does a transfer alone on its links take exactly
/// Platform::lone_transfer_s() (a "--cfg" given to the engine afterwards may change that).
bool plain_cm02();

class Platform {
 public:
  /// Sets the network model of `profile` (must run before anything else creates the platform), silences SimGrid's
  /// logging below "critical", builds the zones, hosts and links of `spec`, and, for the calibrated profile,
  /// installs the size-dependent bandwidth/latency factors. One call per process: SimGrid cannot be reset.
  /// Throws ConfigError when `spec` is invalid (see validate()).
  ///
  /// `image_gpus` (global ranks; star fabric only, ignored on a fat tree): each gets an image host, whose route from
  /// any GPU of another node, or from a GPU of the same node, is that GPU's NIC up-link then the imaged GPU's NIC
  /// down-link (the inter-node latency, the inter-node curve of the calibrated profile): what a transfer from the
  /// sender to the imaged GPU's counterpart on another node crosses, with the counterpart's down-link taken by the
  /// imaged GPU's. Replicas folded by symmetry receive their ring transfers from other blocks there
  /// (symmetric_fold_images(), iteration.hpp; sim/README.md, "Replicas that fold by symmetry").
  ///
  /// `fabric_copies` (fat tree only, ignored on a star): each flow through the fat tree stands for that many
  /// identical flows over the same fabric links (the TP indices a folded simulation leaves out,
  /// tp_fold_fabric_copies(), iteration.hpp), so the tree's links get 1 / fabric_copies of their bandwidth: max-min
  /// sharing then gives each flow its share among all the copies (sim/README.md, "TP ranks fold").
  static Platform build(sg4::Engine& engine, const ClusterSpec& spec, const NetworkProfile& profile,
                        const std::vector<int>& image_gpus = {}, int fabric_copies = 1);

  int gpus() const noexcept { return static_cast<int>(hosts_.size()); }
  int nodes() const noexcept { return spec_.nodes; }
  int gpus_per_node() const noexcept { return spec_.gpus_per_node; }
  int node_of(int global_rank) const noexcept { return global_rank / spec_.gpus_per_node; }
  /// Host of a GPU by global rank; throws edgc::InternalError when out of range.
  sg4::Host* gpu(int global_rank) const;
  /// The image host of a GPU (build()'s image_gpus), or nullptr when it has none.
  sg4::Host* image(int global_rank) const;
  const ClusterSpec& spec() const noexcept { return spec_; }
  /// The network profile build() installed.
  const NetworkProfile& profile() const noexcept { return profile_; }
  /// build()'s fabric_copies on a fat tree; 1 on a star.
  int fabric_copies() const noexcept { return fabric_copies_; }

  /// Seconds SimGrid's network model gives ONE transfer of `bytes` from `src` to `dst` that shares no link with any
  /// other transfer during its lifetime: latency · latency factor + bytes / (bottleneck bandwidth · bandwidth
  /// factor). The factors are the calibrated profile's curve for this pair (intra- or inter-node) at `bytes`, as
  /// the callbacks installed by build() return them, or SimGrid's "network/latency-factor" and
  /// "network/bandwidth-factor" settings for the ideal profile. Exact only while plain_cm02() holds.
  double lone_transfer_s(const sg4::Host* src, const sg4::Host* dst, double bytes) const;

 private:
  Platform(const ClusterSpec& spec, const NetworkProfile& profile) : spec_(spec), profile_(profile) {}
  ClusterSpec spec_;
  NetworkProfile profile_;
  std::vector<sg4::Host*> hosts_;   ///< by global rank; owned by the engine
  std::vector<sg4::Host*> images_;  ///< by global rank, nullptr where none (empty when no GPU has one)
  int fabric_copies_ = 1;
};

}  // namespace edgc::sim
