#include "edgc/core/entropy.hpp"

#include <cmath>
#include <limits>
#include <numbers>
#include <string>

#include "edgc/core/error.hpp"

namespace edgc::core {

EntropyEstimator parse_entropy_estimator(std::string_view name, std::string_view where, std::string_view field) {
  if (name == "gaussian") return EntropyEstimator::kGaussian;
  if (name == "histogram") return EntropyEstimator::kHistogram;
  throw ConfigError(std::string(where), std::string(field),
                    "unknown entropy estimator '" + std::string(name) + "' (gaussian, histogram)");
}

std::string_view entropy_estimator_name(EntropyEstimator e) noexcept {
  return e == EntropyEstimator::kGaussian ? "gaussian" : "histogram";
}

double gaussian_entropy(double std_dev) noexcept {
  if (!(std_dev > 0.0)) return -std::numeric_limits<double>::infinity();
  return std::log(std_dev) + 0.5 * std::log(2.0 * std::numbers::pi * std::numbers::e);
}

double histogram_entropy(std::span<const double> counts, double bin_width, double tail_below,
                         double tail_above) noexcept {
  double total = tail_below + tail_above;
  for (const double c : counts) total += c;
  if (!(total > 0.0) || !(bin_width > 0.0)) return std::numeric_limits<double>::quiet_NaN();
  double h = 0.0;
  auto add = [&](double c) {
    if (!(c > 0.0)) return;
    const double p = c / total;
    h -= p * std::log(p);
  };
  for (const double c : counts) add(c);
  add(tail_below);
  add(tail_above);
  return h + std::log(bin_width);
}

HistogramLayout HistogramLayout::around(double mean, double std_dev, double bins_per_sigma,
                                        double half_range_sigmas) noexcept {
  HistogramLayout l;
  const double sigma = std_dev > 0.0 && std::isfinite(std_dev) ? std_dev : 1e-30;
  l.bin_width = sigma / bins_per_sigma;
  l.bins = static_cast<int>(std::ceil(2.0 * half_range_sigmas * bins_per_sigma));
  l.lo = (std::isfinite(mean) ? mean : 0.0) - half_range_sigmas * sigma;
  return l;
}

}  // namespace edgc::core
