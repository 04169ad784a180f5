#include "edgc/kernels/moments.hpp"

#include <cfloat>
#include <cmath>
#include <limits>

namespace edgc::kernels {

double MomentSums::mean() const noexcept {
  if (count == 0) return std::numeric_limits<double>::quiet_NaN();
  return sum / static_cast<double>(count);
}

double MomentSums::variance() const noexcept {
  if (count == 0) return std::numeric_limits<double>::quiet_NaN();
  const double mu = mean();
  const double v = sum_sq / static_cast<double>(count) - mu * mu;
  return v > 0.0 ? v : 0.0;
}

double MomentSums::excess_kurtosis() const noexcept {
  if (count == 0) return std::numeric_limits<double>::quiet_NaN();
  const auto n = static_cast<double>(count);
  const double mu = sum / n;
  const double e2 = sum_sq / n;
  const double m2 = e2 - mu * mu;
  // The raw-sum formula leaves rounding noise of a few ulps of E[x²] where the true variance is 0.
  if (!(m2 > 16.0 * DBL_EPSILON * e2)) return std::numeric_limits<double>::quiet_NaN();
  const double e3 = sum_cube / n;
  const double e4 = sum_quad / n;
  const double mu2 = mu * mu;
  const double m4 = e4 - 4.0 * mu * e3 + 6.0 * mu2 * e2 - 3.0 * mu2 * mu2;
  return m4 / (m2 * m2) - 3.0;
}

}  // namespace edgc::kernels
