// Trace entropy stored in a run cache (trace_entropy_cache.hpp).
#include "trace_entropy_cache.hpp"

#include <filesystem>
#include <optional>
#include <sstream>

#include "cache_entry.hpp"
#include "edgc/core/atomic_file.hpp"
#include "edgc/engine/replay.hpp"

namespace edgc::engine {
namespace {

using nlohmann::ordered_json;
namespace fs = std::filesystem;

ordered_json optional_json(const std::optional<double>& v) { return v ? ordered_json(*v) : ordered_json(nullptr); }
std::optional<double> optional_from(const nlohmann::json& j) {
  return j.is_null() ? std::nullopt : std::optional<double>(j.get<double>());
}

ordered_json observations_to_json(const std::vector<core::StageObservation>& v) {
  ordered_json out = ordered_json::array();
  for (const core::StageObservation& s : v)
    out.push_back({optional_json(s.entropy_gaussian), optional_json(s.entropy_histogram),
                   optional_json(s.excess_kurtosis), s.elements});
  return out;
}

std::vector<core::StageObservation> observations_from_json(const nlohmann::json& j) {
  std::vector<core::StageObservation> out;
  for (const auto& s : j)
    out.push_back(
        {optional_from(s.at(0)), optional_from(s.at(1)), optional_from(s.at(2)), s.at(3).get<std::int64_t>()});
  return out;
}

// The cache entry's layout; an entry of an older layout (without "boundary_stages") is measured again.
ordered_json trace_entropy_to_json(const TraceEntropy& t) {
  ordered_json points = ordered_json::array();
  for (const TraceEntropyPoint& p : t.points) {
    points.push_back({{"iteration", p.iteration},
                      {"loss", optional_json(p.loss)},
                      {"stages", observations_to_json(p.stages)},
                      {"boundaries", observations_to_json(p.boundaries)}});
  }
  return {{"path", t.path},
          {"steps", t.steps},
          {"stage_elements", t.stage_elements},
          {"boundary_stages", t.boundary_stages},
          {"points", points}};
}

TraceEntropy trace_entropy_from_json(const nlohmann::json& j) {
  TraceEntropy t;
  t.path = j.at("path").get<std::string>();
  t.steps = j.at("steps").get<std::int64_t>();
  t.stage_elements = j.at("stage_elements").get<std::vector<std::int64_t>>();
  t.boundary_stages = j.at("boundary_stages").get<std::vector<int>>();
  for (const auto& p : j.at("points")) {
    TraceEntropyPoint q;
    q.iteration = p.at("iteration").get<std::int64_t>();
    q.loss = optional_from(p.at("loss"));
    q.stages = observations_from_json(p.at("stages"));
    q.boundaries = observations_from_json(p.at("boundaries"));
    if (q.boundaries.size() != t.boundary_stages.size())
      throw nlohmann::json::other_error::create(0, "layout", nullptr);
    t.points.push_back(std::move(q));
  }
  return t;
}

}  // namespace

// measure_trace_entropy(), or its stored result for the same trace and sampling settings in `cache_dir`.
TraceEntropy cached_trace_entropy(const std::string& dir, const core::GdsConfig& gds, double bins,
                                  const std::string& backend, const std::string& cache_dir) {
  if (cache_dir.empty()) return measure_trace_entropy(dir, gds, bins, backend);
  std::ostringstream key;
  key.precision(17);
  key << fs::absolute(dir).lexically_normal().string() << '|' << gds.beta << '|' << gds.block_bytes << '|' << gds.seed
      << '|' << bins << '|' << backend;
  const fs::path entry = fs::path(cache_dir) / ("entropy-" + hex_digest(key.str()) + ".json");
  const auto stored = [&]() -> std::optional<TraceEntropy> {
    if (const auto j = read_json_if_present(entry, true)) {
      try {
        TraceEntropy t = trace_entropy_from_json(*j);
        t.path = dir;
        return t;
      } catch (const nlohmann::json::exception&) {
        // an entry of another layout: measure again and replace it
      }
    }
    return std::nullopt;
  };
  if (auto t = stored()) return std::move(*t);
  // Sweep workers starting on points with the same β measure it once: the others wait for the entry.
  EntryClaims claim({entry});
  if (claim.mine().empty()) {
    EntryClaims::wait_for(entry);
    if (auto t = stored()) return std::move(*t);
  }
  TraceEntropy t = measure_trace_entropy(dir, gds, bins, backend);
  write_file_atomic(entry, trace_entropy_to_json(t).dump() + "\n");
  return t;
}

}  // namespace edgc::engine
