// Closed forms of contention-free rings and the conditions under which simulate_iteration uses them and folds the
// DP replicas, and those of a standalone collective (lone_collective_s, what `edgc collective` times). The arguments:
// sim/README.md, "Closed forms and folding"; the pairs of GPUs the iteration's arguments bound come from the traffic
// declaration (impl/traffic.hpp), never from a list written here, and a standalone collective's from its ring shape.
#include "impl/closed_forms.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "collectives/group_shape.hpp"
#include "edgc/sim/cost_model.hpp"
#include "edgc/sim/iteration.hpp"
#include "impl/traffic.hpp"

namespace edgc::sim::impl {

double ring_latency_s(const Group& group) {
  double worst = 0.0;
  for (int i = 0; i < group.size(); ++i)
    worst = std::max(worst, route_between(group.hosts[static_cast<std::size_t>(i)],
                                          group.hosts[static_cast<std::size_t>((i + 1) % group.size())])
                                .latency_s);
  return ring_steps(CollectiveOp::kAllReduce, group.size()) * worst;
}

double contention_free_ring_s(const Platform& platform, const Group& group, std::uint64_t bytes, CollectiveOp op) {
  const std::uint64_t chunk = ring_chunk_bytes(op, group.size(), bytes);
  if (group.size() < 2 || chunk == 0) return 0.0;
  return ring_steps(op, group.size()) *
         platform.lone_transfer_s(group.hosts[0], group.hosts[1], static_cast<double>(chunk));
}

double channel_ring_s(const Platform& platform, const Group& group, std::uint64_t bytes) {
  const CollectiveOp op = CollectiveOp::kAllReduce;
  const std::uint64_t chunk = ring_chunk_bytes(op, group.size(), bytes);
  if (group.size() < 2 || chunk == 0) return 0.0;
  const std::uint64_t channel_chunk = ring_channel_part_bytes(chunk, ring_channels(group));
  return ring_steps(op, group.size()) *
         platform.lone_transfer_s(group.hosts[0], group.hosts[1], static_cast<double>(channel_chunk));
}

namespace {

// How many members of `group` share the first member's node (its first run: the structure is checked before use,
// node_runs).
int first_run(const Group& group) {
  int k = 1;
  while (k < group.size() &&
         group.hosts[static_cast<std::size_t>(k)]->get_englobing_zone() == group.hosts[0]->get_englobing_zone())
    ++k;
  return k;
}

}  // namespace

double dp_ring_closed_form_s(const Platform& platform, const Group& group, std::uint64_t bytes, CollectiveOp op) {
  const int k = first_run(group);
  if (k == 1 || k == group.size()) return contention_free_ring_s(platform, group, bytes, op);
  // Runs of k members on NVSwitch nodes with one NIC each: the ring's k channels (collectives/group_shape.cpp), each
  // step a chunk / k part on every channel at once: k − 1 parts from each member to the next in its node over the
  // same NVLink pair (sharing it), one to the next node over the NICs.
  const std::uint64_t chunk = ring_chunk_bytes(op, group.size(), bytes);
  if (chunk == 0) return 0.0;
  const auto part = static_cast<double>(ring_channel_part_bytes(chunk, k));
  const sg4::Host* a = group.hosts[0];
  const double nvlink_latency_s = platform.lone_transfer_s(a, group.hosts[1], 0.0);
  const double nvlink_s =
      nvlink_latency_s + (k - 1) * (platform.lone_transfer_s(a, group.hosts[1], part) - nvlink_latency_s);
  const double nic_s = platform.lone_transfer_s(a, group.hosts[static_cast<std::size_t>(k) + 1], part);
  return ring_steps(op, group.size()) * std::max(nvlink_s, nic_s);
}

namespace {

// The links of a route between two nodes that can limit its transfers: all of them, or, where the fabric's links
// never bind (fabric_never_binds), only its two ends: the sender's NIC up-link and the receiver's NIC down-link.
std::vector<sg4::Link*> limiting_links(const Route& route, bool fabric_free) {
  if (!fabric_free || route.links.size() < 2) return route.links;
  return {route.links.front(), route.links.back()};
}

// Whether every hop i → i + 1 of `group`'s ring stays inside one node zone (`inside_node`) or crosses between two,
// has exactly two limiting links (limiting_links), has the route latency and bandwidth of the first hop, and passes
// `also` (given those links).
template <class Check>
bool ring_hops_alike(const Group& group, bool inside_node, bool fabric_free, const Check& also) {
  if (group.size() < 2) return true;
  const Route first = route_between(group.hosts[0], group.hosts[1]);
  for (int i = 0; i < group.size(); ++i) {
    const sg4::Host* a = group.hosts[static_cast<std::size_t>(i)];
    const sg4::Host* b = group.hosts[static_cast<std::size_t>((i + 1) % group.size())];
    const Route hop = route_between(a, b);
    const std::vector<sg4::Link*> limiting = limiting_links(hop, fabric_free && !inside_node);
    if ((a->get_englobing_zone() == b->get_englobing_zone()) != inside_node || hop.latency_s != first.latency_s ||
        hop.bottleneck_Bps != first.bottleneck_Bps || limiting.size() != 2 || !also(limiting))
      return false;
  }
  return true;
}

// Whether the DP replicas provably run in step (every replica's timeline the same), provided no link between the
// nodes ever limits a transfer (fabric_never_binds): NVSwitch nodes (a GPU's NVLink links carry only its own
// transfers), no compute variability (jitter and stragglers differ per GPU), no fused embedding sync (its ring spans
// every replica).
bool replicas_can_run_in_step(const Platform& platform, const ParallelSpec& par, const ComputeVariability& v) {
  return platform.spec().intra_topology == IntraNodeTopology::kSwitch && v.compute_jitter_cv == 0.0 &&
         v.straggler_probability == 0.0 && !fused_embedding_sync_applies(par);
}

// Whether no link of the fabric between the nodes (a fat tree's node, leaf and spine links) can ever limit a
// transfer of any pair that sent_by() declares, so that every transfer between two nodes is limited by its two NIC
// links alone, as on a star fabric. `in_step`: replicas_can_run_in_step. Proof: sim/README.md, "Closed forms and
// folding", fabric links that never bind.
bool fabric_never_binds(const Platform& platform, const ParallelSpec& par, const Layout& layout, bool in_step) {
  const ClusterSpec& spec = platform.spec();
  if (spec.nics_per_node != spec.gpus_per_node) return false;
  if (spec.fabric == Fabric::kStar) return true;  // routes between nodes add no link to the two NICs'
  struct Side {
    std::unordered_set<int> gpus;
    double Bps = 0.0;
  };
  struct Load {
    std::unordered_map<int, Side> sent;      // by (sender's stage · kPhases + phase), one key when not in step
    std::unordered_map<int, Side> received;  // by the receiver's
  };
  std::unordered_map<const sg4::Link*, Load> loads;
  const auto key = [&](int rank, Phase phase) {
    return in_step ? layout.coord_of(rank).pp * kPhases + static_cast<int>(phase) : 0;
  };
  const auto add = [&](int a, int b, Phase phase) {
    if (a == b || layout.node_of(a) == layout.node_of(b)) return true;
    const Route r = route_between(platform.gpu(a), platform.gpu(b));
    if (r.links.size() < 2) return false;
    for (std::size_t i = 1; i + 1 < r.links.size(); ++i) {
      Load& l = loads[r.links[i]];
      if (Side& s = l.sent[key(a, phase)]; s.gpus.insert(a).second) s.Bps += r.links.front()->get_bandwidth();
      if (Side& s = l.received[key(b, phase)]; s.gpus.insert(b).second) s.Bps += r.links.back()->get_bandwidth();
    }
    return true;
  };
  bool ok = true;
  for (int r = 0; r < layout.world_size() && ok; ++r)
    for (const Exchange& e : sent_by(layout, par, r)) {
      ok = add(e.src, e.dst, e.phase);
      if (!ok) break;
    }
  if (!ok) return false;
  // Σ over stages of the largest phase's sum (one stage and phase when not in step).
  const auto bound = [](const std::unordered_map<int, Side>& sides) {
    std::unordered_map<int, double> per_stage;
    for (const auto& [k, side] : sides) per_stage[k / kPhases] = std::max(per_stage[k / kPhases], side.Bps);
    double sum = 0.0;
    for (const auto& [stage, Bps] : per_stage) sum += Bps;
    return sum;
  };
  constexpr double kSlack = 1e-12;
  // Every GPU's pairs are counted, so a tree built for TP index 0 alone (fabric_copies) is held to its whole links.
  return std::all_of(loads.begin(), loads.end(), [&](const auto& entry) {
    return std::min(bound(entry.second.sent), bound(entry.second.received)) <=
           entry.first->get_bandwidth() * platform.fabric_copies() * (1.0 + kSlack);
  });
}

// Whether every hop of every ring of `groups` crosses between two nodes, is limited by its two NIC links alone
// (fabric_never_binds holds), has the latency and bandwidth of its ring's first hop, and no NIC link carries two
// hops of these rings.
bool rings_alone_across_nodes(const std::vector<Group>& groups) {
  std::unordered_set<const sg4::Link*> used;
  const auto links_unused = [&used](const std::vector<sg4::Link*>& links) {
    return std::all_of(links.begin(), links.end(), [&used](const sg4::Link* l) { return used.insert(l).second; });
  };
  return std::all_of(groups.begin(), groups.end(),
                     [&](const Group& g) { return ring_hops_alike(g, false, true, links_unused); });
}

}  // namespace

int node_runs(const Layout& layout, const std::vector<int>& ranks) {
  const int d = static_cast<int>(ranks.size());
  const auto node = [&](int i) { return layout.node_of(ranks[static_cast<std::size_t>(i)]); };
  int k = 1;
  while (k < d && node(k) == node(0)) ++k;
  if (d % k != 0 || d / k < 2) return 0;
  std::unordered_set<int> seen;
  for (int i = 0; i < d; ++i)
    if (node(i) != node(i / k * k) || (i % k == 0 && !seen.insert(node(i)).second)) return 0;
  return k;
}

namespace {

// Mixture of experts: whether the DP rings whose members come in runs of k ≥ 2 per node (node_runs) take
// dp_ring_closed_form_s. Needs a star of NVSwitch nodes with one NIC per GPU (checked by the caller), every
// replica block in step (replicas_can_run_in_step; blocks of folded_replicas() replicas dividing k, so that the
// members of each DP group arrive alike on every node), and every NVLink and NIC hop of each ring alike.
// With several members per node the tree may run instead (auto weighs it there): the ring must be the algorithm
// of every all-reduce of the iteration, forced or chosen for each of `allreduce_sizes` (unknown: nullptr).
bool node_run_rings_alike(const Platform& platform, const ParallelSpec& par, const Layout& layout,
                          const ComputeVariability& variability, const std::vector<std::uint64_t>* allreduce_sizes) {
  if (!par.expert_groups || platform.spec().fabric != Fabric::kStar ||
      !replicas_can_run_in_step(platform, par, variability))
    return false;
  const CollectiveAlgorithm setting = allreduce_algorithm();
  if (setting != CollectiveAlgorithm::kRing && (setting != CollectiveAlgorithm::kAuto || allreduce_sizes == nullptr))
    return false;
  for (const RankGroup& g : dp_rank_groups(layout)) {
    if (setting == CollectiveAlgorithm::kAuto) {
      const Group on = on_platform(platform, {g}).front();
      for (const std::uint64_t bytes : *allreduce_sizes)
        if (bytes > 0 && chosen_allreduce_algorithm(on, bytes) != CollectiveAlgorithm::kRing) return false;
    }
    const int k = node_runs(layout, g.ranks);
    if (k < 2 || k % folded_replicas(par) != 0) return false;
    const auto hop = [&](int from, int to) {
      return route_between(platform.gpu(g.ranks[static_cast<std::size_t>(from)]),
                           platform.gpu(g.ranks[static_cast<std::size_t>(to)]));
    };
    const Route nvlink = hop(0, 1);
    const Route nic = hop(0, k + 1);
    const int d = static_cast<int>(g.ranks.size());
    for (int i = 0; i < d; ++i) {
      const int run = i / k * k;
      const Route in = hop(i, run + (i + 1) % k);
      const Route out = hop(i, (run + k + (i + 1) % k) % d);
      if (in.links.size() != 2 || out.links.size() != 2 || in.latency_s != nvlink.latency_s ||
          in.bottleneck_Bps != nvlink.bottleneck_Bps || out.latency_s != nic.latency_s ||
          out.bottleneck_Bps != nic.bottleneck_Bps)
        return false;
    }
  }
  return true;
}

// Mixture of experts with ep > 1: an overlapped DP collective (gradient buckets beside the last backward pass,
// parameter buckets beside the first forward pass) runs beside that pass's token all-to-alls.
bool dp_overlaps_all_to_alls(const ParallelSpec& par) {
  return par.expert_groups && par.ep > 1 &&
         (par.overlap_grad_reduce || (par.distributed_optimizer && par.overlap_param_gather));
}

}  // namespace

bool tp_rings_are_contention_free(const Platform& platform, const ParallelSpec& par, const Layout& layout,
                                  const std::vector<Group>& tp_groups) {
  if (platform.spec().intra_topology != IntraNodeTopology::kSwitch || !plain_cm02()) return false;
  // An MoE layer's all-to-alls share the GPUs' links with the TP rings at times the argument does not bound.
  if (par.expert_groups && par.ep > 1) return false;
  // No other traffic inside a node: every declared pair but the TP group's own crosses between nodes.
  for (int r = 0; r < layout.world_size(); ++r)
    for (const Exchange& e : sent_by(layout, par, r))
      if (e.traffic != Traffic::kTensorParallel && layout.node_of(e.dst) == layout.node_of(e.src)) return false;
  return std::all_of(tp_groups.begin(), tp_groups.end(), [](const Group& g) {
    return ring_hops_alike(g, true, false, [](const std::vector<sg4::Link*>&) { return true; });
  });
}

bool dp_rings_are_contention_free(const Platform& platform, const ParallelSpec& par, const Layout& layout,
                                  const std::vector<Group>& dp_groups, const ComputeVariability& variability,
                                  const std::vector<std::uint64_t>* allreduce_sizes) {
  // With expert groups the GPUs of a stage need not be in the same phase (only blocks of replicas run in step), so
  // the fabric is bounded without phases.
  const bool in_step = replicas_can_run_in_step(platform, par, variability) && !par.expert_groups;
  if (!plain_cm02() || !fabric_never_binds(platform, par, layout, in_step)) return false;
  if (dp_overlaps_pipeline(par) || dp_overlaps_all_to_alls(par)) return false;
  // The closed form is a ring's: an algorithm that may leave the ring (a forced tree) runs as messages.
  if (!allreduce_ring_closed_form(allreduce_algorithm())) return false;
  if (!rings_alone_across_nodes(dp_groups) &&
      !node_run_rings_alike(platform, par, layout, variability, allreduce_sizes))
    return false;
  // Expert groups: the expert sync's rings as well (each GPU runs them after its dense sync, so a GPU's NIC links
  // carry the two one after the other).
  return !par.expert_groups || rings_alone_across_nodes(on_platform(platform, edp_rank_groups(layout, par)));
}

bool replicas_are_identical(const Platform& platform, const ParallelSpec& par, const ComputeVariability& variability,
                            bool dp_closed_form) {
  return dp_closed_form && replicas_can_run_in_step(platform, par, variability);
}

bool links_are_private(const Platform& platform, const ComputeVariability& variability) {
  const ClusterSpec& spec = platform.spec();
  return plain_cm02() && spec.fabric == Fabric::kStar && spec.nics_per_node == spec.gpus_per_node &&
         spec.intra_topology == IntraNodeTopology::kSwitch && variability.compute_jitter_cv == 0.0 &&
         variability.straggler_probability == 0.0;
}

bool allreduces_run_as_ring(const Group& group, const std::vector<std::uint64_t>& sizes) {
  const CollectiveAlgorithm setting = allreduce_algorithm();
  if (setting == CollectiveAlgorithm::kRing) return true;
  if (setting != CollectiveAlgorithm::kAuto) return false;
  for (const std::uint64_t bytes : sizes)
    if (bytes > 0 && chosen_allreduce_algorithm(group, bytes) != CollectiveAlgorithm::kRing) return false;
  return true;
}

bool expert_sync_rings_alone(const ParallelSpec& par, const std::vector<Group>& edp_groups,
                             const std::vector<std::uint64_t>& allreduce_sizes) {
  return par.expert_groups && expert_dp_size(par) >= 2 && rings_alone_across_nodes(edp_groups) &&
         std::all_of(edp_groups.begin(), edp_groups.end(),
                     [&](const Group& g) { return allreduces_run_as_ring(g, allreduce_sizes); });
}

bool blocks_run_alike(const Platform& platform, const ParallelSpec& par, const ComputeVariability& variability) {
  return par.expert_groups && folded_replicas(par) < par.dp && links_are_private(platform, variability) &&
         !par.overlap_grad_reduce && !(par.distributed_optimizer && par.overlap_param_gather);
}

bool tp_ranks_run_alike(const Platform& platform, const ParallelSpec& par, const ComputeVariability& variability) {
  // Every GPU has its own NIC: between nodes each transfer crosses its two GPUs' private links, and on a star
  // nothing else; on a fat tree also the tree's links, shared by every TP index of the node alike, which the
  // platform must give 1 / tp of their bandwidth (Platform::build's fabric_copies). The rest is the description's.
  const bool fabric = platform.spec().fabric == Fabric::kStar || platform.fabric_copies() == par.tp;
  return fabric && tp_ranks_fold(platform.spec(), par, variability);
}

}  // namespace edgc::sim::impl

namespace edgc::sim {

bool dp_closed_form_applies(const Platform& platform, const ParallelSpec& parallel,
                            const ComputeVariability& variability) {
  if (parallel.dp < 2) return false;
  const Layout layout(parallel, platform.gpus_per_node());
  return impl::dp_rings_are_contention_free(platform, parallel, layout,
                                            impl::on_platform(platform, impl::dp_rank_groups(layout)), variability);
}

bool replicas_fold(const ClusterSpec& cluster, const ParallelSpec& parallel, const ComputeVariability& variability,
                   CollectiveAlgorithm algorithm) {
  if (parallel.dp < 2 || !allreduce_ring_closed_form(algorithm) || cluster.fabric != Fabric::kStar ||
      cluster.nics_per_node != cluster.gpus_per_node || cluster.intra_topology != IntraNodeTopology::kSwitch ||
      variability.compute_jitter_cv != 0.0 || variability.straggler_probability != 0.0 ||
      dp_overlaps_pipeline(parallel) || impl::dp_overlaps_all_to_alls(parallel) ||
      fused_embedding_sync_applies(parallel))
    return false;
  // Every DP peer, and with expert groups every expert-DP peer, on another node (a star's route between them is
  // then exactly their two NIC links); or, with expert groups, every DP group in runs of k per node that the
  // folded block divides (node_run_rings_alike: on a star of NVSwitch nodes every such hop is alike).
  const Layout layout(parallel, cluster.gpus_per_node);
  bool dp_inside_node = false;
  for (int r = 0; r < layout.world_size(); ++r)
    for (const impl::Exchange& e : impl::sent_by(layout, parallel, r)) {
      const bool inside = layout.node_of(e.dst) == layout.node_of(e.src);
      if (e.traffic == impl::Traffic::kExpertDataParallel && inside) return false;
      dp_inside_node = dp_inside_node || (e.traffic == impl::Traffic::kDataParallel && inside);
    }
  if (!dp_inside_node) return true;
  // Auto may choose the tree for such groups, depending on sizes the description does not give: no.
  if (!parallel.expert_groups || algorithm != CollectiveAlgorithm::kRing) return false;
  const std::vector<impl::RankGroup> groups = impl::dp_rank_groups(layout);
  return std::all_of(groups.begin(), groups.end(), [&](const impl::RankGroup& g) {
    const int k = impl::node_runs(layout, g.ranks);
    return k >= 2 && k % folded_replicas(parallel) == 0;
  });
}

bool replicas_fold(const Platform& platform, const ParallelSpec& parallel, const ComputeVariability& variability) {
  return impl::replicas_are_identical(platform, parallel, variability,
                                      dp_closed_form_applies(platform, parallel, variability));
}

bool replicas_mirror(const Platform& platform, const ParallelSpec& parallel, const ComputeVariability& variability) {
  return !replicas_fold(platform, parallel, variability) && impl::blocks_run_alike(platform, parallel, variability);
}

std::optional<double> lone_collective_s(const Platform& platform, CollectiveOp op, const Group& group,
                                        std::uint64_t bytes) {
  const int d = group.size();
  if (d < 2) return 0.0;  // nothing to send: every member returns at once
  if (!plain_cm02() || op == CollectiveOp::kAllToAll) return std::nullopt;
  if (op == CollectiveOp::kAllReduce && !allreduce_ring_closed_form(chosen_allreduce_algorithm(group, bytes)))
    return std::nullopt;
  // One step's transfers: member → successor on every channel, `part` bytes each (the rings of ring.cpp); sendrecv
  // sends the whole size to the plain ring neighbour.
  std::vector<std::pair<int, int>> hops;
  std::uint64_t part = bytes;
  if (op == CollectiveOp::kSendRecv) {
    if (bytes == 0) return std::nullopt;
    for (int i = 0; i < d; ++i) hops.emplace_back(i, (i + 1) % d);
  } else {
    const std::uint64_t chunk = ring_chunk_bytes(op, d, bytes);
    if (chunk == 0) return 0.0;
    const collectives::Shape& shape = collectives::shape_of(group);
    part = ring_channel_part_bytes(chunk, shape.channels);
    for (const std::vector<int>& next : shape.next)
      for (int i = 0; i < d; ++i) hops.emplace_back(i, next[static_cast<std::size_t>(i)]);
  }
  // Every transfer alone on every link of its route (split-duplex directions are links of their own) and all of them
  // the same lone cost: then each step ends c after the previous one for every member (sim/README.md).
  std::unordered_set<const sg4::Link*> used;
  std::optional<double> step_s;
  for (const auto& [a, b] : hops) {
    const sg4::Host* src = group.hosts[static_cast<std::size_t>(a)];
    const sg4::Host* dst = group.hosts[static_cast<std::size_t>(b)];
    const Route route = route_between(src, dst);
    if (route.links.empty()) return std::nullopt;
    for (const sg4::Link* l : route.links)
      if (!used.insert(l).second) return std::nullopt;
    const double c = platform.lone_transfer_s(src, dst, static_cast<double>(part));
    if (step_s && c != *step_s) return std::nullopt;
    step_s = c;
  }
  return ring_steps(op, d) * *step_s;
}

bool tp_closed_form_applies(const Platform& platform, const ParallelSpec& parallel) {
  if (parallel.tp < 2) return false;
  const Layout layout(parallel, platform.gpus_per_node());
  return impl::tp_rings_are_contention_free(platform, parallel, layout,
                                            impl::on_platform(platform, impl::tp_rank_groups(layout)));
}

bool tp_ranks_fold(const ClusterSpec& cluster, const ParallelSpec& parallel, const ComputeVariability& variability) {
  // tp_rings_are_contention_free and tp_ranks_run_alike from the description, with routes as Platform::build makes
  // them (a switch node's hops all alike; a fat tree built with tp_fold_fabric_copies()) and plain CM02 as it
  // configures it.
  if (parallel.tp < 2 || cluster.intra_topology != IntraNodeTopology::kSwitch ||
      cluster.nics_per_node != cluster.gpus_per_node || (parallel.expert_groups && parallel.ep > 1) ||
      variability.compute_jitter_cv != 0.0 || variability.straggler_probability != 0.0)
    return false;
  const Layout layout(parallel, cluster.gpus_per_node);
  for (int r = 0; r < layout.world_size(); ++r) {
    const RankCoord c = layout.coord_of(r);
    if (layout.node_of(r) != layout.node_of(layout.rank_of({0, c.pp, c.dp}))) return false;  // a TP group's node
    for (const impl::Exchange& e : impl::sent_by(layout, parallel, r))
      if (e.traffic != impl::Traffic::kTensorParallel &&
          (layout.node_of(e.dst) == layout.node_of(e.src) || layout.coord_of(e.dst).tp != c.tp))
        return false;
  }
  return true;
}

int tp_fold_fabric_copies(const ClusterSpec& cluster, const ParallelSpec& parallel,
                          const ComputeVariability& variability) {
  return cluster.fabric == Fabric::kFatTree && tp_ranks_fold(cluster, parallel, variability) ? parallel.tp : 1;
}

bool tp_ranks_fold(const Platform& platform, const ParallelSpec& parallel, const ComputeVariability& variability) {
  return tp_closed_form_applies(platform, parallel) && impl::tp_ranks_run_alike(platform, parallel, variability);
}

}  // namespace edgc::sim
