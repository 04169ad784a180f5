#pragma once
// Synthetic gradient traces for tests and demos: per tensor a fixed low-rank signal with per-iteration
// coefficients plus Gaussian noise whose standard deviation decays so that the noise's Gaussian entropy falls by
// `entropy_decay_nats` over the run (ln σ falls linearly), the way gradient entropy falls as training settles.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "edgc/traces/manifest.hpp"

namespace edgc::traces {

struct SynthOptions {
  std::vector<std::vector<std::int64_t>> layer_shapes = {{256, 768}, {256, 256}, {1024, 256}, {256, 1024}, {256}};
  int layers = 4;                   ///< every layer holds one tensor of each shape in `layer_shapes`
  int stages = 2;                   ///< layers are split into this many contiguous pipeline stages
  int iterations = 20;              ///< captured iterations
  int iteration_stride = 1;         ///< training steps between captured iterations
  int rank = 4;                     ///< rank of the signal part of each 2-D tensor
  double signal_std = 1e-3;         ///< element standard deviation of the signal part
  double noise_std = 1e-3;          ///< element standard deviation of the noise at the first iteration
  double entropy_decay_nats = 0.5;  ///< fall of ln(noise σ) from the first to the last iteration
  double loss_start = 5.5;          ///< synthetic loss curve: loss_end + (start − end)·e^(−4t/T)
  double loss_end = 2.5;
  Dtype dtype = Dtype::kF32;
  CaptureMode mode = CaptureMode::kFull;
  double fraction = 0.25;  ///< for CaptureMode::kBlocks
  std::int64_t block_elems = 1024;
  std::uint64_t seed = 1;
  /// Tokens × hidden of a stage-boundary gradient; when set (two dimensions), every stage s >= 1 gets one
  /// (`boundary.s`, format 1.1) made like the 2-D tensors: low-rank signal plus decaying noise.
  std::vector<std::int64_t> boundary_shape;
  std::string command;  ///< recorded in provenance
};

/// Checks the options; throws UsageError naming the option.
void validate(const SynthOptions& o);

/// Writes the trace to `dir` (must not exist or be empty); nothing is left there on failure.
Manifest synthesize_trace(const SynthOptions& o, const std::filesystem::path& dir);

}  // namespace edgc::traces
