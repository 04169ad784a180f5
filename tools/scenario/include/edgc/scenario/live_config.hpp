#pragma once
// The scenario's `live` section (`edgc live`: the policies run on real MPI ranks, with the calibration and T_com
// probe measured first) read into typed settings (README "Scenario keys"). The command line may override the
// backend, the communicator and verify; the caller checks the names it ends up with.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "edgc/scenario/config.hpp"

namespace edgc::scenario {

struct LiveSettings {
  int pp = 0;                       ///< live.pp: pipeline stages (≥ 0; 0 = automatic)
  std::int64_t max_iterations = 0;  ///< live.max_iterations: captured iterations replayed per policy (≥ 0; 0 = all)
  double perturbation = 0.1;        ///< live.perturbation: replica noise, × std of the gradient (finite, ≥ 0)
  std::uint64_t seed = 0;           ///< live.seed
  std::string backend = "cpu";      ///< live.backend: PowerSGD's kernels (the caller checks cpu | cuda)
  std::string comm = "mpi";         ///< live.comm: the communicator (the caller checks mpi | nccl)
  double bins_per_sigma = 8.0;      ///< live.bins_per_sigma: histogram bins per standard deviation
  std::optional<bool> verify;       ///< live.verify, when given
  /// live.calibration.{min_bytes, max_bytes}: the all-reduce sizes of the calibration, bytes
  /// (4 ≤ min ≤ max ≤ 2 GiB); live.calibration.repeats: timed all-reduces per size (1 to 10,000).
  std::int64_t calibration_min_bytes = 4;
  std::int64_t calibration_max_bytes = std::int64_t{4} << 20;
  int calibration_repeats = 5;
  /// live.probe.ranks ("4,8,12": PowerSGD ranks ≥ 1, sorted, each once), when given; live.probe.repeats: timed
  /// steps per probed rank (1 to 10,000).
  std::optional<std::vector<int>> probe_ranks;
  int probe_repeats = 5;
};

/// Reads live.*; `check_bins(bins_per_sigma, key)` is called as soon as live.bins_per_sigma is read (so a bad value
/// is refused before the keys after it). Throws ConfigError naming the scenario and key.
LiveSettings read_live_settings(Scenario& sc,
                                const std::function<void(double bins_per_sigma, const std::string& key)>& check_bins);

}  // namespace edgc::scenario
