#include "edgc/core/block_sampling.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace edgc {
namespace {

TEST(BlockSampling, BlocksAreSortedDisjointInsideAndSizedByFraction) {
  for (std::int64_t numel : {1000, 4096, 100'003, 1 << 20}) {
    for (double fraction : {0.01, 0.1, 0.25, 0.5}) {
      const std::int64_t be = 256;
      const auto blocks = choose_blocks(numel, fraction, be, 42, 7);
      const std::int64_t cells = (numel + be - 1) / be;
      const auto wanted = std::max<std::int64_t>(
          1, static_cast<std::int64_t>(std::ceil(fraction * static_cast<double>(numel) / static_cast<double>(be))));
      if (wanted >= cells) {
        ASSERT_EQ(blocks.size(), 1u);
        EXPECT_EQ(blocks[0], (Block{0, numel}));
        continue;
      }
      ASSERT_EQ(static_cast<std::int64_t>(blocks.size()), wanted);
      std::int64_t prev_end = 0;
      for (const Block& b : blocks) {
        EXPECT_GE(b.offset, prev_end);
        EXPECT_EQ(b.offset % be, 0);
        EXPECT_GE(b.length, 1);
        EXPECT_LE(b.offset + b.length, numel);
        prev_end = b.offset + b.length;
      }
      const double got = static_cast<double>(total_length(blocks)) / static_cast<double>(numel);
      EXPECT_NEAR(got, fraction, static_cast<double>(be) / static_cast<double>(numel) + 1e-12);
    }
  }
}

TEST(BlockSampling, SameSeedSameBlocksOtherSeedOtherBlocks) {
  const auto a = choose_blocks(1 << 20, 0.1, 1024, 5, 3);
  const auto b = choose_blocks(1 << 20, 0.1, 1024, 5, 3);
  const auto c = choose_blocks(1 << 20, 0.1, 1024, 6, 3);
  const auto d = choose_blocks(1 << 20, 0.1, 1024, 5, 4);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
}

TEST(BlockSampling, CellsAreChosenUniformly) {
  // Each of 16 cells is picked 4 times per draw on average: counts over 4000 seeds stay within 10 %.
  std::vector<int> hits(16, 0);
  for (std::uint64_t seed = 0; seed < 4000; ++seed)
    for (const Block& b : choose_blocks(16 * 64, 0.25, 64, seed, 0)) ++hits[static_cast<std::size_t>(b.offset / 64)];
  for (int h : hits) EXPECT_NEAR(h, 1000, 100);
}

TEST(BlockSampling, RejectsBadArguments) {
  EXPECT_THROW(choose_blocks(0, 0.5, 16, 1, 0), std::exception);
  EXPECT_THROW(choose_blocks(100, 0.0, 16, 1, 0), std::exception);
  EXPECT_THROW(choose_blocks(100, 1.5, 16, 1, 0), std::exception);
  EXPECT_THROW(choose_blocks(100, 0.5, 0, 1, 0), std::exception);
}

}  // namespace
}  // namespace edgc
