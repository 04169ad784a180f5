#pragma once
// The trace manifest (`trace.json`, format "edgc.trace" version 1 or 1.1; see traces/FORMAT.md) as typed structs.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "edgc/traces/dtype.hpp"

namespace edgc::traces {

inline constexpr const char* kTraceFormatName = "edgc.trace";
inline constexpr int kTraceFormatVersion = 1;  ///< major version this edgc reads and writes
inline constexpr int kTraceFormatMinor = 1;    ///< newest minor version: 1.1 adds stage-boundary gradients
inline constexpr const char* kManifestFileName = "trace.json";

/// What a trace may claim, bounded by what edgc can hold (read_manifest refuses more, naming the field): pipeline
/// stages (per-stage tables are allocated from the count) and elements of one tensor or boundary message (4 Ti
/// elements, far past any GPU's memory, so that byte counts and products stay in int64).
inline constexpr int kMaxTraceStages = 1 << 16;
inline constexpr std::int64_t kMaxTensorElements = std::int64_t{1} << 42;

enum class CaptureMode { kFull, kBlocks };

/// One captured parameter gradient.
struct TensorInfo {
  std::string name;
  std::vector<std::int64_t> shape;  ///< full parameter shape, row-major
  Dtype dtype = Dtype::kF32;        ///< storage type in iteration files (read back as f32)
  int stage = 0;                    ///< pipeline stage owning the parameter, 0-based
  int layer = -1;                   ///< transformer layer index, -1 outside the layers
  CaptureMode mode = CaptureMode::kFull;

  /// Product of the shape (1 for a scalar).
  std::int64_t numel() const noexcept;
};

/// One captured stage-boundary activation gradient (format 1.1): the gradient of the loss with respect to the
/// activations stage `stage` receives from stage `stage - 1`, for one micro-batch of `micro_batch` sequences. It is
/// the message stage `stage` sends backward, viewed as tokens × hidden (micro_batch · sequence rows).
struct BoundaryInfo {
  std::string name;
  int stage = 1;                 ///< receiving stage of the forward activations = sender of the gradient, >= 1
  std::int64_t rows = 0;         ///< tokens in the message (micro_batch · sequence length)
  std::int64_t cols = 0;         ///< hidden size
  std::int64_t micro_batch = 1;  ///< sequences in the message
  Dtype dtype = Dtype::kF32;     ///< storage type in iteration files (read back as f32)

  std::int64_t numel() const noexcept { return rows * cols; }
};

/// One captured training iteration.
struct IterationInfo {
  std::int64_t iteration = 0;  ///< training step index
  std::string file;            ///< file name inside the trace directory
  std::optional<double> loss;  ///< training loss at that step, when recorded
};

/// How sampled tensors were sampled (present when any tensor uses CaptureMode::kBlocks).
struct SamplingInfo {
  std::int64_t block_elems = 0;  ///< elements per block
  double fraction = 1.0;         ///< share of each tensor's elements captured, (0, 1]
  std::uint64_t seed = 0;        ///< seed of the block choice
};

struct Manifest {
  int version = kTraceFormatVersion;
  int minor = 0;  ///< 0 for "version": 1, 1 for "version": 1.1 (required by `boundaries`)
  std::string model_name;
  int num_stages = 1;
  std::string model_json = "{}";  ///< the whole "model" object, serialised (free-form beyond name/stages)
  std::optional<SamplingInfo> sampling;
  std::vector<TensorInfo> tensors;
  std::vector<BoundaryInfo> boundaries;  ///< stage-boundary gradients (1.1), at most one per stage, by stage
  std::vector<IterationInfo> iterations;
  std::string provenance_json = "{}";  ///< the "provenance" object, serialised

  /// Index of the tensor with this name, or -1.
  int find_tensor(const std::string& name) const noexcept;
  /// Index of the boundary gradient with this name, or -1.
  int find_boundary(const std::string& name) const noexcept;
  /// "1" or "1.1".
  std::string version_string() const;
};

/// Gradient elements per trace stage (every tensor, whole parameter size whatever its capture mode).
std::vector<std::int64_t> stage_elements(const Manifest& m);

/// The stage of a run with `stages` pipeline stages (1 ≤ stages ≤ m.num_stages) that trace stage `t` falls into when
/// the trace's stages are merged: t·stages / num_stages.
int merged_stage(const Manifest& m, int t, int stages);

/// Per stage of such a run: the index in m.boundaries of the boundary whose messages that stage sends backward, or -1
/// (stage 0, a boundary inside a merged stage, a trace without boundaries).
std::vector<int> stage_boundaries(const Manifest& m, int stages);

/// Reads and validates `dir/trace.json`. Throws TraceFormatError naming the file and field.
Manifest read_manifest(const std::filesystem::path& dir);

/// Checks a manifest's invariants (unique names, stages in range, increasing iterations, ...).
/// `where` names the file in error messages. Throws TraceFormatError.
void validate_manifest(const Manifest& m, const std::string& where);

/// Serialises a manifest to the JSON text of `trace.json`.
std::string manifest_to_json(const Manifest& m);

}  // namespace edgc::traces
