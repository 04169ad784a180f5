#pragma once
// The accuracy side of a prediction (design "The accuracy side"; tools/README.md "Gradient fidelity"): what a
// policy's rank schedule does to the gradient.
//
//  * Measured: the schedule is replayed through PowerSGD with error feedback (the real kernels) on a recorded
//    trace's gradients. Captured iteration t of a trace of T steps stands for simulated iteration t·N/T of an
//    N-iteration run; simulated stage s reads trace stage stage_map[s]. Its rank there is mapped onto each trace
//    matrix by equal CQM captured energy (core::equivalent_rank: g(r'; m', n') of the trace matrix = g(r; m, n) of
//    the simulated stage's matrix). PowerSGD needs whole ranks: the figures at a fractional r' are interpolated
//    linearly between the replays at ⌊r'⌋ and ⌈r'⌉ (each a replay of its own, error feedback and all); below rank 1
//    they are rank 1's, which understates the error (counted, and warned about).
//  * Predicted: the CQM's structure-free error sqrt(g(r; m, n)) for the simulated shapes.
//
// Data-parallel averaging does not change the measured figures: PowerSGD all-reduces P = M·Q and Q = Mᵀ·P, both
// linear in M, so the averaged reconstruction Ĝ and the mean error buffer follow exactly a single rank's PowerSGD on
// the mean gradient (tests/tools/engine/fidelity_test.cpp checks it against emulated ranks). A trace holds that mean
// gradient, so one replay per schedule stands for any data-parallel width.
//
// Figures per stage (and, weighted by the simulated stages' parameter counts, per run), over the captured
// iterations where the stage is compressed: relative error ‖Ĝ − G‖/‖G‖ of the stage's averaged gradient (all its
// tensors; 1-D ones travel exact), captured energy ‖Ĝ‖²/‖G + E‖² of its compressed matrices, and the error-feedback
// residual ‖E‖/‖G‖ after the step.
//
// Replays are memoised per (trace, backend, seed, trace stage, whole-rank sequence per matrix), the trace named by its
// path and its manifest's size and time: in memory across the policies of one run and across the runs of one process
// (a sweep worker's points), and in the cache directory across the runs of a sweep or plan. A process also keeps the
// trace's fully captured matrices in memory (up to 256 MiB) instead of reading them again for each run's replays.
// Replays that start with the same ranks share those steps (one compressor until their ranks part, then copies of
// its state), and a process keeps such states (up to 64 MiB) for later replays that start the same way.
// EDGC_NO_MEMO=1 turns the in-memory memos off (core/memo.hpp).
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "edgc/results/convergence.hpp"
#include "edgc/sim/whole_run.hpp"
#include "edgc/traces/manifest.hpp"

namespace edgc::engine {

struct FidelitySetup {
  /// Simulated run.
  std::int64_t run_iterations = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> shapes;  ///< the CQM matrix per simulated stage
  std::vector<double> stage_parameters;                       ///< weights of the stages in the run figures
  /// The trace to measure on; empty: CQM prediction only.
  std::string trace_dir;
  std::optional<traces::Manifest> manifest;  ///< its manifest when the caller has read it (else read from trace_dir)
  std::vector<int> stage_map;                ///< simulated stage → trace stage
  std::string backend = "cpu";               ///< kernels of the replays
  std::uint64_t seed = 0;                    ///< PowerSGD's initial Q
  std::string cache_dir;                     ///< where replays are stored across runs (empty: not stored)
  std::string where = "simulate";
  /// fidelity.convergence's records, read with the scenario: the measured loss shown beside the error where one
  /// matches (results/convergence.hpp).
  std::vector<results::ConvergenceRecord> convergence;
};

/// How one simulated rank maps onto the trace stage's matrices.
struct RankMapping {
  int rank = 0;
  double cqm_relative_error = 0.0;  ///< sqrt(g(rank; m, n)) of the simulated shape
  double trace_rank_min = 0.0;      ///< the equal-energy rank r' over the trace stage's matrices (before clamping)
  double trace_rank_max = 0.0;
};

/// Means over the points (captured iterations) where the stage, or for a run any stage, is compressed; absent when
/// there are none or nothing was measured.
struct FidelityFigures {
  std::int64_t points = 0;
  /// Compressed points whose figures were not finite (a trace of NaN/Inf or all-zero gradients there); when every
  /// compressed point is such, relative_error, captured_energy and residual are absent: not measured, never 0.
  std::int64_t unmeasured_points = 0;
  std::optional<double> relative_error;
  std::optional<double> relative_error_max;
  std::optional<double> captured_energy;
  std::optional<double> residual;
  /// The CQM's prediction, sqrt(g) (for a run: sqrt of the parameter-weighted g), mean over the compressed
  /// iterations of the schedule (every iteration, not only the captured ones).
  std::optional<double> cqm_relative_error;
};

struct StageFidelity : FidelityFigures {
  int stage = 0;
  int trace_stage = -1;             ///< -1 when not measured
  std::int64_t below_rank_one = 0;  ///< compressed points whose equal-energy rank was below 1 somewhere (rank 1 used)
  std::vector<RankMapping> ranks;   ///< every simulated rank the stage uses
};

struct Fidelity : FidelityFigures {
  std::string source;  ///< "trace" (measured and predicted) or "cqm" (predicted only)
  std::vector<StageFidelity> stages;
};

class FidelityMeter {
 public:
  /// Reads the trace's manifest (TraceFormatError naming its file). Throws ConfigError (naming `where` and
  /// trace.path) when the trace holds no fully captured matrix in a mapped stage: then nothing can be measured.
  explicit FidelityMeter(FidelitySetup setup);
  ~FidelityMeter();
  FidelityMeter(const FidelityMeter&) = delete;
  FidelityMeter& operator=(const FidelityMeter&) = delete;

  /// The figures of each schedule (same order). Replays what is not memoised, reading the trace once for all.
  std::vector<Fidelity> measure(const std::vector<const sim::RunSchedule*>& schedules);

  /// Replays run by this object (memo and cache misses).
  int replays() const noexcept;
  /// PowerSGD steps those replays took: replays that share their first ranks share those steps, and with the memos
  /// on a replay continues from the longest prefix of its ranks the process already replayed.
  std::int64_t replayed_steps() const noexcept;
  /// Trace steps T (last captured iteration + 1) and captured iterations; 0 without a trace.
  std::int64_t trace_steps() const noexcept;
  std::int64_t trace_points() const noexcept;
  /// The traced model's parameters (traced_model_parameters: the manifest's model.parameters, else its stages'
  /// elements summed); 0 without a trace.
  double trace_parameters() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

/// result.json's runs[].fidelity.
nlohmann::ordered_json to_json(const Fidelity& f);

}  // namespace edgc::engine
