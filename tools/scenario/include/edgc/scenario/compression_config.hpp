#pragma once
// The scenario's `compression` section → typed controller and sampler settings, shared by `replay` and
// `simulate` so both read the same keys with the same defaults (README "Scenario keys").
#include <string>
#include <vector>

#include "edgc/core/controller.hpp"
#include "edgc/core/gds.hpp"
#include "edgc/scenario/config.hpp"
#include "edgc/sim/whole_run.hpp"

namespace edgc::scenario {

struct CompressionSettings {
  core::ControllerConfig controller;  ///< stages and stage_shapes are left for the caller to fill in
  core::GdsConfig gds;
  double warmup_floor_fraction = 0.1;    ///< warm-up floor as a share of the run's iterations (assumed)
  double warmup_ceiling_fraction = 0.3;  ///< warm-up ceiling, same (assumed)
  /// compression.dac.measured: an `edgc live` measurements.json whose stage-0 T_com fit gives DAC's η and c when
  /// the fit is resolved (`simulate` falls back to its own fit when not); resolved against the scenario, "" = none.
  std::string dac_measured;
  bool r_max_given = false;  ///< compression.r_max was given (not its default of 128)
  /// compression.r_max was "auto": simulate sets it to the break-even rank (tools/engine/src/break_even.hpp); until
  /// then controller.cqm.r_max holds r_min as a stand-in so the other settings can be checked.
  bool r_max_auto = false;
  /// compression.apply_to: which gradients of a mixture of experts the policy's ranks compress (the other sync runs
  /// uncompressed); all for a dense model (simulate refuses another value there).
  sim::CompressedGradients apply_to = sim::CompressedGradients::kAll;
};

/// Reads compression.* (policy, estimator, window, alpha, beta, block_bytes, seed, r_min, r_max, step, quantum,
/// exponent, static_rank, selective_stages, signal, warmup.*, dac.*). compression.r_max may be "auto" only where
/// `r_max_auto_allowed` (simulate and the sweeps that run it). Throws ConfigError naming the scenario and key.
CompressionSettings read_compression(Scenario& sc, bool r_max_auto_allowed = false);

/// Sets controller.warmup's floor and ceiling in iterations from the fractions, for a run of `run_iterations`
/// (ConfigError on field compression.warmup unless 0 ≤ floor_fraction ≤ ceiling_fraction). When `warnings` is given
/// and `window_iters` (compression.window) exceeds the run, one line is added to it: the whole run is then one
/// partial warm-up window, no policy compresses anything, and every comparison with "none" reads 0 %.
void apply_warmup_bounds(core::WarmupConfig& warmup, double floor_fraction, double ceiling_fraction,
                         std::int64_t run_iterations, const std::string& where,
                         std::vector<std::string>* warnings = nullptr, std::int64_t window_iters = 0);

/// The items of a comma-separated list, empty ones dropped.
std::vector<std::string> split_list(const std::string& text);

/// The policies a run compares: "none" first (the baseline of every speedup), then those of the comma-separated
/// `list` in order, each once. Throws ConfigError naming `where` and `key` for an unknown policy.
std::vector<std::string> policies_with_baseline(const std::string& list, const std::string& where,
                                                const std::string& key);

}  // namespace edgc::scenario
