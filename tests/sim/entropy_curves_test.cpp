// The entropy curves a run is planned on: the synthetic decay's closed form and its bounds, and a trace's measured
// entropy mapped onto the run (iteration axis scaled, linear interpolation, held outside, stages by parameters).
#include <gtest/gtest.h>

#include <cmath>

#include "edgc/core/error.hpp"
#include "edgc/sim/entropy_curves.hpp"
#include "expect_error.hpp"

namespace edgc::sim {
namespace {

TEST(SyntheticCurve, FollowsTheExponentialDecayWithAStageStep) {
  SyntheticEntropy s;
  s.start_nats = -4.0;
  s.end_nats = -6.0;
  s.decay_fraction = 0.2;
  s.stage_step_nats = -0.5;
  const SyntheticCurve c(s, "test.json");
  EXPECT_DOUBLE_EQ(*c.at(0, 0.0).entropy_gaussian, -4.0);
  EXPECT_DOUBLE_EQ(*c.at(2, 0.0).entropy_histogram, -5.0);
  EXPECT_DOUBLE_EQ(*c.at(0, 0.4).entropy_gaussian, -6.0 + 2.0 * std::exp(-2.0));
  EXPECT_FALSE(c.loss(0.5));
}

TEST(SyntheticCurve, NoiseHasTheRequestedSpreadAndIsAFixedFunctionOfSeedStageAndFraction) {
  SyntheticEntropy s;
  s.start_nats = s.end_nats = -5.0;
  s.noise_nats = 0.1;
  s.seed = 3;
  const SyntheticCurve c(s, "test.json");
  double sum = 0.0, sq = 0.0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const double d = *c.at(1, i / static_cast<double>(n)).entropy_gaussian + 5.0;
    EXPECT_LE(std::abs(d), 0.1 * std::sqrt(3.0) + 1e-12);
    sum += d;
    sq += d * d;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.005);
  EXPECT_NEAR(std::sqrt(sq / n), 0.1, 0.005);
  EXPECT_EQ(*c.at(1, 0.25).entropy_gaussian, *SyntheticCurve(s, "x").at(1, 0.25).entropy_gaussian);
  s.seed = 4;
  EXPECT_NE(*c.at(1, 0.25).entropy_gaussian, *SyntheticCurve(s, "x").at(1, 0.25).entropy_gaussian);
}

TEST(SyntheticCurve, RejectsADecayThatIsNotPositiveAndNegativeNoiseNamingTheKey) {
  SyntheticEntropy s;
  s.decay_fraction = 0.0;
  edgc::test::expect_config_error([&] { SyntheticCurve c(s, "scen.json"); }, std::nullopt, std::nullopt,
                                  {"entropy.synthetic.decay_fraction"});
  s.decay_fraction = 0.1;
  s.noise_nats = -1.0;
  EXPECT_THROW(SyntheticCurve(s, "scen.json"), ConfigError);
}

TraceEntropy two_stage_trace() {
  TraceEntropy t;
  t.path = "traces/t";
  t.steps = 100;
  t.stage_elements = {200, 200};
  for (const auto& [it, h0, h1, loss] : {std::tuple{10, -4.0, -3.0, 5.0}, {50, -6.0, -5.0, 3.0}}) {
    TraceEntropyPoint p;
    p.iteration = it;
    p.loss = loss;
    p.stages.resize(2);
    p.stages[0].entropy_gaussian = h0;
    p.stages[0].entropy_histogram = h0 - 1.0;
    p.stages[1].entropy_gaussian = h1;
    p.stages[1].entropy_histogram = std::nullopt;  // a gap: the nearer point's value
    p.stages[1].elements = 300;
    t.points.push_back(p);
  }
  return t;
}

TEST(TraceCurve, ScalesTheTraceOverTheRunInterpolatesAndHoldsOutside) {
  const TraceCurve c(two_stage_trace(), {1.0, 1.0});  // equal halves: simulated stage s reads trace stage s
  EXPECT_EQ(c.stage_map(), (std::vector<int>{0, 1}));
  EXPECT_DOUBLE_EQ(*c.at(0, 0.0).entropy_gaussian, -4.0);   // before the first capture: held
  EXPECT_DOUBLE_EQ(*c.at(0, 0.3).entropy_gaussian, -5.0);   // trace iteration 30: half way from 10 to 50
  EXPECT_DOUBLE_EQ(*c.at(0, 0.3).entropy_histogram, -6.0);  // both estimators
  EXPECT_DOUBLE_EQ(*c.at(1, 0.9).entropy_gaussian, -5.0);   // after the last capture: held
  EXPECT_DOUBLE_EQ(*c.loss(0.2), 4.5);
  EXPECT_FALSE(c.at(1, 0.3).entropy_histogram);
  EXPECT_EQ(c.at(1, 0.3).elements, 300);
}

TEST(TraceCurve, MapsSimulatedStagesByTheirShareOfTheParameters) {
  // Trace stage 0 holds the first quarter of the parameters. Four equal simulated stages have their middles at
  // 1/8, 3/8, 5/8 and 7/8 of the parameters: only the first lies in trace stage 0.
  TraceEntropy t = two_stage_trace();
  t.stage_elements = {100, 300};
  const TraceCurve c(t, {1.0, 1.0, 1.0, 1.0});
  EXPECT_EQ(c.stage_map(), (std::vector<int>{0, 1, 1, 1}));
  EXPECT_DOUBLE_EQ(*c.at(1, 0.3).entropy_gaussian, -4.0);  // trace stage 1, half way from -3 to -5
}

TEST(TraceCurve, RejectsATraceWithoutCapturesOrLength) {
  TraceEntropy t = two_stage_trace();
  t.points.clear();
  EXPECT_THROW(TraceCurve(t, {1.0}), TraceFormatError);
  t = two_stage_trace();
  t.steps = 0;
  EXPECT_THROW(TraceCurve(t, {1.0}), TraceFormatError);
}

}  // namespace
}  // namespace edgc::sim
