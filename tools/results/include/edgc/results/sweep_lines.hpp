#pragma once
// results.jsonl, the sweep's one line per finished point, and its one reader (for `sweep --resume`, `plan` and
// `report`). A line is {"point": i, "params": {...}, "gpus", "gpu", "repeats", "simulations", "runs": [...],
// "wall_s"} or, for a point that failed on its input, {"point": i, "params": {...}, "error": "..."}.
#include <cstddef>
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

/// Most bytes of a sweep's results.jsonl that the readers take: a point's line is about 1 kB, so about a million
/// points; a larger file (or a device named by mistake) is refused before it is read, as every file read whole is.
inline constexpr std::size_t kMaxSweepResultsBytes = std::size_t{1} << 30;

/// Reads `file` strictly: every complete line is a JSON object with an integer "point", an object "params" and
/// "runs" or "error", no point twice, no blank lines; throws ConfigError naming the file, "line N" and the
/// field, or the file when it holds more than kMaxSweepResultsBytes.
/// A missing file is an empty result.
SweepLines read_sweep_lines(const std::filesystem::path& file);

/// One CSV cell of a JSON value: strings bare, other values as JSON, quoted where they hold , " or a newline.
std::string csv_cell(const nlohmann::json& value);
std::string csv_cell(const nlohmann::ordered_json& value);

}  // namespace edgc::results
