#pragma once
// Sweep specs (scenarios/sweeps/*.json): a base scenario and axes over any scenario key, expanded into points.
//
//   {
//     "description": "…",                           optional text
//     "base": "../paper/gpt2-12.1b-64xh100.json",   scenario, relative to the spec's folder
//     "set": {"run.iterations": 100000},            optional overrides applied to every point (like --set)
//     "policies": "none,edgc",                      optional; default: the base scenario's choice
//     "mode": "grid",                               "grid" (every combination) or "random" (seeded samples)
//     "samples": 200, "seed": 1,                    random mode only: points drawn, and the draw's seed
//     "repeats": 1,                                 runs per point, variability.seed = seed + repeat (needs a
//                                                   "variability" section to differ); > 1 gives mean and 95 % CI
//     "axes": [
//       {"key": "compression.window", "values": [250, 500, 1000]},             one scenario key, listed values
//       {"key": "compression.alpha", "range": [0.02, 0.5], "scale": "log"},    random mode: drawn from a range
//       {"key": "compression.r_min", "range": [8, 64], "integer": true},        (scale linear|log, integer)
//       {"key": "size", "values": [{"cluster.nodes": 8, "parallelism.dp": 2},  a bundle: several keys set
//                                  {"cluster.nodes": 16, "parallelism.dp": 4}], together; "labels" name them
//        "labels": ["64 GPUs", "128 GPUs"]}
//     ]
//   }
//
// Values are applied exactly as `--set key=value` (so paths in them are relative to the base scenario's
// folder, and "cluster"/"model" may name a file). In grid mode the last axis varies fastest.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace edgc::scenario {

struct SweepAxis {
  std::string key;                     ///< scenario key, or a bundle's name
  std::vector<nlohmann::json> values;  ///< listed values (scalars, or objects of key → value for bundles)
  std::vector<std::string> labels;     ///< bundle labels, one per value (empty: the value's JSON)
  bool ranged = false;                 ///< random mode: drawn from [lo, hi]
  double lo = 0.0;
  double hi = 0.0;
  bool log_scale = false;
  bool integer = false;
};

struct SweepSpec {
  std::string path;  ///< the spec file
  std::string base;  ///< base scenario, resolved against the spec's folder
  std::string description;
  std::vector<std::string> sets;  ///< "key=value" for every point, before the axes (spec, then command line)
  std::vector<std::string> command_line_sets;  ///< the `--set` part of `sets`
  std::string policies;                        ///< may be empty
  bool random = false;
  std::int64_t samples = 0;
  std::uint64_t seed = 0;
  int repeats = 1;
  /// "max_error": the gradient-error budget (relative error of the averaged gradient, > 0); a point whose policy
  /// exceeds it is infeasible for that policy (summary.csv, best points). `edgc sweep --max-error` overrides it.
  std::optional<double> max_error;
  std::vector<SweepAxis> axes;
  nlohmann::ordered_json document;  ///< the spec as read, for sweep.json (resume checks it)
};

/// One point: its axis values (for results and charts) and the overrides that make its scenario.
struct SweepPoint {
  std::int64_t index = 0;
  nlohmann::ordered_json params;  ///< axis key → value (a bundle: its label, or the object)
  std::vector<std::string> sets;  ///< the spec's sets, then the axes' "key=value"
};

/// Reads and checks a spec. Throws ConfigError naming the file and the field (axes[i].values[j], …).
SweepSpec read_sweep_spec(const std::string& path);

/// How many points expand_points() gives, without making them: the grid's product or the random samples.
std::int64_t point_count(const SweepSpec& spec);

/// All points of the spec, in a fixed order (grid: row-major over the axes; random: draw k uses Rng(seed, k)).
std::vector<SweepPoint> expand_points(const SweepSpec& spec);

}  // namespace edgc::scenario
