// read_live_options: the scenario's live.* keys (and trace, compression) into LiveOptions. Needs no MPI, so a
// build without MPI still rejects bad live settings the same way.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/engine/replay.hpp"
#include "edgc/live/live.hpp"
#include "edgc/scenario/compression_config.hpp"
#include "edgc/scenario/config.hpp"

namespace edgc::live {

namespace {

// "4,8,12" → {4, 8, 12}, sorted and without repeats; throws ConfigError naming `key` for anything but ranks >= 1.
std::vector<int> parse_rank_list(const std::string& text, const std::string& where, const std::string& key) {
  std::vector<int> out;
  for (const std::string& item : scenario::split_list(text)) {
    std::size_t used = 0;
    int r = -1;
    try {
      r = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || r < 1)
      throw ConfigError(where, key, "expected a comma-separated list of ranks >= 1, got '" + text + "'");
    out.push_back(r);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// live.calibration.* and live.probe.*: the sizes and repeats of the measurements taken before the policy runs.
void read_measurement_options(scenario::Scenario& sc, LiveOptions& o) {
  const std::string w = sc.where();
  o.calibration_min_bytes = sc.integer("live.calibration.min_bytes", 4);
  o.calibration_max_bytes = sc.integer("live.calibration.max_bytes", std::int64_t{4} << 20);
  if (o.calibration_min_bytes < 4 || o.calibration_max_bytes < o.calibration_min_bytes ||
      o.calibration_max_bytes > (std::int64_t{1} << 31))
    throw ConfigError(w, "live.calibration.max_bytes", "need 4 <= min_bytes <= max_bytes <= 2 GiB");
  // Each repeat is one more timed all-reduce per size (or per probed rank); medians settle within a few dozen, so
  // more than kMaxRepeats is a typo that would keep the ranks busy for hours.
  constexpr int kMaxRepeats = 10000;
  o.calibration_repeats = sc.int32("live.calibration.repeats", 5);
  if (o.calibration_repeats < 1 || o.calibration_repeats > kMaxRepeats)
    throw ConfigError(w, "live.calibration.repeats",
                      "must be in [1, 10000], got " + std::to_string(o.calibration_repeats));
  if (sc.has("live.probe.ranks"))
    o.probe_ranks = parse_rank_list(sc.string("live.probe.ranks", ""), w, "live.probe.ranks");
  o.probe_repeats = sc.int32("live.probe.repeats", 5);
  if (o.probe_repeats < 1 || o.probe_repeats > kMaxRepeats)
    throw ConfigError(w, "live.probe.repeats", "must be in [1, 10000], got " + std::to_string(o.probe_repeats));
}

}  // namespace

void read_live_options(scenario::Scenario& sc, LiveOptions& o) {
  const std::string w = sc.where();
  o.compression = scenario::read_compression(sc);
  const std::string trace_key = sc.string("trace.path", "");  // read even when --trace wins, so it is known
  if (o.trace_dir.empty() && !trace_key.empty())
    o.trace_dir = std::filesystem::path(sc.resolve(trace_key)).lexically_normal().string();
  o.pp = sc.int32("live.pp", 0);
  if (o.pp < 0) throw ConfigError(w, "live.pp", "must be >= 0 (0 = automatic)");
  o.max_iterations = sc.integer("live.max_iterations", 0);
  if (o.max_iterations < 0) throw ConfigError(w, "live.max_iterations", "must be >= 0 (0 = all)");
  o.perturbation = sc.number("live.perturbation", 0.1);
  if (!(o.perturbation >= 0.0) || !std::isfinite(o.perturbation))
    throw ConfigError(w, "live.perturbation", "must be finite and >= 0");
  o.seed = static_cast<std::uint64_t>(sc.integer("live.seed", 0));
  const std::string backend = sc.string("live.backend", "cpu");  // read even when the command line wins
  const std::string comm = sc.string("live.comm", "mpi");
  if (o.backend.empty()) {
    o.backend = backend;
    o.backend_where = w;
    o.backend_field = "live.backend";
  }
  if (o.comm.empty()) o.comm = comm;
  o.bins_per_sigma = sc.number("live.bins_per_sigma", 8.0);
  engine::check_bins_per_sigma(o.bins_per_sigma, w, "live.bins_per_sigma");
  o.verify = sc.boolean("live.verify", o.verify);
  read_measurement_options(sc, o);
  if (o.comm != "mpi" && o.comm != "nccl")
    throw ConfigError(w, "live.comm", "expected mpi or nccl, got '" + o.comm + "'");
  if (o.backend != "cpu" && o.backend != "cuda")
    throw ConfigError(o.backend_where, o.backend_field, "expected cpu or cuda, got '" + o.backend + "'");
}

}  // namespace edgc::live
