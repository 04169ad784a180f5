#pragma once
// A whole training run as segments of iterations that share one DP sync plan (the per-stage PowerSGD ranks).
// An iteration's simulated time depends only on its plan, so a run of any length costs one simulation per
// distinct plan (sim/README.md, "Whole runs"): simulate distinct_plans() once each, then accumulate() weighs every
// result by the iterations that use it. Nothing here runs SimGrid.
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "edgc/sim/iteration.hpp"

namespace edgc::sim {

/// Iterations [begin, end) all synchronise with `plan`.
struct RunSegment {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  DpSyncPlan plan;
  std::int64_t iterations() const noexcept { return end - begin; }
};

/// Contiguous segments from iteration 0, in order; neighbours never share a plan (append() merges them).
class RunSchedule {
 public:
  /// Appends [begin, end) with `plan`. Throws InternalError unless begin equals the current end and end > begin
  /// (an empty range is ignored).
  void append(std::int64_t begin, std::int64_t end, const DpSyncPlan& plan);
  const std::vector<RunSegment>& segments() const noexcept { return segments_; }
  std::int64_t iterations() const noexcept { return segments_.empty() ? 0 : segments_.back().end; }
  /// The plan in force at `iteration` (InternalError when outside the run).
  const DpSyncPlan& plan_at(std::int64_t iteration) const;

 private:
  std::vector<RunSegment> segments_;
};

/// Which gradients of a mixture of experts a policy's ranks compress (scenario key compression.apply_to): all of
/// them (each StageSync's rank for the dense and the expert sync alike), the dense ones only (the expert sync
/// uncompressed), or the routed experts' only (the dense sync uncompressed, the rank moved to expert_rank).
enum class CompressedGradients { kAll, kDense, kExperts };
/// "all" | "dense" | "experts" → the value; nullopt for anything else.
std::optional<CompressedGradients> compressed_gradients_from_name(std::string_view name) noexcept;
/// `schedule` with every plan's DP ranks restricted to `which` (the pipeline ranks untouched); the same schedule
/// for kAll.
RunSchedule restrict_compression(const RunSchedule& schedule, CompressedGradients which);

/// Every distinct plan of `schedules`, in order of first appearance.
std::vector<DpSyncPlan> distinct_plans(const std::vector<const RunSchedule*>& schedules);

/// Where one iteration's time goes, seen from its critical path; the parts sum to IterationResult::iteration_s.
///  * compute_s, tp_comm_s: of the stage that computes longest (its compute + TP all-reduces);
///  * bubble_s: the rest of that stage's time until the pipeline end (pipeline fill/drain, waiting on
///    neighbours, pipeline-parallel transfers);
///  * exposed_dp_comm_s: DP all-reduce time after the pipeline end, of the stage whose sync ends last, plus the
///    busiest stage's waits for its overlapped parameter all-gather (StageResult::param_gather_wait_s, taken from
///    the bubble);
///  * optimizer_s, embedding_sync_s: the optimizer step and the first ↔ last stage embedding all-reduce of the
///    stage that finishes last, as far as the tail after the pipeline end leaves room for them;
///  * exposed_compression_s: the rest of the tail after the pipeline end (PowerSGD compute on that stage);
///  * entropy_s: the GDS's entropy passes of an entropy-reading policy (add_entropy_passes; 0 in one simulated
///    iteration);
///  * compression_s: PowerSGD compute of the slowest stage, hidden or not (not part of the sum);
///  * all_to_all_s: a mixture of experts' token all-to-alls on the busiest stage (taken from the bubble);
///  * expert_sync_s: the routed experts' gradient sync of the stage whose sync ends last (inside exposed DP above
///    as far as it runs after the pipeline end; not part of the sum);
///  * pp_comm_s, pp_compression_s, pp_send_bytes: the pipeline's transfers (their summed transfer times), the
///    compression of its backward messages (sender and receiver) and the bytes sent, of the stage with the most of
///    each; inside compute, bubble and TP above, not part of the sum.
struct IterationBreakdown {
  double compute_s = 0.0;
  double tp_comm_s = 0.0;
  double bubble_s = 0.0;
  double exposed_dp_comm_s = 0.0;
  double embedding_sync_s = 0.0;
  double optimizer_s = 0.0;
  double exposed_compression_s = 0.0;
  double entropy_s = 0.0;
  double compression_s = 0.0;
  double pp_comm_s = 0.0;
  double pp_compression_s = 0.0;
  double pp_send_bytes = 0.0;
  double all_to_all_s = 0.0;
  double expert_sync_s = 0.0;
};
IterationBreakdown breakdown(const IterationResult& r);

/// "Communication latency" of one iteration: the longest per-stage DP sync (StageResult::dp_sync_s).
double comm_latency_s(const IterationResult& r);

// ---- stage-separable composition ----
// When no link can carry two pipeline stages' traffic during their DP syncs, a stage's figures depend only on
// its own rank: the pipeline part of the iteration does not depend on the plan at all (DP syncs come after a
// stage's last backward and its pipeline sends, iteration.hpp), and stage s's sync runs on links no other stage
// uses. Then an iteration of any plan is composed exactly from the uniform plans (every stage at one rank) of
// the ranks it uses: a run with ranks from a set of k values needs k simulations, not one per rank vector.

/// Whether every node holds GPUs of one pipeline stage only (so NVLinks and NICs are never shared between
/// stages) and the fabric is the non-blocking star (inter-node routes add no shared links).
bool stages_separable(const ClusterSpec& cluster, const ParallelSpec& parallel);

/// The uniform plans (every stage the same StageSync) of the distinct (powersgd_rank, pp_rank) pairs `plans` use,
/// in order. The pipeline part of an iteration depends on pp_rank (compressed backward messages), so composition
/// needs plans whose stages share one pp_rank, as every controller's plans do (compose_separable checks it).
std::vector<DpSyncPlan> separable_basis(const std::vector<DpSyncPlan>& plans);

/// The iteration of `plan` composed from simulated uniform plans (basis[i] ↔ basis_results[i], which must
/// cover every rank of `plan`, and every stage of `plan` with the same pp_rank; InternalError otherwise): stage s is
/// the uniform plan of its rank's stage s, pipeline_end_s is the plans' common pipeline end, iteration_s the latest
/// stage finish. No timeline.
IterationResult compose_separable(const DpSyncPlan& plan, const std::vector<DpSyncPlan>& basis,
                                  const std::vector<IterationResult>& basis_results);

/// Totals of a run: sums over its iterations, and means per iteration.
struct RunTotals {
  std::int64_t iterations = 0;
  std::int64_t compressed_iterations = 0;     ///< iterations where at least one stage used PowerSGD
  double training_time_s = 0.0;               ///< Σ iteration_s
  double iteration_time_s = 0.0;              ///< training_time_s / iterations
  double comm_latency_s = 0.0;                ///< mean of comm_latency_s() over all iterations
  double compressed_comm_latency_s = 0.0;     ///< the same over compressed iterations only (0 when none)
  double compressed_iteration_time_s = 0.0;   ///< mean iteration_s over compressed iterations only (0 when none)
  std::vector<double> stage_comm_latency_s;   ///< mean dp_sync_s per stage over all iterations
  IterationBreakdown breakdown;               ///< per-iteration means
  std::vector<std::int64_t> plan_iterations;  ///< per plan of accumulate()'s `plans`: iterations using it
};

/// Accumulates `schedule`, reading each segment's iteration from `results`, where results[i] belongs to
/// plans[i]. Throws InternalError when a segment's plan is missing from `plans`.
RunTotals accumulate(const RunSchedule& schedule, const std::vector<DpSyncPlan>& plans,
                     const std::vector<IterationResult>& results);

/// Adds the GDS's entropy measurement to a run: each of the `sampled` iterations (`sampled_compressed` of them
/// compressed) takes `pass_s` longer, as breakdown.entropy_s. The passes read the gradient after the last backward
/// and before the DP sync, so they are taken as exposed: an upper bound where a stage's sync ends early.
void add_entropy_passes(RunTotals& totals, std::int64_t sampled, std::int64_t sampled_compressed, double pass_s);

}  // namespace edgc::sim
