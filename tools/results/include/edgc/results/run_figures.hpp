#pragma once
// Pieces of result.json (schema edgc.result/1) that `simulate` and `live` both write, built one way.
#include <nlohmann/json.hpp>

#include "edgc/sim/spec.hpp"
#include "edgc/sim/whole_run.hpp"

namespace edgc::results {

/// 1 − x / base: the fraction by which x is below the baseline (0 when the baseline is not positive).
double reduction(double base, double x);

/// An iteration's breakdown: compute, TP communication, bubble, exposed DP communication and exposed compression
/// (they sum to the iteration time), plus all compression compute; seconds.
nlohmann::ordered_json breakdown_json(const sim::IterationBreakdown& b);

}  // namespace edgc::results
