#pragma once
// `edgc trace inspect` as a function: a trace directory in, its manifest and the statistics of every captured
// tensor and stage-boundary gradient at every captured iteration out (written by edgc/results/trace_inspection.hpp).
#include <string>

#include "edgc/results/trace_inspection.hpp"

namespace edgc::engine {

/// Reads every captured iteration of the trace in `dir` once. Throws TraceFormatError (an InputError) naming the
/// file for a malformed or truncated trace, before anything could be printed.
results::TraceInspection inspect_trace(const std::string& dir);

}  // namespace edgc::engine
