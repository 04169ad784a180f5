// The accuracy side (engine/fidelity.hpp): data-parallel averaging does not change PowerSGD's averaged figures,
// the meter's replays agree with an independent PowerSGD run, the CQM figure is the closed form, and memoised and
// cached replays give the same figures without running again.
#include "edgc/engine/fidelity.hpp"

#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <span>
#include <vector>

#include "edgc/core/cqm.hpp"
#include "edgc/engine/trace_health.hpp"
#include "edgc/kernels/backend.hpp"
#include "edgc/kernels/communicator.hpp"
#include "edgc/kernels/dp_emulation.hpp"
#include "edgc/kernels/powersgd.hpp"
#include "edgc/traces/reader.hpp"
#include "edgc/traces/synth.hpp"
#include "trace_test_util.hpp"

namespace edgc::engine {
namespace {

namespace fs = std::filesystem;
using traces::test::TempDir;

// A small full-capture trace: 2 stages × 2 layers of a 48×32 matrix and a bias, 12 captured iterations 3 steps apart.
fs::path small_trace(const TempDir& tmp) {
  traces::SynthOptions o;
  o.layer_shapes = {{48, 32}, {32}};
  o.layers = 4;
  o.stages = 2;
  o.iterations = 12;
  o.iteration_stride = 3;
  o.rank = 3;
  o.seed = 7;
  const fs::path dir = tmp.path() / "trace";
  traces::synthesize_trace(o, dir);
  return dir;
}

sim::RunSchedule schedule(std::vector<std::pair<std::int64_t, std::vector<int>>> parts, std::int64_t end) {
  sim::RunSchedule s;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    sim::DpSyncPlan plan;
    for (const int r : parts[i].second) plan.push_back({r, 0});
    s.append(parts[i].first, i + 1 < parts.size() ? parts[i + 1].first : end, plan);
  }
  return s;
}

FidelitySetup setup_for(const fs::path& trace, std::pair<std::int64_t, std::int64_t> shape) {
  FidelitySetup f;
  f.run_iterations = 36'000;  // 1,000 run iterations per trace step
  f.shapes = {shape, shape};
  f.stage_parameters = {1.0, 3.0};
  f.trace_dir = trace.string();
  f.stage_map = {0, 1};
  return f;
}

// PowerSGD all-reduces P = M·Q and Q = Mᵀ·P, linear in M: D emulated ranks with perturbed gradients deliver the
// same averaged Ĝ as one rank fed their mean, step after step with error feedback, which is why the meter replays one.
TEST(Fidelity, AveragingOverRanksEqualsOneRankOnTheMeanGradient) {
  const std::vector<std::vector<std::int64_t>> shapes = {{40, 24}, {24, 56}};
  constexpr int kRanks = 4;
  kernels::PowerSgdConfig cfg;
  cfg.rank = 3;
  cfg.seed = 11;
  kernels::DataParallelEmulator emu("cpu", shapes, kRanks, cfg, 0.3, 5);
  const std::unique_ptr<kernels::Backend> backend = kernels::make_backend("cpu");
  kernels::PowerSgd solo(*backend, shapes, cfg);
  kernels::LocalCommunicator one;
  for (int step = 0; step < 6; ++step) {
    std::vector<std::vector<float>> g(shapes.size()), mean(shapes.size());
    std::vector<std::span<const float>> views;
    for (std::size_t t = 0; t < shapes.size(); ++t) {
      const auto n = static_cast<std::size_t>(shapes[t][0] * shapes[t][1]);
      g[t].resize(n);
      for (std::size_t i = 0; i < n; ++i) g[t][i] = std::sin(0.37F * static_cast<float>(i + 13 * step + 7 * t));
      views.emplace_back(g[t]);
      // The emulated ranks' copies (replica_gradient, as the emulator makes them), averaged.
      mean[t].assign(n, 0.0F);
      std::vector<float> copy(n);
      const double scale = 0.3 * kernels::gradient_stddev(*backend, g[t]);
      for (int d = 0; d < kRanks; ++d) {
        kernels::replica_gradient(g[t], scale, 5, step, d, t, copy);
        for (std::size_t i = 0; i < n; ++i) mean[t][i] += copy[i] / kRanks;
      }
    }
    emu.step(views, {});
    std::vector<std::span<float>> mine;
    for (auto& m : mean) mine.emplace_back(m);
    solo.step(std::span<const std::span<float>>(mine), one);
    for (std::size_t t = 0; t < shapes.size(); ++t) {
      const std::span<const float> avg = emu.reconstruction(t);
      double diff = 0.0, norm = 0.0;
      for (std::size_t i = 0; i < avg.size(); ++i) {
        diff += (avg[i] - mean[t][i]) * (avg[i] - mean[t][i]);
        norm += static_cast<double>(avg[i]) * avg[i];
      }
      EXPECT_LT(std::sqrt(diff / norm), 2e-5) << "step " << step << " tensor " << t;
    }
  }
}

// Ranks the trace's own shape maps to themselves: the meter's figures are exactly those of a PowerSGD run over the
// trace at those ranks, computed here independently; uncompressed stages and iterations are exact.
TEST(Fidelity, TheTraceShapeReplaysItsOwnRanksExactly) {
  TempDir tmp;
  const fs::path trace = small_trace(tmp);
  FidelityMeter meter(setup_for(trace, {48, 32}));
  ASSERT_EQ(meter.trace_points(), 12);
  EXPECT_EQ(meter.trace_steps(), 34);  // captured 0, 3, …, 33
  // Stage 0 uncompressed until run iteration 12,000 (trace step 12 = point 4), then rank 2; stage 1 never compressed.
  const sim::RunSchedule s = schedule({{0, {0, 0}}, {12'000, {2, 0}}}, 36'000);
  const std::vector<Fidelity> f = meter.measure({&s});
  ASSERT_EQ(f.size(), 1U);
  const Fidelity& x = f[0];
  EXPECT_EQ(x.source, "trace");
  ASSERT_EQ(x.stages.size(), 2U);
  EXPECT_EQ(x.stages[1].points, 0);
  EXPECT_FALSE(x.stages[1].relative_error.has_value());
  EXPECT_EQ(x.stages[0].points, 8);
  EXPECT_EQ(x.stages[0].below_rank_one, 0);
  ASSERT_EQ(x.stages[0].ranks.size(), 1U);
  EXPECT_NEAR(x.stages[0].ranks[0].trace_rank_min, 2.0, 1e-9);

  // The same replay by hand: stage 0's two matrices at rank 2 from point 4 on.
  traces::TraceReader reader(trace);
  const traces::Manifest& m = reader.manifest();
  std::vector<std::size_t> mats, full;
  for (std::size_t k = 0; k < m.tensors.size(); ++k) {
    if (m.tensors[k].stage != 0) continue;
    full.push_back(k);
    if (m.tensors[k].shape.size() == 2) mats.push_back(k);
  }
  ASSERT_EQ(mats.size(), 2U);
  const std::unique_ptr<kernels::Backend> backend = kernels::make_backend("cpu");
  kernels::PowerSgdConfig cfg;
  cfg.rank = 0;
  kernels::PowerSgd psgd(*backend, {{48, 32}, {48, 32}}, cfg);
  kernels::LocalCommunicator one;
  traces::IterationData d;
  std::vector<double> rel, cap, res;
  for (std::size_t p = 0; p < 12; ++p) {
    reader.read(p, d);
    const int r = p >= 4 ? 2 : 0;
    std::vector<std::vector<float>> work;
    for (std::size_t i = 0; i < 2; ++i) {
      if (psgd.rank(i) != r) psgd.set_rank(i, r);
      work.push_back(d.tensors[mats[i]].values);
    }
    std::vector<std::span<float>> spans(work.begin(), work.end());
    psgd.step(std::span<const std::span<float>>(spans), one);
    double g2 = 0.0, err2 = 0.0, ghat2 = 0.0, e2 = 0.0;
    for (const std::size_t k : full)
      for (const float v : d.tensors[k].values) g2 += static_cast<double>(v) * v;
    for (std::size_t i = 0; i < 2; ++i) {
      const std::vector<float>& g = d.tensors[mats[i]].values;
      for (std::size_t j = 0; j < g.size(); ++j) {
        err2 += (static_cast<double>(work[i][j]) - g[j]) * (static_cast<double>(work[i][j]) - g[j]);
        ghat2 += static_cast<double>(work[i][j]) * work[i][j];
      }
      for (const float v : psgd.error(i)) e2 += static_cast<double>(v) * v;
    }
    if (r == 0) continue;
    rel.push_back(std::sqrt(err2 / g2));
    cap.push_back(ghat2 / (ghat2 + e2));
    res.push_back(std::sqrt(e2 / g2));
  }
  const auto mean = [](const std::vector<double>& v) {
    double sum = 0.0;
    for (const double e : v) sum += e;
    return sum / static_cast<double>(v.size());
  };
  ASSERT_TRUE(x.stages[0].relative_error && x.stages[0].captured_energy && x.stages[0].residual);
  EXPECT_NEAR(*x.stages[0].relative_error, mean(rel), 1e-9);
  EXPECT_NEAR(*x.stages[0].captured_energy, mean(cap), 1e-9);
  EXPECT_NEAR(*x.stages[0].residual, mean(res), 1e-9);
  EXPECT_GT(*x.stages[0].relative_error, 0.01);  // rank 2 of a rank-3 signal plus noise is not exact
  // The run: stage 1 is exact, so the parameter-weighted error is sqrt(1/4) of stage 0's at every point.
  ASSERT_TRUE(x.relative_error);
  EXPECT_EQ(x.points, 8);
  EXPECT_NEAR(*x.relative_error, 0.5 * mean(rel), 1e-9);
  // The CQM figure is the closed form at the simulated shape, over the compressed iterations.
  const core::RankErrorModel cqm(48, 32);
  EXPECT_NEAR(*x.stages[0].cqm_relative_error, std::sqrt(cqm.g(2)), 1e-12);
  EXPECT_NEAR(*x.cqm_relative_error, std::sqrt(0.25 * cqm.g(2)), 1e-12);
}

TEST(Fidelity, MoreRankLessErrorAndFullRankIsExact) {
  TempDir tmp;
  FidelityMeter meter(setup_for(small_trace(tmp), {48, 32}));
  std::vector<sim::RunSchedule> s;
  for (const int r : {1, 2, 4, 8, 32}) s.push_back(schedule({{0, {r, r}}}, 36'000));
  const std::vector<Fidelity> f = meter.measure({&s[0], &s[1], &s[2], &s[3], &s[4]});
  for (std::size_t i = 0; i + 1 < f.size(); ++i) {
    EXPECT_GT(*f[i].relative_error, *f[i + 1].relative_error) << i;
    EXPECT_LT(*f[i].captured_energy, *f[i + 1].captured_energy) << i;
    EXPECT_GT(*f[i].cqm_relative_error, *f[i + 1].cqm_relative_error) << i;
  }
  EXPECT_LT(*f.back().relative_error, 1e-5);  // rank 32 = min(48, 32): exact up to rounding
  EXPECT_EQ(*f.back().cqm_relative_error, 0.0);
}

// A simulated shape of another size maps rank r onto r' = r·p'/p at one aspect ratio: r' = 3.5 is interpolated
// halfway between the replays at 3 and 4, and a rank below 1 is counted.
TEST(Fidelity, FractionalRanksInterpolateBetweenTheWholeRanksAround) {
  TempDir tmp;
  const fs::path trace = small_trace(tmp);
  FidelityMeter meter(setup_for(trace, {480, 320}));  // p = 320: r' = r / 10
  const sim::RunSchedule s3 = schedule({{0, {30, 30}}}, 36'000);
  const sim::RunSchedule s35 = schedule({{0, {35, 35}}}, 36'000);
  const sim::RunSchedule s4 = schedule({{0, {40, 40}}}, 36'000);
  const sim::RunSchedule s05 = schedule({{0, {5, 5}}}, 36'000);
  const std::vector<Fidelity> f = meter.measure({&s3, &s35, &s4, &s05});
  EXPECT_EQ(meter.replays(), 6);  // ranks 3, 4 and 1 (for r' = 0.5, counted below) of each stage
  EXPECT_NEAR(f[1].stages[0].ranks[0].trace_rank_min, 3.5, 1e-9);
  for (std::size_t st = 0; st < 2; ++st) {
    const double lo = *f[0].stages[st].relative_error;
    const double hi = *f[2].stages[st].relative_error;
    const double mid = *f[1].stages[st].relative_error;
    // Per point the squared errors are averaged half and half, so the mean lies between the two replays' (with error
    // feedback the error need not fall with the rank on every stage).
    EXPECT_NE(lo, hi);
    EXPECT_GT(mid, std::min(lo, hi)) << st;
    EXPECT_LT(mid, std::max(lo, hi)) << st;
  }
  EXPECT_EQ(f[3].stages[0].below_rank_one, 12);
  EXPECT_EQ(f[0].stages[0].below_rank_one, 0);
}

TEST(Fidelity, ReplaysAreMemoisedAndCachedAcrossMeters) {
  TempDir tmp;
  const fs::path trace = small_trace(tmp);
  FidelitySetup setup = setup_for(trace, {48, 32});
  setup.cache_dir = (tmp.path() / "cache").string();
  fs::create_directories(setup.cache_dir);
  const sim::RunSchedule a = schedule({{0, {0, 0}}, {9'000, {4, 2}}}, 36'000);
  const sim::RunSchedule b = schedule({{0, {0, 0}}, {9'000, {4, 2}}, {30'000, {4, 4}}}, 36'000);
  FidelityMeter first(setup);
  const std::vector<Fidelity> f1 = first.measure({&a, &b});
  EXPECT_EQ(first.replays(), 3);  // stage 0 shared by a and b; stage 1 differs
  const std::vector<Fidelity> again = first.measure({&b});
  EXPECT_EQ(first.replays(), 3);
  EXPECT_EQ(*again[0].relative_error, *f1[1].relative_error);
  FidelityMeter second(setup);  // a new process of a sweep: reads the cache
  const std::vector<Fidelity> f2 = second.measure({&a, &b});
  EXPECT_EQ(second.replays(), 0);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_DOUBLE_EQ(*f2[i].relative_error, *f1[i].relative_error);
    EXPECT_DOUBLE_EQ(*f2[i].residual, *f1[i].residual);
  }
}

// The process-wide memo (a sweep worker's next points) is keyed by everything a replay depends on: the same setup and
// schedule hit it without a cache directory; another seed, another rank, or the trace rewritten in place miss it; and
// with the memos off (EDGC_NO_MEMO) the replay runs again with the same figures.
TEST(Fidelity, TheProcessMemoHitsOnlyWhatItWasKeyedBy) {
  TempDir tmp;
  const fs::path trace = small_trace(tmp);
  const FidelitySetup setup = setup_for(trace, {48, 32});
  const sim::RunSchedule a = schedule({{0, {0, 0}}, {9'000, {4, 2}}}, 36'000);
  FidelityMeter first(setup);
  const Fidelity f1 = first.measure({&a}).front();
  EXPECT_EQ(first.replays(), 2);
  FidelityMeter same(setup);
  const Fidelity f2 = same.measure({&a}).front();
  EXPECT_EQ(same.replays(), 0);
  EXPECT_EQ(*f2.relative_error, *f1.relative_error);
  EXPECT_EQ(*f2.residual, *f1.residual);
  EXPECT_EQ(*f2.captured_energy, *f1.captured_energy);

  FidelitySetup seeded = setup;
  seeded.seed = 99;
  FidelityMeter other_seed(seeded);
  other_seed.measure({&a});
  EXPECT_EQ(other_seed.replays(), 2);
  const sim::RunSchedule b = schedule({{0, {0, 0}}, {9'000, {5, 2}}}, 36'000);
  FidelityMeter other_rank(setup);
  other_rank.measure({&b});
  EXPECT_EQ(other_rank.replays(), 1);  // stage 1's replay is a's

  ASSERT_EQ(::setenv("EDGC_NO_MEMO", "1", 1), 0);
  FidelityMeter unmemoised(setup);
  const Fidelity f3 = unmemoised.measure({&a}).front();
  ::unsetenv("EDGC_NO_MEMO");
  EXPECT_EQ(unmemoised.replays(), 2);
  EXPECT_EQ(*f3.relative_error, *f1.relative_error);
  EXPECT_EQ(*f3.residual, *f1.residual);

  // The trace rewritten in place (other gradients, a later manifest): its replays are new.
  traces::SynthOptions o;
  o.layer_shapes = {{48, 32}, {32}};
  o.layers = 4;
  o.stages = 2;
  o.iterations = 12;
  o.iteration_stride = 3;
  o.rank = 3;
  o.seed = 8;
  fs::remove_all(trace);
  traces::synthesize_trace(o, trace);
  fs::last_write_time(trace / "trace.json", fs::last_write_time(trace / "trace.json") + std::chrono::seconds(5));
  FidelityMeter rewritten(setup);
  const Fidelity f4 = rewritten.measure({&a}).front();
  EXPECT_EQ(rewritten.replays(), 2);
  EXPECT_NE(*f4.relative_error, *f1.relative_error);
}

// Replays that start with the same ranks share those steps and fork where their ranks part, and a later meter of the
// process continues from the longest prefix already replayed; every figure still equals that of a replay run alone
// from the first point with the memos off.
TEST(Fidelity, SharedPrefixesAreReplayedOnceWithTheSameFigures) {
  TempDir tmp;
  const fs::path trace = small_trace(tmp);
  const FidelitySetup setup = setup_for(trace, {48, 32});
  // 12 points, one per 3,000 run iterations; stage 1 never compressed (no replay). Stage 0: a and b part at point 6,
  // c is a until point 9.
  const sim::RunSchedule a = schedule({{0, {0, 0}}, {9'000, {4, 0}}, {18'000, {2, 0}}}, 36'000);
  const sim::RunSchedule b = schedule({{0, {0, 0}}, {9'000, {4, 0}}, {27'000, {3, 0}}}, 36'000);
  const sim::RunSchedule c = schedule({{0, {0, 0}}, {9'000, {4, 0}}, {18'000, {2, 0}}, {27'000, {8, 0}}}, 36'000);
  FidelityMeter first(setup);
  const std::vector<Fidelity> ab = first.measure({&a, &b});
  EXPECT_EQ(first.replays(), 2);
  EXPECT_EQ(first.replayed_steps(), 6 + 6 + 6);  // points 0–5 once, then each its own
  FidelityMeter later(setup);
  const Fidelity fc = later.measure({&c}).front();
  EXPECT_EQ(later.replays(), 1);
  EXPECT_EQ(later.replayed_steps(), 3);  // from a's state after point 8

  ASSERT_EQ(::setenv("EDGC_NO_MEMO", "1", 1), 0);
  std::vector<Fidelity> alone;
  for (const sim::RunSchedule* s : {&a, &b, &c}) {
    FidelityMeter own(setup);
    alone.push_back(own.measure({s}).front());
    EXPECT_EQ(own.replayed_steps(), 12);
  }
  ::unsetenv("EDGC_NO_MEMO");
  const std::vector<const Fidelity*> shared = {&ab[0], &ab[1], &fc};
  for (std::size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    const Fidelity& x = *shared[i];
    const Fidelity& y = alone[i];
    ASSERT_TRUE(x.relative_error && y.relative_error && x.residual && y.residual);
    EXPECT_EQ(*x.relative_error, *y.relative_error);
    EXPECT_EQ(x.relative_error_max, y.relative_error_max);
    EXPECT_EQ(*x.residual, *y.residual);
    EXPECT_EQ(x.captured_energy, y.captured_energy);
    EXPECT_EQ(x.stages[0].relative_error, y.stages[0].relative_error);
    EXPECT_EQ(x.stages[0].residual, y.stages[0].residual);
  }
  EXPECT_NE(*alone[0].relative_error, *alone[2].relative_error);  // c's last ranks matter
}

TEST(Fidelity, WithoutATraceOnlyTheCqmFigure) {
  FidelitySetup setup;
  setup.run_iterations = 1000;
  setup.shapes = {{1024, 4096}};
  setup.stage_parameters = {1.0};
  FidelityMeter meter(setup);
  const sim::RunSchedule s = schedule({{0, {0}}, {250, {64}}, {500, {32}}}, 1000);
  const std::vector<Fidelity> f = meter.measure({&s});
  EXPECT_EQ(f[0].source, "cqm");
  EXPECT_FALSE(f[0].relative_error.has_value());
  const core::RankErrorModel cqm(1024, 4096);
  // Iteration-weighted over the 750 compressed iterations: 250 at rank 64, 500 at rank 32.
  EXPECT_NEAR(*f[0].cqm_relative_error, (250.0 * std::sqrt(cqm.g(64)) + 500.0 * std::sqrt(cqm.g(32))) / 750.0, 1e-12);
  EXPECT_EQ(meter.replays(), 0);
}

}  // namespace
}  // namespace edgc::engine

TEST(TraceModel, FamiliesComeFromTheNameWithoutSizeWords) {
  EXPECT_EQ(edgc::engine::model_family("GPT2-12.1B"), "gpt");
  EXPECT_EQ(edgc::engine::model_family("tiny-gpt"), "gpt");
  EXPECT_EQ(edgc::engine::model_family("gpt2-small"), "gpt");
  EXPECT_EQ(edgc::engine::model_family("BERT-Large"), "bert");
  EXPECT_EQ(edgc::engine::model_family("Llama 3.1 70B"), "llama");
  EXPECT_EQ(edgc::engine::model_family("12.1B"), "");
}

TEST(TraceModel, AnotherFamilyOrSizeClassIsNamedAndANeighbourIsNot) {
  edgc::traces::Manifest m;
  m.model_name = "tiny-gpt";
  m.model_json = R"({"name": "tiny-gpt", "num_stages": 1, "parameters": 1000000})";
  EXPECT_EQ(edgc::engine::trace_model_mismatch(m, "t", "GPT2-small", 9.9e6), "");
  EXPECT_EQ(edgc::engine::trace_model_mismatch(m, "t", "GPT2-small", 1.01e5), "");
  const std::string big = edgc::engine::trace_model_mismatch(m, "t", "GPT2-12.1B", 1.21e10);
  EXPECT_NE(big.find("t: recorded from another size class (1e+06 parameters vs 1.21e+10, 1.21e+04x apart)"),
            std::string::npos)
      << big;
  EXPECT_EQ(big.find("family"), std::string::npos);
  const std::string bert = edgc::engine::trace_model_mismatch(m, "t", "bert-base", 2e6);
  EXPECT_NE(bert.find("another model family ('tiny-gpt' vs 'bert-base')"), std::string::npos) << bert;
  EXPECT_EQ(bert.find("size class"), std::string::npos);
  // Without model.parameters the tensors' elements count.
  m.model_json = R"({"name": "tiny-gpt", "num_stages": 1})";
  edgc::traces::TensorInfo t;
  t.name = "w";
  t.shape = {1000, 1000};
  m.tensors = {t};
  EXPECT_NE(edgc::engine::trace_model_mismatch(m, "t", "gpt", 1e8).find("1e+06 parameters vs 1e+08, 100x apart"),
            std::string::npos);
}
