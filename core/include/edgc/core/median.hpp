#pragma once
// The one median of the project (live calibration, benchmarks): the middle value of an odd count, the mean of
// the two middle values of an even count.
#include <vector>

namespace edgc::core {

/// Median of `values` (taken by value: sorted in place); 0 for an empty list. NaNs are not filtered.
double median(std::vector<double> values);

}  // namespace edgc::core
