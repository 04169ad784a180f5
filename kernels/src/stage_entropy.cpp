#include "edgc/kernels/stage_entropy.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

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

// Histogram counts pooled over the stage's tensors, each with its weight.
struct WeightedHistogram {
  std::vector<double> weighted;
  double below = 0.0;
  double above = 0.0;

  explicit WeightedHistogram(std::int64_t bins) : weighted(static_cast<std::size_t>(bins), 0.0) {}
  void add(std::span<const std::int64_t> counts, const HistogramTails& tails, double w) {
    for (std::size_t b = 0; b < counts.size(); ++b) weighted[b] += w * static_cast<double>(counts[b]);
    below += w * static_cast<double>(tails.below);
    above += w * static_cast<double>(tails.above);
  }
  double entropy(const core::HistogramLayout& layout) const {
    return core::histogram_entropy(weighted, layout.bin_width, below, above);
  }
};

}  // namespace

// Moments first, for the histogram's layout when it is not yet fixed; once it is, every tensor's moments and
// histogram come from one batched call (one read of the sampled elements where the backend fuses them) with the same
// results.
core::StageObservation measure_stage_entropy(const Backend& backend, std::span<const StageTensor> tensors, bool full,
                                             std::optional<core::HistogramLayout>& layout, double bins_per_sigma) {
  std::vector<double> weight(tensors.size(), 1.0);
  std::vector<StageTensor> selected(tensors.size());
  std::int64_t touched = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto numel = static_cast<std::int64_t>(tensors[i].values.size());
    const std::int64_t n = full ? numel : total_length(tensors[i].blocks);
    weight[i] = static_cast<double>(numel) / static_cast<double>(n);
    touched += n;
    selected[i] = {tensors[i].values, blocks_of(tensors[i], full)};
  }
  const bool fused = layout.has_value();
  const std::int64_t bins = fused ? layout->bins : 0;
  std::vector<MomentSums> sums(tensors.size());
  std::vector<std::int64_t> counts(tensors.size() * static_cast<std::size_t>(bins), 0);
  std::vector<HistogramTails> tails(tensors.size());
  if (fused) {
    backend.moments_and_histogram_batched(selected, layout->lo, layout->bin_width, bins, sums, counts, tails);
  } else {
    backend.moments_batched(selected, sums);
  }
  Pooled pooled;
  for (std::size_t i = 0; i < tensors.size(); ++i) pooled.add(sums[i], weight[i]);
  const double sigma = pooled.n > 0.0 ? std::sqrt(pooled.variance()) : 0.0;
  if (!layout && sigma > 0.0) layout = core::HistogramLayout::around(pooled.mean(), sigma, bins_per_sigma);
  core::StageObservation o;
  o.entropy_gaussian = core::gaussian_entropy(sigma);
  if (layout) {
    const auto row = static_cast<std::size_t>(layout->bins);
    if (!fused) {  // the layout was fixed just now: each tensor's histogram on it
      counts.assign(tensors.size() * row, 0);
      for (std::size_t i = 0; i < tensors.size(); ++i)
        backend.histogram(selected[i].values, selected[i].blocks, layout->lo, layout->bin_width,
                          std::span(counts).subspan(i * row, row), tails[i]);
    }
    WeightedHistogram hist(layout->bins);
    for (std::size_t i = 0; i < tensors.size(); ++i)
      hist.add(std::span<const std::int64_t>(counts).subspan(i * row, row), tails[i], weight[i]);
    o.entropy_histogram = hist.entropy(*layout);
  }
  if (pooled.n > 0.0) o.excess_kurtosis = pooled.excess_kurtosis();
  o.elements = touched;
  return o;
}

}  // namespace edgc::kernels
