// Seeded compute variability (sim/include/edgc/sim/variability.hpp): the draws themselves, and what they do to a
// simulated iteration. Tests that compare simulations run each one in a forked child; the others run at most one
// simulation in this process (CTest runs the binary once per test).
#include "edgc/sim/variability.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/sim/cost_model.hpp"
#include "edgc/sim/iteration.hpp"
#include "edgc/sim/layout.hpp"
#include "edgc/sim/platform.hpp"
#include "iteration_test_util.hpp"
#include "sim_test_util.hpp"

namespace edgc::sim {
namespace {

using test::engine;

// One node of 4 GPUs on fast links, so that compute dominates.
ClusterSpec four_gpus() {
  ClusterSpec s = test::h100_like(1);
  s.gpus_per_node = 4;
  s.nics_per_node = 1;
  return s;
}

ModelSpec small_model(int global_batch) { return test::small_gpt(2048, 512, 1024, global_batch); }

ParallelSpec layout_of(int tp, int pp, int dp) {
  ParallelSpec p;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.microbatches = 0;
  return p;
}

// One simulation on four_gpus(), returned as text; the extra number is the nominal compute of one GPU
// (microbatches · (t_f + t_b) of stage 0).
std::string simulate(const ParallelSpec& layout, int microbatches, const ComputeVariability& v) {
  const ClusterSpec cluster = four_gpus();
  const Platform platform = Platform::build(engine(), cluster, NetworkProfile{});
  const ModelSpec model = small_model(microbatches * layout.dp);
  const ParallelSpec par = validate(model, layout, cluster);
  IterationOptions options;
  options.variability = v;
  const IterationResult r =
      simulate_iteration(engine(), platform, model, par, CostParams{}, uncompressed_plan(par.pp), options);
  const ComputeCost c = stage_compute(model, par, cluster.gpu, CostParams{}, 0);
  return test::to_text(r, {microbatches * (c.forward_s + c.backward_s)});
}

const ParallelSpec kPipeline = layout_of(1, 4, 1);

TEST(Variability, JitterFactorHasMeanOneAndTheGivenCv) {
  for (const double cv : {0.05, 0.3}) {
    ComputeVariability v;
    v.compute_jitter_cv = cv;
    v.seed = 2024;
    double sum = 0.0;
    double sum_sq = 0.0;
    int n = 0;
    for (int rank = 0; rank < 64; ++rank)
      for (int mb = 0; mb < 512; ++mb)
        for (const bool backward : {false, true}) {
          const double f = jitter_factor(v, rank, mb, 0, backward);
          ASSERT_GT(f, 0.0);
          sum += f;
          sum_sq += f * f;
          ++n;
        }
    const double mean = sum / n;
    const double sd = std::sqrt(sum_sq / n - mean * mean);
    EXPECT_NEAR(mean, 1.0, 4 * cv / std::sqrt(n)) << "cv " << cv;
    EXPECT_NEAR(sd / cv, 1.0, 0.03) << "cv " << cv;
  }
}

TEST(Variability, DrawsArePureFunctionsOfSeedAndPass) {
  ComputeVariability v{0.2, 0.5, 2.0, 7};
  EXPECT_EQ(jitter_factor(v, 3, 5, 1, true), jitter_factor(v, 3, 5, 1, true));
  EXPECT_NE(jitter_factor(v, 3, 5, 1, true), jitter_factor(v, 3, 5, 1, false));
  EXPECT_NE(jitter_factor(v, 3, 5, 1, true), jitter_factor(v, 3, 5, 0, true));
  EXPECT_NE(jitter_factor(v, 3, 5, 1, true), jitter_factor(v, 4, 5, 1, true));
  ComputeVariability other = v;
  other.seed = 8;
  EXPECT_NE(jitter_factor(v, 3, 5, 1, true), jitter_factor(other, 3, 5, 1, true));
  EXPECT_EQ(jitter_factor(ComputeVariability{}, 3, 5, 1, true), 1.0);
  // Stragglers: independent per GPU at the given rate; never at 0, always at 1.
  int stragglers = 0;
  for (int rank = 0; rank < 4000; ++rank) stragglers += is_straggler(v, rank) ? 1 : 0;
  EXPECT_NEAR(stragglers / 4000.0, 0.5, 0.03);
  v.straggler_probability = 1.0;
  for (int rank = 0; rank < 100; ++rank) {
    EXPECT_TRUE(is_straggler(v, rank));
    EXPECT_FALSE(is_straggler(ComputeVariability{}, rank));
  }
}

TEST(Variability, NoneIsBitIdenticalToTheDefaults) {
  const std::string plain = test::in_child([] { return simulate(kPipeline, 8, {}); }).value_or("plain failed");
  // Zero jitter and zero probability: the seed and the slowdown change nothing.
  const std::string zero = test::in_child([] {
                             return simulate(kPipeline, 8, {0.0, 0.0, 4.0, 99});
                           }).value_or("zero failed");
  EXPECT_EQ(plain, zero);
}

TEST(Variability, SameSeedSameResultOtherSeedOtherTime) {
  const ComputeVariability v{0.2, 0.3, 1.5, 7};
  ComputeVariability w = v;
  w.seed = 8;
  const std::string a = test::in_child([&v] { return simulate(kPipeline, 8, v); }).value_or("a failed");
  const std::string b = test::in_child([&v] { return simulate(kPipeline, 8, v); }).value_or("b failed");
  const std::string c = test::in_child([&w] { return simulate(kPipeline, 8, w); }).value_or("c failed");
  EXPECT_EQ(a, b);
  const double ta = test::from_text(a).result.iteration_s;
  const double tc = test::from_text(c).result.iteration_s;
  EXPECT_GT(ta, 0.0);
  EXPECT_GT(tc, 0.0);
  EXPECT_NE(ta, tc);
}

// 1F1B waits on the slowest pass at every step, so mean-one jitter lengthens the iteration on average, the more
// so the larger the jitter.
TEST(Variability, MeanIterationTimeGrowsWithJitter) {
  const double nominal = test::simulate_in_child([] { return simulate(kPipeline, 8, {}); }).result.iteration_s;
  std::vector<double> means;
  for (const double cv : {0.1, 0.3}) {
    double sum = 0.0;
    const int seeds = 20;
    for (int seed = 1; seed <= seeds; ++seed) {
      const ComputeVariability v{cv, 0.0, 1.0, static_cast<std::uint64_t>(seed)};
      sum += test::simulate_in_child([&v] { return simulate(kPipeline, 8, v); }).result.iteration_s;
    }
    means.push_back(sum / seeds);
  }
  EXPECT_GT(nominal, 0.0);
  EXPECT_GT(means[0], nominal * 1.01) << "cv 0.1: mean " << means[0] << " s, nominal " << nominal << " s";
  EXPECT_GT(means[1], means[0] * 1.02) << "cv 0.3: mean " << means[1] << " s, cv 0.1: " << means[0] << " s";
}

// One stage, DP only: every GPU computes its micro-batches back to back, so a straggler's compute is exactly
// slowdown × nominal, and the iteration (compute, then the DP ring) grows by (slowdown − 1) × nominal.
TEST(Variability, StragglerStretchesComputeByItsSlowdown) {
  const ParallelSpec dp_only = layout_of(1, 1, 4);
  const double k = 2.5;
  const test::ChildResult plain = test::simulate_in_child([&dp_only] { return simulate(dp_only, 4, {}); });
  const test::ChildResult slow = test::simulate_in_child([&dp_only, k] {
    return simulate(dp_only, 4, {0.0, 1.0, k, 3});
  });
  ASSERT_EQ(plain.result.stages.size(), 1U);
  ASSERT_EQ(slow.result.stages.size(), 1U);
  ASSERT_EQ(plain.extra.size(), 1U);
  const double nominal = plain.extra[0];
  EXPECT_NEAR(plain.result.stages[0].compute_s / nominal, 1.0, 1e-9);
  EXPECT_NEAR(slow.result.stages[0].compute_s / (k * nominal), 1.0, 1e-9);
  EXPECT_NEAR((slow.result.iteration_s - plain.result.iteration_s) / ((k - 1) * nominal), 1.0, 1e-9);
  EXPECT_GT(slow.result.stages[0].dp_sync_s, 0.0);
  EXPECT_NEAR(slow.result.stages[0].dp_sync_s / plain.result.stages[0].dp_sync_s, 1.0, 1e-9);
}

TEST(Variability, RejectsInvalidValuesNamingTheField) {
  const Platform platform = Platform::build(engine(), four_gpus(), NetworkProfile{});
  const ModelSpec model = small_model(8);
  const ParallelSpec par = layout_of(1, 4, 1);
  const auto field_of = [&](const ComputeVariability& v) -> std::string {
    IterationOptions options;
    options.variability = v;
    try {
      simulate_iteration(engine(), platform, model, par, CostParams{}, uncompressed_plan(4), options);
    } catch (const ConfigError& e) {
      return e.field();
    }
    return "(nothing thrown)";
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(field_of({-0.1, 0.0, 1.0, 0}), "variability.compute_jitter_cv");
  EXPECT_EQ(field_of({nan, 0.0, 1.0, 0}), "variability.compute_jitter_cv");
  EXPECT_EQ(field_of({0.0, -0.01, 1.0, 0}), "variability.straggler_probability");
  EXPECT_EQ(field_of({0.0, 1.5, 1.0, 0}), "variability.straggler_probability");
  EXPECT_EQ(field_of({0.0, nan, 1.0, 0}), "variability.straggler_probability");
  EXPECT_EQ(field_of({0.0, 0.5, 0.9, 0}), "variability.straggler_slowdown");
  EXPECT_EQ(field_of({0.0, 0.5, std::numeric_limits<double>::infinity(), 0}), "variability.straggler_slowdown");
  // The boundaries are valid (validate() alone: the engine above must not run).
  EXPECT_NO_THROW(validate(ComputeVariability{0.0, 1.0, 1.0, 0}));
  EXPECT_NO_THROW(validate(ComputeVariability{2.0, 0.0, 10.0, 0}));
}

}  // namespace
}  // namespace edgc::sim
