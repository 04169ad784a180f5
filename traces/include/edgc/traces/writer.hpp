#pragma once
// Trace writer: iteration files are written as they come; the manifest and the directory appear at finish(),
// so an interrupted writer leaves no partial trace behind.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "edgc/core/atomic_file.hpp"
#include "edgc/traces/manifest.hpp"
#include "edgc/traces/reader.hpp"

namespace edgc::traces {

/// One tensor of one iteration as handed to the writer (f32, converted to the manifest dtype on write).
struct TensorView {
  std::span<const float> values;  ///< full tensor, or the sampled blocks' elements concatenated
  std::span<const Block> blocks;  ///< empty for CaptureMode::kFull
};

class TraceWriter {
 public:
  /// `header` gives model, sampling, tensors, boundaries and provenance; its `iterations` must be empty. A header
  /// with boundaries is written as version 1.1, one without as version 1.
  /// `dir` must not exist or be an empty directory. Throws TraceFormatError (invalid header), InputError, IoError.
  TraceWriter(std::filesystem::path dir, Manifest header);

  /// Writes one iteration; `tensors` follows the manifest's tensor order, `boundaries` its boundary order (one
  /// tokens × hidden matrix each). Iterations must increase.
  /// Throws InternalError when sizes or blocks do not match the manifest.
  void write_iteration(std::int64_t iteration, std::optional<double> loss, std::span<const TensorView> tensors,
                       std::span<const std::span<const float>> boundaries = {});

  /// Writes trace.json and moves the directory into place. Returns the final manifest.
  const Manifest& finish();

  /// File name used for an iteration: iter_000042.safetensors.
  static std::string iteration_file_name(std::int64_t iteration);

 private:
  StagingDir staging_;
  Manifest manifest_;
  std::vector<std::vector<char>> converted_;  // per-tensor storage-type buffers, reused
  std::vector<std::vector<std::int64_t>> block_buffers_;
  bool finished_ = false;
};

}  // namespace edgc::traces
