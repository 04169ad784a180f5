#pragma once
// results.jsonl, the sweep's one line per finished point, and its one reader (for `sweep --resume`, `plan` and
// `report`). A line is {"point": i, "params": {...}, "gpus", "gpu", "repeats", "simulations", "runs": [...],
// "wall_s"} or, for a point that failed on its input, {"point": i, "params": {...}, "error": "..."}.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace edgc::results {

struct SweepLines {
  std::vector<nlohmann::json> lines;  ///< ordered by point
  std::vector<int> line_numbers;      ///< of each of `lines` in the file, from 1
  /// The file ends in a line without its newline: a sweep killed mid-append. That line is left out (and cut
  /// off by the next --resume).
  bool truncated_last_line = false;
};

/// Reads `file` strictly: every complete line is a JSON object with an integer "point", an object "params" and
/// "runs" or "error", no point twice, no blank lines; throws ConfigError naming the file, "line N" and the
/// field.
/// A missing file is an empty result.
SweepLines read_sweep_lines(const std::filesystem::path& file);

/// One CSV cell of a JSON value: strings bare, other values as JSON, quoted where they hold , " or a newline.
std::string csv_cell(const nlohmann::json& value);
std::string csv_cell(const nlohmann::ordered_json& value);

}  // namespace edgc::results
