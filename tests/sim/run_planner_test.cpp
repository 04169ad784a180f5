// Whole runs without the engine: rank schedules, the memoised accumulation, the breakdown, the stage mapping of a
// trace and the controller-driven run planner.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "edgc/sim/run_planner.hpp"
#include "edgc/sim/whole_run.hpp"

namespace edgc::sim {
namespace {

DpSyncPlan plan(std::vector<int> ranks) {
  DpSyncPlan p;
  for (int r : ranks) p.push_back({r});
  return p;
}

IterationResult fake(double iteration_s, std::vector<double> sync_s) {
  IterationResult r;
  r.iteration_s = iteration_s;
  r.pipeline_end_s = iteration_s * 0.8;
  for (double s : sync_s) {
    StageResult st;
    st.dp_sync_s = s;
    st.compute_s = iteration_s * 0.5;
    st.tp_comm_s = iteration_s * 0.1;
    st.last_backward_end_s = r.pipeline_end_s;
    st.exposed_comm_s = iteration_s * 0.15;
    st.compression_s = 0.01;
    r.stages.push_back(st);
  }
  return r;
}

TEST(RunSchedule, MergesEqualNeighboursAndFindsPlans) {
  RunSchedule s;
  s.append(0, 10, plan({0, 0}));
  s.append(10, 20, plan({0, 0}));
  s.append(20, 25, plan({8, 16}));
  s.append(25, 25, plan({4, 4}));  // empty: ignored
  s.append(25, 40, plan({0, 0}));
  ASSERT_EQ(s.segments().size(), 3U);
  EXPECT_EQ(s.segments()[0].end, 20);
  EXPECT_EQ(s.iterations(), 40);
  EXPECT_EQ(s.plan_at(19), plan({0, 0}));
  EXPECT_EQ(s.plan_at(20), plan({8, 16}));
  EXPECT_EQ(s.plan_at(39), plan({0, 0}));
  EXPECT_THROW((void)s.plan_at(40), InternalError);
  EXPECT_THROW(s.append(41, 50, plan({0, 0})), InternalError);  // a gap
  const auto distinct = distinct_plans({&s});
  ASSERT_EQ(distinct.size(), 2U);
  EXPECT_EQ(distinct[1], plan({8, 16}));
}

TEST(Accumulate, WeighsEachPlanByItsIterations) {
  RunSchedule s;
  s.append(0, 30, plan({0, 0}));
  s.append(30, 100, plan({16, 32}));
  const std::vector<DpSyncPlan> plans = {plan({16, 32}), plan({0, 0})};
  const std::vector<IterationResult> results = {fake(1.5, {0.2, 0.3}), fake(2.0, {0.9, 0.4})};
  const RunTotals t = accumulate(s, plans, results);
  EXPECT_EQ(t.iterations, 100);
  EXPECT_EQ(t.compressed_iterations, 70);
  EXPECT_DOUBLE_EQ(t.training_time_s, 30 * 2.0 + 70 * 1.5);
  EXPECT_DOUBLE_EQ(t.iteration_time_s, (30 * 2.0 + 70 * 1.5) / 100);
  EXPECT_DOUBLE_EQ(t.comm_latency_s, (30 * 0.9 + 70 * 0.3) / 100);  // the slowest stage's sync
  EXPECT_DOUBLE_EQ(t.compressed_comm_latency_s, 0.3);
  EXPECT_DOUBLE_EQ(t.compressed_iteration_time_s, 1.5);
  ASSERT_EQ(t.stage_comm_latency_s.size(), 2U);
  EXPECT_DOUBLE_EQ(t.stage_comm_latency_s[0], (30 * 0.9 + 70 * 0.2) / 100);
  EXPECT_EQ(t.plan_iterations, (std::vector<std::int64_t>{70, 30}));
  EXPECT_THROW((void)accumulate(s, {plan({0, 0})}, {fake(1, {0.1, 0.1})}), InternalError);  // a plan is missing
}

TEST(Accumulate, EntropyPassesLengthenTheSampledIterations) {
  RunSchedule s;
  s.append(0, 30, plan({0, 0}));
  s.append(30, 100, plan({16, 32}));
  const std::vector<DpSyncPlan> plans = {plan({16, 32}), plan({0, 0})};
  RunTotals t = accumulate(s, plans, {fake(1.5, {0.2, 0.3}), fake(2.0, {0.9, 0.4})});
  const RunTotals before = t;
  add_entropy_passes(t, 20, 14, 0.01);  // every 5th iteration sampled, 14 of them compressed
  EXPECT_DOUBLE_EQ(t.training_time_s, before.training_time_s + 20 * 0.01);
  EXPECT_DOUBLE_EQ(t.iteration_time_s, t.training_time_s / 100);
  EXPECT_DOUBLE_EQ(t.breakdown.entropy_s, 20 * 0.01 / 100);
  EXPECT_DOUBLE_EQ(t.compressed_iteration_time_s, 1.5 + 14 * 0.01 / 70);
  EXPECT_DOUBLE_EQ(t.comm_latency_s, before.comm_latency_s);  // the passes are compute, not communication
  RunTotals unchanged = before;
  add_entropy_passes(unchanged, 0, 0, 0.01);
  EXPECT_DOUBLE_EQ(unchanged.training_time_s, before.training_time_s);
}

TEST(Breakdown, PartsSumToTheIterationTime) {
  for (const auto& r : {fake(2.0, {0.9, 0.4}), fake(1.0, {0.05, 0.3})}) {
    const IterationBreakdown b = breakdown(r);
    EXPECT_NEAR(b.compute_s + b.tp_comm_s + b.bubble_s + b.exposed_dp_comm_s + b.exposed_compression_s, r.iteration_s,
                1e-12);
    EXPECT_GE(b.exposed_compression_s, 0.0);
  }
}

TEST(MapStages, SplitsByParameterCount) {
  // Trace stages hold 10 %, 40 %, 50 % of the elements.
  const std::vector<std::int64_t> trace = {10, 40, 50};
  EXPECT_EQ(map_stages(trace, {1, 1}), (std::vector<int>{1, 2}));  // middles at 25 %, 75 %
  EXPECT_EQ(map_stages(trace, {1, 1, 1, 1}), (std::vector<int>{1, 1, 2, 2}));
  EXPECT_EQ(map_stages(trace, {0.1, 0.4, 0.5}), (std::vector<int>{0, 1, 2}));  // same split: identity
}

// A flat entropy curve: after warm-up EDGC keeps r_max (no entropy change, no reason to move).
class FlatSource final : public EntropyCurve {
 public:
  core::StageObservation at(int, double) const override {
    core::StageObservation o;
    o.entropy_gaussian = -6.0;
    o.entropy_histogram = -6.0;
    return o;
  }
  std::optional<double> loss(double) const override { return std::nullopt; }
};

core::ControllerConfig controller(const std::string& policy) {
  core::ControllerConfig c;
  c.policy = policy;
  c.stages = 2;
  c.stage_shapes = {{512, 1024}, {512, 1024}};
  c.cqm.r_min = 8;
  c.cqm.r_max = 64;
  c.cqm.step = 8;
  c.warmup.stable_windows = 2;
  c.warmup.floor_iters = 30;
  return c;
}

TEST(PlanPolicy, WarmUpThenRanksFromTheController) {
  core::GdsConfig g;
  g.window_iters = 10;
  g.alpha = 0.2;
  const FlatSource flat;
  const PolicyRun none = plan_policy(controller("none"), g, 95, flat);
  ASSERT_EQ(none.schedule.segments().size(), 1U);
  EXPECT_EQ(none.schedule.iterations(), 95);
  EXPECT_FALSE(none.warmup_end);
  const PolicyRun st = plan_policy(controller("static"), g, 95, flat);
  ASSERT_EQ(st.schedule.segments().size(), 2U);
  EXPECT_EQ(st.windows, 10);
  ASSERT_TRUE(st.warmup_end);
  EXPECT_EQ(*st.warmup_end, 30);  // stable from the start: warm-up ends at its floor
  EXPECT_EQ(st.schedule.plan_at(29), plan({0, 0}));
  EXPECT_EQ(st.schedule.plan_at(94), plan({64, 64}));
  const PolicyRun ed = plan_policy(controller("edgc"), g, 95, flat);
  EXPECT_EQ(ed.schedule.plan_at(94), plan({64, 64}));
  // The GDS samples every round(1/α) = 5th iteration: 0, 5, …, 90 (19), of which 30, 35, …, 90 (13) compressed.
  EXPECT_EQ(ed.sampled_iterations, 19);
  EXPECT_EQ(ed.sampled_compressed_iterations, 13);
}

}  // namespace
}  // namespace edgc::sim
