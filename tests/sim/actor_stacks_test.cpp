// Whether one simulation's actors fit vm.max_map_count (sim::ActorStacks): closed forms of the mapping counts and
// the three outcomes (guard pages, none, refused) at the limits.
#include <gtest/gtest.h>

#include <cstdint>

#include "edgc/sim/engine_info.hpp"

namespace edgc::sim {
namespace {

TEST(ActorStacks, OneActorPerGpuAndOneMoreWithOverlappedBuckets) {
  ParallelSpec p;
  p.tp = 8;
  p.pp = 4;
  p.dp = 1024;
  EXPECT_EQ(iteration_actors(p), 32768);
  p.overlap_grad_reduce = true;
  EXPECT_EQ(iteration_actors(p), 65536);
  p.tp = 1024;
  p.pp = 1024;
  p.dp = 1024;  // 2^30 GPUs: the product is taken in 64 bits
  EXPECT_EQ(iteration_actors(p), std::int64_t{1} << 31);
}

TEST(ActorStacks, GuardPagesWhileTwoMappingsPerActorFitThenNoneThenRefused) {
  const std::int64_t limit = 65530;  // Linux's default vm.max_map_count
  const std::int64_t guarded_max = (limit - kBaseMappings) / 2;
  const std::int64_t unguarded_max = limit - kBaseMappings;

  const ActorStacks a = plan_actor_stacks(guarded_max, limit);
  EXPECT_EQ(a.maps_guarded, kBaseMappings + 2 * guarded_max);
  EXPECT_EQ(a.maps_unguarded, kBaseMappings + guarded_max);
  EXPECT_TRUE(a.guard_pages);
  EXPECT_TRUE(a.fits);

  const ActorStacks b = plan_actor_stacks(guarded_max + 1, limit);  // the 32,768-GPU case lies here
  EXPECT_FALSE(b.guard_pages);
  EXPECT_TRUE(b.fits);
  EXPECT_FALSE(plan_actor_stacks(32768, limit).guard_pages);
  EXPECT_TRUE(plan_actor_stacks(32768, limit).fits);

  const ActorStacks c = plan_actor_stacks(unguarded_max, limit);
  EXPECT_TRUE(c.fits);
  const ActorStacks d = plan_actor_stacks(unguarded_max + 1, limit);
  EXPECT_FALSE(d.fits);
  EXPECT_FALSE(d.guard_pages);
  EXPECT_EQ(d.map_limit, limit);
}

TEST(ActorStacks, TheMachinesLimitIsRead) { EXPECT_GT(vm_max_map_count(), kBaseMappings); }

}  // namespace
}  // namespace edgc::sim
