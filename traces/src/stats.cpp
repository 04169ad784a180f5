#include "edgc/traces/stats.hpp"

#include <cmath>
#include <limits>

namespace edgc::traces {

TensorStats compute_stats(std::span<const float> values) {
  TensorStats s;
  double sum = 0.0;
  float lo = std::numeric_limits<float>::infinity();
  float hi = -std::numeric_limits<float>::infinity();
  for (const float x : values) {
    if (std::isnan(x)) {
      ++s.nan;
    } else if (std::isinf(x)) {
      ++s.inf;
    } else {
      ++s.count;
      sum += x;
      lo = x < lo ? x : lo;
      hi = x > hi ? x : hi;
    }
  }
  if (s.count == 0) return s;
  const double mean = sum / static_cast<double>(s.count);
  double m2 = 0.0;
  double m4 = 0.0;
  for (const float x : values) {
    if (!std::isfinite(x)) continue;
    const double d = static_cast<double>(x) - mean;
    const double d2 = d * d;
    m2 += d2;
    m4 += d2 * d2;
  }
  const auto n = static_cast<double>(s.count);
  m2 /= n;
  m4 /= n;
  s.mean = mean;
  s.std = std::sqrt(m2);
  if (m2 > 0.0) s.excess_kurtosis = m4 / (m2 * m2) - 3.0;
  s.min = lo;
  s.max = hi;
  return s;
}

}  // namespace edgc::traces
