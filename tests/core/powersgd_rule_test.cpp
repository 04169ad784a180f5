#include "edgc/core/powersgd_rule.hpp"

#include <gtest/gtest.h>

namespace edgc::core {
namespace {

// (m + n)·r·2 < m·n: 480×1920 compresses up to r = 191 (2400·191·2 = 916,800 < 921,600), not at 192 (equal).
TEST(PowerSgdRule, TheDefaultRateNeedsTheFactorsUnderHalfTheMatrix) {
  EXPECT_TRUE(powersgd_compresses(480, 1920, 191));
  EXPECT_FALSE(powersgd_compresses(480, 1920, 192));
  EXPECT_FALSE(powersgd_compresses(1, 1024, 1));  // a vector never compresses
}

TEST(PowerSgdRule, TheRateScalesTheThreshold) {
  EXPECT_TRUE(powersgd_compresses(480, 1920, 383, 1.0));  // 2400·383 = 919,200 < 921,600
  EXPECT_FALSE(powersgd_compresses(480, 1920, 384, 1.0));
  EXPECT_FALSE(powersgd_compresses(480, 1920, 96, 4.0));  // 2400·96·4 = 921,600: not below
  EXPECT_TRUE(powersgd_compresses(480, 1920, 95, 4.0));
}

// Large matrices (a padded vocabulary's embedding shard) stay exact in double.
TEST(PowerSgdRule, LargeShapesAreExact) {
  const std::int64_t m = 50304, n = 12288;
  const std::int64_t r = (m * n - 1) / ((m + n) * 2);  // the largest compressing rank
  EXPECT_TRUE(powersgd_compresses(m, n, static_cast<int>(r)));
  EXPECT_FALSE(powersgd_compresses(m, n, static_cast<int>(r) + 1));
}

}  // namespace
}  // namespace edgc::core
