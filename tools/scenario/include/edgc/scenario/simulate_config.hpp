#pragma once
// The scenario sections `simulate` reads besides cluster, network, model and compression: variability, run,
// simulate, entropy and fidelity, read into typed settings (README "Scenario keys"). Every reader names the
// scenario file and the dotted key in its ConfigError, and marks the keys it reads as known (Scenario::
// reject_unknown), so the caller decides when the unknown ones are refused.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "edgc/scenario/config.hpp"
#include "edgc/sim/entropy_curves.hpp"
#include "edgc/sim/variability.hpp"

namespace edgc::scenario {

/// variability.* (compute_jitter_cv, straggler_probability, straggler_slowdown, seed; defaults: none of it),
/// checked by sim::validate.
sim::ComputeVariability read_variability(Scenario& sc);

/// run.iterations: training iterations of the whole run (default 100,000; ≥ 1).
std::int64_t read_run_iterations(Scenario& sc);

/// The `simulate` section.
struct SimulateSettings {
  /// simulate.composition: "auto" (compose stage-separable layouts from uniform plans, the default) | "exact".
  bool compose_allowed = true;
  /// simulate.policies: the comma-separated policies to compare ("" = the caller's default).
  std::string policies;
};
SimulateSettings read_simulate_settings(Scenario& sc);

/// Where the entropy the policies decide from comes from.
struct EntropySourceSettings {
  std::string trace_path;   ///< trace.path, resolved (read_trace_path); "" = none
  bool from_trace = false;  ///< entropy.source: "trace" (the default with a trace.path) | "synthetic"
  /// With a trace: entropy.bins_per_sigma (histogram bins per standard deviation, default 8, > 0) and
  /// entropy.backend (where the trace's entropy is measured, default "cpu"); not read otherwise.
  double bins_per_sigma = 8.0;
  std::string backend = "cpu";
};
/// Reads trace.path, entropy.source and, for a trace source, entropy.bins_per_sigma and entropy.backend.
EntropySourceSettings read_entropy_source(Scenario& sc);

/// entropy.synthetic.* (start_nats, end_nats, decay_fraction, stage_step_nats, noise_nats, seed), defaults those of
/// sim::SyntheticEntropy; checked by sim::SyntheticCurve.
sim::SyntheticEntropy read_synthetic_entropy(Scenario& sc);

/// The `fidelity` section: how the rank schedules' gradient error is measured.
struct FidelitySettings {
  bool measure = true;              ///< fidelity.measure: replay the ranks on the trace's gradients when there is one
  std::string backend = "cpu";      ///< fidelity.backend: where the replays run
  std::optional<double> max_error;  ///< fidelity.max_error: the gradient-error budget (a relative error, > 0)
  /// fidelity.convergence: convergence records (results/convergence.hpp) to show beside the gradient error where
  /// they match, as paths resolved against the scenario's directory; empty when absent.
  std::vector<std::string> convergence;
  /// trace.error_path: the trace whose gradients the rank schedules are replayed on, resolved against the scenario's
  /// directory and lexically normal like trace.path; "" (the key absent) = trace.path's trace serves both sides. Lets
  /// the entropy come from a sampled trace of a whole model and the error from fully captured matrices of realistic
  /// size. Checked as a trace by the caller (simulate reads its manifest up front).
  std::string trace_path;
};
/// `check_backend(backend, key)` is called as soon as fidelity.backend is read (so an unusable backend is refused
/// before a bad max_error). Also reads trace.error_path (ConfigError when it is an empty string).
FidelitySettings read_fidelity_settings(
    Scenario& sc, const std::function<void(const std::string& backend, const std::string& key)>& check_backend);

}  // namespace edgc::scenario
