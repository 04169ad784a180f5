#pragma once
// The one median and the one quantile of the project. median (live calibration, benchmarks): the middle value of an
// odd count, the mean of the two middle values of an even count. quantile (validation's error statistics): linear
// between order statistics, the type-7 quantile of R and numpy. The two differ in the last bits at q = 0.5 with an
// even count (v[lo] + ½·(v[hi] − v[lo]) against ½·(v[lo] + v[hi])) and for an empty list: keep each caller on its own.
#include <vector>

namespace edgc::core {

/// Median of `values` (taken by value: sorted in place); 0 for an empty list. NaNs are not filtered.
double median(std::vector<double> values);

/// The type-7 quantile of `values` at q in [0, 1] (taken by value: sorted in place): v[⌊h⌋] + (h − ⌊h⌋)·(v[⌊h⌋+1] −
/// v[⌊h⌋]) with h = q·(n − 1). NaN for an empty list. NaNs are not filtered.
double quantile(std::vector<double> values, double q);

}  // namespace edgc::core
