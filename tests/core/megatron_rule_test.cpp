// edgc-megatron, the rank rule of the paper's first author's Megatron-Core port (megatron_rule.hpp): each rule on
// hand-computed values, then whole series through the policy (loss and entropy signals, warm-up, fallback).
#include "edgc/core/megatron_rule.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "edgc/core/controller.hpp"
#include "expect_error.hpp"

namespace edgc::core {
namespace {

TEST(MegatronRule, RMinIsAQuarterOfRMax) {
  EXPECT_EQ(megatron_r_min(32), 8.0);
  EXPECT_EQ(megatron_r_min(128), 32.0);
  EXPECT_EQ(megatron_r_min(30), 7.5);  // the port passes max_rank / 4 unrounded
}

TEST(MegatronRule, SignalNamesAndTheirSteps) {
  EXPECT_EQ(megatron_signal_from_name("loss"), MegatronSignal::kLoss);
  EXPECT_EQ(megatron_signal_from_name("entropy"), MegatronSignal::kEntropy);
  EXPECT_EQ(megatron_signal_from_name("Loss"), std::nullopt);
  EXPECT_EQ(megatron_default_step(MegatronSignal::kLoss), 4);
  EXPECT_EQ(megatron_default_step(MegatronSignal::kEntropy), 8);
}

// r_max 32, r_min 8: r = 8 + 24·Δ/Δ_ref, rounded, clamped, rounded down to even.
TEST(MegatronRule, MapsTheNormalisedChangeLinearlyAndRoundsDownToEven) {
  EXPECT_EQ(megatron_map_rank(0.5, 1.0, 32).rank, 20);     // 8 + 12
  EXPECT_EQ(megatron_map_rank(0.25, 1.0, 32).rank, 14);    // 8 + 6
  EXPECT_EQ(megatron_map_rank(0.3, 1.0, 32).rank, 14);     // 15.2 → 15 → 14
  EXPECT_EQ(megatron_map_rank(0.3125, 1.0, 32).rank, 16);  // 15.5 → 16 (half to even) → 16
  EXPECT_EQ(megatron_map_rank(0.6, 2.0, 32).rank, 14);     // normalised by the reference: 0.3 as above
  const MegatronMapped none = megatron_map_rank(0.5, 1.0, 32);
  EXPECT_EQ(none.binding, RankBinding::kNone);
  const MegatronMapped flat = megatron_map_rank(0.0, 1.0, 32);  // no change: r_min, reached by the map itself
  EXPECT_EQ(flat.rank, 8);
  EXPECT_EQ(flat.binding, RankBinding::kNone);
  const MegatronMapped big = megatron_map_rank(2.0, 1.0, 32);  // 56 → clamped to r_max
  EXPECT_EQ(big.rank, 32);
  EXPECT_EQ(big.binding, RankBinding::kMax);
  EXPECT_EQ(megatron_map_rank(-1.0, 1.0, 32).binding, RankBinding::kMin);  // below r_min (never from |Δ|)
  EXPECT_EQ(megatron_map_rank(-1.0, 1.0, 32).rank, 8);
  // A reference change of 0 (equal first windows) maps to r_max instead of dividing by zero.
  EXPECT_EQ(megatron_map_rank(0.5, 0.0, 32).rank, 32);
  // r_max 12: r_min 3 is odd, and rounding down to even gives 2, below r_min, as in the port.
  EXPECT_EQ(megatron_map_rank(0.0, 1.0, 12).rank, 2);
}

TEST(MegatronRule, MovesAtMostOneStepPerWindowAndStartsWithinOneStepOfRMax) {
  // First decision: at most one step below r_max.
  RankUpdate u = megatron_limit_step({8, RankBinding::kNone}, std::nullopt, 32, 4);
  EXPECT_EQ(u.rank, 28);
  EXPECT_EQ(u.binding, RankBinding::kStep);
  u = megatron_limit_step({30, RankBinding::kNone}, std::nullopt, 32, 4);
  EXPECT_EQ(u.rank, 30);
  EXPECT_EQ(u.binding, RankBinding::kNone);
  // Later: at most ±step from the previous rank.
  EXPECT_EQ(megatron_limit_step({20, RankBinding::kNone}, 28, 32, 4).rank, 24);
  EXPECT_EQ(megatron_limit_step({26, RankBinding::kNone}, 24, 32, 4).rank, 26);
  u = megatron_limit_step({32, RankBinding::kMax}, 26, 32, 4);
  EXPECT_EQ(u.rank, 30);
  EXPECT_EQ(u.binding, RankBinding::kStep);
  EXPECT_EQ(megatron_limit_step({8, RankBinding::kNone}, 28, 32, 8).rank, 20);
}

// T_com(r) = η·r + c with η 1e-4 s, c 1 ms; t_bwd 2.1 ms; uncompressed 10 ms; r0 20 → t0 3 ms.
//   stage 1: 5.1 ms → r 41 → 44; stage 2: 7.2 ms → 62 → 64; stage 3: 9.3 ms → 83 → 84 > r_max 64: uncompressed;
//   stage 4: 11.4 ms > 10 ms: uncompressed.
TEST(MegatronRule, AlignsLaterStagesByTheirTimeBudget) {
  DacConfig dac;
  dac.enabled = true;
  dac.eta_s_per_rank = 1e-4;
  dac.c_s = 1e-3;
  dac.t_bwd_s = 2.1e-3;
  dac.t_uncompressed_s = 10e-3;
  const std::vector<StageRank> a = megatron_align(20, 5, dac, 64);
  ASSERT_EQ(a.size(), 5U);
  std::vector<int> ranks;
  for (const StageRank& s : a) ranks.push_back(s.rank);
  EXPECT_EQ(ranks, (std::vector<int>{20, 44, 64, 0, 0}));
  EXPECT_EQ(a[3].binding, RankBinding::kUncompressed);
  EXPECT_EQ(a[4].binding, RankBinding::kUncompressed);
  // An exact multiple of 4 goes one quantum up, as the port's (r // 4 + 1) * 4: η 0.25, c 0, t_bwd 2, r0 8 → t 4 →
  // r 16 → 20.
  dac.eta_s_per_rank = 0.25;
  dac.c_s = 0.0;
  dac.t_bwd_s = 2.0;
  dac.t_uncompressed_s = 100.0;
  EXPECT_EQ(megatron_align(8, 2, dac, 64)[1].rank, 20);
}

WindowObservation window(std::int64_t w, std::optional<double> loss, double entropy = 3.0) {
  WindowObservation o;
  o.window = w;
  o.first_iteration = 100 * w;
  o.end_iteration = 100 * (w + 1);
  o.sampled_iterations = 10;
  o.mean_loss = loss;
  o.stages = {{entropy, entropy, 3.0, 1000}, {entropy - 0.1, entropy - 0.1, 3.0, 1000}};
  return o;
}

ControllerConfig megatron_config(MegatronSignal signal) {
  ControllerConfig c;
  c.policy = "edgc-megatron";
  c.stages = 2;
  c.warmup.floor_iters = 300;  // 10 % of a 3,000-iteration run
  c.cqm.r_min = 4;             // ignored: r_min = r_max / 4
  c.cqm.r_max = 32;
  c.megatron_signal = signal;
  return c;
}

std::vector<int> ranks(Controller& c, const std::vector<WindowObservation>& series) {
  std::vector<int> out;
  for (const WindowObservation& o : series) {
    const WindowDecision d = c.decide(o);
    EXPECT_EQ(d.stages[0].rank, d.stages[1].rank);  // one rank for every stage (no stage alignment)
    out.push_back(d.stages[0].rank);
  }
  return out;
}

// Loss 10, 8 (reference change 2), then warm-up ends at iteration 300 (10 % of the run):
//   w2 7.0: Δ 1.0 → 0.5 → 20; first decision ≥ 32 − 4 → 28
//   w3 6.5: Δ 0.5 → 0.25 → 14 → 24      w4 6.4: Δ 0.1 → 9.2 → 9 → 8 → 20      w5 6.4: Δ 0 → 8 → 16
//   w6 no loss: 16 kept (fallback)      w7 6.0: Δ 0.4 against w5 → 12.8 → 13 → 12
//   w8 9.0: Δ 3 → 44 → 32 → 16
TEST(MegatronPolicy, LossSeriesFollowsEveryRule) {
  auto c = make_controller(megatron_config(MegatronSignal::kLoss), "s.json");
  EXPECT_EQ(c->policy(), "edgc-megatron");
  const std::vector<WindowObservation> series = {window(0, 10.0),         window(1, 8.0), window(2, 7.0),
                                                 window(3, 6.5),          window(4, 6.4), window(5, 6.4),
                                                 window(6, std::nullopt), window(7, 6.0), window(8, 9.0)};
  EXPECT_EQ(ranks(*c, series), (std::vector<int>{0, 0, 28, 24, 20, 16, 16, 12, 16}));
  auto again = make_controller(megatron_config(MegatronSignal::kLoss), "s.json");
  for (int w = 0; w < 2; ++w) EXPECT_TRUE(again->decide(series[static_cast<std::size_t>(w)]).warmup);
  EXPECT_EQ(again->decide(series[2]).stages[0].binding, RankBinding::kStep);
  for (int w = 3; w < 6; ++w) again->decide(series[static_cast<std::size_t>(w)]);
  EXPECT_EQ(again->decide(series[6]).stages[0].binding, RankBinding::kFallback);
  EXPECT_EQ(again->decide(series[7]).stages[0].binding, RankBinding::kNone);
}

// The entropy signal (mean over stages) with the 2025 version's step 8; the loss is ignored.
//   entropy 5, 4 (reference 1); w2 3.5: Δ 0.5 → 20, first ≥ 32 − 8 → 24; w3 3.5: Δ 0 → 8 → 16; w4 3.3: Δ 0.2 →
//   12.8 → 13 → 12
TEST(MegatronPolicy, EntropySeriesUsesStepEight) {
  auto c = make_controller(megatron_config(MegatronSignal::kEntropy), "s.json");
  const std::vector<WindowObservation> series = {window(0, 1.0, 5.0), window(1, 9.0, 4.0), window(2, 1.0, 3.5),
                                                 window(3, 5.0, 3.5), window(4, 1.0, 3.3)};
  EXPECT_EQ(ranks(*c, series), (std::vector<int>{0, 0, 24, 16, 12}));
  // compression.step given: it replaces the signal's default.
  ControllerConfig cfg = megatron_config(MegatronSignal::kEntropy);
  cfg.megatron_step = 4;
  auto four = make_controller(cfg, "s.json");
  EXPECT_EQ(ranks(*four, series), (std::vector<int>{0, 0, 28, 24, 20}));
}

// With DAC on, stage 1 takes the port's time-budget rank: η 0.25, c 0, t_bwd 0.5: stage 0 at 28 → t 7 → 7.5 → r 30
// → 32; at 24 → 6.5 → 26 → 28.
TEST(MegatronPolicy, DacAlignsTheLaterStagesAsThePortDoes) {
  ControllerConfig cfg = megatron_config(MegatronSignal::kLoss);
  cfg.dac.enabled = true;
  cfg.dac.eta_s_per_rank = 0.25;
  cfg.dac.c_s = 0.0;
  cfg.dac.t_bwd_s = 0.5;
  cfg.dac.t_uncompressed_s = 100.0;
  auto c = make_controller(cfg, "s.json");
  for (const WindowObservation& o : {window(0, 10.0), window(1, 8.0)}) c->decide(o);
  WindowDecision d = c->decide(window(2, 7.0));
  EXPECT_EQ(d.stages[0].rank, 28);
  EXPECT_EQ(d.stages[1].rank, 32);
  d = c->decide(window(3, 6.5));
  EXPECT_EQ(d.stages[0].rank, 24);
  EXPECT_EQ(d.stages[1].rank, 28);
}

// Too little signal for a reference (fewer than two windows): the port's default, r_max.
TEST(MegatronPolicy, StartsAtRMaxWithoutAReferenceAndHonoursALaterFixedWarmup) {
  ControllerConfig cfg = megatron_config(MegatronSignal::kLoss);
  cfg.warmup.floor_iters = 0;
  cfg.warmup.mode = WarmupConfig::Mode::kFixed;
  cfg.warmup.fixed_iters = 100;
  auto c = make_controller(cfg, "s.json");
  EXPECT_EQ(ranks(*c, {window(0, 10.0), window(1, 8.0), window(2, 8.0)}), (std::vector<int>{32, 32, 28}));
  cfg.megatron_step = -1;
  test::expect_config_error([&] { make_controller(cfg, "s.json"); }, "s.json", "compression.step", {">= 1"});
}

}  // namespace
}  // namespace edgc::core
