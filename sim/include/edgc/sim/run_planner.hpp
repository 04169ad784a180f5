#pragma once
// The rank schedule of a whole run: a compression controller run over the run window by window, fed by an
// entropy curve of the simulated stages (sim/README.md, "Whole runs"). What the controller decides becomes a
// RunSchedule of per-stage PowerSGD ranks that whole_run.hpp turns into times.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "edgc/core/controller.hpp"
#include "edgc/core/gds.hpp"
#include "edgc/sim/whole_run.hpp"

namespace edgc::sim {

/// Entropy (and loss) of simulated pipeline stage `stage` at run fraction f ∈ [0, 1]: a recorded trace mapped
/// onto the run, or a synthetic curve (entropy_curves.hpp).
class EntropyCurve {
 public:
  virtual ~EntropyCurve() = default;
  virtual core::StageObservation at(int stage, double fraction) const = 0;
  virtual std::optional<double> loss(double fraction) const = 0;
  /// What the curve knows of the backward messages simulated stage `stage` (≥ 1) sends; nothing by default (only a
  /// trace with stage-boundary gradients knows it).
  virtual std::optional<core::StageObservation> boundary(int /*stage*/, double /*fraction*/) const {
    return std::nullopt;
  }
  /// Whether boundary() ever answers.
  virtual bool has_boundaries() const { return false; }
};

/// One policy's run: what the controller decided, as a schedule of per-stage ranks.
struct PolicyRun {
  std::string policy;
  RunSchedule schedule;
  std::optional<std::int64_t> warmup_end;        ///< first iteration with compression, if any
  std::map<std::string, std::int64_t> bindings;  ///< windows × stages per rank binding after warm-up
  std::int64_t windows = 0;
  std::int64_t sampled_iterations = 0;             ///< iterations the GDS measured entropy at (every round(1/α)-th)
  std::int64_t sampled_compressed_iterations = 0;  ///< of them, those where a stage's DP sync used PowerSGD
};

/// Runs `controller` (policy, stages and stage_shapes set) over `iterations` iterations in windows of
/// gds.window_iters: a window's observation averages the curve at the GDS's sampled iterations (every
/// round(1/α)-th); its decision holds for the next window. Rank 0 and warm-up windows are uncompressed.
/// `where` (the scenario file) prefixes configuration errors.
/// Bounds on what plan_policy() visits (a few seconds of planning at most); beyond them it refuses the run.
inline constexpr std::int64_t kMaxPlannedWindows = 10'000'000;
inline constexpr std::int64_t kMaxPlannedSamples = 200'000'000;

PolicyRun plan_policy(const core::ControllerConfig& controller, const core::GdsConfig& gds, std::int64_t iterations,
                      const EntropyCurve& curve, const std::string& where = "simulate");

/// What the controller observes of `curve` window by window over `iterations` iterations of `stages` stages (the
/// means at the GDS's sampled iterations, as plan_policy() takes them). It does not depend on the controller's
/// decisions, so one observation serves every policy, and every run with the same curve, length, window and α.
/// Throws ConfigError (naming `where`) beyond the planning bounds above.
std::vector<core::WindowObservation> observe_windows(const core::GdsConfig& gds, int stages, std::int64_t iterations,
                                                     const EntropyCurve& curve, const std::string& where = "simulate");

/// plan_policy() over windows already observed (observe_windows() with the controller's stage count): the same run.
PolicyRun plan_policy(const core::ControllerConfig& controller, const std::vector<core::WindowObservation>& observed,
                      const std::string& where = "simulate");

/// The trace stage each simulated stage reads: the one that holds the middle of the simulated stage's share of
/// the parameters (both sides split by parameter count). `trace_elements`: gradient elements per trace stage;
/// `stage_parameters`: parameters per simulated stage.
std::vector<int> map_stages(const std::vector<std::int64_t>& trace_elements,
                            const std::vector<double>& stage_parameters);

}  // namespace edgc::sim
