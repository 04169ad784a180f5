#pragma once
// Descriptive statistics of one captured tensor, as `edgc trace inspect` reports them.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace edgc::traces {

/// Statistics over the finite values; NaN and ±Inf are counted, not included.
struct TensorStats {
  std::int64_t count = 0;  ///< finite values
  std::int64_t nan = 0;
  std::int64_t inf = 0;
  std::optional<double> mean;             ///< absent when count == 0
  std::optional<double> std;              ///< population standard deviation (ddof = 0)
  std::optional<double> excess_kurtosis;  ///< m4 / m2² − 3 (population moments); absent when m2 == 0
  std::optional<double> min;
  std::optional<double> max;
};

/// Two passes in double precision: mean first, then central moments (stable for gradients whose mean is tiny
/// next to their spread).
TensorStats compute_stats(std::span<const float> values);

}  // namespace edgc::traces
