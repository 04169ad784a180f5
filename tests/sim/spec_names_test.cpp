#include "edgc/sim/spec_names.hpp"

#include <gtest/gtest.h>

#include <string>

namespace edgc::sim {
namespace {

// Every name reads back as its value and every value prints as its name; other names are refused.
TEST(SpecNames, EachTableRoundTrips) {
  for (const PipelineSchedule s :
       {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB, PipelineSchedule::kInterleaved})
    EXPECT_EQ(schedule_from_name(schedule_name(s)), s);
  for (const RankOrder o : {RankOrder::kTpDpPp, RankOrder::kTpPpDp})
    EXPECT_EQ(rank_order_from_name(rank_order_name(o)), o);
  for (const NetworkProfileKind k : {NetworkProfileKind::kIdeal, NetworkProfileKind::kCalibrated})
    EXPECT_EQ(network_profile_from_name(network_profile_name(k)), k);
  for (const Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull})
    EXPECT_EQ(recompute_from_name(recompute_name(r)), r);
  EXPECT_FALSE(schedule_from_name("1F1B"));
  EXPECT_FALSE(rank_order_from_name("dp-tp-pp"));
  EXPECT_FALSE(recompute_from_name(""));
}

// The spellings scenarios and result files use.
TEST(SpecNames, TheSpellingsAreTheScenarioOnes) {
  EXPECT_EQ(schedule_name(PipelineSchedule::kGpipe), "gpipe");
  EXPECT_EQ(schedule_name(PipelineSchedule::kOneFOneB), "1f1b");
  EXPECT_EQ(schedule_name(PipelineSchedule::kInterleaved), "interleaved");
  EXPECT_EQ(rank_order_name(RankOrder::kTpDpPp), "tp-dp-pp");
  EXPECT_EQ(rank_order_name(RankOrder::kTpPpDp), "tp-pp-dp");
  EXPECT_EQ(network_profile_name(NetworkProfileKind::kIdeal), "ideal");
  EXPECT_EQ(network_profile_name(NetworkProfileKind::kCalibrated), "calibrated");
  EXPECT_EQ(recompute_name(Recompute::kNone), "none");
  EXPECT_EQ(recompute_name(Recompute::kSelective), "selective");
  EXPECT_EQ(recompute_name(Recompute::kFull), "full");
}

}  // namespace
}  // namespace edgc::sim
