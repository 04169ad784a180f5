#include "edgc/core/window_accumulator.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "edgc/core/error.hpp"

namespace edgc::core {
namespace {

StageObservation sample(std::optional<double> g, std::optional<double> h, std::optional<double> k, std::int64_t n) {
  StageObservation o;
  o.entropy_gaussian = g;
  o.entropy_histogram = h;
  o.excess_kurtosis = k;
  o.elements = n;
  return o;
}

TEST(WindowAccumulator, EachEstimatorIsAveragedOverTheSamplesThatHadIt) {
  WindowAccumulator w(2);
  const double inf = std::numeric_limits<double>::infinity();
  w.add(0, sample(1.0, 2.0, std::nullopt, 10));
  w.add(0, sample(3.0, -inf, 0.5, 20));  // a non-finite histogram entropy is skipped, not averaged in
  w.add(0, sample(std::numeric_limits<double>::quiet_NaN(), 4.0, 1.5, 30));
  const std::vector<StageObservation> m = w.means();
  ASSERT_EQ(m.size(), 2U);
  EXPECT_EQ(*m[0].entropy_gaussian, 2.0);   // (1 + 3) / 2
  EXPECT_EQ(*m[0].entropy_histogram, 3.0);  // (2 + 4) / 2
  EXPECT_EQ(*m[0].excess_kurtosis, 1.0);    // (0.5 + 1.5) / 2
  EXPECT_EQ(m[0].elements, 60);
  EXPECT_EQ(w.elements(0), 60);
  // A stage with no sample has no estimate: the controller falls back.
  EXPECT_FALSE(m[1].entropy_gaussian || m[1].entropy_histogram || m[1].excess_kurtosis);
  EXPECT_EQ(m[1].elements, 0);
}

TEST(WindowAccumulator, ResetStartsAnEmptyWindow) {
  WindowAccumulator w(1);
  w.add(0, sample(5.0, 5.0, 5.0, 7));
  w.reset();
  w.add(0, sample(1.0, std::nullopt, std::nullopt, 1));
  const StageObservation m = w.means().front();
  EXPECT_EQ(*m.entropy_gaussian, 1.0);
  EXPECT_FALSE(m.entropy_histogram.has_value());
  EXPECT_EQ(m.elements, 1);
}

TEST(WindowAccumulator, RejectsNoStagesAndAStageOutOfRange) {
  EXPECT_THROW(WindowAccumulator(0), InternalError);
  WindowAccumulator w(1);
  EXPECT_THROW(w.add(1, sample(1.0, 1.0, 1.0, 1)), std::out_of_range);
}

}  // namespace
}  // namespace edgc::core
