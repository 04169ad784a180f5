#pragma once
// Private to the engine: the entropy measured on a trace (measure_trace_entropy), stored in a run cache
// (SimulateRequest::cache_dir) keyed by the trace and the sampling settings, so that a sweep's points measure it once.
#include <string>

#include "edgc/core/gds.hpp"
#include "edgc/engine/whole_run_plan.hpp"

namespace edgc::engine {

/// measure_trace_entropy(dir, gds, bins, backend), or its stored result for the same trace and sampling settings in
/// `cache_dir` (empty: measured, not stored). Throws what measure_trace_entropy throws.
TraceEntropy cached_trace_entropy(const std::string& dir, const core::GdsConfig& gds, double bins,
                                  const std::string& backend, const std::string& cache_dir);

}  // namespace edgc::engine
