#pragma once
// `edgc trace inspect`'s report: a trace's manifest and the statistics of every captured tensor and stage-boundary
// gradient at every captured iteration (engine::inspect_trace reads them), as one JSON document (schema
// edgc.trace_inspect/1) or console tables.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "edgc/traces/manifest.hpp"
#include "edgc/traces/stats.hpp"

namespace edgc::results {

inline constexpr const char* kTraceInspectSchema = "edgc.trace_inspect/1";

struct TraceInspection {
  std::string trace;  ///< the trace directory
  traces::Manifest manifest;
  std::vector<std::vector<traces::TensorStats>> stats;           ///< [iteration][tensor]
  std::vector<std::vector<traces::TensorStats>> boundary_stats;  ///< [iteration][boundary]
  std::vector<std::int64_t> captured;                            ///< values captured per tensor (last iteration)
};

/// The JSON document: manifest, tensors, boundaries, and the statistics keyed by iteration and name.
nlohmann::ordered_json to_json(const TraceInspection& inspection);

/// The console tables: what the trace holds, its tensors and boundaries, the per-stage trend and per-tensor
/// statistics at `rows` evenly spaced iterations (0: all of them).
void print_trace_inspection(std::ostream& os, const TraceInspection& inspection, std::size_t rows);

/// A count (n ≥ 0) with thousands separators: 1234567 → "1,234,567".
std::string with_commas(std::int64_t n);

}  // namespace edgc::results
