#pragma once
// What a live run's calibration becomes for the simulator, and how several runs are pooled: `edgc live` writes its
// calibration as SimGrid's calibrated network profile (ring_profile), and `edgc validate` pools repeated runs
// (several --measured or --calibration directories of one configuration) by medians.
#include <string>
#include <utility>
#include <vector>

#include "edgc/results/measurements.hpp"
#include "edgc/scenario/model_config.hpp"
#include "edgc/sim/spec.hpp"

namespace edgc::engine {

/// The calibration as SimGrid's calibrated network profile prices it: a D-rank ring all-reduce of S bytes takes
/// 2(D − 1)·latency_s + 2(D − 1)/D · S / (bandwidth_Bps · efficiency(S/D)), the efficiency interpolated
/// log-linearly between points keyed by the ring's chunk S/D (sim::efficiency_at). latency_s is the α of the
/// affine fit, capped at half of every row's time / 2(D − 1) so that every row keeps a bandwidth part;
/// bandwidth_Bps is the fastest row's bandwidth part (so every efficiency is ≤ 1), and each row's efficiency makes
/// the formula give its measured time exactly. The rows: the probe's in-step rows (step_rows) over their size range,
/// the isolated calibration rows outside it. Needs D ≥ 2 and at least one row with a time > 0.
struct RingProfile {
  double latency_s = 0.0;
  double bandwidth_Bps = 0.0;
  std::vector<std::pair<double, double>> points;  ///< (chunk bytes S/D, efficiency in (0, 1]), increasing bytes
};
RingProfile ring_profile(const results::Calibration& cal);

/// The calibrated network profile of `p` for both link classes, the ring forced (MPI's algorithms are not NCCL's).
sim::NetworkProfile network_of(const RingProfile& p);

/// Repeated runs of one configuration pooled: per size the median time over the runs that timed it (rows and
/// step rows), the median α and β. Throws ConfigError naming `paths[i]` and "calibration.ranks" when the group
/// sizes differ. `cals` and `paths` have the same length ≥ 1.
results::Calibration pool_calibrations(const std::vector<results::Calibration>& cals,
                                       const std::vector<std::string>& paths);

/// Per (m, n, r, count) and per copy size the median over the profiles that have it.
scenario::KernelProfile pool_kernel_profiles(const std::vector<scenario::KernelProfile>& profiles);

/// Repeated live runs of one configuration as one: the first run's layout and calibration fields, each policy's
/// steps of every run one after another (a policy's pattern statistics then pool every run's steps), the
/// calibration pooled. Throws ConfigError naming `paths[i]` and the field where a run differs from the first (world
/// size, layout, placement's stages and replicas, policies, element size).
results::Measurements pool_measurements(const std::vector<results::Measurements>& runs,
                                        const std::vector<std::string>& paths);

}  // namespace edgc::engine
