#pragma once
// What the GPU actors of one simulated iteration share (simulate_iteration builds it, GpuWorker reads and fills it):
// the per-stage inputs computed before the run, the groups and closed-form decisions, the pipeline mailboxes, and
// one record per GPU reduced into the IterationResult after the run.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <simgrid/s4u.hpp>
#include <vector>

#include "edgc/sim/collectives.hpp"
#include "edgc/sim/iteration.hpp"
#include "edgc/sim/layout.hpp"
#include "edgc/sim/platform.hpp"
#include "edgc/sim/variability.hpp"

namespace edgc::sim::impl {

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
  double embedding_end_s = 0.0;      // end of the first ↔ last stage embedding all-reduce (0 when none)
  double pp_send_bytes = 0.0;        // pipeline messages sent, both directions
  double pp_comm_s = 0.0;            // their transfer times, summed
  double pp_compression_s = 0.0;     // compressing backward messages, decompressing received ones
  double param_gather_wait_s = 0.0;  // the first forward pass waiting for the overlapped parameter all-gather
  double all_to_all_s = 0.0;         // MoE token all-to-alls
  double expert_sync_s = 0.0;        // the routed experts' gradient sync (compression included)
  double expert_param_gather_s = 0.0;
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
  double tp_forward_overlap_s = 0.0;   // likewise for the forward pass (tp_comm_overlap)
  // MoE: one pass's token all-to-alls over the expert-parallel group, folded into one of all their bytes (what
  // each GPU sends) plus the latency of the others.
  std::uint64_t a2a_forward_bytes = 0;
  std::uint64_t a2a_backward_bytes = 0;
  double a2a_forward_extra_latency_s = 0.0;
  double a2a_backward_extra_latency_s = 0.0;
};

// One collective of the overlapped DP sync: `bytes`, ready once `ready` of the final backward pass has run. For the
// overlapped parameter all-gather (param_buckets), `ready` is the fraction of the first forward pass that runs
// before the bucket's parameters are needed.
struct Bucket {
  std::uint64_t bytes = 0;
  double ready = 0.0;  // fraction in (0, 1] (gradients), [0, 1) (parameters)
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
  std::vector<Bucket> buckets;  // overlapped uncompressed sync, in backward order (else empty)
  // Distributed optimizer: the uncompressed sync (dp_bytes, buckets) reduce-scatters instead of all-reducing, and
  // the updated parameters are all-gathered: `param_bytes` at once after the optimizer step, or bucket by bucket
  // beside the next forward pass (param_buckets, in forward order; overlap_param_gather).
  bool reduce_scatter = false;
  std::uint64_t param_bytes = 0;
  std::vector<Bucket> param_buckets;
  // MoE: the routed experts' sync over the expert-DP group, after the dense one (uncompressed: expert_bytes,
  // reduce-scattered with the distributed optimizer, then expert_param_bytes all-gathered after the step; PowerSGD
  // at expert_rank: expert_p_bytes, expert_q_bytes and expert_compress_s).
  int expert_rank = 0;
  std::uint64_t expert_bytes = 0;
  std::uint64_t expert_p_bytes = 0;
  std::uint64_t expert_q_bytes = 0;
  double expert_compress_s = 0.0;
  bool expert_reduce_scatter = false;
  std::uint64_t expert_param_bytes = 0;
  std::uint64_t embedding_bytes = 0;  // first ↔ last stage embedding all-reduce (first and last stage only)
  double optimizer_s = 0.0;
  std::uint64_t grad_send_bytes = 0;  // one backward pipeline message of this stage (compressed or not)
  double grad_compress_s = 0.0;       // sender's compression of one backward message (0 when uncompressed)
  double grad_decompress_s = 0.0;     // receiver's decompression of one of this stage's backward messages
};

// Purposes of pipeline messages.
enum class P2p { kActivation = 0, kGradient = 1 };
constexpr int kP2pPurposes = 2;
inline const char* p2p_name(P2p purpose) { return purpose == P2p::kActivation ? "act" : "grad"; }

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
  bool tp_closed_form = false;  // TP rings replaced by barrier + sleep (see tp_rings_are_contention_free)
  // The TP indices simulated: all tp, or 1 where every GPU runs its TP index 0's iteration (tp_ranks_run_alike);
  // the members each closed-form TP all-reduce waits for.
  int tp_members = 0;
  bool dp_closed_form = false;  // DP rings likewise (see dp_rings_are_contention_free)
  // Expert-DP rings likewise: with the dense ones, or alone where every GPU's sync is simulated (mirrored,
  // expert_sync_rings_alone)
  bool edp_closed_form = false;
  bool replicas_folded = false;  // only the first folded_replicas() DP replicas simulated (replicas_are_identical)
  // Otherwise, where blocks_run_alike: the first folded_replicas() replicas run their pipelines, every other GPU (a
  // mirror) only its DP sync onwards, starting when its counterpart in the first block reaches its sync, whose
  // semaphore (by rank) it releases once per mirror.
  // The mirrors' pipelines may also fold by symmetry (mirror_by_symmetry in iteration.cpp): where a DP collective
  // runs beside the passes (the overlapped parameter all-gather) and a tree over the DP group keeps the replicas from
  // folding, the first mirror_block replicas run their pipelines, their parameter all-gathers over dp_gather_groups
  // (the DP groups folded with Group::period), and every GPU its sync over the whole groups. mirror_block is
  // folded_replicas() for plain mirrors, 0 where nothing mirrors.
  int mirror_block = 0;
  bool mirrored() const noexcept { return mirror_block > 0; }
  std::vector<Group> dp_gather_groups;  // empty, or dp_groups' index, folded by symmetry (tags end in "/gather")
  // The replicas whose pipelines run: the first pipeline_replicas (all of them, or the folded, mirrored or
  // symmetric block: replicas folded by symmetry run the first block alone, their DP and expert-DP groups folded
  // with Group::period; impl/symmetric_fold.hpp).
  int pipeline_replicas = 0;
  std::vector<sg4::SemaphorePtr> sync_reached;
  bool fused_embedding = false;  // embedding_groups are the fused 2·dp groups (fused_embedding_sync_applies)
  std::vector<StageWork> stages;
  std::vector<Group> tp_groups;         // index stage · dp + dp_index
  std::vector<Group> dp_groups;         // index stage · tp + tp_index
  std::vector<Group> ep_groups;         // MoE: expert-parallel groups (traffic.hpp ep_rank_groups), empty when ep = 1
  std::vector<Group> edp_groups;        // MoE: expert-data-parallel groups (edp_rank_groups)
  std::vector<Group> embedding_groups;  // index dp_index · tp + tp_index: {stage 0, stage pp − 1}; fused:
                                        // index tp_index: stage 0's dp GPUs, then stage pp − 1's
  std::vector<sg4::BarrierPtr> tp_barriers;  // one per TP group, same index; only with tp_closed_form
  std::vector<int> tp_arrived;               // members of each TP group inside the current all-reduce
  // With dp_closed_form: one barrier per DP group (same index) of its simulated members (dp, or folded_replicas()
  // where the replicas fold), and how many of them are inside the current collective; likewise per expert-DP group
  // (edp_groups' index; tp·dp/ep members, or the folded block's tp / gcd(ep, tp)).
  std::vector<sg4::BarrierPtr> dp_barriers;
  std::vector<int> dp_arrived;
  int dp_members = 0;
  std::vector<sg4::BarrierPtr> edp_barriers;
  std::vector<int> edp_arrived;
  int edp_members = 0;
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

// A byte count of the cost model (a double) as the whole bytes a transfer carries.
/// Index row · width + col of a row-major table of groups or stages, computed in size_t (never an int product).
inline std::size_t grid_index(int row, int width, int col) {
  return static_cast<std::size_t>(row) * static_cast<std::size_t>(width) + static_cast<std::size_t>(col);
}

inline std::uint64_t whole_bytes(double bytes) { return static_cast<std::uint64_t>(std::ceil(bytes)); }

}  // namespace edgc::sim::impl
