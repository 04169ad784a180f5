#include "edgc/kernels/stage_entropy.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace edgc::kernels {
namespace {

// Moments pooled over the stage's tensors, each with its weight.
struct Pooled {
  double n = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0, s4 = 0.0;
  void add(const MomentSums& m, double w) {
    n += w * static_cast<double>(m.count);
    s1 += w * m.sum;
    s2 += w * m.sum_sq;
    s3 += w * m.sum_cube;
    s4 += w * m.sum_quad;
  }
  double mean() const { return s1 / n; }
  double variance() const { return std::max(0.0, s2 / n - mean() * mean()); }
  double excess_kurtosis() const {
    const double mu = mean();
    const double m2 = variance();
    const double m4 = s4 / n - 4.0 * mu * s3 / n + 6.0 * mu * mu * s2 / n - 3.0 * mu * mu * mu * mu;
    return m2 > 0.0 ? m4 / (m2 * m2) - 3.0 : std::numeric_limits<double>::quiet_NaN();
  }
};

std::span<const Block> blocks_of(const StageTensor& t, bool full) { return full ? std::span<const Block>() : t.blocks; }

double histogram_entropy(const Backend& backend, std::span<const StageTensor> tensors, bool full,
                         const std::vector<double>& weight, const core::HistogramLayout& layout) {
  std::vector<double> weighted(static_cast<std::size_t>(layout.bins), 0.0);
  std::vector<std::int64_t> counts;
  double below = 0.0;
  double above = 0.0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    counts.assign(weighted.size(), 0);
    HistogramTails tails{};
    backend.histogram(tensors[i].values, blocks_of(tensors[i], full), layout.lo, layout.bin_width, counts, tails);
    for (std::size_t b = 0; b < counts.size(); ++b) weighted[b] += weight[i] * static_cast<double>(counts[b]);
    below += weight[i] * static_cast<double>(tails.below);
    above += weight[i] * static_cast<double>(tails.above);
  }
  return core::histogram_entropy(weighted, layout.bin_width, below, above);
}

}  // namespace

core::StageObservation measure_stage_entropy(const Backend& backend, std::span<const StageTensor> tensors, bool full,
                                             std::optional<core::HistogramLayout>& layout, double bins_per_sigma) {
  std::vector<double> weight(tensors.size(), 1.0);
  Pooled pooled;
  std::int64_t touched = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto numel = static_cast<std::int64_t>(tensors[i].values.size());
    const std::int64_t n = full ? numel : total_length(tensors[i].blocks);
    weight[i] = static_cast<double>(numel) / static_cast<double>(n);
    touched += n;
    pooled.add(backend.moments(tensors[i].values, blocks_of(tensors[i], full)), weight[i]);
  }
  const double sigma = pooled.n > 0.0 ? std::sqrt(pooled.variance()) : 0.0;
  if (!layout && sigma > 0.0) layout = core::HistogramLayout::around(pooled.mean(), sigma, bins_per_sigma);
  core::StageObservation o;
  o.entropy_gaussian = core::gaussian_entropy(sigma);
  if (layout) o.entropy_histogram = histogram_entropy(backend, tensors, full, weight, *layout);
  if (pooled.n > 0.0) o.excess_kurtosis = pooled.excess_kurtosis();
  o.elements = touched;
  return o;
}

}  // namespace edgc::kernels
