// Whole runs as `simulate` runs them: the property the memoisation rests on (simulating each distinct rank vector
// once gives the same totals as simulating every iteration of the run on its own), the stage-separable
// composition, and input errors coming back from the children. Simulations run in forked children, so this
// binary may hold many tests. The schedules, accumulation and run planner: tests/sim/run_planner_test.cpp.
#include "edgc/sim/whole_run.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/engine/whole_run_plan.hpp"
#include "edgc/scenario/cluster_config.hpp"
#include "edgc/scenario/compression_config.hpp"
#include "edgc/scenario/config.hpp"
#include "edgc/scenario/model_config.hpp"
#include "edgc/sim/layout.hpp"
#include "expect_error.hpp"

namespace edgc::sim {
namespace {

using engine::plan_label;

DpSyncPlan plan(std::vector<int> ranks) {
  DpSyncPlan p;
  for (int r : ranks) p.push_back({r});
  return p;
}

// The small test scenario, read the way `simulate` reads it.
struct Small {
  engine::SimulationSetup setup;
  scenario::CompressionSettings compression;
  std::int64_t iterations = 0;
};
Small read_small(const std::vector<std::string>& sets = {}) {
  scenario::Scenario sc =
      scenario::load_scenario(std::string(EDGC_SOURCE_DIR) + "/tests/data/simulate/small.json", sets);
  Small s;
  s.setup.cluster = scenario::read_cluster(sc);
  s.setup.network = scenario::read_network(sc);
  const scenario::ModelConfig mc = scenario::read_model_config(sc, s.setup.cluster.gpu);
  s.setup.model = mc.model;
  s.setup.cost = mc.cost;
  s.setup.parallel = validate(mc.model, mc.parallel, s.setup.cluster, sc.where());
  s.compression = scenario::read_compression(sc);
  s.iterations = sc.integer("run.iterations", 0);
  return s;
}

TEST(Memoisation, EqualsSimulatingEveryIteration) {
  Small s = read_small();
  core::ControllerConfig cc = s.compression.controller;
  cc.stages = s.setup.parallel.pp;
  cc.stage_shapes.assign(2, {512, 1024});
  scenario::apply_warmup_bounds(cc.warmup, s.compression.warmup_floor_fraction, s.compression.warmup_ceiling_fraction,
                                s.iterations, "test");
  engine::SyntheticEntropy curve;
  curve.start_nats = -4.0;
  curve.end_nats = -6.0;
  curve.decay_fraction = 0.15;
  curve.stage_step_nats = -0.2;
  curve.noise_nats = 0.05;
  curve.seed = 7;
  const auto source = std::make_unique<sim::SyntheticCurve>(curve, "test");
  const engine::PolicyRun run = engine::plan_policy(cc, s.compression.gds, s.iterations, *source);
  const auto plans = distinct_plans({&run.schedule});
  ASSERT_GE(plans.size(), 3U) << "the test needs ranks that move";
  const std::vector<IterationResult> once = engine::simulate_plans(s.setup, plans, false, 2);
  const RunTotals memo = accumulate(run.schedule, plans, once);

  std::vector<DpSyncPlan> every;
  for (std::int64_t i = 0; i < run.schedule.iterations(); ++i) every.push_back(run.schedule.plan_at(i));
  const std::vector<IterationResult> each = engine::simulate_plans(s.setup, every, false, 2);
  double total = 0.0;
  double latency = 0.0;
  double exposed = 0.0;
  for (const IterationResult& r : each) {
    total += r.iteration_s;
    latency += comm_latency_s(r);
    exposed += breakdown(r).exposed_dp_comm_s;
  }
  const auto n = static_cast<double>(each.size());
  EXPECT_NEAR(memo.training_time_s, total, 1e-12 * total);
  EXPECT_NEAR(memo.comm_latency_s, latency / n, 1e-12 * latency / n);
  EXPECT_NEAR(memo.breakdown.exposed_dp_comm_s, exposed / n, 1e-12 * (exposed / n));
  // The simulation is deterministic: the same plan in another process gives bit-identical times.
  for (std::size_t i = 0; i < every.size(); ++i) {
    const auto k = static_cast<std::size_t>(std::find(plans.begin(), plans.end(), every[i]) - plans.begin());
    ASSERT_EQ(each[i].iteration_s, once[k].iteration_s) << "iteration " << i;
  }
}

void expect_same_iteration(const IterationResult& a, const IterationResult& b, const std::string& what) {
  const auto close = [&](double x, double y, const std::string& field) {
    EXPECT_NEAR(x, y, 1e-12 * std::max(std::abs(x), std::abs(y))) << what << ": " << field;
  };
  close(a.iteration_s, b.iteration_s, "iteration_s");
  close(a.pipeline_end_s, b.pipeline_end_s, "pipeline_end_s");
  ASSERT_EQ(a.stages.size(), b.stages.size());
  for (std::size_t s = 0; s < a.stages.size(); ++s) {
    const StageResult& x = a.stages[s];
    const StageResult& y = b.stages[s];
    const std::string at = "stage " + std::to_string(s) + ".";
    EXPECT_EQ(x.powersgd_rank, y.powersgd_rank) << what;
    close(x.last_backward_end_s, y.last_backward_end_s, at + "last_backward_end_s");
    close(x.dp_sync_s, y.dp_sync_s, at + "dp_sync_s");
    close(x.finish_s, y.finish_s, at + "finish_s");
    close(x.dp_comm_s, y.dp_comm_s, at + "dp_comm_s");
    close(x.exposed_comm_s, y.exposed_comm_s, at + "exposed_comm_s");
    close(x.compression_s, y.compression_s, at + "compression_s");
    close(x.compute_s, y.compute_s, at + "compute_s");
    close(x.tp_comm_s, y.tp_comm_s, at + "tp_comm_s");
    close(x.bubble_s, y.bubble_s, at + "bubble_s");
    close(x.sync_end_s, y.sync_end_s, at + "sync_end_s");
    close(x.embedding_sync_s, y.embedding_sync_s, at + "embedding_sync_s");
    close(x.optimizer_s, y.optimizer_s, at + "optimizer_s");
  }
}

// A layout where every node holds one pipeline stage (tp 2 x dp 2 = 4 GPUs per node under tp-dp-pp, 4 stages on
// 4 nodes, star fabric): any rank vector's iteration equals its composition from uniform-rank iterations, with
// and without compute jitter and stragglers. And the small scenario's tp-pp-dp order, which puts two stages in a
// node, is not separable.
TEST(Composition, EqualsSimulatingMixedPlansWhereStagesAreSeparable) {
  EXPECT_FALSE(stages_separable(read_small().setup.cluster, read_small().setup.parallel));
  for (const bool jitter : {false, true}) {
    Small s = read_small({"cluster.nodes=4", "parallelism.pp=4", "parallelism.order=tp-dp-pp"});
    if (jitter) {
      s.setup.variability.compute_jitter_cv = 0.1;
      s.setup.variability.straggler_probability = 0.2;
      s.setup.variability.straggler_slowdown = 1.5;
      s.setup.variability.seed = 3;
    }
    ASSERT_TRUE(stages_separable(s.setup.cluster, s.setup.parallel));
    const std::vector<DpSyncPlan> mixed = {plan({8, 64, 0, 16}), plan({64, 0, 8, 0}), plan({0, 0, 16, 64}),
                                           plan({16, 8, 64, 8})};
    const std::vector<DpSyncPlan> basis = separable_basis(mixed);
    ASSERT_EQ(basis.size(), 4U);  // ranks 0, 8, 16 and 64, each on every stage
    std::vector<DpSyncPlan> all = basis;
    all.insert(all.end(), mixed.begin(), mixed.end());
    const std::vector<IterationResult> r = engine::simulate_plans(s.setup, all, false, 2);
    const std::vector<IterationResult> basis_results(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(basis.size()));
    for (std::size_t k = 0; k < mixed.size(); ++k) {
      const IterationResult composed = compose_separable(mixed[k], basis, basis_results);
      expect_same_iteration(composed, r[basis.size() + k], plan_label(mixed[k]) + (jitter ? " with jitter" : ""));
    }
    // A uniform plan composes to itself.
    expect_same_iteration(compose_separable(basis[1], basis, basis_results), basis_results[1], "uniform");
  }
}

TEST(SimulatePlans, ChildInputErrorsComeBackAsConfigErrors) {
  Small s = read_small();
  // One entry for two stages.
  edgc::test::expect_config_error([&] { (void)engine::simulate_plans(s.setup, {plan({8})}, false, 1); }, std::nullopt,
                                  "dp_sync");
}

}  // namespace
}  // namespace edgc::sim
