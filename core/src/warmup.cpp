#include "edgc/core/warmup.hpp"

#include <cmath>
#include <string>

#include "edgc/core/error.hpp"

namespace edgc::core {

void validate(const WarmupConfig& c, const char* where) {
  if (c.fixed_iters < 0) throw ConfigError(where, "compression.warmup.fixed_iters", "must be >= 0");
  if (!(c.threshold_nats > 0.0)) throw ConfigError(where, "compression.warmup.threshold_nats", "must be > 0");
  if (c.stable_windows < 1) throw ConfigError(where, "compression.warmup.stable_windows", "must be >= 1");
  if (c.floor_iters < 0 || c.ceiling_iters < c.floor_iters)
    throw ConfigError(where, "compression.warmup", "needs 0 <= floor <= ceiling");
}

bool WarmupDetector::update(std::int64_t window_end, std::optional<double> window_entropy) {
  if (done_) return true;
  bool stable_enough = false;
  if (config_.mode == WarmupConfig::Mode::kFixed) {
    stable_enough = window_end >= config_.fixed_iters;
  } else {
    const bool have = window_entropy.has_value() && std::isfinite(*window_entropy);
    if (have && previous_ && std::abs(*window_entropy - *previous_) <= config_.threshold_nats) {
      ++stable_run_;
    } else {
      stable_run_ = 0;
    }
    if (have) previous_ = window_entropy;
    stable_enough = stable_run_ >= config_.stable_windows && window_end >= config_.floor_iters;
  }
  if (stable_enough || window_end >= config_.ceiling_iters) {
    done_ = true;
    ended_at_ = window_end;
  }
  return done_;
}

}  // namespace edgc::core
