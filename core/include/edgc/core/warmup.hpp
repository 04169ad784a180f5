#pragma once
// Warm-up detector: no compression until gradient entropy is stable. Either a fixed number of iterations, or
// until the window-mean entropy changes by less than a threshold for k consecutive windows, bounded below by a
// floor and above by a ceiling (common practice starts compression after about 10 % of training).
#include <cstdint>
#include <limits>
#include <optional>

namespace edgc::core {

struct WarmupConfig {
  enum class Mode { kEntropy, kFixed };
  Mode mode = Mode::kEntropy;
  std::int64_t fixed_iters = 0;  ///< kFixed: compression starts at this iteration
  /// kEntropy: stable when |H_w − H_{w−1}| ≤ threshold_nats. A change of x nats in Gaussian entropy is a
  /// relative change of about x in σ, so 0.05 means "σ moved by less than ~5 % per window". (assumed)
  double threshold_nats = 0.05;
  int stable_windows = 3;        ///< kEntropy: consecutive stable windows required (assumed: 3)
  std::int64_t floor_iters = 0;  ///< never end warm-up before this iteration
  std::int64_t ceiling_iters = std::numeric_limits<std::int64_t>::max();  ///< always end by this iteration
};

/// Throws ConfigError naming `where` and the field.
void validate(const WarmupConfig& c, const char* where);

class WarmupDetector {
 public:
  explicit WarmupDetector(WarmupConfig config) : config_(config) {}

  /// Feeds the mean entropy of a window that ends (exclusive) at `window_end`; a missing value breaks the
  /// stable run. Returns true once warm-up is over: compression may start with the next window.
  bool update(std::int64_t window_end, std::optional<double> window_entropy);

  bool done() const noexcept { return done_; }
  /// Iteration at which compression starts (valid once done()).
  std::int64_t ended_at() const noexcept { return ended_at_; }

 private:
  WarmupConfig config_;
  std::optional<double> previous_;
  int stable_run_ = 0;
  bool done_ = false;
  std::int64_t ended_at_ = -1;
};

}  // namespace edgc::core
