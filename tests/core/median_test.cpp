#include "edgc/core/median.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace edgc::core {
namespace {

TEST(Median, OddCountIsTheMiddleValue) { EXPECT_EQ(median({5.0, 1.0, 3.0}), 3.0); }

TEST(Median, EvenCountIsTheMeanOfTheTwoMiddleValues) { EXPECT_EQ(median({4.0, 1.0, 3.0, 2.0}), 2.5); }

TEST(Median, EmptyIsZeroAndOneIsItself) {
  EXPECT_EQ(median({}), 0.0);
  EXPECT_EQ(median({-7.5}), -7.5);
}

// Against sorting on random data of both parities.
TEST(Median, AgreesWithAFullSortOnRandomData) {
  std::mt19937_64 rng(42);
  std::normal_distribution<double> dist(1.0, 3.0);
  for (int n = 1; n <= 40; ++n) {
    std::vector<double> v(static_cast<std::size_t>(n));
    for (double& x : v) x = dist(rng);
    std::vector<double> s = v;
    std::sort(s.begin(), s.end());
    const std::size_t k = s.size();
    const double expected = k % 2 == 1 ? s[k / 2] : 0.5 * (s[k / 2 - 1] + s[k / 2]);
    EXPECT_EQ(median(v), expected) << "n = " << n;
  }
}

// The type-7 quantile (R's default, numpy's linear): linear between the order statistics around q·(n − 1).
TEST(Quantile, InterpolatesBetweenOrderStatistics) {
  const std::vector<double> v = {40.0, 10.0, 30.0, 20.0};  // sorted: 10 20 30 40
  EXPECT_EQ(quantile(v, 0.0), 10.0);
  EXPECT_EQ(quantile(v, 1.0), 40.0);
  EXPECT_DOUBLE_EQ(quantile(v, 0.5), 25.0);
  EXPECT_DOUBLE_EQ(quantile(v, 0.1), 13.0);  // h = 0.3
  EXPECT_DOUBLE_EQ(quantile(v, 0.9), 37.0);  // h = 2.7
  EXPECT_EQ(quantile({-7.5}, 0.9), -7.5);
}

TEST(Quantile, EmptyIsNaN) { EXPECT_TRUE(std::isnan(quantile({}, 0.5))); }

}  // namespace
}  // namespace edgc::core
