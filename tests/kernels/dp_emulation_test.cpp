#include "edgc/kernels/dp_emulation.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "kernel_test_util.hpp"

namespace edgc::kernels {
namespace {

using testing::frobenius;
using testing::frobenius_diff;
using testing::random_normal;

using Shapes = std::vector<std::vector<std::int64_t>>;

const Shapes kShapes{{96, 80}, {96, 80}, {80}, {64, 2, 16}};

std::vector<std::vector<float>> make_grads(std::uint64_t seed) {
  std::vector<std::vector<float>> g;
  const std::size_t sizes[] = {96 * 80, 96 * 80, 80, 64 * 32};
  for (std::size_t i = 0; i < 4; ++i) g.push_back(random_normal(sizes[i], seed * 10 + i, 0.02));
  return g;
}

std::vector<std::span<const float>> views(const std::vector<std::vector<float>>& g) {
  std::vector<std::span<const float>> v;
  for (const auto& x : g) v.emplace_back(x);
  return v;
}

TEST(DataParallelEmulator, IdenticalCopiesOnThreeRanksMatchOneRank) {
  const PowerSgdConfig config{.rank = 4, .seed = 11};
  DataParallelEmulator three("cpu", kShapes, 3, config, 0.0, 1);
  DataParallelEmulator one("cpu", kShapes, 1, config, 0.0, 1);
  const std::vector<int> ranks{4, 2, 0, 3};
  for (int step = 0; step < 4; ++step) {
    const auto g = make_grads(static_cast<std::uint64_t>(step + 1));
    const EmulatedStep a = three.step(views(g), ranks);
    const EmulatedStep b = one.step(views(g), ranks);
    ASSERT_EQ(a.tensors.size(), 4u);
    for (std::size_t i = 0; i < 4; ++i) {
      const auto ra = three.reconstruction(i);
      const auto rb = one.reconstruction(i);
      EXPECT_LE(frobenius_diff(ra.data(), rb.data(), ra.size()), 1e-5 * frobenius(g[i])) << "tensor " << i;
      EXPECT_EQ(a.tensors[i].compressed, b.tensors[i].compressed);
      EXPECT_EQ(a.tensors[i].rank, b.tensors[i].rank);
      EXPECT_EQ(a.tensors[i].wire_floats, b.tensors[i].wire_floats);
      EXPECT_NEAR(a.tensors[i].relative_error, b.tensors[i].relative_error, 1e-5);
    }
    EXPECT_TRUE(a.tensors[0].compressed);
    EXPECT_FALSE(a.tensors[2].compressed);
    EXPECT_LT(a.tensors[2].relative_error, 1e-6);  // 1-D: the exact average, up to rounding of the mean
    // On the first step E = 0, so against the true average the error is rank 0's compression error.
    if (step == 0) {
      EXPECT_NEAR(a.tensors[0].relative_error, a.tensors[0].compression_error, 1e-5);
    }
  }
}

TEST(DataParallelEmulator, PerturbedRanksAverageWithErrorAndStayIdentical) {
  DataParallelEmulator emu("cpu", kShapes, 4, {.rank = 8, .seed = 3}, 0.5, 42);
  const auto g = make_grads(5);
  double first = 0.0;
  for (int step = 0; step < 3; ++step) {
    const EmulatedStep st = emu.step(views(g), {});
    const EmulatedTensor& t = st.tensors[0];
    EXPECT_TRUE(t.compressed);
    EXPECT_EQ(t.rank, 8);
    EXPECT_EQ(t.wire_floats, (96 + 80) * 8);
    EXPECT_GT(t.relative_error, 0.0);
    EXPECT_LT(t.relative_error, 1.5);
    EXPECT_GT(t.compression_error, 0.0);
    EXPECT_LE(t.compression_error, 1.0);
    EXPECT_GT(st.wall_seconds, 0.0);
    EXPECT_EQ(st.dense_floats, 2 * 96 * 80 + 80 + 64 * 32);
    if (step == 0) first = t.relative_error;
  }
  EXPECT_GT(first, 0.0);
  // The 1-D tensor is averaged exactly: its error against the true average is rounding only.
  EXPECT_LT(emu.step(views(g), {}).tensors[2].relative_error, 1e-6);
}

TEST(DataParallelEmulator, RejectsBadInput) {
  EXPECT_THROW(DataParallelEmulator("cpu", kShapes, 0, {}, 0.0, 1), ConfigError);
  EXPECT_THROW(DataParallelEmulator("cpu", kShapes, 2, {}, -1.0, 1), ConfigError);
  EXPECT_THROW(DataParallelEmulator("gpu9000", kShapes, 2, {}, 0.0, 1), ConfigError);
  DataParallelEmulator emu("cpu", kShapes, 2, {.rank = 4}, 0.1, 1);
  const auto g = make_grads(1);
  EXPECT_THROW(emu.step(views(g), std::vector<int>{4, 4}), InputError);
  EXPECT_THROW(emu.step(views(g), std::vector<int>{4, 81, 0, 4}), ConfigError);  // 81 > min(96, 80)
  auto short_g = g;
  short_g[3].pop_back();
  EXPECT_THROW(emu.step(views(short_g), {}), InputError);
  // Rejected input leaves the emulator usable, with every rank still agreeing.
  const EmulatedStep st = emu.step(views(g), std::vector<int>{4, 4, 0, 4});
  EXPECT_TRUE(st.tensors[3].compressed);
  EXPECT_EQ(emu.rank_state(1).rank(0), 4);
}

}  // namespace
}  // namespace edgc::kernels
