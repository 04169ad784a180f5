#pragma once
// Raw power sums of a (sampled) gradient: enough for the mean, the spread (Gaussian entropy) and the kurtosis,
// and mergeable across blocks, tensors and ranks by plain addition.
#include <cstdint>

namespace edgc::kernels {

/// Σx, Σx², Σx³, Σx⁴ over the finite values (accumulated in double), and counts of finite, NaN and ±Inf values.
///
/// Why raw sums and not central moments: they merge by addition (blocks, stages, ranks) and a device kernel can
/// reduce them without a second pass. Their weakness is cancellation when |mean| ≫ spread; gradients have means
/// tiny next to their spread, where raw sums in double lose nothing measurable. Central moments are derived in
/// double from the sums.
struct MomentSums {
  double sum = 0.0;        ///< Σx
  double sum_sq = 0.0;     ///< Σx²
  double sum_cube = 0.0;   ///< Σx³
  double sum_quad = 0.0;   ///< Σx⁴
  std::int64_t count = 0;  ///< finite values
  std::int64_t nan = 0;    ///< NaN values (not in the sums)
  std::int64_t inf = 0;    ///< ±Inf values (not in the sums)

  MomentSums& operator+=(const MomentSums& o) noexcept {
    sum += o.sum;
    sum_sq += o.sum_sq;
    sum_cube += o.sum_cube;
    sum_quad += o.sum_quad;
    count += o.count;
    nan += o.nan;
    inf += o.inf;
    return *this;
  }

  /// Arithmetic mean of the finite values; NaN when there are none.
  double mean() const noexcept;
  /// Population variance (ddof = 0) of the finite values, never negative; NaN when there are none.
  double variance() const noexcept;
  /// m4 / m2² − 3 from the central moments m2, m4 (population). NaN when there are no finite values or the
  /// variance is zero — "zero" meaning below 16 ulps of Σx²/n, the rounding floor of the raw-sum formula.
  double excess_kurtosis() const noexcept;
};

}  // namespace edgc::kernels
