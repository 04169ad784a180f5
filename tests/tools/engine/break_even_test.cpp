// The break-even rank (tools/engine/src/break_even.hpp) on hand-computed sync times: the probe ranks, the linear
// interpolation at the first crossing, the two ends, the floor to a multiple of 4 that compression.r_max "auto"
// takes, and its refusals.
#include "break_even.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "edgc/core/error.hpp"
#include "expect_error.hpp"

namespace edgc::engine {
namespace {

using Kind = StageBreakEven::Kind;

TEST(BreakEven, ProbesPowersOfTwoUpToTheCap) {
  EXPECT_EQ(break_even_probe_ranks(64), (std::vector<int>{2, 4, 8, 16, 32, 64}));
  EXPECT_EQ(break_even_probe_ranks(100), (std::vector<int>{2, 4, 8, 16, 32, 64}));
  EXPECT_EQ(break_even_probe_ranks(2), (std::vector<int>{2}));
  EXPECT_TRUE(break_even_probe_ranks(1).empty());
}

TEST(BreakEven, InterpolatesLinearlyAtTheFirstCrossing) {
  // Uncompressed 10 ms. Rank 16 takes 8 ms, rank 32 takes 12 ms: 16 + (10 − 8)·16/4 = 24.
  const std::vector<int> ranks = {2, 4, 8, 16, 32, 64};
  StageBreakEven b = stage_break_even(ranks, {5, 6, 7, 8, 12, 20}, 10.0);
  EXPECT_EQ(b.kind, Kind::kCrossed);
  EXPECT_DOUBLE_EQ(b.rank, 24.0);
  // Crossing between rank 16 (9 ms) and rank 32 (10.5 ms): 16 + (10 − 9)·16/1.5.
  b = stage_break_even(ranks, {5, 6, 7, 9, 10.5, 20}, 10.0);
  EXPECT_DOUBLE_EQ(b.rank, 16.0 + 1.0 * 16.0 / 1.5);
  // The same time as uncompressed: the skip rule sends everything uncompressed there; the break-even is at most it.
  b = stage_break_even(ranks, {5, 6, 7, 9, 10, 10}, 10.0);
  EXPECT_EQ(b.kind, Kind::kSkipped);
  EXPECT_DOUBLE_EQ(b.rank, 32.0);
  // Only the first crossing counts (a later dip below does not move it): 4 + (10 − 9)·4/2 = 6.
  b = stage_break_even(ranks, {5, 9, 11, 8, 12, 20}, 10.0);
  EXPECT_DOUBLE_EQ(b.rank, 6.0);
  // Already no faster at rank 2: no rank pays.
  EXPECT_EQ(stage_break_even(ranks, {10, 11, 12, 13, 14, 15}, 10.0).kind, Kind::kBelowFirst);
  // Faster at every probe: at least the last probe.
  b = stage_break_even(ranks, {1, 2, 3, 4, 5, 6}, 10.0);
  EXPECT_EQ(b.kind, Kind::kAboveLast);
  EXPECT_DOUBLE_EQ(b.rank, 64.0);
  EXPECT_THROW(stage_break_even(ranks, {1.0}, 10.0), InternalError);
}

TEST(BreakEven, AutoRMaxIsTheSmallestStageFlooredToTheQuantum) {
  EXPECT_EQ(floor_to_multiple(24.0, 4), 24);
  EXPECT_EQ(floor_to_multiple(27.9, 4), 24);
  EXPECT_EQ(floor_to_multiple(3.9, 4), 0);
  BreakEven b;
  b.ranks = {2, 4, 8, 16, 32, 64};
  b.uncompressed_sync_s = {0.01, 0.01};
  b.sync_s = {{0.005, 0.006, 0.007, 0.008, 0.012, 0.02}, {0.001, 0.002, 0.003, 0.004, 0.005, 0.006}};
  b.stages = {{Kind::kCrossed, 27.5}, {Kind::kAboveLast, 64.0}};
  EXPECT_EQ(b.r_max(4), 24);
  core::CqmConfig cqm;
  cqm.r_min = 8;
  EXPECT_EQ(auto_r_max(b, cqm, "s.json"), 24);
  const nlohmann::ordered_json j = break_even_json(b, 4);
  EXPECT_EQ(j["r_max_auto"], 24);
  EXPECT_EQ(j["stages"][1]["kind"], "above_last_probe");
  EXPECT_DOUBLE_EQ(j["stages"][0]["rank"].get<double>(), 27.5);
  // Below r_min: refused, naming the key.
  cqm.r_min = 32;
  test::expect_config_error([&] { auto_r_max(b, cqm, "s.json"); }, "s.json", "compression.r_max",
                            {"is 24, below compression.r_min 32"});
  // A stage where no rank pays: refused with its figures.
  b.sync_s[1] = {0.011, 0.012, 0.013, 0.014, 0.015, 0.016};
  b.stages[1] = stage_break_even(b.ranks, b.sync_s[1], 0.01);
  EXPECT_EQ(b.stages[1].kind, Kind::kBelowFirst);
  EXPECT_EQ(b.r_max(4), std::nullopt);
  EXPECT_TRUE(break_even_json(b, 4)["stages"][1]["rank"].is_null());
  cqm.r_min = 8;
  test::expect_config_error(
      [&] { auto_r_max(b, cqm, "s.json"); }, "s.json", "compression.r_max",
      {"stage 1's compressed sync at rank 2 (0.011 s) is no faster than the uncompressed one (0.01 s)"});
}

}  // namespace
}  // namespace edgc::engine
