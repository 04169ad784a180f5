#pragma once
// GDS — Gradient Data Sampler. Within a window of `window_iters` training iterations, entropy is measured on
// every (1/α)-th iteration (iteration sampling rate α, paper default 0.1) and, within such an iteration, on a
// fraction β of each gradient (gradient sampling rate, paper default 0.25) taken as contiguous blocks.
#include <cstdint>
#include <vector>

#include "edgc/core/block_sampling.hpp"

namespace edgc::core {

struct GdsConfig {
  std::int64_t window_iters = 1000;  ///< w: training iterations per window (paper: 1000)
  double alpha = 0.1;                ///< ISR: share of iterations sampled, (0, 1] (paper: 0.1)
  double beta = 0.25;                ///< GSR: share of each gradient sampled, (0, 1] (paper: 0.25)
  std::int64_t block_bytes = 4096;   ///< contiguous block size; ≥ 4 KiB keeps memory traffic ∝ β
  std::uint64_t seed = 0;            ///< shared by all ranks and replays: everyone samples the same blocks
};

/// Checks ranges; `where` names the scenario file in errors. Throws ConfigError.
void validate(const GdsConfig& c, const char* where);

class GradientDataSampler {
 public:
  explicit GradientDataSampler(GdsConfig config);

  const GdsConfig& config() const noexcept { return config_; }
  /// Iterations between two sampled iterations: round(1/α), at least 1.
  std::int64_t period() const noexcept { return period_; }
  /// Whether entropy is measured at this training iteration (every period-th, starting at 0).
  bool samples_iteration(std::int64_t iteration) const noexcept { return iteration % period_ == 0; }
  /// Window index of an iteration.
  std::int64_t window_of(std::int64_t iteration) const noexcept { return iteration / config_.window_iters; }

  /// Blocks of a tensor of `numel` elements (`element_bytes` each) to read at `iteration`. Derived from
  /// (seed, tensor, iteration) only, so every rank picks the same blocks; they differ between iterations so a
  /// window's samples cover different parts of the tensor.
  std::vector<Block> blocks(std::uint64_t tensor, std::int64_t numel, std::int64_t iteration,
                            std::int64_t element_bytes = 4) const;

 private:
  GdsConfig config_;
  std::int64_t period_ = 1;
};

}  // namespace edgc::core
