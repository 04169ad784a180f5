#include "edgc/engine/trace_inspection.hpp"

#include <utility>
#include <vector>

#include "edgc/traces/reader.hpp"
#include "edgc/traces/stats.hpp"

namespace edgc::engine {

results::TraceInspection inspect_trace(const std::string& dir) {
  traces::TraceReader reader(dir);
  results::TraceInspection r;
  r.trace = dir;
  r.manifest = reader.manifest();
  traces::IterationData data;
  r.captured.assign(r.manifest.tensors.size(), 0);
  while (reader.next(data)) {
    std::vector<traces::TensorStats> row;
    row.reserve(data.tensors.size());
    for (std::size_t k = 0; k < data.tensors.size(); ++k) {
      row.push_back(traces::compute_stats(data.tensors[k].values));
      r.captured[k] = static_cast<std::int64_t>(data.tensors[k].values.size());
    }
    r.stats.push_back(std::move(row));
    std::vector<traces::TensorStats> brow;
    for (const auto& b : data.boundaries) brow.push_back(traces::compute_stats(b));
    r.boundary_stats.push_back(std::move(brow));
  }
  return r;
}

}  // namespace edgc::engine
