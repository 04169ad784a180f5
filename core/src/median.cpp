#include "edgc/core/median.hpp"

#include <algorithm>
#include <cstddef>

namespace edgc::core {

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  const std::size_t n = values.size();
  const auto mid = values.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(values.begin(), mid, values.end());
  const double upper = *mid;
  if (n % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), mid);
  return 0.5 * (lower + upper);
}

}  // namespace edgc::core
