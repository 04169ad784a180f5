#include <gtest/gtest.h>

#include <tuple>

#include <cmath>
#include <numbers>

#include "edgc/core/controller.hpp"
#include "edgc/core/error.hpp"
#include "edgc/core/gds.hpp"
#include "edgc/core/random.hpp"
#include "expect_error.hpp"

namespace edgc::core {
namespace {

TEST(Entropy, GaussianClosedFormAndHistogramTracksIt) {
  EXPECT_NEAR(gaussian_entropy(1.0), 0.5 * std::log(2 * std::numbers::pi * std::numbers::e), 1e-12);
  EXPECT_NEAR(gaussian_entropy(0.01) - gaussian_entropy(0.02), -std::log(2.0), 1e-12);
  // Histogram of N(0, σ²) samples with a fixed layout: its entropy is close to the Gaussian one, and the
  // difference between σ and σ/2 matches ln 2 — the property the CQM rule relies on.
  Rng rng(5);
  const HistogramLayout layout = HistogramLayout::around(0.0, 1.0, 16.0, 16.0);
  double h[2];
  for (int k = 0; k < 2; ++k) {
    const double sigma = k == 0 ? 1.0 : 0.5;
    std::vector<double> counts(static_cast<std::size_t>(layout.bins), 0.0);
    for (int i = 0; i < 400'000; ++i) {
      const double x = sigma * rng.normal();
      const auto b = static_cast<std::int64_t>(std::floor((x - layout.lo) / layout.bin_width));
      counts[static_cast<std::size_t>(b)] += 1.0;
    }
    h[k] = histogram_entropy(counts, layout.bin_width);
    EXPECT_NEAR(h[k], gaussian_entropy(sigma), 0.01);
  }
  EXPECT_NEAR(h[0] - h[1], std::log(2.0), 0.01);
  EXPECT_TRUE(std::isnan(histogram_entropy(std::vector<double>(4, 0.0), 1.0)));
  EXPECT_THROW(parse_entropy_estimator("shannon", "f.json", "compression.estimator"), ConfigError);
}

TEST(Gds, SamplesEveryPeriodAndSharesBlocksAcrossRanks) {
  GradientDataSampler g({100, 0.1, 0.25, 4096, 7});
  EXPECT_EQ(g.period(), 10);
  EXPECT_TRUE(g.samples_iteration(30));
  EXPECT_FALSE(g.samples_iteration(31));
  EXPECT_EQ(g.window_of(250), 2);
  const auto a = g.blocks(3, 1 << 20, 40);
  EXPECT_EQ(a, g.blocks(3, 1 << 20, 40));  // same on every rank
  EXPECT_NE(a, g.blocks(3, 1 << 20, 50));  // differs between iterations
  EXPECT_EQ(total_length(a), (1 << 20) / 4);
  EXPECT_EQ(a[0].length, 1024);  // 4 KiB of f32
  EXPECT_THROW(GradientDataSampler({100, 0.0, 0.25, 4096, 7}), ConfigError);
}

TEST(Warmup, FixedLength) {
  WarmupConfig c;
  c.mode = WarmupConfig::Mode::kFixed;
  c.fixed_iters = 300;
  WarmupDetector w(c);
  EXPECT_FALSE(w.update(100, 1.0));
  EXPECT_FALSE(w.update(200, std::nullopt));
  EXPECT_TRUE(w.update(300, 1.0));
  EXPECT_EQ(w.ended_at(), 300);
}

TEST(Warmup, EntropyStabilityWithFloorAndCeiling) {
  WarmupConfig c;
  c.threshold_nats = 0.05;
  c.stable_windows = 2;
  c.floor_iters = 500;
  WarmupDetector w(c);
  // Falling fast, then flat: stable from the 4th window on, but the floor holds it until 500.
  const double h[] = {0.0, -0.5, -0.9, -0.92, -0.93, -0.94, -0.95};
  std::int64_t end = 0;
  for (double x : h) {
    end += 100;
    if (w.update(end, x)) break;
  }
  EXPECT_EQ(w.ended_at(), 500);
  WarmupConfig never = c;
  never.floor_iters = 0;
  never.ceiling_iters = 300;
  WarmupDetector v(never);
  EXPECT_FALSE(v.update(100, 0.0));
  EXPECT_FALSE(v.update(200, 1.0));
  EXPECT_TRUE(v.update(300, 2.0));  // never stable, the ceiling ends it
  WarmupConfig gap = c;
  gap.floor_iters = 0;
  WarmupDetector u(gap);
  EXPECT_FALSE(u.update(100, 1.0));
  EXPECT_FALSE(u.update(200, 1.0));
  EXPECT_FALSE(u.update(300, std::nullopt));  // a missing estimate breaks the stable run
  EXPECT_FALSE(u.update(400, 1.0));
  EXPECT_TRUE(u.update(500, 1.0));
}

TEST(RankRule, MonotoneInEntropyDropAndRespectsClampsAndStep) {
  const RankErrorModel model(1920, 7680);
  CqmConfig c;
  c.r_min = 32;
  c.r_max = 128;
  c.step = 8;
  c.quantum = 4;
  for (int r_prev : {32, 64, 100, 128}) {
    int last = 1 << 30;
    for (double dh = -0.3; dh <= 0.3001; dh += 0.01) {  // dh = H0 − H1: entropy drop
      const RankUpdate u = cqm_update(model, r_prev, r_prev, 0.0, -dh, c);
      EXPECT_LE(u.rank, last) << "rank must not grow as the entropy drop grows";
      last = u.rank;
      EXPECT_GE(u.rank, c.r_min);
      EXPECT_LE(u.rank, c.r_max);
      EXPECT_LE(std::abs(u.rank - r_prev), c.step);
      EXPECT_EQ(u.rank % c.quantum, 0);
      EXPECT_GE(u.continuous, c.r_min);
      EXPECT_LE(u.continuous, c.r_max);
    }
  }
  // No entropy change, no rank change.
  EXPECT_EQ(cqm_update(model, 64.0, 64, -1.0, -1.0, c).rank, 64);
  EXPECT_EQ(cqm_update(model, 64.0, 64, -1.0, -1.0, c).binding, RankBinding::kNone);
  // A large drop binds the step; at the floor it binds r_min.
  EXPECT_EQ(cqm_update(model, 64.0, 64, 0.0, -1.0, c).binding, RankBinding::kStep);
  EXPECT_EQ(cqm_update(model, 64.0, 64, 0.0, -1.0, c).rank, 56);
  EXPECT_EQ(cqm_update(model, 32.0, 32, 0.0, -1.0, c).binding, RankBinding::kMin);
  // Small drifts accumulate through the continuous rank instead of being rounded away.
  double cont = 64.0;
  int rank = 64;
  for (int w = 0; w < 10; ++w) {
    const RankUpdate u = cqm_update(model, cont, rank, -0.004 * w, -0.004 * (w + 1), c);
    cont = u.continuous;
    rank = u.rank;
  }
  EXPECT_LT(rank, 64);
}

TEST(RankRule, ExponentTwoMovesFaster) {
  const RankErrorModel model(1920, 1920);
  CqmConfig c;
  c.r_min = 4;
  c.r_max = 256;
  c.step = 256;
  const RankUpdate k1 = cqm_update(model, 128.0, 128, 0.0, -0.05, c);
  c.exponent = 2.0;
  const RankUpdate k2 = cqm_update(model, 128.0, 128, 0.0, -0.05, c);
  EXPECT_LT(k1.continuous, 128.0);
  EXPECT_LT(k2.continuous, k1.continuous);
}

// The stagger per stage is a backward pass plus the backward pipeline message (dac.hpp): r_k = r0 + k·hop/η quantised
// down, hop = t_bwd + t_p2p, or t_bwd + t_p2p_compressed when edgc-pp compresses the messages.
TEST(Dac, CompressedPipelineMessagesShrinkTheSlackItSpends) {
  CqmConfig c;  // r_max 128, quantum 4
  DacConfig d;
  d.enabled = true;
  d.eta_s_per_rank = 1e-4;
  d.c_s = 0.0;
  d.t_bwd_s = 1e-3;
  d.t_uncompressed_s = 1.0;
  d.t_p2p_s = 2e-3;
  d.t_p2p_compressed_s = 0.2e-3;
  const auto plain = dac_align(32, 4, d, c, false);
  const auto pp = dac_align(32, 4, d, c, true);
  for (int k = 0; k < 4; ++k) {
    const auto expect = [&](double hop) {
      const int r = static_cast<int>(std::floor((32 + k * hop / 1e-4) / 4)) * 4;
      return std::min(r, 128);
    };
    EXPECT_EQ(plain[static_cast<std::size_t>(k)].rank, expect(3e-3)) << k;  // 32, 60, 92, 120
    EXPECT_EQ(pp[static_cast<std::size_t>(k)].rank, expect(1.2e-3)) << k;   // 32, 44, 56, 68
  }
  EXPECT_LT(pp[3].rank, plain[3].rank);
  EXPECT_DOUBLE_EQ(dac_hop_s(d, true), 1.2e-3);
  d.t_p2p_compressed_s = -1.0;  // not given: compressed messages take as long as uncompressed ones
  EXPECT_DOUBLE_EQ(dac_hop_s(d, true), 3e-3);
  d.t_p2p_s = -1.0;
  EXPECT_THROW(validate(d, "s.json"), ConfigError);
}

TEST(Dac, RanksNeverDecreaseAlongTheStages) {
  Rng rng(3);
  CqmConfig c;
  for (int trial = 0; trial < 500; ++trial) {
    DacConfig d;
    d.enabled = true;
    d.eta_s_per_rank = 1e-5 + 1e-3 * rng.uniform();
    d.c_s = 1e-3 * rng.uniform();
    d.t_bwd_s = 1e-2 * rng.uniform();
    d.t_uncompressed_s = 0.2 * rng.uniform() + 1e-3;
    const int r0 = 32 + 4 * static_cast<int>(rng.below(25));
    const auto ranks = dac_align(r0, 8, d, c);
    ASSERT_EQ(ranks.size(), 8u);
    auto key = [](const StageRank& s) { return s.binding == RankBinding::kUncompressed ? 1 << 30 : s.rank; };
    if (ranks[0].binding != RankBinding::kUncompressed) {
      EXPECT_EQ(ranks[0].rank, r0);
    }
    for (std::size_t k = 1; k < ranks.size(); ++k) {
      EXPECT_GE(key(ranks[k]), key(ranks[k - 1]));
      if (ranks[k].binding != RankBinding::kUncompressed) {
        EXPECT_EQ(ranks[k].rank % c.quantum, 0);
      }
      const double budget = d.eta_s_per_rank * r0 + d.c_s + static_cast<double>(k) * d.t_bwd_s;
      EXPECT_EQ(ranks[k].binding == RankBinding::kUncompressed, budget >= d.t_uncompressed_s);
    }
  }
}

WindowObservation window(std::int64_t w, double h, int stages = 2, std::optional<double> loss = std::nullopt) {
  WindowObservation o;
  o.window = w;
  o.first_iteration = 100 * w;
  o.end_iteration = 100 * (w + 1);
  o.sampled_iterations = 10;
  o.mean_loss = loss;
  for (int s = 0; s < stages; ++s) o.stages.push_back({h - 0.1 * s, h - 0.1 * s, 3.0, 1000});
  return o;
}

ControllerConfig base_config(const std::string& policy) {
  ControllerConfig c;
  c.policy = policy;
  c.stages = 2;
  c.warmup.mode = WarmupConfig::Mode::kFixed;
  c.warmup.fixed_iters = 200;
  c.cqm.r_min = 32;
  c.cqm.r_max = 128;
  c.stage_shapes = {{1920, 7680}, {1920, 7680}};
  return c;
}

TEST(Controller, BaselinesAndWarmup) {
  auto none = make_controller(base_config("none"), "t");
  EXPECT_EQ(none->api_version(), kControllerApiVersion);
  EXPECT_EQ(none->decide(window(0, 1.0)).stages[1].rank, 0);

  auto st = make_controller(base_config("static"), "t");
  EXPECT_TRUE(st->decide(window(0, 1.0)).warmup);  // ends at 100 < 200
  const WindowDecision d = st->decide(window(1, 1.0));
  EXPECT_FALSE(d.warmup);
  EXPECT_EQ(d.stages[0].rank, 128);
  EXPECT_EQ(d.stages[1].rank, 128);

  ControllerConfig sc = base_config("selective");
  sc.selective_stages = 1;
  sc.static_rank = 64;
  auto sel = make_controller(sc, "t");
  sel->decide(window(0, 1.0));
  const WindowDecision s = sel->decide(window(1, 1.0));
  EXPECT_EQ(s.stages[0].rank, 64);
  EXPECT_EQ(s.stages[1].rank, 0);
  EXPECT_EQ(s.stages[1].binding, RankBinding::kUncompressed);
}

TEST(Controller, EdgcLowersRanksAsEntropyFallsAndFallsBackWithoutEstimates) {
  auto c = make_controller(base_config("edgc"), "t");
  c->decide(window(0, 0.0));
  WindowDecision d = c->decide(window(1, 0.0));
  EXPECT_EQ(d.stages[0].rank, 128);  // compression starts at r_max
  int prev = 128;
  for (int w = 2; w < 30; ++w) {
    d = c->decide(window(w, -0.05 * w));
    EXPECT_LE(d.stages[0].rank, prev);
    prev = d.stages[0].rank;
  }
  EXPECT_EQ(prev, 32);  // driven down to r_min
  WindowObservation empty = window(30, 0.0);
  empty.stages[0] = {};
  d = c->decide(empty);
  EXPECT_EQ(d.stages[0].binding, RankBinding::kFallback);
  EXPECT_EQ(d.stages[0].rank, 32);
}

TEST(Controller, EdgcPpDecidesTheSameDpRanksAndCompressesThePipelineAfterWarmup) {
  ControllerConfig cfg = base_config("edgc-pp");
  cfg.pipeline_rank = 12;
  auto pp = make_controller(cfg, "t");
  auto dp = make_controller(base_config("edgc"), "t");
  EXPECT_EQ(pp->policy(), "edgc-pp");
  for (int w = 0; w < 12; ++w) {
    const WindowObservation obs = window(w, -0.05 * w);
    const WindowDecision a = pp->decide(obs);
    const WindowDecision b = dp->decide(obs);
    EXPECT_EQ(a.warmup, b.warmup);
    EXPECT_TRUE(b.pipeline_ranks.empty());                  // edgc leaves the pipeline alone
    EXPECT_EQ(a.pipeline_rank(0), 0);                       // stage 0 sends nothing backward
    EXPECT_EQ(a.pipeline_rank(1), a.warmup ? 0 : 12) << w;  // edgc-pp compresses it once warm-up is over
    ASSERT_EQ(a.stages.size(), b.stages.size());
    for (std::size_t s = 0; s < a.stages.size(); ++s) EXPECT_EQ(a.stages[s].rank, b.stages[s].rank);
  }
  // A clone keeps the pipeline side.
  EXPECT_EQ(pp->clone()->decide(window(12, -0.6)).pipeline_rank(1), 12);
  cfg.pipeline_rank = 0;
  test::expect_config_error([&] { make_controller(cfg, "s.json"); }, std::nullopt, std::nullopt,
                            {"compression.pp_rank"});
}

// Entropy mode: each boundary's rank follows the CQM rule on its own messages' entropy (the same rule as the DP
// ranks, on the boundary matrix's shape, between pp_r_min and pp_rank); a boundary without observations keeps pp_rank.
TEST(Controller, EdgcPpEntropyModeDrivesEachBoundaryByItsOwnEntropyTrend) {
  ControllerConfig cfg = base_config("edgc-pp");
  cfg.stages = 3;
  cfg.stage_shapes.assign(3, {1920, 7680});
  cfg.pipeline_rank = 16;
  cfg.pipeline_r_min = 4;
  cfg.pipeline_rank_mode = PipelineRankMode::kEntropy;
  cfg.pipeline_shapes = {{0, 0}, {2048, 1920}, {0, 0}};  // stage 2's boundary is not observed
  auto c = make_controller(cfg, "t");
  CqmConfig pp = cfg.cqm;
  pp.r_min = 4;
  pp.r_max = 16;
  const RankErrorModel model(2048, 1920);
  double cont = 16.0;
  int rank = 16;
  std::optional<double> h0;
  for (int w = 0; w < 14; ++w) {
    WindowObservation obs = window(w, -0.05 * w, 3);
    obs.boundaries.resize(3);
    const double h = 1.0 - 0.08 * w;  // the messages' entropy falls: fewer directions carry them
    obs.boundaries[1] = {h, h, 3.0, 1000};
    obs.boundaries[2] = {};  // nothing observed
    const WindowDecision d = c->decide(obs);
    if (d.warmup) {
      EXPECT_TRUE(d.pipeline_ranks.empty());
      continue;
    }
    if (h0) {
      const RankUpdate u = cqm_update(model, cont, rank, *h0, h, pp);
      cont = u.continuous;
      rank = u.rank;
    }
    h0 = h;
    EXPECT_EQ(d.pipeline_rank(0), 0);
    EXPECT_EQ(d.pipeline_rank(1), rank) << "window " << w;
    EXPECT_EQ(d.pipeline_rank(2), 16) << "window " << w;
  }
  EXPECT_LT(rank, 16);  // the falling entropy took it down
  EXPECT_GE(rank, 4);
  // Static mode ignores the observations.
  cfg.pipeline_rank_mode = PipelineRankMode::kStatic;
  auto s = make_controller(cfg, "t");
  WindowDecision last;
  for (int w = 0; w < 14; ++w) {
    WindowObservation obs = window(w, -0.05 * w, 3);
    obs.boundaries.assign(3, {1.0 - 0.08 * w, 1.0 - 0.08 * w, 3.0, 1000});
    last = s->decide(obs);
  }
  EXPECT_EQ(last.pipeline_ranks, (std::vector<int>{0, 16, 16}));
  // Bad settings name their key.
  cfg.pipeline_rank_mode = PipelineRankMode::kEntropy;
  for (const auto& [r_min, r_max, key] :
       {std::tuple{3, 16, "compression.pp_r_min"}, std::tuple{20, 16, "compression.pp_r_min"},
        std::tuple{4, 18, "compression.pp_rank"}}) {
    cfg.pipeline_r_min = r_min;
    cfg.pipeline_rank = r_max;
    SCOPED_TRACE(std::to_string(r_min) + " " + std::to_string(r_max));
    test::expect_config_error([&] { make_controller(cfg, "s.json"); }, std::nullopt, std::nullopt, {key});
  }
}

TEST(Controller, EdgcWithDacAlignsLaterStagesUpward) {
  ControllerConfig cfg = base_config("edgc");
  cfg.stages = 4;
  cfg.stage_shapes.assign(4, {1920, 7680});
  cfg.dac = {true, 1e-4, 1e-3, 2e-3, 0.05};
  auto c = make_controller(cfg, "t");
  c->decide(window(0, 0.0, 4));
  c->decide(window(1, 0.0, 4));
  WindowDecision d;
  for (int w = 2; w < 20; ++w) d = c->decide(window(w, -0.05 * w, 4));
  EXPECT_EQ(d.stages[0].rank, 32);
  EXPECT_EQ(d.stages[1].rank, 52);  // 32 + 2e-3/1e-4 = 52
  EXPECT_EQ(d.stages[2].rank, 72);
  EXPECT_EQ(d.stages[3].rank, 92);
}

TEST(Controller, LossPolicyMapsLossChangeToRank) {
  auto c = make_controller(base_config("loss"), "t");
  c->decide(window(0, 0.0, 2, 5.0));
  EXPECT_EQ(c->decide(window(1, 0.0, 2, 4.0)).stages[0].rank, 128);
  // First change 1.0 → reference; later smaller changes give lower ranks, at most 8 per window.
  EXPECT_EQ(c->decide(window(2, 0.0, 2, 3.0)).stages[0].rank, 128);
  EXPECT_EQ(c->decide(window(3, 0.0, 2, 2.9)).stages[0].rank, 120);
}

TEST(Controller, RejectsBadConfigs) {
  ControllerConfig c = base_config("magic");
  EXPECT_THROW(make_controller(c, "s.json"), ConfigError);
  c = base_config("edgc");
  c.cqm.r_min = 30;  // not a multiple of 4
  EXPECT_THROW(make_controller(c, "s.json"), ConfigError);
  c = base_config("edgc");
  c.stage_shapes.pop_back();
  EXPECT_THROW(make_controller(c, "s.json"), ConfigError);
  c = base_config("selective");
  c.selective_stages = 3;
  EXPECT_THROW(make_controller(c, "s.json"), ConfigError);
}

// r_max is checked against every stage's matrix in one place, for every compressing policy and never for none.
TEST(Controller, RMaxAboveAStageMatrixRankIsRejectedForCompressingPolicies) {
  for (const std::string& policy : policy_names()) {
    ControllerConfig c = base_config(policy);
    c.stage_shapes = {{1920, 7680}, {96, 7680}};  // stage 1 has rank 96 < r_max 128
    if (policy == "none") {
      EXPECT_NO_THROW(make_controller(c, "s.json"));
      continue;
    }
    SCOPED_TRACE(policy + ": r_max 128 on a 96x7680 stage");
    test::expect_config_error([&] { make_controller(c, "s.json"); }, "s.json", "compression.r_max",
                              {"128 exceeds the rank of stage 1's 96x7680 matrices"});
    c.stage_shapes = {{1920, 7680}, {128, 7680}};  // equal to the rank: allowed
    EXPECT_NO_THROW(make_controller(c, "s.json")) << policy;
  }
}

TEST(Controller, PolicyNamesAreTheOnesMakeControllerBuildsAndListsWhenUnknown) {
  EXPECT_EQ(policy_names(),
            (std::vector<std::string>{"none", "static", "selective", "loss", "edgc", "edgc-pp", "edgc-megatron"}));
  for (const std::string& p : policy_names()) {
    EXPECT_TRUE(is_policy(p));
    EXPECT_EQ(make_controller(base_config(p), "s.json")->policy(), p);
  }
  EXPECT_FALSE(is_policy("EDGC"));
  test::expect_config_error([] { make_controller(base_config("magic"), "s.json"); }, std::nullopt, std::nullopt,
                            {"(none, static, selective, loss, edgc, edgc-pp, edgc-megatron)"});
}

}  // namespace
}  // namespace edgc::core
