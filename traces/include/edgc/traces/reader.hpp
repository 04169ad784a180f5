#pragma once
// Streaming trace reader: one iteration in memory at a time, buffers reused from one iteration to the next.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "edgc/core/block_sampling.hpp"
#include "edgc/traces/manifest.hpp"

namespace edgc::traces {

/// One tensor of one iteration, converted to f32.
struct TensorData {
  std::vector<float> values;  ///< full tensor (row-major), or the sampled blocks' elements concatenated
  std::vector<Block> blocks;  ///< (offset, length) in elements of the flattened tensor; empty for CaptureMode::kFull
};

/// One captured iteration. `tensors` follows the manifest's tensor order, `boundaries` its boundary order
/// (each a row-major tokens × hidden matrix; empty for a version 1 trace).
struct IterationData {
  std::size_t index = 0;                ///< position in Manifest::iterations
  const IterationInfo* info = nullptr;  ///< points into the reader's manifest
  std::vector<TensorData> tensors;
  std::vector<std::vector<float>> boundaries;
};

class TraceReader {
 public:
  /// Reads and validates the manifest and checks that every iteration file exists.
  /// Throws TraceFormatError naming the file and field.
  explicit TraceReader(std::filesystem::path dir);

  const Manifest& manifest() const noexcept { return manifest_; }
  const std::filesystem::path& dir() const noexcept { return dir_; }
  std::size_t num_iterations() const noexcept { return manifest_.iterations.size(); }

  /// Reads iteration `index` into `out`, reusing its buffers. Validates the file against the manifest (entries,
  /// dtypes, shapes, blocks). Throws TraceFormatError naming the file and field, IoError on a failing read.
  void read(std::size_t index, IterationData& out);

  /// Streaming form: reads the next iteration into `out`; false after the last one.
  bool next(IterationData& out);

  /// Total bytes read from iteration files so far (headers and data).
  std::uint64_t bytes_read() const noexcept { return bytes_read_; }

 private:
  void read_values(int fd, Dtype dtype, std::uint64_t at, std::vector<float>& out, const std::string& path);

  std::filesystem::path dir_;
  Manifest manifest_;
  std::size_t cursor_ = 0;
  std::vector<char> scratch_;  // raw f16/bf16 bytes before conversion
  std::uint64_t bytes_read_ = 0;
};

}  // namespace edgc::traces
