#pragma once
// Entropy estimators of a gradient sample. Both give nats and are comparable: the histogram estimate adds
// ln(bin width), so for Gaussian data its value tracks the Gaussian one and differences H0 − H1 agree.
#include <cstdint>
#include <span>
#include <string_view>

namespace edgc::core {

enum class EntropyEstimator {
  kGaussian,   ///< H = ln σ + ½ ln(2πe) from the sampled standard deviation
  kHistogram,  ///< Shannon entropy of a fixed-bin-width histogram + ln(bin width)
};

/// "gaussian" | "histogram"; throws ConfigError(where, field, ...) otherwise.
EntropyEstimator parse_entropy_estimator(std::string_view name, std::string_view where, std::string_view field);
std::string_view entropy_estimator_name(EntropyEstimator e) noexcept;

/// Differential entropy of N(μ, σ²) in nats; −inf for σ = 0.
double gaussian_entropy(double std_dev) noexcept;

/// Differential-entropy estimate in nats from histogram counts with bin width `bin_width`:
/// −Σ pᵢ ln pᵢ + ln(bin_width). `tail_below` / `tail_above` (values outside the histogram's range) count as one
/// extra bin each, so heavy tails still raise the entropy instead of vanishing. NaN when no values.
/// Counts may be weighted (non-integer), e.g. when samples of different tensors are scaled to their full size.
double histogram_entropy(std::span<const double> counts, double bin_width, double tail_below = 0.0,
                         double tail_above = 0.0) noexcept;

/// Fixed histogram layout, chosen once (at the first sampled iteration of a stage) and kept for the whole run
/// so that entropy differences between windows are meaningful.
struct HistogramLayout {
  double lo = 0.0;         ///< left edge of bin 0
  double bin_width = 0.0;  ///< > 0
  int bins = 0;
  /// Centred on `mean`, `bins_per_sigma` bins per σ, covering ±`half_range_sigmas`·σ.
  static HistogramLayout around(double mean, double std_dev, double bins_per_sigma = 8.0,
                                double half_range_sigmas = 64.0) noexcept;
};

}  // namespace edgc::core
