#pragma once
// The scenario's `replay` section (`edgc replay`: a captured trace replayed through the compression policies on
// emulated data-parallel ranks) read into typed settings (README "Scenario keys"). The engine checks the values
// against what this machine can run.
#include <cstdint>
#include <functional>
#include <string>

#include "edgc/scenario/config.hpp"

namespace edgc::scenario {

struct ReplaySettings {
  int world_size = 4;           ///< replay.world_size: emulated data-parallel ranks
  double perturbation = 0.1;    ///< replay.perturbation: rank d's gradient = trace gradient + perturbation·σ·noise_d
  std::string backend = "cpu";  ///< replay.backend: where PowerSGD runs ("cpu" | "cuda")
  double bins_per_sigma = 8.0;  ///< replay.bins_per_sigma: histogram bin width = σ(first sample) / bins_per_sigma
  bool compare_full = true;     ///< replay.compare_full: run the full-sampling shadow controller
  std::uint64_t seed = 0;       ///< replay.seed: perturbation noise and PowerSGD's initial Q
  int stages = 0;               ///< replay.stages: pipeline stages (≥ 0; 0 = the trace's)
};

/// Reads replay.*; `check_bins(bins_per_sigma, key)` is called as soon as replay.bins_per_sigma is read (so a bad
/// value is refused before the keys after it). Throws ConfigError naming the scenario and key.
ReplaySettings read_replay_settings(
    Scenario& sc, const std::function<void(double bins_per_sigma, const std::string& key)>& check_bins);

}  // namespace edgc::scenario
