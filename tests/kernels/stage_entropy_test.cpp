#include "edgc/kernels/stage_entropy.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>
#include <vector>

namespace edgc::kernels {
namespace {

std::vector<float> normal(std::size_t n, double sigma, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(0.0, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(d(rng));
  return v;
}

// Population standard deviation in double, the closed form the pooled moments must reproduce.
double std_dev(const std::vector<float>& v) {
  double s1 = 0.0, s2 = 0.0;
  for (float x : v) {
    s1 += x;
    s2 += static_cast<double>(x) * x;
  }
  const double n = static_cast<double>(v.size());
  return std::sqrt(s2 / n - (s1 / n) * (s1 / n));
}

TEST(StageEntropy, FullMeasurementIsTheGaussianEntropyOfThePooledSpread) {
  const auto backend = make_backend("cpu");
  const std::vector<float> a = normal(4096, 0.5, 1);
  const std::vector<float> b = normal(1024, 2.0, 2);
  const std::vector<StageTensor> tensors = {{a, {}}, {b, {}}};
  std::optional<core::HistogramLayout> layout;
  const core::StageObservation o = measure_stage_entropy(*backend, tensors, true, layout, 8.0);
  std::vector<float> all = a;
  all.insert(all.end(), b.begin(), b.end());
  const double sigma = std_dev(all);
  EXPECT_NEAR(*o.entropy_gaussian, 0.5 * std::log(2.0 * std::numbers::pi * std::numbers::e * sigma * sigma), 1e-9);
  EXPECT_EQ(o.elements, 4096 + 1024);
  ASSERT_TRUE(layout.has_value());  // fixed at the first measurement with spread
  ASSERT_TRUE(o.entropy_histogram.has_value());
  // The Gaussian has the largest entropy of all laws of that variance: the heavy-tailed mixture stays below it.
  EXPECT_LT(*o.entropy_histogram, *o.entropy_gaussian);
  EXPECT_GT(*o.entropy_histogram, *o.entropy_gaussian - 0.5);
  ASSERT_TRUE(o.excess_kurtosis.has_value());
  EXPECT_GT(*o.excess_kurtosis, 0.5);  // the mixture of σ 0.5 and 2 has heavy tails
}

// A block sample weighted by numel / sampled stands for the whole tensor: sampling one quarter of a tensor and all
// of another counts the quarter four times.
TEST(StageEntropy, SampledTensorsAreWeightedByNumelOverSampledElements) {
  const auto backend = make_backend("cpu");
  const std::vector<float> big = normal(4000, 1.0, 3);
  const std::vector<float> small = normal(250, 3.0, 4);
  const std::vector<Block> quarter = {{0, 1000}};
  const std::vector<Block> all_small = {{0, 250}};
  const std::vector<StageTensor> sampled = {{big, quarter}, {small, all_small}};
  std::optional<core::HistogramLayout> layout;
  const core::StageObservation o = measure_stage_entropy(*backend, sampled, false, layout, 8.0);
  EXPECT_EQ(o.elements, 1000 + 250);
  // Closed form: the first 1000 values weighted 4, the 250 small ones weighted 1.
  double n = 0.0, s1 = 0.0, s2 = 0.0;
  for (std::size_t i = 0; i < 1000; ++i) {
    n += 4.0;
    s1 += 4.0 * big[i];
    s2 += 4.0 * static_cast<double>(big[i]) * big[i];
  }
  for (float x : small) {
    n += 1.0;
    s1 += x;
    s2 += static_cast<double>(x) * x;
  }
  const double sigma = std::sqrt(s2 / n - (s1 / n) * (s1 / n));
  EXPECT_NEAR(*o.entropy_gaussian, core::gaussian_entropy(sigma), 1e-9);
}

TEST(StageEntropy, TheHistogramLayoutIsKeptAcrossMeasurements) {
  const auto backend = make_backend("cpu");
  const std::vector<float> first = normal(2048, 1.0, 5);
  const std::vector<float> wider = normal(2048, 4.0, 6);
  std::optional<core::HistogramLayout> layout;
  const std::vector<StageTensor> t1 = {{first, {}}};
  (void)measure_stage_entropy(*backend, t1, true, layout, 8.0);
  ASSERT_TRUE(layout.has_value());
  const core::HistogramLayout kept = *layout;
  const std::vector<StageTensor> t2 = {{wider, {}}};
  (void)measure_stage_entropy(*backend, t2, true, layout, 8.0);
  EXPECT_EQ(layout->lo, kept.lo);
  EXPECT_EQ(layout->bin_width, kept.bin_width);
  EXPECT_EQ(layout->bins, kept.bins);
}

// Once the layout is fixed, each tensor's moments and histogram come from one moments_and_histogram call: the
// observation is the one the separate calls give (the first measurement, which fixes the layout, makes them).
TEST(StageEntropy, AFixedLayoutGivesTheSameObservationFromOneCallPerTensor) {
  const auto backend = make_backend("cpu");
  const std::vector<float> a = normal(5000, 0.5, 7);
  const std::vector<float> b = normal(3000, 2.0, 8);
  const std::vector<Block> blocks_a = {{0, 1000}, {2500, 700}};
  const std::vector<Block> blocks_b = {{100, 2900}};
  const std::vector<StageTensor> tensors = {{a, blocks_a}, {b, blocks_b}};
  std::optional<core::HistogramLayout> layout;
  const core::StageObservation separate = measure_stage_entropy(*backend, tensors, false, layout, 8.0);
  ASSERT_TRUE(layout.has_value());
  const core::StageObservation fused = measure_stage_entropy(*backend, tensors, false, layout, 8.0);
  ASSERT_TRUE(separate.entropy_histogram.has_value());
  ASSERT_TRUE(fused.entropy_histogram.has_value());
  EXPECT_EQ(*fused.entropy_histogram, *separate.entropy_histogram);
  EXPECT_EQ(*fused.entropy_gaussian, *separate.entropy_gaussian);
  EXPECT_EQ(*fused.excess_kurtosis, *separate.excess_kurtosis);
  EXPECT_EQ(fused.elements, separate.elements);
  EXPECT_EQ(fused.elements, 1000 + 700 + 2900);
}

TEST(StageEntropy, ZeroSpreadHasNoHistogramAndNoFiniteEstimates) {
  const auto backend = make_backend("cpu");
  const std::vector<float> zeros(512, 0.0F);
  const std::vector<StageTensor> t = {{zeros, {}}};
  std::optional<core::HistogramLayout> layout;
  const core::StageObservation o = measure_stage_entropy(*backend, t, true, layout, 8.0);
  EXPECT_FALSE(layout.has_value());
  EXPECT_FALSE(o.entropy_histogram.has_value());
  EXPECT_FALSE(std::isfinite(*o.entropy_gaussian));
  EXPECT_FALSE(o.excess_kurtosis && std::isfinite(*o.excess_kurtosis));
}

}  // namespace
}  // namespace edgc::kernels
