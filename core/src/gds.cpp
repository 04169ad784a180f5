#include "edgc/core/gds.hpp"

#include <cmath>
#include <string>

#include "edgc/core/error.hpp"
#include "edgc/core/random.hpp"

namespace edgc::core {

void validate(const GdsConfig& c, const char* where) {
  if (c.window_iters < 1)
    throw ConfigError(where, "compression.window", "must be >= 1 iteration, got " + std::to_string(c.window_iters));
  if (!(c.alpha > 0.0 && c.alpha <= 1.0))
    throw ConfigError(where, "compression.alpha", "must be in (0, 1], got " + std::to_string(c.alpha));
  if (!(c.beta > 0.0 && c.beta <= 1.0))
    throw ConfigError(where, "compression.beta", "must be in (0, 1], got " + std::to_string(c.beta));
  if (c.block_bytes < 4)
    throw ConfigError(where, "compression.block_bytes", "must be >= 4 bytes, got " + std::to_string(c.block_bytes));
}

GradientDataSampler::GradientDataSampler(GdsConfig config) : config_(config) {
  validate(config_, "");
  period_ = std::max<std::int64_t>(1, std::llround(1.0 / config_.alpha));
}

std::vector<Block> GradientDataSampler::blocks(std::uint64_t tensor, std::int64_t numel, std::int64_t iteration,
                                               std::int64_t element_bytes) const {
  const std::int64_t block_elems =
      std::max<std::int64_t>(1, config_.block_bytes / std::max<std::int64_t>(1, element_bytes));
  return choose_blocks(numel, config_.beta, block_elems, config_.seed,
                       mix64(tensor) ^ static_cast<std::uint64_t>(iteration));
}

}  // namespace edgc::core
