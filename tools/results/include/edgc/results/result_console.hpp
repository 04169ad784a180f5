#pragma once
// The console reporter of a result document: what `edgc simulate` prints.
#include <ostream>

#include "edgc/results/result_document.hpp"

namespace edgc::results {

/// A setup line, the per-policy summary table (times, reductions, speedup, GPU-hours, cost, warm-up end) and the
/// per-iteration breakdown table. Needs the cluster, parallelism, run and simulation counts a `simulate` result
/// has; throws InternalError for a document without them.
void print_result_summary(std::ostream& os, const ResultDocument& result);

}  // namespace edgc::results
