#include "edgc/traces/stats.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "edgc/core/random.hpp"

namespace edgc::traces {
namespace {

TEST(Stats, ClosedFormOnASmallSample) {
  const std::vector<float> x = {1, 2, 3, 4};
  const TensorStats s = compute_stats(x);
  EXPECT_EQ(s.count, 4);
  EXPECT_DOUBLE_EQ(*s.mean, 2.5);
  EXPECT_DOUBLE_EQ(*s.std, std::sqrt(1.25));
  // m4 = (2·1.5⁴ + 2·0.5⁴)/4 = 2.5625, m2 = 1.25 → 2.5625/1.5625 − 3 = −1.36
  EXPECT_NEAR(*s.excess_kurtosis, -1.36, 1e-12);
  EXPECT_EQ(*s.min, 1.0);
  EXPECT_EQ(*s.max, 4.0);
}

TEST(Stats, NonFiniteValuesAreCountedAndExcluded) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {nan, 1, inf, 2, -inf, 3, 4, nan};
  const TensorStats s = compute_stats(x);
  EXPECT_EQ(s.nan, 2);
  EXPECT_EQ(s.inf, 2);
  EXPECT_EQ(s.count, 4);
  EXPECT_DOUBLE_EQ(*s.mean, 2.5);
  EXPECT_EQ(*s.max, 4.0);
}

TEST(Stats, EmptyAllNaNAndConstantInputs) {
  EXPECT_FALSE(compute_stats({}).mean.has_value());
  const std::vector<float> nans(5, std::numeric_limits<float>::quiet_NaN());
  const TensorStats n = compute_stats(nans);
  EXPECT_EQ(n.nan, 5);
  EXPECT_FALSE(n.std.has_value());
  const std::vector<float> c(10, 0.5f);
  const TensorStats k = compute_stats(c);
  EXPECT_DOUBLE_EQ(*k.std, 0.0);
  EXPECT_FALSE(k.excess_kurtosis.has_value());  // 0/0
}

TEST(Stats, GaussianAndLaplaceKurtosis) {
  Rng rng(3);
  std::vector<float> g(500'000);
  std::vector<float> l(500'000);
  for (std::size_t i = 0; i < g.size(); ++i) {
    g[i] = static_cast<float>(1e-3 * rng.normal() + 1e-5);
    const double u = rng.uniform() - 0.5;
    l[i] = static_cast<float>(-(u < 0 ? -1.0 : 1.0) * std::log(1 - 2 * std::abs(u)));
  }
  const TensorStats sg = compute_stats(g);
  EXPECT_NEAR(*sg.std, 1e-3, 1e-5);
  EXPECT_NEAR(*sg.excess_kurtosis, 0.0, 0.05);
  EXPECT_NEAR(*compute_stats(l).excess_kurtosis, 3.0, 0.2);  // Laplace: excess kurtosis 3
}

}  // namespace
}  // namespace edgc::traces
