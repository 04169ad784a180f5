#pragma once
// Minimal safetensors container support: header parsing with validation, and writing. Parsing uses
// nlohmann_json; no other library. Layout: u64 little-endian header length N, N bytes of JSON, data buffer.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "edgc/traces/dtype.hpp"

namespace edgc::traces {

struct SafetensorsEntry {
  std::string name;
  Dtype dtype = Dtype::kF32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;  ///< byte offset of the first element, relative to the data buffer
  std::uint64_t end = 0;    ///< one past the last byte, relative to the data buffer

  std::int64_t numel() const noexcept;
};

struct SafetensorsHeader {
  std::uint64_t data_start = 0;           ///< absolute file offset of the data buffer (8 + header length)
  std::vector<SafetensorsEntry> entries;  ///< in data order

  /// Entry with this name, or nullptr.
  const SafetensorsEntry* find(std::string_view name) const noexcept;
};

/// "[2, 3]"-style rendering of a shape for messages.
std::string shape_to_string(const std::vector<std::int64_t>& shape);

/// Reads exactly `bytes` at absolute `offset` of an open file. Throws TraceFormatError("truncated file") when the
/// file ends early and IoError when the read fails.
void read_exact_at(int fd, void* dst, std::size_t bytes, std::uint64_t offset, const std::string& path);

/// Reads and validates the header of an open file of `file_size` bytes: header length inside the file, valid
/// JSON object, known dtypes, non-negative shapes, byte counts matching shapes, regions inside the file and not
/// overlapping, no duplicate names. `path` names the file in errors. Throws TraceFormatError.
SafetensorsHeader read_safetensors_header(int fd, std::uint64_t file_size, const std::string& path);

/// How the header's JSON is read: kAny scans a plain header (what writers produce: entries of dtype, shape and
/// data_offsets, an optional "__metadata__" of strings, no escapes) directly and anything else with the strict JSON
/// parser, with the same entries and errors; kStrict always with the parser (the tests compare the two).
enum class HeaderReader { kAny, kStrict };

/// read_safetensors_header's checks on header `text` already read (the N bytes after the length) of a file of
/// `file_size` bytes (≥ 8 + N).
SafetensorsHeader parse_safetensors_header(std::string_view text, std::uint64_t file_size, const std::string& path,
                                           HeaderReader reader = HeaderReader::kAny);

/// One tensor to write: raw little-endian bytes already in `dtype`.
struct SafetensorsBlob {
  std::string name;
  Dtype dtype = Dtype::kF32;
  std::vector<std::int64_t> shape;
  const void* data = nullptr;
  std::size_t bytes = 0;
};

/// Writes a safetensors file atomically (temp + rename); entries in the given order, header padded so the data
/// buffer starts 8-byte aligned. Throws IoError, or InternalError when a blob's size does not match its shape.
void write_safetensors(const std::filesystem::path& path, const std::vector<SafetensorsBlob>& blobs);

}  // namespace edgc::traces
