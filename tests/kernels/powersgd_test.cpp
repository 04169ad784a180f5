#include "edgc/kernels/powersgd.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <thread>

#include "expect_error.hpp"
#include "kernel_test_util.hpp"

namespace edgc::kernels {
namespace {

using testing::cpu_variants;
using testing::frobenius;
using testing::frobenius_diff;
using testing::numel;
using testing::random_normal;
using testing::spans;

using Shapes = std::vector<std::vector<std::int64_t>>;

// Random gradients for `shapes`, different for every (seed, step).
std::vector<std::vector<float>> random_grads(const Shapes& shapes, std::uint64_t seed) {
  std::vector<std::vector<float>> g;
  for (std::size_t i = 0; i < shapes.size(); ++i)
    g.push_back(random_normal(static_cast<std::size_t>(numel(shapes[i])), seed * 1000 + i, 0.01));
  return g;
}

TEST(PowerSgd, RecoversAnExactlyLowRankMatrix) {
  for (const std::string& name : cpu_variants()) {
    SCOPED_TRACE(name);
    const auto backend = make_backend(name);
    const std::int64_t m = 300;
    const std::int64_t n = 200;
    const int r = 4;
    const std::vector<float> g = testing::exact_low_rank(m, n, r);
    PowerSgd psgd(*backend, {{m, n}}, {.rank = r, .error_feedback = false, .seed = 3});
    LocalCommunicator comm;
    double rel = 1.0;
    for (int step = 0; step < 3; ++step) {
      std::vector<std::vector<float>> grads{g};
      const StepStats st = psgd.step(spans(grads), comm);
      ASSERT_TRUE(st.tensors[0].compressed);
      rel = frobenius_diff(grads[0].data(), g.data(), g.size()) / frobenius(g);
      EXPECT_NEAR(st.tensors[0].relative_error, rel, 1e-6);
      EXPECT_EQ(st.tensors[0].error_norm, 0.0);
    }
    EXPECT_LE(rel, 1e-5);
    EXPECT_TRUE(psgd.error(0).empty());  // no error feedback, no buffer
  }
}

TEST(PowerSgd, ErrorFeedbackConservesTheGradientSumOnEveryRank) {
  const Shapes shapes{{96, 64}, {64}, {32, 4, 8}, {8, 8}};
  const int world = 2;
  const int steps = 6;
  InProcessGroup group(world);
  std::vector<std::vector<double>> sum_g(world);
  std::vector<std::vector<double>> sum_ghat(world);
  std::vector<std::vector<float>> final_e(world);
  std::vector<std::thread> threads;
  for (int d = 0; d < world; ++d) {
    threads.emplace_back([&, d] {
      const auto backend = make_backend("cpu");
      PowerSgd psgd(*backend, shapes, {.rank = 3, .seed = 9});
      sum_g[d].assign(96 * 64, 0.0);
      sum_ghat[d].assign(96 * 64, 0.0);
      for (int t = 0; t < steps; ++t) {
        auto grads = random_grads(shapes, static_cast<std::uint64_t>(100 * d + t + 1));
        for (std::size_t i = 0; i < grads[0].size(); ++i) sum_g[d][i] += grads[0][i];
        psgd.step(spans(grads), group.communicator(d));
        for (std::size_t i = 0; i < grads[0].size(); ++i) sum_ghat[d][i] += grads[0][i];
      }
      const auto e = psgd.error(0);
      final_e[d].assign(e.begin(), e.end());
    });
  }
  for (auto& t : threads) t.join();
  for (int d = 0; d < world; ++d) {
    double num = 0.0;
    double den = 0.0;
    double e_norm = 0.0;
    for (std::size_t i = 0; i < sum_g[d].size(); ++i) {
      const double lhs = sum_ghat[d][i] + final_e[d][i];
      num += (lhs - sum_g[d][i]) * (lhs - sum_g[d][i]);
      den += sum_g[d][i] * sum_g[d][i];
      e_norm += static_cast<double>(final_e[d][i]) * final_e[d][i];
    }
    EXPECT_LT(std::sqrt(num / den), 1e-5) << "rank " << d;
    EXPECT_GT(std::sqrt(e_norm / den), 0.05) << "rank " << d;  // the error buffer really holds something
  }
}

TEST(PowerSgd, BatchedEqualsOneAtATime) {
  const auto backend = make_backend("cpu");
  const std::int64_t m = 64;
  const std::int64_t n = 48;
  const Shapes together{{m, n}, {m, n}, {m, n}};
  PowerSgd batched(*backend, together, {.rank = 4, .seed = 5});
  // Instance k sees tensor k at the same index (Q is seeded from the index); the others are 1-D and go through
  // the dense path, so tensor k is alone in its batch.
  std::vector<std::unique_ptr<PowerSgd>> single;
  for (int k = 0; k < 3; ++k) {
    Shapes s{{m * n}, {m * n}, {m * n}};
    s[static_cast<std::size_t>(k)] = {m, n};
    single.push_back(std::make_unique<PowerSgd>(*backend, s, PowerSgdConfig{.rank = 4, .seed = 5}));
  }
  LocalCommunicator comm;
  for (int step = 0; step < 4; ++step) {
    auto g = random_grads(together, static_cast<std::uint64_t>(step + 1));
    auto g_single = g;
    const StepStats st = batched.step(spans(g), comm);
    EXPECT_EQ(st.compressed_tensors, 3);
    for (int k = 0; k < 3; ++k) {
      auto copy = g_single;
      single[static_cast<std::size_t>(k)]->step(spans(copy), comm);
      const auto ku = static_cast<std::size_t>(k);
      EXPECT_LE(frobenius_diff(copy[ku].data(), g[ku].data(), g[ku].size()), 1e-6 * frobenius(g[ku]));
      const auto e1 = batched.error(ku);
      const auto e2 = single[ku]->error(ku);
      EXPECT_LE(frobenius_diff(e1.data(), e2.data(), e1.size()), 1e-6 * frobenius(g[ku]));
    }
  }
}

TEST(PowerSgd, FourRanksEndBitIdenticalAndDenseTensorsAreExactlyAveraged) {
  const Shapes shapes{{128, 96}, {128, 96}, {96}, {40, 3, 3}, {5, 5}, {}};
  const int world = 4;
  const int steps = 3;
  InProcessGroup group(world);
  std::vector<std::vector<std::vector<float>>> inputs(world);
  std::vector<std::vector<std::vector<float>>> outputs(world);
  std::vector<std::thread> threads;
  for (int d = 0; d < world; ++d) {
    threads.emplace_back([&, d] {
      const auto backend = make_backend("cpu");
      PowerSgd psgd(*backend, shapes, {.rank = 4, .seed = 1});
      psgd.set_rank(3, 2);
      for (int t = 0; t < steps; ++t) {
        auto g = random_grads(shapes, static_cast<std::uint64_t>(17 * d + t + 1));
        inputs[d] = g;
        psgd.step(spans(g), group.communicator(d));
        outputs[d] = g;
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int d = 1; d < world; ++d)
    for (std::size_t i = 0; i < shapes.size(); ++i)
      EXPECT_EQ(std::memcmp(outputs[d][i].data(), outputs[0][i].data(), outputs[0][i].size() * sizeof(float)), 0)
          << "rank " << d << " tensor " << i;
  // Tensors 2 (1-D), 4 (5x5: skipped by the compression-rate rule) and 5 (scalar) are exact averages of the
  // last step's inputs, summed in rank order.
  for (const std::size_t i : {std::size_t{2}, std::size_t{4}, std::size_t{5}}) {
    for (std::size_t k = 0; k < outputs[0][i].size(); ++k) {
      float s = inputs[0][i][k];
      for (int d = 1; d < world; ++d) s += inputs[d][i][k];
      ASSERT_EQ(outputs[0][i][k], s / static_cast<float>(world)) << "tensor " << i;
    }
  }
}

TEST(PowerSgd, SkipRuleDecidesWhatIsCompressed) {
  const auto backend = make_backend("cpu");
  // (m + n)·r·2 < m·n: 16x16 at r = 3 → 192 < 256 compressed; at r = 4 → 256, not strictly less: dense.
  PowerSgd psgd(*backend, {{16, 16}, {16, 16}, {100, 100}, {10, 10}, {7}}, {.rank = 4});
  psgd.set_rank(0, 3);
  EXPECT_TRUE(psgd.will_compress(0));
  EXPECT_FALSE(psgd.will_compress(1));
  EXPECT_TRUE(psgd.will_compress(2));
  EXPECT_FALSE(psgd.will_compress(3));
  EXPECT_FALSE(psgd.will_compress(4));
  auto g = random_grads({{16, 16}, {16, 16}, {100, 100}, {10, 10}, {7}}, 3);
  LocalCommunicator comm;
  const StepStats st = psgd.step(spans(g), comm);
  EXPECT_EQ(st.compressed_tensors, 2);
  EXPECT_EQ(st.tensors[0].wire_floats, 32 * 3);
  EXPECT_EQ(st.tensors[1].wire_floats, 256);
  EXPECT_EQ(st.tensors[1].rank, 0);
  EXPECT_EQ(st.tensors[2].wire_floats, 200 * 4);
  EXPECT_EQ(st.wire_floats, 96 + 256 + 800 + 100 + 7);
  EXPECT_EQ(st.dense_floats, 256 + 256 + 10000 + 100 + 7);
  EXPECT_GT(st.tensors[2].relative_error, 0.5);  // random data at rank 4 of 100: most energy is lost
  EXPECT_LE(st.tensors[2].relative_error, 1.0);
}

TEST(PowerSgd, RejectsRanksAboveMinDimAndOtherBadValues) {
  const auto backend = make_backend("cpu");
  PowerSgd psgd(*backend, {{20, 8}, {30}}, {.rank = 64});  // the initial rank is clamped per tensor
  EXPECT_EQ(psgd.rank(0), 8);
  EXPECT_EQ(psgd.rank(1), 0);
  EXPECT_NO_THROW(psgd.set_rank(0, 8));
  test::expect_config_error([&] { psgd.set_rank(0, 9); }, std::nullopt, std::nullopt, {"tensor 0 (20x8)", "9"});
  EXPECT_THROW(psgd.set_rank(0, -1), ConfigError);
  EXPECT_THROW(psgd.set_rank(1, 1), ConfigError);
  EXPECT_THROW(psgd.set_rank(2, 1), ConfigError);
  EXPECT_THROW(PowerSgd(*backend, {{4, 0}}, {}), ConfigError);
  EXPECT_THROW(PowerSgd(*backend, {{4, 4}}, {.rank = -1}), ConfigError);
  EXPECT_THROW(PowerSgd(*backend, {{4, 4}}, {.min_compression_rate = 0.0}), ConfigError);
  std::vector<std::vector<float>> wrong{std::vector<float>(159), std::vector<float>(30)};
  LocalCommunicator comm;
  EXPECT_THROW(psgd.step(spans(wrong), comm), InputError);
}

TEST(PowerSgd, RankChangeKeepsErrorAndRedrawsQ) {
  const auto backend = make_backend("cpu");
  const Shapes shapes{{80, 60}};
  PowerSgd psgd(*backend, shapes, {.rank = 4, .seed = 2});
  LocalCommunicator comm;
  for (int t = 0; t < 2; ++t) {
    auto g = random_grads(shapes, static_cast<std::uint64_t>(t + 1));
    psgd.step(spans(g), comm);
  }
  const std::vector<float> e_before(psgd.error(0).begin(), psgd.error(0).end());
  const std::vector<float> q_before(psgd.warm_start_q(0).begin(), psgd.warm_start_q(0).end());
  ASSERT_EQ(q_before.size(), 60u * 4u);
  ASSERT_GT(frobenius(e_before), 0.0);
  psgd.set_rank(0, 2);
  EXPECT_TRUE(psgd.warm_start_q(0).empty());
  EXPECT_TRUE(std::equal(e_before.begin(), e_before.end(), psgd.error(0).begin()));
  // The next step starts from the kept error: M = G + E.
  auto g = random_grads(shapes, 7);
  const std::vector<float> g_in = g[0];
  const StepStats st = psgd.step(spans(g), comm);
  EXPECT_EQ(st.tensors[0].rank, 2);
  EXPECT_EQ(psgd.warm_start_q(0).size(), 60u * 2u);
  // Conservation over this step: Ĝ + E_new = G + E_before.
  double worst = 0.0;
  for (std::size_t i = 0; i < g_in.size(); ++i)
    worst = std::max(worst, std::abs(static_cast<double>(g[0][i]) + psgd.error(0)[i] - g_in[i] - e_before[i]));
  EXPECT_LT(worst, 1e-6);
  // Going to rank 0 sends M = G + E uncompressed and clears E.
  psgd.set_rank(0, 0);
  const std::vector<float> e_kept(psgd.error(0).begin(), psgd.error(0).end());
  auto g2 = random_grads(shapes, 8);
  const std::vector<float> g2_in = g2[0];
  const StepStats st2 = psgd.step(spans(g2), comm);
  EXPECT_FALSE(st2.tensors[0].compressed);
  for (std::size_t i = 0; i < g2_in.size(); ++i) ASSERT_EQ(g2[0][i], g2_in[i] + e_kept[i]);
  for (const float v : psgd.error(0)) ASSERT_EQ(v, 0.0F);
}

TEST(PowerSgd, WithoutWarmStartStillCompressesAndStatsAreConsistent) {
  const auto backend = make_backend("cpu");
  const Shapes shapes{{64, 64}};
  PowerSgd psgd(*backend, shapes, {.rank = 8, .warm_start = false});
  LocalCommunicator comm;
  for (int t = 0; t < 3; ++t) {
    auto g = random_grads(shapes, static_cast<std::uint64_t>(t + 1));
    const StepStats st = psgd.step(spans(g), comm);
    EXPECT_TRUE(st.tensors[0].compressed);
    EXPECT_NEAR(st.tensors[0].error_norm, frobenius(std::vector<float>(psgd.error(0).begin(), psgd.error(0).end())),
                1e-6);
    EXPECT_GE(st.wall_seconds, st.compute_seconds);
  }
}

TEST(PowerSgd, QIdsAndSetErrorLetASubsetCompressorContinueTheWholeOnesWork) {
  // A compressor over some of the tensors (a DDP bucket) given their ids among all of them draws the same Q, and one
  // that takes over a tensor with set_error continues its error feedback: same results as one compressor over all.
  const auto backend = make_backend("cpu");
  const Shapes all{{40, 30}, {24, 32}, {40, 30}};
  PowerSgd whole(*backend, all, {.rank = 4, .seed = 9});
  PowerSgd first(*backend, {all[0], all[1]}, {.rank = 4, .seed = 9, .q_ids = {0, 1}});
  PowerSgd last(*backend, {all[2]}, {.rank = 4, .seed = 9, .q_ids = {2}});
  LocalCommunicator comm;
  auto g = random_grads(all, 1);
  std::vector<std::vector<float>> g01{g[0], g[1]};
  std::vector<std::vector<float>> g2{g[2]};
  whole.step(spans(g), comm);
  first.step(spans(g01), comm);
  last.step(spans(g2), comm);
  EXPECT_EQ(g01[0], g[0]);
  EXPECT_EQ(g01[1], g[1]);
  EXPECT_EQ(g2[0], g[2]);
  // Tensor 2 moves to a new compressor: its error buffer goes along (Q is drawn afresh, as after a rank change).
  PowerSgd moved(*backend, {all[2]}, {.rank = 4, .seed = 9, .q_ids = {2}});
  moved.set_error(0, last.error_copy(0));
  whole.set_rank(2, 2);
  whole.set_rank(2, 4);
  auto h = random_grads(all, 2);
  std::vector<std::vector<float>> h2{h[2]};
  whole.step(spans(h), comm);
  moved.step(spans(h2), comm);
  EXPECT_EQ(h2[0], h[2]);
  EXPECT_EQ(moved.error_copy(0), whole.error_copy(2));
  EXPECT_THROW(PowerSgd(*backend, all, {.q_ids = {0, 1}}), ConfigError);
  EXPECT_THROW(moved.set_error(0, std::vector<float>(5)), InputError);
  PowerSgd no_feedback(*backend, {all[0]}, {.error_feedback = false});
  EXPECT_THROW(no_feedback.set_error(0, std::vector<float>(1200)), ConfigError);
}

TEST(PowerSgd, ACopiedStateContinuesBitIdenticallyAndThenGoesItsOwnWay) {
  // A replay forked where two rank schedules part: after copy_state_from the copy's steps equal the original's bit
  // for bit (warm start, error feedback, a rank change), with and without warm start; then each follows its own
  // ranks and the original is not disturbed.
  for (const bool warm : {true, false}) {
    const auto backend = make_backend("cpu");
    const Shapes shapes{{48, 40}, {48, 40}, {16}, {30, 20}};
    const PowerSgdConfig cfg{.rank = 4, .warm_start = warm, .seed = 5};
    PowerSgd original(*backend, shapes, cfg);
    LocalCommunicator comm;
    for (int t = 0; t < 2; ++t) {
      auto g = random_grads(shapes, static_cast<std::uint64_t>(t + 1));
      original.step(spans(g), comm);
    }
    original.set_rank(3, 2);
    PowerSgd copy(*backend, shapes, {.rank = 8, .warm_start = warm, .seed = 5});
    copy.copy_state_from(original);
    EXPECT_EQ(copy.steps(), original.steps());
    for (std::size_t i = 0; i < shapes.size(); ++i) EXPECT_EQ(copy.rank(i), original.rank(i));
    for (int t = 2; t < 4; ++t) {
      auto a = random_grads(shapes, static_cast<std::uint64_t>(t + 1));
      auto b = a;
      original.step(spans(a), comm);
      copy.step(spans(b), comm);
      EXPECT_EQ(a, b) << "warm start " << warm << ", step " << t;
      for (std::size_t i = 0; i < shapes.size(); ++i) EXPECT_EQ(copy.error_copy(i), original.error_copy(i));
    }
    // Their own ways: a rank change in the copy leaves the original as a twin that never forked would be.
    PowerSgd twin(*backend, shapes, cfg);
    twin.copy_state_from(original);
    copy.set_rank(0, 2);
    auto a = random_grads(shapes, 9);
    auto b = a;
    auto c = a;
    original.step(spans(a), comm);
    twin.step(spans(b), comm);
    copy.step(spans(c), comm);
    EXPECT_EQ(a, b);
    EXPECT_NE(a[0], c[0]);
    EXPECT_EQ(a[1], c[1]);
  }
  const auto backend = make_backend("cpu");
  const auto other = make_backend("cpu");
  PowerSgd a(*backend, {{8, 6}}, {.seed = 1});
  EXPECT_THROW(PowerSgd(*other, {{8, 6}}, {.seed = 1}).copy_state_from(a), ConfigError);
  EXPECT_THROW(PowerSgd(*backend, {{6, 8}}, {.seed = 1}).copy_state_from(a), ConfigError);
  EXPECT_THROW(PowerSgd(*backend, {{8, 6}}, {.seed = 2}).copy_state_from(a), ConfigError);
  EXPECT_THROW(PowerSgd(*backend, {{8, 6}, {8, 6}}, {.seed = 1}).copy_state_from(a), ConfigError);
}

}  // namespace
}  // namespace edgc::kernels
