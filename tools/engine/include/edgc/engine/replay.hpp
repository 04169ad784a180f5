#pragma once
// `edgc replay`: the EDGC controller run over a recorded gradient trace. Per window and pipeline stage it
// measures both entropy estimators and the kurtosis on GDS-sampled gradients, lets the controller choose ranks,
// and measures what compressed averaging with error feedback really does to the trace's full matrices on D
// emulated data-parallel ranks. A shadow controller fed by full sampling (α = β = 1) gives the agreement figure.
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "edgc/core/controller.hpp"
#include "edgc/core/gds.hpp"
#include "edgc/engine/whole_run_plan.hpp"
#include "edgc/results/replay_report.hpp"
#include "edgc/traces/reader.hpp"

namespace edgc::engine {

/// Most emulated data-parallel ranks replay runs (replay.world_size). Each is an OS thread with its own PowerSgd
/// (error-feedback buffers, P and Q) and its own copy of the compressible gradients, and every replayed iteration
/// runs world_size PowerSGD steps on this machine's cores: at this size the bundled trace (250 iterations of
/// 241,024 values) replays in about 47 s and 630 MB on two cores (1.3 s at the default 4; time and memory grow
/// linearly). More ranks would only average the perturbation noise further.
inline constexpr int kMaxEmulatedRanks = 256;
/// Most histogram bins per σ (replay.bins_per_sigma, entropy.bins_per_sigma): the histogram spans ±64 σ, so this
/// is 524,288 bins per stage, already finer than the values a window samples can fill.
inline constexpr double kMaxBinsPerSigma = 4096.0;

/// Throws ConfigError(where, key, …) unless 0 < bins_per_sigma <= kMaxBinsPerSigma.
void check_bins_per_sigma(double bins_per_sigma, const std::string& where, const std::string& key);

struct ReplayOptions {
  std::string trace_dir;
  std::string where = "replay";       ///< the scenario file (or how the settings were given), named in errors
  nlohmann::ordered_json scenario;    ///< the scenario as read (file + overrides), recorded in replay.json
  core::ControllerConfig controller;  ///< stage count and CQM shapes are filled in from the trace
  core::GdsConfig gds;
  double warmup_floor_fraction = 0.1;    ///< warm-up floor as a share of the trace's iterations (assumed)
  double warmup_ceiling_fraction = 0.3;  ///< warm-up ceiling, same (assumed)
  /// False when compression.r_max is the built-in default (no scenario or --set gave it): then an r_max above the
  /// trace's matrices is lowered to fit them (with r_min and step when needed), with a note, instead of refused.
  bool r_max_given = true;
  int world_size = 4;         ///< emulated data-parallel ranks
  double perturbation = 0.1;  ///< rank d's gradient = trace gradient + perturbation·σ·noise_d
  /// Kernels of the entropy measurement and of the emulated ranks' PowerSGD ("cpu", "cuda", …). With "cuda" every
  /// captured iteration's tensors are uploaded to the GPU once and measured there, and each emulated rank runs
  /// PowerSgd on its own device copy (kernels::DataParallelEmulator).
  std::string backend = "cpu";
  double bins_per_sigma = 8.0;  ///< histogram bin width = σ(first sample) / bins_per_sigma
  bool compare_full = true;     ///< run the full-sampling shadow controller
  std::uint64_t seed = 0;       ///< perturbation noise and PowerSGD's initial Q
  /// Pipeline stages the controller decides for: 0 = the trace's; k ≥ 1 merges the trace's S stages into k
  /// (trace stage s → s·k / S, so k must not exceed S), as `edgc live` does on fewer ranks than stages.
  int stages = 0;
  /// Replay only the first this-many captured iterations (0 = all); the warm-up bounds scale to them.
  std::int64_t max_iterations = 0;
  /// When set, called for every captured iteration (after the controller's window bookkeeping) with the rank in
  /// force per stage (0 = uncompressed) and the decision in force (its pipeline_rank(stage): edgc-pp), INSTEAD of the
  /// in-process emulation: `edgc live` does the real compressed all-reduces and boundary messages here. Relative
  /// errors, wire counts and boundary errors are then left empty.
  std::function<void(const traces::IterationData&, std::span<const int> stage_ranks,
                     const core::WindowDecision& in_force)>
      on_iteration;
};

/// The windows replay measures (typed in edgc::results: replay.json and the console are written from them).
using BoundaryWindow = results::ReplayBoundaryWindow;
using StageWindow = results::ReplayStageWindow;
using WindowRow = results::ReplayWindow;

struct ReplayResult {
  std::vector<WindowRow> windows;
  std::vector<std::pair<std::int64_t, std::int64_t>> stage_shapes;
  std::vector<int> compressed_tensors_per_stage;
  std::vector<int> tensor_stage;  ///< per trace tensor: the (merged) stage it belongs to
  /// Per (merged) stage: the trace boundary whose messages it sends backward (index into the manifest's
  /// boundaries), or -1 (stage 0, a boundary merged away, or a version 1 trace).
  std::vector<int> stage_boundary;
  std::vector<std::string> boundary_names;                             ///< per manifest boundary
  std::vector<std::pair<std::int64_t, std::int64_t>> boundary_shapes;  ///< per manifest boundary: tokens × hidden
  std::optional<std::int64_t> warmup_end;
  std::optional<std::int64_t> full_warmup_end;
  /// Degenerate-trace warnings (trace_health.hpp: all NaN/Inf, all zero, one captured iteration), for stderr.
  std::vector<std::string> warnings;
  /// What replay adapted on its own (a default r_max lowered to the trace's matrices), for stderr and replay.json.
  std::vector<std::string> notes;
};

/// Runs the replay. Throws InputError subclasses for bad traces or configs; a world_size beyond kMaxEmulatedRanks,
/// or whose emulation would need more than half this machine's memory, is a ConfigError naming replay.world_size
/// before any iteration is read.
ReplayResult run_replay(ReplayOptions& options);

/// What `edgc replay` is given: a trace and/or a scenario (its compression, replay and trace sections), overrides.
struct ReplayRequest {
  std::string trace;              ///< trace directory; empty: the scenario's trace.path
  std::string scenario;           ///< scenario file; empty: the built-in defaults and `sets`
  std::vector<std::string> sets;  ///< "dotted.key=value" overrides, applied in order
  std::string backend;            ///< replay.backend given on the command line (--backend); empty: the scenario's
};

/// The typed options of a request, everything read and checked before any work: throws ConfigError naming the
/// scenario and key (a key or section replay does not read, a bad value, a backend this program cannot run) or
/// UsageError (no trace given).
ReplayOptions read_replay_options(const ReplayRequest& request);

/// The replay's report (replay.json, windows.csv, the console summary): the settings as run and `result`'s windows
/// with the per-stage and whole-replay summaries.
results::ReplayReport replay_report(const ReplayOptions& options, ReplayResult result);

/// Throws ConfigError(where, field, "<backend>: <why>") when kernels::make_backend(backend) cannot work in this
/// program on this machine — "cuda" in a binary without the CUDA backend (plain edgc; edgc-nccl links it) or on a
/// machine without a usable GPU, an unknown name — so a bad --backend fails before any work, in one line that
/// names the option (`field`: "--backend", or the scenario key it came from).
void require_backend(const std::string& backend, const std::string& where, const std::string& field);

/// Entropy of every captured iteration of a trace, per pipeline stage, GDS-sampled at rate β (the iteration
/// sampling α is left to the reader of the curve: `simulate` samples it at its own simulated iterations).
/// Reads every captured iteration of `trace_dir` once. `gds.window_iters` and `gds.alpha` are ignored.
TraceEntropy measure_trace_entropy(const std::string& trace_dir, const core::GdsConfig& gds, double bins_per_sigma,
                                   const std::string& backend = "cpu");

}  // namespace edgc::engine
