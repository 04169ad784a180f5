#pragma once
// What a fixed-bin histogram could not place in a bin. Fixed bin widths (chosen at warm-up) keep Shannon
// entropies of different windows comparable; values outside the range are counted, never dropped silently.
#include <cstdint>

namespace edgc::kernels {

struct HistogramTails {
  std::int64_t below = 0;       ///< finite values below the first bin
  std::int64_t above = 0;       ///< finite values at or beyond the end of the last bin
  std::int64_t non_finite = 0;  ///< NaN and ±Inf values

  HistogramTails& operator+=(const HistogramTails& o) noexcept {
    below += o.below;
    above += o.above;
    non_finite += o.non_finite;
    return *this;
  }
};

}  // namespace edgc::kernels
