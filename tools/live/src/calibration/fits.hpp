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

/// T_com(r) of `stage` from its points (results::TcomFit): eta by ordinary least squares of the P + Q time on r
/// (of the whole comm_s when a point lacks the split), its standard error and significance, c = mean(comm_s −
/// eta·r). One point: c = its time, r2 = 1; none: zeros.
results::TcomFit fit_line(int stage, const std::vector<results::TcomPoint>& pts);

}  // namespace edgc::live
