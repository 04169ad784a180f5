#include "edgc/core/random.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace edgc {
namespace {

TEST(Rng, SameSeedAndStreamGiveTheSameSequence) {
  Rng a(123, 4);
  Rng b(123, 4);
  Rng c(123, 5);
  int differ = 0;
  for (int i = 0; i < 1000; ++i) {
    const auto x = a.next_u64();
    EXPECT_EQ(x, b.next_u64());
    differ += x != c.next_u64();
  }
  EXPECT_EQ(differ, 1000);
}

TEST(Rng, KnownFirstValuesArePlatformIndependent) {
  // Golden values: the generator must not change silently, or recorded block choices and synthetic traces
  // would change with it.
  Rng r(1, 0);
  const std::uint64_t first = r.next_u64();
  Rng again(1, 0);
  EXPECT_EQ(first, again.next_u64());
  EXPECT_EQ(mix64(0), 0xe220a8397b1dcdafULL);
}

TEST(Rng, NormalHasZeroMeanUnitVarianceAndGaussianTails) {
  Rng r(99);
  const int n = 400'000;
  double s1 = 0, s2 = 0, s4 = 0;
  for (int i = 0; i < n; ++i) {
    const double x = r.normal();
    s1 += x;
    s2 += x * x;
    s4 += x * x * x * x;
  }
  const double mean = s1 / n;
  const double var = s2 / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.01);                  // sd of the mean is 0.0016
  EXPECT_NEAR(var, 1.0, 0.01);                   // sd of the variance is 0.0022
  EXPECT_NEAR(s4 / n / (var * var), 3.0, 0.05);  // Gaussian kurtosis; sd ≈ 0.008
}

TEST(Rng, BelowStaysInRangeAndUniformStaysInUnitInterval) {
  Rng r(7);
  std::vector<int> hist(10, 0);
  for (int i = 0; i < 100'000; ++i) {
    const auto k = r.below(10);
    ASSERT_LT(k, 10u);
    ++hist[k];
    const double u = r.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
  for (int h : hist) EXPECT_NEAR(h, 10'000, 500);
}

}  // namespace
}  // namespace edgc
