#pragma once
// The least-squares fits of live mode's measurements: the ring alpha-beta model of the calibration and the
// line T_com(r) = eta * r + c of the probe.
#include <utility>
#include <vector>

#include "edgc/results/measurements.hpp"

namespace edgc::live {

/// Weighted least squares of t = a + b·S over the calibration rows, weights 1/t² (relative error, so that the
/// small messages that fix the latency count as much as the large ones), with a, b ≥ 0. Returns {a, b}.
std::pair<double, double> fit_affine_relative(const std::vector<results::Calibration::Row>& rows);

/// The calibration as SimGrid's calibrated network profile prices it: a D-rank ring all-reduce of S bytes takes
/// 2(D − 1)·latency_s + 2(D − 1)/D · S / (bandwidth_Bps · efficiency(S/D)), the efficiency interpolated
/// log-linearly between points keyed by the ring's chunk S/D (sim::efficiency_at). latency_s is the α of the
/// affine fit, capped at half of every row's time / 2(D − 1) so that every row keeps a bandwidth part;
/// bandwidth_Bps is the fastest row's bandwidth part (so every efficiency is ≤ 1), and each row's efficiency makes
/// the formula give its measured time exactly. The rows: the probe's in-step rows (step_rows, sorted by size) over
/// their size range, the isolated calibration rows outside it. Needs D ≥ 2 and at least one row.
struct RingProfile {
  double latency_s = 0.0;
  double bandwidth_Bps = 0.0;
  std::vector<std::pair<double, double> > points;  ///< (chunk bytes S/D, efficiency in (0, 1]), increasing bytes
};
RingProfile ring_profile(const results::Calibration& cal);

/// T_com(r) of `stage` from its points (results::TcomFit): eta by ordinary least squares of the P + Q time on r
/// (of the whole comm_s when a point lacks the split), its standard error and significance, c = mean(comm_s −
/// eta·r). One point: c = its time, r2 = 1; none: zeros.
results::TcomFit fit_line(int stage, const std::vector<results::TcomPoint>& pts);

}  // namespace edgc::live
