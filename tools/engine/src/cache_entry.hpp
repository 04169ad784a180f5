#pragma once
// Private to the engine: the files of a run cache (SimulateRequest::cache_dir). An entry is one JSON file named by a
// digest of what determines it, written atomically (renamed into place), so that concurrent sweep workers can share
// the directory.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace edgc::engine {

/// 128-bit digest (two independently seeded 64-bit mixes over the bytes) as 32 hex digits: a cache file name.
std::string hex_digest(const std::string& text);

/// A cache entry, or nullopt when absent. An entry that does not parse (it cannot be half-written: entries are
/// renamed into place) is treated as absent and rewritten.
std::optional<nlohmann::json> read_json_if_present(const std::filesystem::path& p);

}  // namespace edgc::engine
