#include "edgc/core/least_squares.hpp"

#include <gtest/gtest.h>

namespace edgc::core {
namespace {

TEST(LeastSquares, AnExactLineIsRecovered) {
  LineSums s;
  for (const double x : {1.0, 2.0, 4.0, 8.0}) s.add(x, 3.0 + 0.5 * x);
  EXPECT_EQ(s.w, 4.0);
  EXPECT_NEAR(s.slope(), 0.5, 1e-12);
  EXPECT_NEAR(s.intercept(), 3.0, 1e-12);
  EXPECT_NEAR(s.intercept_for(s.slope()), 3.0, 1e-12);
}

// y = 0, 1, 1, 2 at x = 0..3: b = 0.6, a = 0.1 (the textbook normal equations).
TEST(LeastSquares, NoisyPointsGiveTheNormalEquationsSolution) {
  LineSums s;
  const double ys[] = {0.0, 1.0, 1.0, 2.0};
  for (int x = 0; x < 4; ++x) s.add(x, ys[x]);
  EXPECT_NEAR(s.slope(), 0.6, 1e-12);
  EXPECT_NEAR(s.intercept(), 0.1, 1e-12);
  EXPECT_NEAR(s.intercept_for(0.6), 0.1, 1e-12);
}

// Weights count a point that many times.
TEST(LeastSquares, AWeightCountsThePointThatManyTimes) {
  LineSums weighted;
  LineSums repeated;
  weighted.add(1.0, 2.0, 3.0);
  weighted.add(4.0, 1.0);
  for (int i = 0; i < 3; ++i) repeated.add(1.0, 2.0);
  repeated.add(4.0, 1.0);
  EXPECT_DOUBLE_EQ(weighted.slope(), repeated.slope());
  EXPECT_DOUBLE_EQ(weighted.intercept(), repeated.intercept());
}

TEST(LeastSquares, OneDistinctXLeavesTheLineUndetermined) {
  LineSums s;
  s.add(2.0, 1.0);
  s.add(2.0, 3.0);
  EXPECT_EQ(s.det(), 0.0);
}

}  // namespace
}  // namespace edgc::core
