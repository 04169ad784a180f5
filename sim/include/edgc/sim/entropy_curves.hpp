#pragma once
// The two entropy curves a whole run can be planned on (sim::EntropyCurve, run_planner.hpp): a synthetic decay and
// a recorded trace's measured entropy mapped onto the run. Measuring a trace is the engine's job (it reads trace
// files with the kernels); what the curve does with the measurements lives here, beside the planner that reads it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "edgc/core/controller.hpp"
#include "edgc/sim/run_planner.hpp"

namespace edgc::sim {

/// H(f) = end + (start − end)·exp(−f / decay_fraction) + stage·stage_step_nats + noise, the same value for both
/// estimators; noise is uniform with standard deviation noise_nats, a fixed function of (seed, stage, f).
struct SyntheticEntropy {
  double start_nats = -5.0;
  double end_nats = -7.0;
  double decay_fraction = 0.1;
  double stage_step_nats = 0.0;
  double noise_nats = 0.0;
  std::uint64_t seed = 0;
};

class SyntheticCurve final : public EntropyCurve {
 public:
  /// Throws ConfigError naming `where` and the entropy.synthetic key unless decay_fraction > 0 and noise_nats ≥ 0.
  SyntheticCurve(const SyntheticEntropy& s, const std::string& where);
  core::StageObservation at(int stage, double fraction) const override;
  std::optional<double> loss(double) const override { return std::nullopt; }
  const SyntheticEntropy& settings() const noexcept { return s_; }

 private:
  SyntheticEntropy s_;
};

/// Entropy of every captured iteration of a trace, per trace pipeline stage.
struct TraceEntropyPoint {
  std::int64_t iteration = 0;
  std::optional<double> loss;
  std::vector<core::StageObservation> stages;
  std::vector<core::StageObservation> boundaries;  ///< per trace boundary (manifest order; format 1.1 traces)
};
struct TraceEntropy {
  std::string path;
  std::int64_t steps = 0;                    ///< last captured iteration + 1: the trace's training length
  std::vector<std::int64_t> stage_elements;  ///< gradient elements per trace stage (all tensors)
  std::vector<TraceEntropyPoint> points;     ///< one per captured iteration, in order
  std::vector<int> boundary_stages;          ///< per trace boundary: the trace stage that sends it (≥ 1)
};

/// A trace's entropy curve mapped onto the simulated run (scenarios/SOURCES.md §14): the iteration axis is scaled
/// so that the trace's training length spans the whole run (run fraction f ↔ trace iteration f·steps, values
/// interpolated linearly between captured iterations and held outside them), and simulated stage s takes the trace
/// stage that holds the middle of s's share of the parameters (map_stages). A simulated stage s ≥ 1 sends the
/// boundary messages of the trace's boundary nearest to its mapped trace stage (the trace boundary sent by that
/// stage, else the nearest recorded one).
class TraceCurve final : public EntropyCurve {
 public:
  /// `stage_parameters`: the simulated stages' parameter counts. Throws TraceFormatError for a trace without
  /// captured iterations or training length.
  TraceCurve(TraceEntropy trace, const std::vector<double>& stage_parameters);
  core::StageObservation at(int stage, double fraction) const override;
  std::optional<double> loss(double fraction) const override;
  std::optional<core::StageObservation> boundary(int stage, double fraction) const override;
  bool has_boundaries() const override { return !t_.boundary_stages.empty(); }
  const TraceEntropy& trace() const noexcept { return t_; }
  const std::vector<int>& stage_map() const noexcept { return map_; }

 private:
  struct Bracket {
    const TraceEntropyPoint* lo;
    const TraceEntropyPoint* hi;
    double weight;
  };
  // The captured points around trace iteration f·steps and the interpolation weight between them.
  Bracket bracket(double f) const;

  TraceEntropy t_;
  std::vector<int> map_;
};

}  // namespace edgc::sim
