#pragma once
// What `edgc live` measured, as written to DIR/measurements.json ("schema": "edgc.live/1") and read back by
// `edgc validate`. All times are seconds, all sizes bytes.
//
// How the figures are taken (every step of every policy):
//  * all ranks meet at a barrier, then every pipeline stage's data-parallel group synchronises its gradients
//    at once (PowerSgd::step over the group's communicator): the "iteration" of live mode is this DP sync of all
//    stages, the part of training that gradient compression changes. Forward and backward compute are not run:
//    the trace stands in for them;
//  * StageStep::sync_s is the longest step wall time over the stage's ranks, from the common start to the end;
//    Step::iteration_s is the largest sync_s over the stages;
//  * Collective::time_s is the SHORTEST duration of that call over the group's ranks: the last rank to arrive
//    waits for nobody, so its duration is the collective itself, not the skew between ranks;
//  * StageStep::compute_s is the longest PowerSGD kernel time (compress, orthogonalise, reconstruct, error
//    feedback, packing) over the stage's ranks.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace edgc::results {

inline constexpr const char* kMeasurementsSchema = "edgc.live/1";

/// One all-reduce of a step, in the order the stage issued them.
struct Collective {
  std::string kind;        ///< "P" (all compressed P factors), "Q" (all Q factors), "dense" (fused uncompressed)
  std::int64_t bytes = 0;  ///< payload of the all-reduce (elements · element_bytes)
  double time_s = 0.0;     ///< shortest duration over the group's ranks
};

/// Compressed matrices of one shape and rank in a stage's step (the batch PowerSgd forms).
struct MatrixGroup {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  int rank = 0;
  int count = 0;
};

struct StageStep {
  int rank = 0;                  ///< rank in force for the stage (0 = uncompressed)
  double sync_s = 0.0;           ///< longest wall time of the step over the stage's ranks
  double compute_s = 0.0;        ///< longest PowerSGD compute time over the stage's ranks
  std::int64_t wire_bytes = 0;   ///< bytes each rank sent (P + Q + dense payloads)
  std::int64_t dense_bytes = 0;  ///< bytes an uncompressed all-reduce of the stage would send
  std::vector<Collective> collectives;
  std::vector<MatrixGroup> matrices;
};

struct Step {
  std::int64_t step = 0;          ///< 0, 1, … within the policy's run
  std::int64_t iteration = 0;     ///< training iteration of the trace gradients it replayed
  double iteration_s = 0.0;       ///< max over stages of sync_s
  std::vector<StageStep> stages;  ///< one per pipeline stage, stage 0 first
};

/// One policy's measured run over the trace (live mode; the simulated counterpart is sim::PolicyRun).
struct MeasuredRun {
  std::string policy;
  std::vector<Step> steps;
};

/// Where a global rank ran.
struct RankPlace {
  int rank = 0;
  std::string host;    ///< MPI processor name
  int node = 0;        ///< index of the host in the cluster file (first-seen order)
  int local = 0;       ///< index among the ranks on that host
  int stage = 0;       ///< pipeline stage it replays
  int replica = 0;     ///< index in the stage's data-parallel group
  int host_cores = 0;  ///< online CPUs of the host (0: not recorded)
};

/// Per host (by node index) whether more ranks ran on it than it has cores: those ranks shared cores, so their
/// timings include waiting for the scheduler (MPI ranks busy-poll). Empty when no host is oversubscribed or the
/// core counts were not recorded. Each entry: {node, host, ranks, cores}.
struct Oversubscribed {
  int node = 0;
  std::string host;
  int ranks = 0;
  int cores = 0;
};

/// Dense all-reduces timed over one DP group before the run (nccl-tests style, each after writing the replica's
/// gradients and the buffer, as a step does), and the ring α-β fit
/// t(S) = 2(D − 1)·latency_s + 2(D − 1)/D · S / bandwidth_Bps that the cluster file is built from.
struct Calibration {
  struct Row {
    std::int64_t bytes = 0;
    double time_s = 0.0;  ///< median over repeats of the shortest duration over the group's ranks
  };
  int ranks = 0;  ///< D, the group size
  std::vector<Row> rows;
  /// The all-reduces of the probe's steps (dense, P and Q at each probed rank) by size, each the median over the
  /// repeats and calls of that size: the collectives in the cache and timing context of a step. Optional in the
  /// file (older runs have none).
  std::vector<Row> step_rows;
  double latency_s = 0.0;      ///< per ring step
  double bandwidth_Bps = 0.0;  ///< per link
};

/// Communication time of a stage's compressed sync at a fixed rank, measured in the probe phase.
struct TcomPoint {
  int stage = 0;
  int rank = 0;
  double comm_s = 0.0;             ///< median over repeats of the summed P, Q and dense all-reduce times
  double compute_s = 0.0;          ///< median PowerSGD compute time
  double compressed_comm_s = 0.0;  ///< median of the P and Q all-reduce times alone (the part that scales with r)
};

/// T_com(r) = eta_s · r + c_s per stage over its TcomPoints (DAC: scenarios/SOURCES.md §13): eta from a
/// least-squares line through the P + Q times (what scales with r; the dense all-reduce of the uncompressed
/// tensors adds noise but no slope), c from the whole sync, c = mean(comm_s − eta · r).
struct TcomFit {
  int stage = 0;
  double eta_s = 0.0;
  double c_s = 0.0;
  double r2 = 0.0;  ///< coefficient of determination of the P + Q line (1 when all points are on it)
  int points = 0;
  double eta_stderr_s = 0.0;  ///< standard error of eta (0 with fewer than 3 points)
  /// eta > 0 and eta / eta_stderr_s above the two-sided 95 % Student t quantile of points − 2 degrees of freedom:
  /// the slope is resolved above the noise. When false, DAC should not be fed this eta (simulate fits its own).
  bool significant = false;
};

struct Measurements {
  int world_size = 1;
  int pp = 1;
  int dp = 1;
  std::string comm;     ///< "mpi" | "nccl"
  std::string backend;  ///< "cpu" | "cuda"
  int element_bytes = 4;
  std::string cluster_file = "cluster.json";  ///< relative to the measurements file's folder
  std::string trace;                          ///< trace directory replayed ("synthetic" when none)
  std::vector<RankPlace> placement;           ///< one per global rank, by rank
  Calibration calibration;
  std::vector<MeasuredRun> runs;
  std::vector<TcomPoint> tcom_points;
  std::vector<TcomFit> tcom_fit;
};

std::vector<Oversubscribed> oversubscribed_hosts(const Measurements& m);

/// The console caveat for oversubscribed hosts ("" when none): what the figures then measure.
std::string oversubscription_caveat(const Measurements& m);

/// One stage's step as it appears in measurements.json, and back (strict, errors naming `where` and the
/// field); `edgc live` gathers the stages' steps to rank 0 in this form.
nlohmann::ordered_json to_json(const StageStep& s);
StageStep stage_step_from_json(const nlohmann::json& j, const std::string& where);

/// One T_com fit as measurements.json, result.json and validate.json write it (the fields under their names).
nlohmann::ordered_json to_json(const TcomFit& f);

/// The JSON of measurements.json (schema, then the fields above under the same names).
nlohmann::ordered_json to_json(const Measurements& m);

/// Reads measurements.json; throws ConfigError naming `path` and the dotted field (e.g.
/// "runs[1].steps[3].stages[0].collectives[2].time_s") for a wrong schema, missing, extra or ill-typed keys,
/// negative times or sizes, and inconsistent counts (stages per step ≠ pp, placement ≠ world_size ranks,
/// pp · dp ≠ world_size).
Measurements read_measurements(const std::string& path);

}  // namespace edgc::results
