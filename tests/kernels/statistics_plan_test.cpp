// The work list the CUDA backend uploads for its statistics kernels, checked on the CPU: pieces cover each selection
// exactly, tiles never cross tensors and cover each tensor's pieces in order.
#include "impl/statistics_plan.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <vector>

#include "edgc/core/block_sampling.hpp"
#include "edgc/core/error.hpp"

namespace edgc::kernels::impl {
namespace {

// Reassembles tensor t's selection from the plan's pieces (offset, length), merging pieces that continue each other,
// and checks the tiles of every tensor.
std::vector<std::vector<Block>> pieces_by_tensor(const BatchedPlan& plan) {
  const std::vector<std::uint64_t>& w = plan.words;
  EXPECT_EQ(w.size(), plan.pieces_at() + 2 * static_cast<std::size_t>(plan.pieces));
  std::vector<std::vector<Block>> out(static_cast<std::size_t>(plan.tensors));
  std::int64_t next_piece = 0;
  for (std::int64_t t = 0; t < plan.tensors; ++t) {
    const auto begin = static_cast<std::int64_t>(w[plan.tile_begin_at() + static_cast<std::size_t>(t)]);
    const auto end = static_cast<std::int64_t>(w[plan.tile_begin_at() + static_cast<std::size_t>(t) + 1]);
    EXPECT_LE(begin, end);
    for (std::int64_t k = begin; k < end; ++k) {
      const std::size_t at = plan.tiles_at() + 3 * static_cast<std::size_t>(k);
      const auto first = static_cast<std::int64_t>(w[at]);
      const auto last = static_cast<std::int64_t>(w[at + 1]);
      EXPECT_EQ(static_cast<std::int64_t>(w[at + 2]), t) << "tile " << k;
      EXPECT_EQ(first, next_piece) << "tile " << k;  // the tiles continue each other, tensor after tensor
      EXPECT_GT(last, first);
      EXPECT_LE(last - first, plan.per_tile);
      for (std::int64_t p = first; p < last; ++p) {
        const std::size_t pa = plan.pieces_at() + 2 * static_cast<std::size_t>(p);
        const Block piece{static_cast<std::int64_t>(w[pa]), static_cast<std::int64_t>(w[pa + 1])};
        EXPECT_GT(piece.length, 0);
        EXPECT_LE(piece.length, kStatisticsPieceElems);
        std::vector<Block>& mine = out[static_cast<std::size_t>(t)];
        if (!mine.empty() && mine.back().offset + mine.back().length == piece.offset &&
            mine.back().length % kStatisticsPieceElems == 0) {
          mine.back().length += piece.length;
        } else {
          mine.push_back(piece);
        }
      }
      next_piece = last;
    }
  }
  EXPECT_EQ(next_piece, plan.pieces);
  return out;
}

TEST(StatisticsPlan, TilesOfOneTensorEachCoverEverySelectionExactly) {
  const std::vector<float> big(100'000, 1.0F);
  const std::vector<float> small(7, 1.0F);
  const std::vector<Block> sampled = choose_blocks(100'000, 0.25, 1024, 3, 0);
  const std::vector<Block> long_blocks{{5, 20'000}, {30'000, 8192}, {50'000, 1}};
  const std::vector<Block> nothing{{3, 0}};
  const std::vector<SampledTensor> tensors = {{big, sampled}, {big, {}},   {small, nothing},
                                              {{}, {}},       {small, {}}, {big, long_blocks}};
  for (const std::int64_t target : {std::int64_t{1}, std::int64_t{4}, std::int64_t{1000}}) {
    SCOPED_TRACE("target tiles " + std::to_string(target));
    const BatchedPlan plan = plan_batched_statistics("test", tensors, target, 8);
    EXPECT_EQ(plan.tensors, 6);
    EXPECT_EQ(plan.per_tile % 8, 0);
    EXPECT_GE(plan.per_tile, 8);
    EXPECT_EQ(plan.words[0], reinterpret_cast<std::uintptr_t>(big.data()));
    EXPECT_EQ(plan.words[4], reinterpret_cast<std::uintptr_t>(small.data()));
    // About target tiles: at most one more per tensor (each tensor's last tile may be short).
    EXPECT_LE(plan.tiles, target + plan.tensors);
    const std::vector<std::vector<Block>> got = pieces_by_tensor(plan);
    EXPECT_EQ(got[0], sampled);  // sampled 4 KiB blocks: one piece each, none merged (they are not contiguous)
    EXPECT_EQ(got[1], (std::vector<Block>{{0, 100'000}}));
    EXPECT_TRUE(got[2].empty());
    EXPECT_TRUE(got[3].empty());
    EXPECT_EQ(got[4], (std::vector<Block>{{0, 7}}));
    EXPECT_EQ(got[5], long_blocks);
    std::int64_t pieces = 0;
    for (const SampledTensor& t : tensors) {
      Block whole{};
      pieces += pieces_of(selection_of(t, whole));
    }
    EXPECT_EQ(plan.pieces, pieces);
    EXPECT_EQ(pieces_of(long_blocks), 3 + 1 + 1);
  }
}

TEST(StatisticsPlan, RefusesBlocksOutsideTheirTensorAndNullData) {
  const std::vector<float> x(10, 1.0F);
  const std::vector<Block> outside{{8, 5}};
  const std::vector<SampledTensor> bad = {{x, {}}, {x, outside}};
  EXPECT_THROW(plan_batched_statistics("test", bad, 4, 8), InternalError);
  const std::vector<SampledTensor> null = {{std::span<const float>(static_cast<const float*>(nullptr), 4), {}}};
  EXPECT_THROW(plan_batched_statistics("test", null, 4, 8), InternalError);
  const std::vector<SampledTensor> empty_null = {{std::span<const float>(), {}}};
  EXPECT_EQ(plan_batched_statistics("test", empty_null, 4, 8).tiles, 0);
}

TEST(StatisticsPlan, HistogramsAddTailsThenRowsPerTensor) {
  const std::vector<unsigned long long> words = {1, 2, 3, 4, 5, 6, 10, 11, 20, 21};
  std::vector<std::int64_t> counts(4, 1);
  std::vector<HistogramTails> tails(2, HistogramTails{1, 1, 1});
  add_histograms(words.data(), counts, tails);
  EXPECT_EQ(counts, (std::vector<std::int64_t>{11, 12, 21, 22}));
  EXPECT_EQ(tails[0].below, 2);
  EXPECT_EQ(tails[0].non_finite, 4);
  EXPECT_EQ(tails[1].above, 6);
}

}  // namespace
}  // namespace edgc::kernels::impl
