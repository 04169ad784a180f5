#include "edgc/sim/iteration.hpp"

#include <xbt/log.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/sim/collectives.hpp"
#include "edgc/sim/kernel_model.hpp"
#include "edgc/sim/layout.hpp"
#include "edgc/sim/pipeline_schedule.hpp"

XBT_LOG_NEW_DEFAULT_CATEGORY(edgc_iteration, "edgc: one training iteration, one actor per GPU");

namespace edgc::sim {
namespace {

struct Interval {
  double start_s = 0.0;
  double end_s = 0.0;
};

// What one GPU measured; filled by its actor, reduced per stage after the run.
struct RankRecord {
  double compute_s = 0.0;
  double tp_comm_s = 0.0;
  double compression_s = 0.0;
  double last_backward_end_s = 0.0;
  double sync_start_s = 0.0;  // after the last backward and the wait for the last pipeline sends
  double sync_end_s = 0.0;
  double embedding_end_s = 0.0;   // end of the first ↔ last stage embedding all-reduce (0 when none)
  double pp_send_bytes = 0.0;     // pipeline messages sent, both directions
  double pp_comm_s = 0.0;         // their transfer times, summed
  double pp_compression_s = 0.0;  // compressing backward messages, decompressing received ones
  double optimizer_s = 0.0;
  double finish_s = 0.0;
  std::vector<Interval> dp_comms;
  std::vector<TimelineEvent> events;
};

// Per-chunk inputs of the workers (one chunk per GPU except for the interleaved schedule).
struct ChunkWork {
  double forward_flops = 0.0;  // pass seconds × the host's speed (FLOPs / compute_efficiency for kEfficiency)
  double backward_flops = 0.0;
  std::uint64_t tp_forward_bytes = 0;  // all of one pass's TP all-reduces, summed
  std::uint64_t tp_backward_bytes = 0;
  double tp_forward_extra_latency_s = 0.0;  // latency terms of the folded-away all-reduces
  double tp_backward_extra_latency_s = 0.0;
  double tp_forward_ring_s = 0.0;  // closed form of the folded ring alone (used when IterationState::tp_closed_form)
  double tp_backward_ring_s = 0.0;
  double tp_backward_overlap_s = 0.0;  // what the collectives beside GEMMs add to the backward pass (layer_tp)
};

// One all-reduce of the overlapped DP sync: `bytes`, ready once `ready` of the final backward pass has run.
struct Bucket {
  std::uint64_t bytes = 0;
  double ready = 0.0;  // fraction in (0, 1]
};

// Per-stage inputs of the workers, computed once before the actors start.
struct StageWork {
  std::vector<ChunkWork> chunks;
  int powersgd_rank = 0;
  std::uint64_t dp_bytes = 0;  // uncompressed sync
  std::uint64_t p_bytes = 0;   // PowerSGD sync
  std::uint64_t q_bytes = 0;
  std::uint64_t fused_bytes = 0;
  double compress_s = 0.0;
  std::vector<Bucket> buckets;        // overlapped uncompressed sync, in backward order (else empty)
  std::uint64_t embedding_bytes = 0;  // first ↔ last stage embedding all-reduce (first and last stage only)
  double optimizer_s = 0.0;
  std::uint64_t grad_send_bytes = 0;  // one backward pipeline message of this stage (compressed or not)
  double grad_compress_s = 0.0;       // sender's compression of one backward message (0 when uncompressed)
  double grad_decompress_s = 0.0;     // receiver's decompression of one of this stage's backward messages
};

// Purposes of pipeline messages.
enum class P2p { kActivation = 0, kGradient = 1 };
constexpr int kP2pPurposes = 2;
const char* p2p_name(P2p purpose) { return purpose == P2p::kActivation ? "act" : "grad"; }

// Everything the workers share. Actors are not threads: plain shared data is safe.
struct IterationState {
  IterationState(const ParallelSpec& par, int gpus_per_node) : parallel(par), layout(par, gpus_per_node) {}

  ParallelSpec parallel;
  Layout layout;
  const Platform* platform = nullptr;
  std::uint64_t p2p_bytes = 0;
  double p2p_gather_s = 0.0;  // receiver's TP all-gather after a scattered pipeline message (closed form)
  double t0 = 0.0;
  bool record_timeline = false;
  ComputeVariability variability;
  bool tp_closed_form = false;   // TP rings replaced by barrier + sleep (see tp_rings_are_contention_free)
  bool dp_closed_form = false;   // DP rings likewise (see dp_rings_are_contention_free)
  bool replicas_folded = false;  // only DP replica 0 simulated (see replicas_are_identical)
  bool fused_embedding = false;  // embedding_groups are the fused 2·dp groups (fused_embedding_sync_applies)
  std::vector<StageWork> stages;
  std::vector<Group> tp_groups;              // index stage · dp + dp_index
  std::vector<Group> dp_groups;              // index stage · tp + tp_index
  std::vector<Group> embedding_groups;       // index dp_index · tp + tp_index: {stage 0, stage pp − 1}; fused:
                                             // index tp_index: stage 0's dp GPUs, then stage pp − 1's
  std::vector<sg4::BarrierPtr> tp_barriers;  // one per TP group, same index; only with tp_closed_form
  std::vector<int> tp_arrived;               // members of each TP group inside the current all-reduce
  std::vector<sg4::BarrierPtr> dp_barriers;  // one per DP group, same index; only with dp_closed_form
  std::vector<int> dp_arrived;               // members of each DP group inside the current all-reduce
  // Pipeline channels, one per purpose (activations, gradients), receiving rank and model chunk (channel()):
  // the receiver's mailbox, and how many messages the receiver has taken from it so far.
  std::vector<sg4::Mailbox*> p2p_inbox;
  std::vector<std::int64_t> p2p_taken;
  std::vector<RankRecord> records;
  IterationProgress progress;  // IterationOptions::on_progress

  std::size_t channel(P2p purpose, int rank, int chunk) const {
    return (static_cast<std::size_t>(purpose) * static_cast<std::size_t>(layout.world_size()) +
            static_cast<std::size_t>(rank)) *
               static_cast<std::size_t>(parallel.virtual_stages) +
           static_cast<std::size_t>(chunk);
  }
};

// put_async refuses a null payload; nobody reads it.
int g_payload = 0;

std::uint64_t whole_bytes(double bytes) { return static_cast<std::uint64_t>(std::ceil(bytes)); }

// The latency part of one ring all-reduce over `group`: 2(D − 1) steps of the slowest neighbour route's latency.
double ring_latency_s(const Group& group) {
  double worst = 0.0;
  for (int i = 0; i < group.size(); ++i)
    worst = std::max(worst, route_between(group.hosts[static_cast<std::size_t>(i)],
                                          group.hosts[static_cast<std::size_t>((i + 1) % group.size())])
                                .latency_s);
  return ring_steps(CollectiveOp::kAllReduce, group.size()) * worst;
}

// Seconds a ring all-reduce of `bytes` over `group` takes when its transfers never share a link and every
// neighbour transfer costs the same (tp_rings_are_contention_free): 2(D − 1) steps of one lone chunk transfer.
double contention_free_ring_s(const Platform& platform, const Group& group, std::uint64_t bytes) {
  const CollectiveOp op = CollectiveOp::kAllReduce;
  const std::uint64_t chunk = ring_chunk_bytes(op, group.size(), bytes);
  if (group.size() < 2 || chunk == 0) return 0.0;
  return ring_steps(op, group.size()) *
         platform.lone_transfer_s(group.hosts[0], group.hosts[1], static_cast<double>(chunk));
}

// contention_free_ring_s with each step's chunk split over the ring's channels (ring_channels: the NCCL-like rings
// of collectives.hpp, each on its own links, e.g. two rings both ways over a DGX-1 quad's direct NVLinks): 2(D − 1)
// steps of one channel's lone transfer. The same as contention_free_ring_s for a one-channel ring (NVSwitch).
double channel_ring_s(const Platform& platform, const Group& group, std::uint64_t bytes) {
  const CollectiveOp op = CollectiveOp::kAllReduce;
  const std::uint64_t chunk = ring_chunk_bytes(op, group.size(), bytes);
  if (group.size() < 2 || chunk == 0) return 0.0;
  const auto channels = static_cast<std::uint64_t>(ring_channels(group));
  return ring_steps(op, group.size()) *
         platform.lone_transfer_s(group.hosts[0], group.hosts[1],
                                  static_cast<double>((chunk + channels - 1) / channels));
}

// The TP groups of `layout` on `platform`, index stage · dp + dp_index, members by tp index.
std::vector<Group> make_tp_groups(const Platform& platform, const Layout& layout) {
  std::vector<Group> groups;
  for (int s = 0; s < layout.pp(); ++s)
    for (int d = 0; d < layout.dp(); ++d) {
      Group g{{}, "tp-s" + std::to_string(s) + "d" + std::to_string(d)};
      for (int r : layout.tp_group(layout.rank_of({0, s, d}))) g.hosts.push_back(platform.gpu(r));
      groups.push_back(std::move(g));
    }
  return groups;
}

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
// transfer of `layout`, so that every transfer between two nodes is limited by its two NIC links alone, as on a
// star fabric. Requires one NIC per GPU: every transfer a GPU sends leaves by its own NIC up-link (the first link of
// its route) and every one it receives arrives by its own down-link (the last), so the transfers of a set S of
// senders together never exceed the sum of S's up-link bandwidths, whatever their number and timing; likewise for
// receivers. The transfers are those of every pair of GPUs that ever exchange data, in three phases of a GPU's
// iteration: the pipeline (neighbouring stages both ways, stage 0 ↔ the last stage for the interleaved schedule's
// wrap, TP ring members on other nodes), its DP sync (DP ring successors), the embedding all-reduce (stage 0 ↔ the
// last stage). A GPU is in one phase at a time: its DP sync starts after its pipeline messages have all arrived and
// been taken, the embedding all-reduce after the sync (overlapped buckets with pp > 1 have no closed form anyway).
//  * `in_step` false: any transfers may run together. A fabric link L never binds when min(Σ up-link bandwidth of
//    the senders routed over L, Σ down-link bandwidth of the receivers routed over L) ≤ L's bandwidth.
//  * `in_step` true (replicas_can_run_in_step): at every moment all GPUs of a stage are in the same phase, by
//    induction over the simulation's events: if the replicas are in step and no fabric link binds, each replica's
//    transfers get the rates of the fabric-free network, where the replicas share no link, so they stay in step.
//    Then L's load is at most Σ over stages of the largest of the stage's phases' sender (receiver) sums.
// SimGrid's split-duplex links are one link per direction, each checked apart. Under CM02's max-min sharing, an
// allocation that loads no fabric link beyond its bandwidth and leaves every transfer a saturated link on which it
// has the largest rate is also the allocation of the network with the fabric: removing the fabric changes no rate
// (to the max-min solver's rounding), and each route keeps its own latency.
bool fabric_never_binds(const Platform& platform, const Layout& layout, bool in_step) {
  const ClusterSpec& spec = platform.spec();
  if (spec.nics_per_node != spec.gpus_per_node) return false;
  if (spec.fabric == Fabric::kStar) return true;  // routes between nodes add no link to the two NICs'
  enum Phase { kPipeline, kDpSync, kEmbedding, kPhases };
  struct Side {
    std::unordered_set<int> gpus;
    double Bps = 0.0;
  };
  struct Load {
    std::unordered_map<int, Side> sent;      // by (sender's stage · kPhases + phase), one key when not in step
    std::unordered_map<int, Side> received;  // by the receiver's
  };
  std::unordered_map<const sg4::Link*, Load> loads;
  const auto key = [&](int rank, Phase phase) { return in_step ? layout.coord_of(rank).pp * kPhases + phase : 0; };
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
  const int pp = layout.pp();
  bool ok = true;
  for (int r = 0; r < layout.world_size() && ok; ++r) {
    const RankCoord c = layout.coord_of(r);
    const std::vector<int> pipe = layout.pipeline(r);
    if (pp > 1) {
      ok = add(r, pipe[static_cast<std::size_t>((c.pp + 1) % pp)], kPipeline) &&
           add(r, pipe[static_cast<std::size_t>((c.pp + pp - 1) % pp)], kPipeline);
      if (c.pp == 0 || c.pp == pp - 1) ok = ok && add(r, pipe[static_cast<std::size_t>(pp - 1 - c.pp)], kEmbedding);
    }
    const std::vector<int> dp = layout.dp_group(r);
    if (ok && dp.size() > 1) ok = add(r, dp[static_cast<std::size_t>((c.dp + 1) % layout.dp())], kDpSync);
    for (const int q : layout.tp_group(r)) ok = ok && add(r, q, kPipeline);
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
  return std::all_of(loads.begin(), loads.end(), [&](const auto& entry) {
    return std::min(bound(entry.second.sent), bound(entry.second.received)) <=
           entry.first->get_bandwidth() * (1.0 + kSlack);
  });
}

// Whether every TP ring all-reduce may be replaced by "wait for the whole TP group, then sleep its closed form"
// without changing any simulated time. That needs each ring's transfers to be alone on their links, whatever else
// runs at the same time:
//  * NVSwitch nodes: GPU i → j crosses only i's up-link and j's down-link to the switch (split-duplex), so in a
//    ring step every link direction carries exactly one chunk, and routes to the NICs cross no NVLink link;
//  * no other traffic inside a node: every pipeline neighbour and DP peer of every GPU is on another node (so PP
//    transfers and DP rings only use NIC and fabric links);
//  * SimGrid's plain CM02 (plain_cm02()): a lone transfer then takes exactly Platform::lone_transfer_s();
//  * every neighbour pair of a TP group has the same route latency and bandwidth (true on a switch node).
// Then each step of a member starts when it and its successor finished the previous step, so by induction member
// i finishes step s at max{arrival of j : |j − i| ≤ s + 1 around the ring} + (s + 1)·c, and after 2(D − 1) ≥ D/2
// steps every member finishes at (latest arrival) + 2(D − 1)·c: exactly the barrier-then-sleep time, also when
// members arrive at different times (compute jitter, stragglers, unequal p2p waits).
bool tp_rings_are_contention_free(const Platform& platform, const Layout& layout, const std::vector<Group>& tp_groups) {
  if (platform.spec().intra_topology != IntraNodeTopology::kSwitch || !plain_cm02()) return false;
  for (int r = 0; r < layout.world_size(); ++r) {
    const int node = layout.node_of(r);
    for (int q : layout.pipeline(r))
      if (q != r && layout.node_of(q) == node) return false;
    for (int q : layout.dp_group(r))
      if (q != r && layout.node_of(q) == node) return false;
  }
  return std::all_of(tp_groups.begin(), tp_groups.end(), [](const Group& g) {
    return ring_hops_alike(g, true, false, [](const std::vector<sg4::Link*>&) { return true; });
  });
}

// Whether every DP ring all-reduce may be replaced by "wait for the whole DP group, then sleep its closed form"
// without changing any simulated time: the argument of tp_rings_are_contention_free, for rings between nodes.
// Each hop of every DP ring must be alone on its links whenever it runs:
//  * SimGrid's plain CM02, and a star fabric (routes between nodes add no links to the two NICs'), one NIC per GPU
//    (so a NIC's up-link only carries what its GPU sends and its down-link what that GPU receives), every DP peer on
//    another node, and every hop's route exactly its two NIC links, no link used by two hops of all the DP rings;
//  * nothing else in flight on those links meanwhile: a GPU's DP sync starts after its last backward pass, when
//    every pipeline message it sends has arrived and every one it receives has been taken, and a hop into a peer
//    starts only once that peer has posted its receive, i.e. has reached its own sync; the embedding all-reduce
//    and the optimizer step come after the sync. Not so for buckets overlapped with the final backward pass when
//    pp > 1: that pass's pipeline send leaves by the same NIC up-link, so the rings stay messages there;
//  * every hop of a DP group has the same route latency and bandwidth.
// Then, as for TP, every member ends each all-reduce at (latest arrival) + 2(D − 1)·lone_transfer_s(chunk).
bool dp_rings_are_contention_free(const Platform& platform, const ParallelSpec& par, const Layout& layout,
                                  const std::vector<Group>& dp_groups, const ComputeVariability& variability) {
  if (!plain_cm02() || !fabric_never_binds(platform, layout, replicas_can_run_in_step(platform, par, variability)))
    return false;
  if (par.overlap_grad_reduce && par.pp > 1) return false;
  // The closed form is a ring's: a forced tree runs as messages (with one member per node auto keeps the ring).
  if (allreduce_algorithm() == CollectiveAlgorithm::kTree) return false;
  std::unordered_set<const sg4::Link*> used;
  const auto links_unused = [&used](const std::vector<sg4::Link*>& links) {
    return std::all_of(links.begin(), links.end(), [&used](const sg4::Link* l) { return used.insert(l).second; });
  };
  return std::all_of(dp_groups.begin(), dp_groups.end(),
                     [&](const Group& g) { return ring_hops_alike(g, false, true, links_unused); });
}

// Whether the DP replicas run identical iterations, so that simulating replica 0 alone gives every figure exactly:
// the DP rings take their closed form (dp_rings_are_contention_free: star fabric, one NIC per GPU), NVSwitch nodes
// (a GPU's NVLink links carry only its own transfers), and no compute variability (jitter and stragglers differ
// per GPU). Then no link carries transfers of two replicas — TP rings and pipeline messages stay inside their
// replica and use only their endpoints' NVLink or NIC links, and the DP rings are the closed form — so each
// replica's timeline is the same function of the same inputs, all replicas reach every DP all-reduce at the same
// moment, and the closed form's "latest arrival" is every member's own arrival. Not with the fused embedding sync:
// its ring spans every replica.
bool replicas_are_identical(const Platform& platform, const ParallelSpec& par, const ComputeVariability& variability,
                            bool dp_closed_form) {
  return dp_closed_form && replicas_can_run_in_step(platform, par, variability);
}

// One barrier of `members` per group, for the closed forms' "everyone arrived" (tp_all_reduce, dp_all_reduce).
std::vector<sg4::BarrierPtr> group_barriers(std::size_t groups, int members) {
  std::vector<sg4::BarrierPtr> barriers;
  for (std::size_t g = 0; g < groups; ++g) barriers.push_back(sg4::Barrier::create(static_cast<unsigned>(members)));
  return barriers;
}

// The DP groups of `layout` on `platform`, index stage · tp + tp_index, members by dp index.
std::vector<Group> make_dp_groups(const Platform& platform, const Layout& layout) {
  std::vector<Group> groups;
  for (int s = 0; s < layout.pp(); ++s)
    for (int t = 0; t < layout.tp(); ++t) {
      Group g{{}, "dp-s" + std::to_string(s) + "t" + std::to_string(t)};
      for (int r : layout.dp_group(layout.rank_of({t, s, 0}))) g.hosts.push_back(platform.gpu(r));
      groups.push_back(std::move(g));
    }
  return groups;
}

// One GPU: runs its stage's schedule, then its stage's DP sync.
class GpuWorker {
 public:
  GpuWorker(IterationState* state, int rank)
      : state_(state),
        rank_(rank),
        coord_(state->layout.coord_of(rank)),
        slowdown_(is_straggler(state->variability, rank) ? state->variability.straggler_slowdown : 1.0) {}

  void operator()() {
    speed_ = sg4::this_actor::get_host()->get_speed();
    const ParallelSpec& par = state_->parallel;
    const std::vector<Pass> passes = pass_order(par.schedule, par.pp, coord_.pp, par.microbatches, par.virtual_stages);
    sg4::ActorPtr overlapped;
    for (std::size_t i = 0; i < passes.size(); ++i) {
      const Pass& pass = passes[i];
      if (pass.kind == PassKind::kForward) {
        forward(pass.microbatch, pass.chunk);
      } else {
        const bool overlap = i + 1 == passes.size() && !work().buckets.empty();
        if (overlap) overlapped = start_overlapped_sync();
        backward(pass.microbatch, pass.chunk, overlap);
      }
    }
    record().last_backward_end_s = now();
    // Megatron's pipeline sends are blocking (the schedule waits on its isend/irecv before moving on), so the
    // gradient sync starts once this GPU's last sends have arrived. It also makes stages separable: after this
    // point only the stage's own DP traffic uses its links (whole_run.hpp, stages_separable).
    for (Outbox& out : outboxes_)
      for (const sg4::CommPtr& c : out.pending) finish(c);
    if (overlapped) {
      overlapped->join();
    } else {
      record().sync_start_s = now();
      dp_sync();
    }
    record().sync_end_s = now();
    embedding_sync();
    optimizer_step();
    record().finish_s = now();
    ++state_->progress.gpus_done;
    XBT_DEBUG("rank %d (stage %d) done at %g s", rank_, coord_.pp, now());
  }

 private:
  RankRecord& record() const { return state_->records[static_cast<std::size_t>(rank_)]; }
  const StageWork& work() const { return state_->stages[static_cast<std::size_t>(coord_.pp)]; }
  double now() const { return sg4::Engine::get_clock() - state_->t0; }

  void note(const std::string& name, const char* category, double start_s) const {
    if (state_->record_timeline) record().events.push_back({rank_, name, category, start_s, now()});
  }

  // This GPU's DP group in IterationState::dp_groups (index stage · tp + tp_index).
  std::size_t dp_group_index() const { return static_cast<std::size_t>(coord_.pp * state_->parallel.tp + coord_.tp); }

  // Global rank of stage `stage` of this GPU's pipeline.
  int pipeline_rank(int stage) const { return state_->layout.rank_of({coord_.tp, stage, coord_.dp}); }

  // Blocking receive of the next `purpose` message for `chunk`; counts it as taken, so that its sender may let go
  // of the finished send (see send()).
  void receive(P2p purpose, int mb, int chunk) const {
    const double start = now();
    const std::size_t c = state_->channel(purpose, rank_, chunk);
    state_->p2p_inbox[c]->get<int>();
    ++state_->p2p_taken[c];
    // A compressed activation gradient is reconstructed (Ĝ = P·Qᵀ) before anything else reads it.
    if (purpose == P2p::kGradient) {
      const int p = state_->parallel.pp;
      const int sender = coord_.pp < p - 1 ? coord_.pp + 1 : 0;
      pp_codec(state_->stages[static_cast<std::size_t>(sender)].grad_decompress_s, "decompress grad", mb, chunk);
    }
    // Megatron's scatter/gather: the message was this TP rank's slice; the TP group all-gathers the tensor over
    // NVLink (a closed form, as the TP rings of tp_all_reduce's closed-form path).
    if (state_->p2p_gather_s > 0) sg4::this_actor::sleep_for(state_->p2p_gather_s);
    if (state_->record_timeline)
      note(std::string("recv ") + p2p_name(purpose) + " " + pass_name(mb, chunk), "p2p", start);
  }

  // "3" for micro-batch 3, "3.1" for its chunk 1 under the interleaved schedule.
  std::string pass_name(int mb, int chunk) const {
    return state_->parallel.virtual_stages > 1 ? std::to_string(mb) + "." + std::to_string(chunk) : std::to_string(mb);
  }

  // Asynchronous send of a `purpose` message to chunk `to_chunk` of pipeline stage `to_stage`.
  // Sends the receiver has taken are finished: wait() on them, which returns at once. SimGrid 3.32 keeps an async
  // comm on its sender's activity list until the sender waits on it (test() does not remove it) and scans that
  // list whenever one of the sender's activities ends, so keeping finished sends costs O(sends²) per GPU;
  // detached or host-to-host comms would sit on one global list instead.
  void send(P2p purpose, int to_stage, int to_chunk) {
    const std::size_t c = state_->channel(purpose, pipeline_rank(to_stage), to_chunk);
    Outbox* out = nullptr;
    for (Outbox& o : outboxes_)
      if (o.channel == c) out = &o;
    if (out == nullptr) out = &outboxes_.emplace_back(Outbox{c, 0, {}});
    std::vector<sg4::CommPtr>& pending = out->pending;
    const std::int64_t oldest = out->posted - static_cast<std::int64_t>(pending.size());  // message number
    std::size_t finished = 0;
    while (finished < pending.size() && oldest + static_cast<std::int64_t>(finished) < state_->p2p_taken[c])
      finish(pending[finished++]);
    pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(finished));
    const std::uint64_t bytes = purpose == P2p::kActivation ? state_->p2p_bytes : work().grad_send_bytes;
    pending.push_back(state_->p2p_inbox[c]->put_async(&g_payload, bytes));
    record().pp_send_bytes += static_cast<double>(bytes);
    ++out->posted;
  }

  // Waits for a pipeline send (returns at once when it arrived) and counts its transfer time: from the moment both
  // sides were ready to its arrival.
  void finish(const sg4::CommPtr& comm) const {
    comm->wait();
    record().pp_comm_s += comm->get_finish_time() - comm->get_start_time();
  }

  // Compression work on a pipeline message (the sender's P, Q and error, or the receiver's Ĝ = P·Qᵀ), a sleep.
  void pp_codec(double seconds, const char* what, int mb, int chunk) const {
    if (seconds <= 0) return;
    const double start = now();
    sg4::this_actor::sleep_for(seconds);
    record().pp_compression_s += now() - start;
    if (state_->record_timeline) note(std::string(what) + " " + pass_name(mb, chunk), "compress", start);
  }

  // The pass's FLOPs scaled by this GPU's straggler slowdown and the pass's jitter factor (both 1 by default, and
  // then the FLOPs are passed on untouched).
  double varied(double flops, int mb, int chunk, bool backward) const {
    const double factor = slowdown_ * jitter_factor(state_->variability, rank_, mb, chunk, backward);
    return factor == 1.0 ? flops : flops * factor;
  }

  // A pass alone on its GPU: SimGrid would run execute(flops) at the host's full speed, i.e. for exactly
  // flops / speed seconds, since nothing else ever computes on a GPU host (compression and the TP closed form are
  // sleeps, which take no share of the host). Sleeping that long gives the same times with a cheaper activity
  // (an Exec costs about twice a sleep in SimGrid 3.32).
  void compute(double flops, const std::string& name) const {
    const double start = now();
    sg4::this_actor::sleep_for(flops / speed_);
    record().compute_s += now() - start;
    note(name, "compute", start);
  }

  // The final backward pass while the overlapped DP sync runs (start_overlapped_sync): its FLOPs in segments, one
  // per bucket, each ending where that bucket's gradients are complete (Bucket::ready), which it then hands to the
  // sync actor. Where the GPU's SM count is known, the segments are Execs on the host, sharing it with the NCCL
  // kernels of the buckets in flight (comm_sm_share_): the pass slows while a bucket is all-reduced, and later
  // buckets become ready later. Otherwise they are sleeps, as compute() is.
  void overlapped_compute(double flops, const std::string& name) const {
    const double start = now();
    double done = 0.0;
    for (const Bucket& b : work().buckets) {
      const double part = flops * (b.ready - done);
      done = b.ready;
      if (part > 0 && comm_sm_share_ > 0) {
        sg4::this_actor::execute(part);
      } else if (part > 0) {
        sg4::this_actor::sleep_for(part / speed_);
      }
      bucket_ready_->release();
    }
    record().compute_s += now() - start;
    note(name, "compute", start);
  }

  // The pass's exposed TP collectives (`bytes` folded into one ring all-reduce), then `overlap_s`: what the
  // collectives that ran beside the pass's GEMMs added to it (layer_tp).
  void tp_all_reduce(std::uint64_t bytes, double ring_s, double extra_latency_s, double overlap_s,
                     const std::string& name) const {
    if (state_->parallel.tp == 1 || (bytes == 0 && overlap_s <= 0)) return;
    const double start = now();
    if (bytes > 0 && state_->tp_closed_form) {
      tp_ring(bytes, ring_s, extra_latency_s + overlap_s);  // one sleep for both
    } else {
      if (bytes > 0) tp_ring(bytes, ring_s, extra_latency_s);
      if (overlap_s > 0) sg4::this_actor::sleep_for(overlap_s);
    }
    record().tp_comm_s += now() - start;
    note(name, "tp", start);
  }

  void tp_ring(std::uint64_t bytes, double ring_s, double extra_latency_s) const {
    const auto group = static_cast<std::size_t>(coord_.pp * state_->parallel.dp + coord_.dp);
    if (state_->tp_closed_form) {
      // Every member finishes the contention-free ring ring_s after the last one arrived: the last to arrive
      // sleeps that long, then meets the others at the group's barrier, which releases them all together. (The
      // count cannot mix passes: nobody passes the barrier before the whole group reached it.)
      int& arrived = state_->tp_arrived[group];
      if (++arrived == state_->parallel.tp) {
        arrived = 0;
        sg4::this_actor::sleep_for(ring_s + extra_latency_s);
      }
      state_->tp_barriers[group]->wait();
    } else {
      ring_all_reduce(state_->tp_groups[group], coord_.tp, bytes);
      if (extra_latency_s > 0) sg4::this_actor::sleep_for(extra_latency_s);
    }
  }

  // Chunk c of stage p is virtual stage c·pp + p: activations flow p → p + 1 within a chunk and from the last
  // stage to stage 0 of the next chunk; gradients flow back the same way.
  void forward(int mb, int chunk) {
    const int p = state_->parallel.pp;
    const int v = state_->parallel.virtual_stages;
    if (coord_.pp > 0 || chunk > 0) receive(P2p::kActivation, mb, chunk);
    const ChunkWork& w = work().chunks[static_cast<std::size_t>(chunk)];
    const std::string name = "F" + pass_name(mb, chunk);
    compute(varied(w.forward_flops, mb, chunk, false), name);
    tp_all_reduce(w.tp_forward_bytes, w.tp_forward_ring_s, w.tp_forward_extra_latency_s, 0.0, "tp " + name);
    ++state_->progress.passes_done;
    if (coord_.pp < p - 1) {
      send(P2p::kActivation, coord_.pp + 1, chunk);
    } else if (chunk < v - 1) {
      send(P2p::kActivation, 0, chunk + 1);
    }
  }

  void backward(int mb, int chunk, bool overlapped_sync) {
    const int p = state_->parallel.pp;
    const int v = state_->parallel.virtual_stages;
    if (coord_.pp < p - 1 || chunk < v - 1) receive(P2p::kGradient, mb, chunk);
    const ChunkWork& w = work().chunks[static_cast<std::size_t>(chunk)];
    const std::string name = "B" + pass_name(mb, chunk);
    if (overlapped_sync) {
      overlapped_compute(varied(w.backward_flops, mb, chunk, true), name);
    } else {
      compute(varied(w.backward_flops, mb, chunk, true), name);
    }
    tp_all_reduce(w.tp_backward_bytes, w.tp_backward_ring_s, w.tp_backward_extra_latency_s, w.tp_backward_overlap_s,
                  "tp " + name);
    ++state_->progress.passes_done;
    if (coord_.pp > 0 || chunk > 0) pp_codec(work().grad_compress_s, "compress grad", mb, chunk);
    if (coord_.pp > 0) {
      send(P2p::kGradient, coord_.pp - 1, chunk);
    } else if (chunk > 0) {
      send(P2p::kGradient, p - 1, chunk - 1);
    }
  }

  void dp_all_reduce(std::uint64_t bytes, const std::string& name) const {
    if (state_->parallel.dp == 1 || bytes == 0) return;
    const double start = now();
    const std::size_t group = dp_group_index();
    const Group& g = state_->dp_groups[group];
    if (state_->replicas_folded) {
      // Every replica arrives at this moment (replicas_are_identical): the closed form from now.
      sg4::this_actor::sleep_for(contention_free_ring_s(*state_->platform, g, bytes));
    } else if (state_->dp_closed_form) {
      // As tp_all_reduce's closed form: the last member to arrive sleeps the contention-free ring, then the
      // group's barrier releases everyone (dp_rings_are_contention_free).
      int& arrived = state_->dp_arrived[group];
      if (++arrived == state_->parallel.dp) {
        arrived = 0;
        sg4::this_actor::sleep_for(contention_free_ring_s(*state_->platform, g, bytes));
      }
      state_->dp_barriers[group]->wait();
    } else {
      all_reduce(g, coord_.dp, bytes);
    }
    record().dp_comms.push_back({start, now()});
    note(name, "dp", start);
  }

  void compress(double seconds, const std::string& name) const {
    if (seconds <= 0) return;
    const double start = now();
    sg4::this_actor::sleep_for(seconds);
    record().compression_s += now() - start;
    note(name, "compress", start);
  }

  // Overlapped uncompressed sync (--overlap-grad-reduce, PyTorch DDP): a second actor on this GPU all-reduces the
  // stage's gradient buckets (gradient_buckets()) while the final backward pass runs; a bucket starts once that
  // pass has computed its gradients (overlapped_compute releases bucket_ready_ per bucket; gradients appear from
  // the last layer backwards). Every earlier pass's gradients are taken to land in the same buckets, so no bucket
  // starts before the final pass does. Each bucket's NCCL kernel holds one SM per channel while it runs (NCCL
  // launches one thread block per channel): an Exec bounded at that share of the GPU's speed, beside the pass.
  sg4::ActorPtr start_overlapped_sync() {
    record().sync_start_s = now();
    const int sms = state_->platform->spec().gpu.sm_count;
    comm_sm_share_ =
        sms > 0 ? std::min(1.0, ring_channels(state_->dp_groups[dp_group_index()]) / static_cast<double>(sms)) : 0.0;
    bucket_ready_ = sg4::Semaphore::create(0);
    return sg4::Actor::create("dp-overlap" + std::to_string(rank_), sg4::this_actor::get_host(), [this] {
      const std::vector<Bucket>& buckets = work().buckets;
      for (std::size_t i = 0; i < buckets.size(); ++i) {
        bucket_ready_->acquire();
        sg4::ExecPtr kernel;
        if (comm_sm_share_ > 0)
          kernel = sg4::this_actor::exec_init(std::numeric_limits<double>::max())
                       ->set_bound(comm_sm_share_ * speed_)
                       ->start();
        dp_all_reduce(buckets[i].bytes, "dp bucket " + std::to_string(i));
        if (kernel) kernel->cancel();
      }
    });
  }

  // The word-embedding gradient all-reduce between the first and the last stage, after their DP syncs (Megatron's
  // order: DP sync, embedding all-reduce, optimizer step).
  void embedding_sync() const {
    const std::uint64_t bytes = work().embedding_bytes;
    if (bytes == 0) return;
    const double start = now();
    if (state_->fused_embedding) {
      // One ring over both stages' DP groups: stage 0's members first, then stage pp − 1's.
      const Group& g = state_->embedding_groups[static_cast<std::size_t>(coord_.tp)];
      all_reduce(g, (coord_.pp == 0 ? 0 : state_->parallel.dp) + coord_.dp, bytes);
    } else {
      const Group& g = state_->embedding_groups[static_cast<std::size_t>(coord_.dp * state_->parallel.tp + coord_.tp)];
      all_reduce(g, coord_.pp == 0 ? 0 : 1, bytes);
    }
    record().embedding_end_s = now();
    note(state_->fused_embedding ? "fused embedding allreduce" : "embedding allreduce", "dp", start);
  }

  void optimizer_step() const {
    const double seconds = work().optimizer_s;
    if (seconds <= 0) return;
    const double start = now();
    sg4::this_actor::sleep_for(seconds);
    record().optimizer_s = seconds;
    note("optimizer", "compute", start);
  }

  void dp_sync() const {
    const StageWork& w = work();
    if (state_->parallel.dp == 1) return;
    if (w.powersgd_rank == 0) {
      dp_all_reduce(w.dp_bytes, "dp allreduce");
      return;
    }
    compress(w.compress_s / 3, "P = MQ");
    dp_all_reduce(w.p_bytes, "dp P");
    compress(w.compress_s / 3, "orth, Q = MtP");
    dp_all_reduce(w.q_bytes, "dp Q");
    compress(w.compress_s / 3, "M = PQt");
    dp_all_reduce(w.fused_bytes, "dp uncompressed");
  }

  IterationState* state_;
  int rank_;
  RankCoord coord_;
  double slowdown_;     // straggler_slowdown when this GPU straggles this iteration, else 1
  double speed_ = 0.0;  // FLOP/s of this GPU's host
  // Overlapped DP sync only: the share of the GPU's SMs a bucket's NCCL kernel holds (channels / SMs; 0 when the
  // GPU's SM count is unknown), and the final backward pass's "bucket i is ready" signals.
  double comm_sm_share_ = 0.0;
  sg4::SemaphorePtr bucket_ready_;
  // Sends of one channel not yet waited for, oldest first; `posted` counts all sends on it.
  struct Outbox {
    std::size_t channel = 0;
    std::int64_t posted = 0;
    std::vector<sg4::CommPtr> pending;
  };
  std::vector<Outbox> outboxes_;
};

void check_plan(const DpSyncPlan& plan, const ParallelSpec& parallel, const std::string& where) {
  if (static_cast<int>(plan.size()) != parallel.pp)
    throw ConfigError(
        where, "dp_sync",
        "plan has " + std::to_string(plan.size()) + " stages, the layout has pp = " + std::to_string(parallel.pp));
  for (std::size_t s = 0; s < plan.size(); ++s) {
    if (plan[s].powersgd_rank < 0)
      throw ConfigError(where, "dp_sync.rank",
                        "stage " + std::to_string(s) + ": PowerSGD rank " + std::to_string(plan[s].powersgd_rank) +
                            " is negative (0 = uncompressed)");
    if (plan[s].pp_rank < 0)
      throw ConfigError(where, "dp_sync.pp_rank",
                        "stage " + std::to_string(s) + ": pipeline PowerSGD rank " + std::to_string(plan[s].pp_rank) +
                            " is negative (0 = uncompressed)");
  }
}

// The stage's gradient split into DP buckets of parallel.grad_bucket_params parameters (Megatron-Core's
// max(4e7, 1e6·dp) when 0), the last bucket holding the rest; bucket i of n is ready after (i + 1)/n of the final
// backward pass. To bound the simulated activities, more than kMaxBuckets buckets are coalesced: the last bucket
// stays alone (it is the one exposed after the backward pass), the others merge into kMaxBuckets − 1 groups, each
// ready when its last member is (never earlier than the real buckets).
constexpr std::size_t kMaxBuckets = 8;

std::vector<Bucket> gradient_buckets(const ModelSpec& model, const ParallelSpec& par, int stage) {
  const double params = static_cast<double>(stage_params(model, par, stage).per_gpu());
  const double per_bucket =
      par.grad_bucket_params > 0 ? par.grad_bucket_params : std::max(4e7, 1e6 * static_cast<double>(par.dp));
  const double bytes = grad_bytes(model, par);
  const auto n = static_cast<std::size_t>(std::ceil(params / per_bucket));
  const auto bucket_bytes = [&](std::size_t i) {
    return std::min(per_bucket, params - static_cast<double>(i) * per_bucket) * bytes;
  };
  const auto ready = [&](std::size_t i) { return static_cast<double>(i + 1) / static_cast<double>(n); };
  std::vector<Bucket> out;
  if (n <= kMaxBuckets) {
    for (std::size_t i = 0; i < n; ++i) out.push_back({whole_bytes(bucket_bytes(i)), ready(i)});
    return out;
  }
  const std::size_t groups = kMaxBuckets - 1;
  for (std::size_t g = 0; g < groups; ++g) {
    const std::size_t first = (n - 1) * g / groups, last = (n - 1) * (g + 1) / groups;  // [first, last)
    double sum = 0.0;
    for (std::size_t i = first; i < last; ++i) sum += bucket_bytes(i);
    out.push_back({whole_bytes(sum), ready(last - 1)});
  }
  out.push_back({whole_bytes(bucket_bytes(n - 1)), 1.0});
  return out;
}

// One layer's TP collectives on `group` for one micro-batch (tp_comm_per_layer): the exposed ones of each pass in
// all-reduce units (folded into the pass's ring), and what the ones beside GEMMs add to the backward pass. A
// collective beside a GEMM takes its ring's time c (units · channel_ring_s of the all-reduce) while the GEMM of k
// seconds loses the SMs of the ring's NCCL channels (one thread block each) for as long as the collective runs: the
// pair ends at max(c, k + share · c), i.e. adds max(c − k, share · c) to the GEMM.
struct LayerTp {
  double tensor_bytes = 0.0;
  double allreduce_s = 0.0;  // channel_ring_s of one all-reduce of the tensor
  double forward_units = 0.0;
  double backward_units = 0.0;
  double backward_overlap_s = 0.0;
};

LayerTp layer_tp(const Platform& platform, const Group& group, const ModelSpec& model, const ParallelSpec& par,
                 const CostParams& params) {
  const TpLayerComm comm = tp_comm_per_layer(model, par);
  LayerTp out{comm.tensor_bytes, 0.0, comm.exposed_units(false), comm.exposed_units(true), 0.0};
  if (par.tp == 1) return out;
  const GpuSpec& gpu = platform.spec().gpu;
  out.allreduce_s = channel_ring_s(platform, group, whole_bytes(comm.tensor_bytes));
  const double share = gpu.sm_count > 0 ? std::min(1.0, ring_channels(group) / static_cast<double>(gpu.sm_count)) : 0.0;
  const std::vector<double> kernel_s = beside_kernels_s(comm, model, par, gpu, params);
  for (std::size_t i = 0; i < comm.collectives.size(); ++i) {
    if (comm.collectives[i].beside == nullptr) continue;
    const double comm_s = allreduce_units(comm.collectives[i].op) * out.allreduce_s;
    out.backward_overlap_s += std::max(comm_s - kernel_s[i], share * comm_s);
  }
  return out;
}

StageWork stage_work(const Platform& platform, const ModelSpec& model, const ParallelSpec& par,
                     const CostParams& params, int stage, const StageSync& sync, const Group& tp_group) {
  const ClusterSpec& cluster = platform.spec();
  StageWork w;
  const int chunks = model_chunks(par);
  const LayerTp tp = layer_tp(platform, tp_group, model, par, params);
  const int layers = layers_per_chunk(model, par);
  const double n_fwd = layers * tp.forward_units;
  const double n_bwd = layers * tp.backward_units;
  const double lat = par.tp > 1 ? ring_latency_s(tp_group) : 0.0;
  for (int c = 0; c < chunks; ++c) {
    ChunkWork cw;
    const ComputeCost cost = chunk_compute(model, par, cluster.gpu, params, stage, c);
    if (params.compute_model == ComputeModel::kEfficiency) {
      cw.forward_flops = cost.forward_flops / params.compute_efficiency;
      cw.backward_flops = cost.backward_flops / params.compute_efficiency;
    } else {
      const double speed = cluster.gpu.peak_tflops * 1e12;  // the host's speed (Platform::build)
      cw.forward_flops = cost.forward_s * speed;
      cw.backward_flops = cost.backward_s * speed;
    }
    cw.tp_forward_bytes = whole_bytes(n_fwd * tp.tensor_bytes);
    cw.tp_backward_bytes = whole_bytes(n_bwd * tp.tensor_bytes);
    cw.tp_forward_extra_latency_s = std::max(0.0, n_fwd - 1.0) * lat;
    cw.tp_backward_extra_latency_s = std::max(0.0, n_bwd - 1.0) * lat;
    cw.tp_backward_overlap_s = layers * tp.backward_overlap_s;
    if (par.tp > 1) {
      cw.tp_forward_ring_s = contention_free_ring_s(platform, tp_group, cw.tp_forward_bytes);
      cw.tp_backward_ring_s = contention_free_ring_s(platform, tp_group, cw.tp_backward_bytes);
    }
    w.chunks.push_back(cw);
  }
  w.powersgd_rank = sync.powersgd_rank;
  if (stage == 0 || stage == par.pp - 1) w.embedding_bytes = whole_bytes(embedding_sync_bytes(model, par));
  w.optimizer_s = optimizer_step_s(model, par, cluster.gpu, params, stage);
  w.grad_send_bytes = whole_bytes(pp_compressed_bytes(model, par, sync.pp_rank));
  w.grad_compress_s = pp_compress_s(model, par, cluster.gpu, params, sync.pp_rank);
  w.grad_decompress_s = pp_decompress_s(model, par, cluster.gpu, params, sync.pp_rank);
  if (sync.powersgd_rank == 0) {
    w.dp_bytes = whole_bytes(dp_gradient_bytes(model, par, stage));
    if (par.overlap_grad_reduce && par.dp > 1) w.buckets = gradient_buckets(model, par, stage);
  } else {
    const PowerSgdWire wire = powersgd_wire(model, par, stage, sync.powersgd_rank);
    w.p_bytes = whole_bytes(wire.p_bytes);
    w.q_bytes = whole_bytes(wire.q_bytes);
    w.fused_bytes = whole_bytes(wire.uncompressed_bytes);
    w.compress_s = powersgd_compress_s(model, par, cluster.gpu, params, stage, sync.powersgd_rank);
  }
  return w;
}

// Time of [a.start, a.end] that lies after `after_s`.
double part_after(const Interval& a, double after_s) { return std::max(0.0, a.end_s - std::max(a.start_s, after_s)); }

}  // namespace

bool dp_closed_form_applies(const Platform& platform, const ParallelSpec& parallel,
                            const ComputeVariability& variability) {
  if (parallel.dp < 2) return false;
  const Layout layout(parallel, platform.gpus_per_node());
  return dp_rings_are_contention_free(platform, parallel, layout, make_dp_groups(platform, layout), variability);
}

bool replicas_fold(const ClusterSpec& cluster, const ParallelSpec& parallel, const ComputeVariability& variability,
                   CollectiveAlgorithm algorithm) {
  if (parallel.dp < 2 || algorithm == CollectiveAlgorithm::kTree || cluster.fabric != Fabric::kStar ||
      cluster.nics_per_node != cluster.gpus_per_node || cluster.intra_topology != IntraNodeTopology::kSwitch ||
      variability.compute_jitter_cv != 0.0 || variability.straggler_probability != 0.0 ||
      (parallel.overlap_grad_reduce && parallel.pp > 1) || fused_embedding_sync_applies(parallel))
    return false;
  const Layout layout(parallel, cluster.gpus_per_node);
  for (int r = 0; r < layout.world_size(); ++r)
    for (const int q : layout.dp_group(r))
      if (q != r && layout.node_of(q) == layout.node_of(r)) return false;
  return true;
}

bool replicas_fold(const Platform& platform, const ParallelSpec& parallel, const ComputeVariability& variability) {
  return replicas_are_identical(platform, parallel, variability,
                                dp_closed_form_applies(platform, parallel, variability));
}

bool tp_closed_form_applies(const Platform& platform, const ParallelSpec& parallel) {
  if (parallel.tp < 2) return false;
  const Layout layout(parallel, platform.gpus_per_node());
  return tp_rings_are_contention_free(platform, layout, make_tp_groups(platform, layout));
}

bool dp_compressed(const DpSyncPlan& plan) {
  return std::any_of(plan.begin(), plan.end(), [](const StageSync& s) { return s.powersgd_rank > 0; });
}

DpSyncPlan uncompressed_plan(int pp) { return DpSyncPlan(static_cast<std::size_t>(std::max(pp, 0))); }

DpSyncPlan powersgd_plan(int pp, int rank, int pp_rank) {
  return DpSyncPlan(static_cast<std::size_t>(std::max(pp, 0)), StageSync{rank, pp_rank});
}

LayerPassTimes layer_pass_times(const Platform& platform, const ModelSpec& model, const ParallelSpec& parallel,
                                const CostParams& params, const std::string& where) {
  const ParallelSpec par = validate(model, parallel, platform.spec(), where);
  const GpuSpec& gpu = platform.spec().gpu;
  const ComputeCost compute = layer_compute(model, par, gpu, params);
  LayerPassTimes t;
  t.forward_compute_s = compute.forward_s;
  t.backward_compute_s = compute.backward_s;
  if (params.compute_model == ComputeModel::kKernels && !par.grad_accumulation_fusion)
    t.backward_compute_s += layer_grad_accumulation_s(model, par, gpu, params);
  if (par.tp == 1) return t;
  const Layout layout(par, platform.gpus_per_node());
  const Group group = make_tp_groups(platform, layout).front();
  const LayerTp tp = layer_tp(platform, group, model, par, params);
  t.forward_tp_s = tp.forward_units * tp.allreduce_s;
  t.backward_overlap_s = tp.backward_overlap_s;
  t.backward_tp_s = tp.backward_units * tp.allreduce_s + tp.backward_overlap_s;
  return t;
}

IterationResult simulate_iteration(sg4::Engine& engine, const Platform& platform, const ModelSpec& model,
                                   const ParallelSpec& parallel, const CostParams& params, const DpSyncPlan& plan,
                                   const IterationOptions& options) {
  const ParallelSpec par = validate(model, parallel, platform.spec(), options.where);
  check_plan(plan, par, options.where);
  validate(options.variability, options.where);

  IterationState state(par, platform.gpus_per_node());
  state.p2p_bytes = whole_bytes(pp_p2p_bytes(model, par));
  state.t0 = sg4::Engine::get_clock();
  state.record_timeline = options.record_timeline;
  state.variability = options.variability;
  const Layout& layout = state.layout;
  state.tp_groups = make_tp_groups(platform, layout);
  state.dp_groups = make_dp_groups(platform, layout);
  if (const double gather = pp_gather_bytes(model, par); gather > 0 && par.pp > 1) {
    const Group& g = state.tp_groups.front();
    state.p2p_gather_s = (par.tp - 1) * platform.lone_transfer_s(g.hosts[0], g.hosts[1], gather / par.tp);
  }
  state.fused_embedding = fused_embedding_sync_applies(par) && embedding_sync_bytes(model, par) > 0;
  if (state.fused_embedding) {
    for (int t = 0; t < par.tp; ++t) {
      Group g{{}, "femb-t" + std::to_string(t)};
      for (const int stage : {0, par.pp - 1})
        for (int d = 0; d < par.dp; ++d) g.hosts.push_back(platform.gpu(layout.rank_of({t, stage, d})));
      state.embedding_groups.push_back(std::move(g));
    }
  } else if (par.pp > 1 && embedding_sync_bytes(model, par) > 0) {
    for (int d = 0; d < par.dp; ++d)
      for (int t = 0; t < par.tp; ++t)
        state.embedding_groups.push_back(
            Group{{platform.gpu(layout.rank_of({t, 0, d})), platform.gpu(layout.rank_of({t, par.pp - 1, d}))},
                  "emb-d" + std::to_string(d) + "t" + std::to_string(t)});
  }
  state.tp_closed_form =
      par.tp > 1 && !options.force_tp_ring && tp_rings_are_contention_free(platform, layout, state.tp_groups);
  if (state.tp_closed_form) state.tp_barriers = group_barriers(state.tp_groups.size(), par.tp);
  state.tp_arrived.assign(state.tp_groups.size(), 0);
  XBT_DEBUG("TP all-reduces: %s", state.tp_closed_form ? "closed form after a barrier" : "ring over mailboxes");
  state.platform = &platform;
  state.dp_closed_form = par.dp > 1 && !options.force_dp_ring &&
                         dp_rings_are_contention_free(platform, par, layout, state.dp_groups, state.variability);
  if (state.dp_closed_form) state.dp_barriers = group_barriers(state.dp_groups.size(), par.dp);
  state.dp_arrived.assign(state.dp_groups.size(), 0);
  XBT_DEBUG("DP all-reduces: %s", state.dp_closed_form ? "closed form after a barrier" : "ring over mailboxes");
  state.replicas_folded = !options.record_timeline && !options.all_replicas &&
                          replicas_are_identical(platform, par, state.variability, state.dp_closed_form);
  // The ranks simulated: every GPU, or replica 0's.
  std::vector<int> ranks;
  for (int r = 0; r < layout.world_size(); ++r)
    if (!state.replicas_folded || layout.coord_of(r).dp == 0) ranks.push_back(r);
  for (int s = 0; s < par.pp; ++s)
    state.stages.push_back(stage_work(platform, model, par, params, s, plan[static_cast<std::size_t>(s)],
                                      state.tp_groups[static_cast<std::size_t>(s * par.dp)]));
  state.records.resize(static_cast<std::size_t>(layout.world_size()));
  state.p2p_inbox.assign(static_cast<std::size_t>(kP2pPurposes) * static_cast<std::size_t>(layout.world_size()) *
                             static_cast<std::size_t>(par.virtual_stages),
                         nullptr);
  for (int purpose = 0; purpose < kP2pPurposes; ++purpose)
    for (const int r : ranks)
      for (int c = 0; c < par.virtual_stages; ++c)
        state.p2p_inbox[state.channel(static_cast<P2p>(purpose), r, c)] = sg4::Mailbox::by_name(
            std::string(p2p_name(static_cast<P2p>(purpose))) + "/r" + std::to_string(r) + "c" + std::to_string(c));
  state.p2p_taken.assign(state.p2p_inbox.size(), 0);

  for (const int r : ranks) sg4::Actor::create("gpu" + std::to_string(r), platform.gpu(r), GpuWorker(&state, r));
  // The engine keeps its callbacks for good: this one reaches the progress hook through `hook`, emptied once the
  // run is over, so that a later simulation in this process calls nothing of this one.
  const auto hook = std::make_shared<std::function<void()>>();
  if (options.on_progress) {
    // Every GPU runs a forward and a backward pass per micro-batch and model chunk.
    state.progress.gpus_total = static_cast<std::int64_t>(ranks.size());
    state.progress.passes_total = state.progress.gpus_total * 2 * par.microbatches * par.virtual_stages;
    *hook = [&state, &options] { options.on_progress(state.progress); };
    sg4::Engine::on_time_advance_cb([hook](double) {
      if (*hook) (*hook)();
    });
  }
  engine.run();
  if (*hook) (*hook)();  // the last passes end at the last time advance, after its callback
  *hook = nullptr;

  IterationResult result;
  result.stages.resize(static_cast<std::size_t>(par.pp));
  // Fused embedding sync: when the last member of each TP index's ring had finished its DP sync.
  std::vector<double> fused_meet(static_cast<std::size_t>(par.tp), 0.0);
  if (state.fused_embedding)
    for (const int r : ranks) {
      const RankCoord c = layout.coord_of(r);
      if (c.pp == 0 || c.pp == par.pp - 1) {
        double& m = fused_meet[static_cast<std::size_t>(c.tp)];
        m = std::max(m, state.records[static_cast<std::size_t>(r)].sync_end_s);
      }
    }
  for (const int r : ranks) {
    const RankRecord& rec = state.records[static_cast<std::size_t>(r)];
    result.iteration_s = std::max(result.iteration_s, rec.finish_s);
    result.pipeline_end_s = std::max(result.pipeline_end_s, rec.last_backward_end_s);
  }
  for (const int r : ranks) {
    const RankRecord& rec = state.records[static_cast<std::size_t>(r)];
    const int s = layout.coord_of(r).pp;
    StageResult& st = result.stages[static_cast<std::size_t>(s)];
    st.powersgd_rank = plan[static_cast<std::size_t>(s)].powersgd_rank;
    st.pp_rank = plan[static_cast<std::size_t>(s)].pp_rank;
    st.pp_send_bytes = std::max(st.pp_send_bytes, rec.pp_send_bytes);
    st.pp_comm_s = std::max(st.pp_comm_s, rec.pp_comm_s);
    st.pp_compression_s = std::max(st.pp_compression_s, rec.pp_compression_s);
    double comm = 0.0;
    double exposed = 0.0;
    for (const Interval& i : rec.dp_comms) {
      comm += i.end_s - i.start_s;
      exposed += part_after(i, result.pipeline_end_s);
    }
    st.last_backward_end_s = std::max(st.last_backward_end_s, rec.last_backward_end_s);
    st.finish_s = std::max(st.finish_s, rec.finish_s);
    st.dp_sync_s = std::max(st.dp_sync_s, rec.sync_end_s - rec.sync_start_s);
    st.dp_comm_s = std::max(st.dp_comm_s, comm);
    st.exposed_comm_s = std::max(st.exposed_comm_s, exposed);
    st.compression_s = std::max(st.compression_s, rec.compression_s);
    st.compute_s = std::max(st.compute_s, rec.compute_s);
    st.tp_comm_s = std::max(st.tp_comm_s, rec.tp_comm_s);
    st.bubble_s = std::max(st.bubble_s, result.pipeline_end_s - rec.compute_s - rec.tp_comm_s);
    st.sync_end_s = std::max(st.sync_end_s, rec.sync_end_s);
    st.optimizer_s = std::max(st.optimizer_s, rec.optimizer_s);
    if (rec.embedding_end_s > 0) {
      const RankCoord c = layout.coord_of(r);
      const int partner = layout.rank_of({c.tp, c.pp == 0 ? par.pp - 1 : 0, c.dp});
      const double meet = state.fused_embedding
                              ? fused_meet[static_cast<std::size_t>(c.tp)]
                              : std::max(rec.sync_end_s, state.records[static_cast<std::size_t>(partner)].sync_end_s);
      st.embedding_sync_s = std::max(st.embedding_sync_s, rec.embedding_end_s - meet);
    }
    if (options.record_timeline) result.timeline.insert(result.timeline.end(), rec.events.begin(), rec.events.end());
  }
  for (StageResult& st : result.stages)
    st.bubble_fraction = result.pipeline_end_s > 0 ? st.bubble_s / result.pipeline_end_s : 0.0;
  return result;
}

}  // namespace edgc::sim
