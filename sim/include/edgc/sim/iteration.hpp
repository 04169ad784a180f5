#pragma once
// One training iteration of a TP × PP × DP layout, simulated with one actor per GPU (simulate_iteration). Each GPU
// runs its pipeline schedule (GPipe, 1F1B or interleaved 1F1B) with its compute as sleeps, the pass's TP collectives
// folded into one ring all-reduce, its activations and gradients to its pipeline neighbours over mailboxes, then its
// stage's DP sync (StageSync), the word-embedding all-reduce (first and last stage) and the optimizer step. What each
// step costs and why: sim/README.md, "One iteration"; where the rings take a closed form and the DP replicas fold,
// and why that changes no simulated time: sim/README.md, "Closed forms and folding". The sources: sim/src/
// iteration.cpp (simulate_iteration), gpu_worker.cpp (the actor), stage_work.cpp, traffic.cpp, closed_forms.cpp.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "edgc/sim/cost_model.hpp"
#include "edgc/sim/platform.hpp"
#include "edgc/sim/spec.hpp"
#include "edgc/sim/variability.hpp"

namespace edgc::sim {

/// How one pipeline stage synchronises its gradients over its DP group.
///  * powersgd_rank == 0: one ring all-reduce of dp_gradient_bytes() (uncompressed);
///  * powersgd_rank == r ≥ 1: PowerSGD at rank r with the wire sizes of powersgd_wire():
///    compute ⅓ of powersgd_compress_s() (P = MQ), ring all-reduce of P, compute ⅓ (orthogonalisation and
///    Q = MᵀP), ring all-reduce of Q, compute ⅓ (M̂ = PQᵀ), then one fused ring all-reduce of the uncompressed
///    bytes. The compression compute is a `sleep_for` of those seconds (it is partly memory-bound, so it is not
///    expressed as FLOPs). Lower rank ⇒ more compression.
///  * pp_rank == r ≥ 1 (the pipeline side, EDGC's compressed backpropagation): every activation gradient this stage
///    sends back to the previous stage is PowerSGD-compressed at rank r (pp_compresses()): the sender sleeps
///    pp_compress_s() after the backward pass, sends pp_compressed_bytes(), and the receiver sleeps pp_decompress_s()
///    after the message arrived (before its scatter/gather all-gather). 0 = uncompressed. Stage 0 of a
///    non-interleaved schedule sends nothing backward, so its entry does not matter.
///  * expert_rank (mixture of experts): the routed experts' gradients, synchronised over the expert-data-parallel
///    group after the dense sync, at this rank (powersgd_wire(…, SyncGroup::kExpert)); -1 = powersgd_rank, 0 =
///    uncompressed. With the distributed optimizer an uncompressed expert sync reduce-scatters and the expert
///    parameters are all-gathered over the same group after the optimizer step.
struct StageSync {
  int powersgd_rank = 0;
  int pp_rank = 0;
  int expert_rank = -1;
  int expert_rank_or_default() const noexcept { return expert_rank < 0 ? powersgd_rank : expert_rank; }
  friend bool operator==(const StageSync&, const StageSync&) = default;
  friend auto operator<=>(const StageSync&, const StageSync&) = default;
};
/// One entry per pipeline stage, stage 0 first.
using DpSyncPlan = std::vector<StageSync>;

/// Every stage uncompressed.
DpSyncPlan uncompressed_plan(int pp);
/// Whether any stage's DP sync uses PowerSGD (what makes an iteration "compressed" in the run figures).
bool dp_compressed(const DpSyncPlan& plan);
/// Every stage PowerSGD at `rank`; the backward pipeline messages at `pp_rank` (0 = uncompressed).
DpSyncPlan powersgd_plan(int pp, int rank, int pp_rank = 0);

/// How far a simulated iteration has come (IterationOptions::on_progress): the GPUs' forward and backward passes
/// finished over all GPUs, then the GPUs through their whole iteration (syncs, embedding all-reduce, optimizer).
struct IterationProgress {
  std::int64_t passes_done = 0;
  std::int64_t passes_total = 0;
  std::int64_t gpus_done = 0;
  std::int64_t gpus_total = 0;
};

struct IterationOptions {
  bool record_timeline = false;  ///< fill IterationResult::timeline
  /// Run every TP all-reduce as ring messages even where tp_closed_form_applies() (for tests and benchmarks that
  /// compare the two; the results agree to rounding, ~1e-13 relative).
  bool force_tp_ring = false;
  /// Likewise for the DP all-reduces where dp_closed_form_applies().
  bool force_dp_ring = false;
  /// Simulate every DP replica and TP index even where they provably run identical iterations (replicas_fold(),
  /// replicas_mirror(), tp_ranks_fold(), or folded by symmetry on a platform with images: symmetric_fold_images()),
  /// for tests and benchmarks that compare the two.
  bool all_replicas = false;
  ComputeVariability variability;  ///< jitter and stragglers; none by default
  /// Named in ConfigErrors about the layout, plan and variability: the scenario file the caller read them from.
  std::string where = "simulate_iteration";
  /// When set, called whenever simulated time advances (often: throttle in the callback) and once at the end.
  std::function<void(const IterationProgress&)> on_progress;
};

/// One interval of one GPU's activity, for a Chrome-trace writer. Times in seconds from the iteration's start.
struct TimelineEvent {
  int rank = 0;          ///< global rank (layout.hpp order)
  std::string name;      ///< "F3", "B3", "tp F3", "recv act 3", "send grad 3", "dp allreduce", "dp P", ...
  std::string category;  ///< "compute" | "tp" | "p2p" | "dp" | "compress"
  double start_s = 0.0;
  double end_s = 0.0;
};

/// Figures of one pipeline stage. Every figure is the MAX over the stage's tp · dp ranks (they run the same
/// schedule, so they differ only where ranks share links, or draw different compute times under
/// IterationOptions::variability).
struct StageResult {
  int powersgd_rank = 0;             ///< the plan's entry, 0 = uncompressed
  double last_backward_end_s = 0.0;  ///< end of the stage's last backward pass including its TP all-reduce
  double dp_sync_s = 0.0;            ///< "communication latency": the DP sync from its start (after the last backward
                                     ///< and the stage's last pipeline sends) to its end, compression compute included
  double finish_s = 0.0;             ///< when the stage's last GPU finished (IterationResult::iteration_s is the max)
  double dp_comm_s = 0.0;            ///< time inside the DP all-reduces only
  double exposed_comm_s = 0.0;       ///< part of the DP all-reduce time after the pipeline end (no stage computes
                                     ///< backward any more), i.e. not hidden behind any other stage's work
  double compression_s = 0.0;        ///< PowerSGD compress/decompress compute
  double compute_s = 0.0;            ///< forward + backward compute of all micro-batches
  double tp_comm_s = 0.0;            ///< time inside TP collectives (incl. the folded latency sleep, what the
                                     ///< collectives beside GEMMs added to the backward passes and, on the closed-form
                                     ///< path, the wait for the group's last member, as in the ring)
  double bubble_s = 0.0;  ///< IterationResult::pipeline_end_s − compute_s − tp_comm_s (− all_to_all_s, the parameter
                          ///< all-gather waits): idle before the pipeline end (waiting on neighbours, p2p
                          ///< transfers included)
  double bubble_fraction = 0.0;      ///< bubble_s / IterationResult::pipeline_end_s ((p − 1)/(m + p − 1) ideally)
  double sync_end_s = 0.0;           ///< when the stage's DP sync ended
  double embedding_sync_s = 0.0;     ///< first and last stage (pp > 1): the word-embedding all-reduce, from the later
                                     ///< of the two stages' sync ends to its end; 0 elsewhere
  double optimizer_s = 0.0;          ///< the optimizer step after the syncs
  int pp_rank = 0;                   ///< the plan's pipeline entry: rank of this stage's backward messages, 0 = none
  double pp_send_bytes = 0.0;        ///< bytes one GPU of the stage sent to neighbouring stages (both directions)
  double pp_comm_s = 0.0;            ///< transfer time of those sends (from the moment both sides were ready to the
                                     ///< arrival), summed; overlapped with other work where the schedule allows
  double pp_compression_s = 0.0;     ///< compressing its backward messages and decompressing the ones it received
  double param_gather_wait_s = 0.0;  ///< the first forward pass waiting for the overlapped parameter all-gather
                                     ///< (ParallelSpec::overlap_param_gather): DP communication before the pipeline end
                                     ///< that no compute hides
  // Mixture of experts (0 for a dense model):
  double all_to_all_s = 0.0;           ///< inside the MoE layers' token all-to-alls, all passes (part of the pipeline)
  double expert_sync_s = 0.0;          ///< the routed experts' gradient sync over expert DP, compression included (part
                                       ///< of dp_sync_s, after the dense sync)
  double expert_param_gather_s = 0.0;  ///< distributed optimizer: the expert parameters' all-gather after the step
  int expert_rank = 0;                 ///< the rank the expert sync ran at, 0 = uncompressed
};

struct IterationResult {
  double iteration_s = 0.0;         ///< from the start until the last GPU finished (DP sync and pending sends included)
  double pipeline_end_s = 0.0;      ///< latest last_backward_end_s over all stages
  std::vector<StageResult> stages;  ///< one per pipeline stage
  std::vector<TimelineEvent> timeline;  ///< empty unless IterationOptions::record_timeline; by rank, then time
};

/// Whether simulate_iteration() runs the TP all-reduces of `parallel` (validated) on `platform` as their closed
/// form (a barrier of the TP group, then one sleep) instead of ring messages, unless IterationOptions::force_tp_ring:
/// true when tp > 1 on NVSwitch nodes, no other traffic inside a node (every pipeline neighbour and DP peer of every
/// GPU on another node) and plain CM02 (plain_cm02()). Proof: sim/README.md, "Closed forms and folding".
bool tp_closed_form_applies(const Platform& platform, const ParallelSpec& parallel);

/// Where tp_closed_form_applies(): whether simulate_iteration() simulates the GPUs at TP index 0 alone (with
/// whatever replicas it runs), unless IterationOptions::all_replicas or record_timeline: true on a star fabric (or
/// a fat tree built for it: tp_fold_fabric_copies()) with one NIC per GPU, without compute variability, when nothing
/// but the TP group's own collectives joins GPUs of different TP indices (pipeline neighbours, DP, expert-DP and
/// embedding peers all share the sender's TP index). Every GPU then runs the iteration of its TP index 0 (its transfers
/// cross only its own NIC links, the TP all-reduces are closed forms), and the result is the same as simulating all of
/// them, with tp times fewer actors (tests/sim/tp_fold_test.cpp). Proof: sim/README.md, "Closed forms and folding", TP
/// ranks.
bool tp_ranks_fold(const Platform& platform, const ParallelSpec& parallel, const ComputeVariability& variability);

/// tp_ranks_fold() decided from the cluster's description alone, before any platform exists (what to build, the
/// actors to count): NVSwitch nodes with one NIC per GPU, no compute variability, no MoE with ep > 1, every TP group
/// inside a node and every other pair of GPUs across nodes at one TP index. Then the platform's tp_ranks_fold()
/// holds on a star, and on a fat tree built with tp_fold_fabric_copies() (the tests check both agree).
bool tp_ranks_fold(const ClusterSpec& cluster, const ParallelSpec& parallel, const ComputeVariability& variability);

/// The TP ranks on a fat tree: its links are shared by every TP index of a node alike, so TP index 0 alone is
/// simulated there only on a platform whose tree carries each flow for all tp of them (Platform::build's
/// `fabric_copies`). What to build: tp on a fat tree where tp_ranks_fold(ClusterSpec, …) holds, else 1. Only for
/// iterations run without IterationOptions::all_replicas, record_timeline and force_tp_ring: simulate_iteration
/// refuses (InternalError) a platform built with copies for an iteration that keeps every TP index.
int tp_fold_fabric_copies(const ClusterSpec& cluster, const ParallelSpec& parallel,
                          const ComputeVariability& variability);

/// Whether simulate_iteration() runs the DP all-reduces (ring, buckets, PowerSGD's P and Q and the uncompressed
/// rest) as their closed form, unless IterationOptions::force_dp_ring: true when dp > 1 with one NIC per GPU, every
/// DP peer of every GPU on another node, plain CM02, the all-reduce a ring (allreduce_ring_closed_form()), no bucket
/// overlapped with a backward pass whose pipeline sends use the same NIC (overlap_grad_reduce with pp > 1), and no
/// fabric link between the nodes that can ever limit a transfer (always so on a star; on a fat tree bounded from the
/// routes of every pair of GPUs that exchange data, tighter without `variability` for a dense model). For a mixture
/// of experts the expert sync's rings take the same closed form, so every expert-DP peer must also be on another
/// node, and with ep > 1 no DP collective may overlap a pass (overlap_grad_reduce, overlap_param_gather at any pp):
/// it would run beside the pass's token all-to-alls. A mixture of experts may also keep DP peers inside a node when
/// every DP group comes in runs of k members per node on a star of NVSwitch nodes, with the replicas in step
/// (replicas_fold() conditions) and k a multiple of folded_replicas(); simulate_iteration then also checks that
/// auto picks the ring for each of its all-reduce sizes, which this function does not know: it says true there only
/// with the ring forced (set_allreduce_algorithm). Proof: sim/README.md, "Closed forms and folding".
bool dp_closed_form_applies(const Platform& platform, const ParallelSpec& parallel,
                            const ComputeVariability& variability = {});

/// Whether simulate_iteration() simulates the first folded_replicas() DP replicas alone (replica 0 for a dense
/// model; with expert parallelism the fewest replicas that hold whole expert-parallel groups), unless
/// IterationOptions::all_replicas or record_timeline: true when dp_closed_form_applies() on NVSwitch nodes without
/// compute variability and without the fused embedding sync. Then every block of that many replicas runs the same
/// iteration, and the result is the same as simulating all of them (tests/sim/closed_form_test.cpp,
/// moe_folding_test.cpp), with dp / folded_replicas() times fewer actors. Proof: sim/README.md, "Closed forms and
/// folding".
bool replicas_fold(const Platform& platform, const ParallelSpec& parallel, const ComputeVariability& variability);

/// Mixture of experts where replicas_fold() says no: whether simulate_iteration() runs the pipelines of the first
/// folded_replicas() DP replicas alone and every other GPU from its DP sync on (a "mirror" that starts when its
/// counterpart in the first block reaches the sync, and runs the syncs, embedding all-reduce and optimizer step as
/// messages or closed forms as usual), unless IterationOptions::all_replicas or record_timeline: true with ep / gcd
/// (ep, tp) < dp on a star of NVSwitch nodes with one NIC per GPU, plain CM02, no compute variability and no DP
/// collective overlapped with a pass. Every actor still runs (iteration_actors counts them all); the pipelines'
/// messages shrink by dp / folded_replicas(). Proof: sim/README.md, "Closed forms and folding".
bool replicas_mirror(const Platform& platform, const ParallelSpec& parallel, const ComputeVariability& variability);

/// replicas_fold() decided from the cluster's description alone, before any platform exists (the actor count a
/// simulation needs is checked before it starts): the same conditions, with routes as Platform::build makes them
/// (a star fabric's route between two GPUs is exactly their two NIC links, all alike) and SimGrid's network model
/// as it configures it (plain CM02). On a fat tree it needs the fabric's routes, so it says false (every replica's
/// actors are counted) even where the platform's replicas_fold() then folds. `parallel` validated. An `algorithm`
/// that is not the ring where it matters (allreduce_ring_closed_form() false, e.g. a forced tree) never folds: the
/// DP closed form is a ring's. DP groups in runs per node (a mixture of experts, dp_closed_form_applies()) fold here
/// only with `algorithm` the ring: under auto the choice depends on sizes the description does not give.
bool replicas_fold(const ClusterSpec& cluster, const ParallelSpec& parallel, const ComputeVariability& variability,
                   CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto);

/// Replicas that fold by symmetry (sim/README.md): the GPUs that Platform::build should give image hosts so that
/// simulate_iteration() can run the first block of replicas alone where replicas_fold() says no but shifting the
/// blocks maps the platform, the traffic and the rings onto themselves (overlapped gradient buckets with pp > 1,
/// NICs shared by two GPUs, cube-mesh nodes): the first block's GPUs, where a block exists (a star fabric, no
/// compute variability, no fused embedding sync, a shift of whole nodes; impl/symmetric_fold.hpp) and the
/// description alone does not fold the replicas (replicas_fold(ClusterSpec, …, `algorithm`)); else none.
/// simulate_iteration() then also checks that only the DP and expert-DP rings cross between blocks, that their
/// all-reduces run as rings, and that the rings shift with the blocks; where not, it simulates every replica (or
/// mirrors). `parallel` validated. Without record_timeline or all_replicas only.
std::vector<int> symmetric_fold_images(const ClusterSpec& cluster, const ParallelSpec& parallel,
                                       const ComputeVariability& variability,
                                       CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto);

/// The actors simulate_iteration() runs where symmetric_fold_images() images GPUs and the description alone proves
/// that it then folds by symmetry: every DP and expert-DP group with one member per node (one ring in member order,
/// which shifts with the blocks, and never a tree under auto). Then: the first block's GPUs' actors
/// (replica_actors) plus one image receiver per DP and expert-DP group. 0 where that is not certain (the actor-stack
/// check then counts every replica, as simulate_iteration may fall back to them).
std::int64_t symmetric_fold_actors(const ClusterSpec& cluster, const ParallelSpec& parallel,
                                   const ComputeVariability& variability,
                                   CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto);

/// Platform::build for simulate_iteration() with `options`: the image hosts symmetric_fold_images() asks for and
/// the fat tree's tp_fold_fabric_copies(), none of either where `options` keep every GPU (all_replicas,
/// record_timeline), and no copies with force_tp_ring. `parallel` validated; the variability is options.variability
/// and the all-reduce algorithm `profile`'s. One call per process, as Platform::build.
Platform build_folding_platform(sg4::Engine& engine, const ClusterSpec& cluster, const NetworkProfile& profile,
                                const ParallelSpec& parallel, const IterationOptions& options);

/// The actors simulate_iteration() will run with `options` on a platform built from `cluster` with
/// symmetric_fold_images() and tp_fold_fabric_copies(), decided before the platform exists (the actor-stack check of
/// `edgc simulate` and of the iteration benchmark): every GPU's (iteration_actors) where nothing folds for certain
/// from the description; the folded replicas' (replicas_fold(ClusterSpec, …)) or the symmetric fold's
/// (symmetric_fold_actors()) where it does; a tp-th of those where the TP ranks fold too (tp_ranks_fold(ClusterSpec,
/// …)). Never fewer than it runs. Nothing folds with options.all_replicas or record_timeline; force_dp_ring keeps
/// the replicas, force_tp_ring the TP indices. The variability is options.variability.
std::int64_t planned_actors(const ClusterSpec& cluster, const ParallelSpec& parallel, CollectiveAlgorithm algorithm,
                            const IterationOptions& options);

/// One transformer layer of stage 0 for one micro-batch on one GPU, as simulate_iteration charges it (the figures to
/// set beside a per-layer measurement, e.g. Korthikanti et al. 2022, Table 4): compute from layer_compute()
/// (recomputation, and without gradient-accumulation fusion the layer's share of the accumulation, in the
/// backward pass), and the layer's TP collectives (tp_comm_per_layer) on the first TP group of the layout, each
/// exposed one as its share of a lone ring all-reduce of the layer's tensor (an all-gather or reduce-scatter half of
/// one), those beside GEMMs as what they add to them. `parallel` is validated against platform.spec() (ConfigError
/// naming `where`).
struct LayerPassTimes {
  double forward_compute_s = 0.0;
  double backward_compute_s = 0.0;
  double forward_tp_s = 0.0;
  double backward_tp_s = 0.0;       ///< exposed collectives plus backward_overlap_s
  double backward_overlap_s = 0.0;  ///< what the collectives beside GEMMs add to the backward pass
  double forward_s() const noexcept { return forward_compute_s + forward_tp_s; }
  double backward_s() const noexcept { return backward_compute_s + backward_tp_s; }
};
LayerPassTimes layer_pass_times(const Platform& platform, const ModelSpec& model, const ParallelSpec& parallel,
                                const CostParams& params, const std::string& where = "");

/// Simulates one iteration on `platform` (built by Platform::build in this process, engine not yet run) and
/// runs `engine` to completion: call once per process. `parallel` is checked with validate() against
/// platform.spec() (microbatches = 0 is filled in). Throws ConfigError when the layout is invalid, when `plan`
/// has not exactly pp entries (field "dp_sync"), when a PowerSGD rank is negative (field "dp_sync.rank"), and
/// when options.variability is out of range (fields "variability.compute_jitter_cv" < 0 or not finite,
/// "variability.straggler_probability" outside [0, 1], "variability.straggler_slowdown" < 1 or not finite).
IterationResult simulate_iteration(sg4::Engine& engine, const Platform& platform, const ModelSpec& model,
                                   const ParallelSpec& parallel, const CostParams& params, const DpSyncPlan& plan,
                                   const IterationOptions& options = {});

}  // namespace edgc::sim
