// Platform construction: spec validation names the scenario key, routes have the documented shape.
#include <gtest/gtest.h>

#include <string>

#include "edgc/core/error.hpp"
#include "edgc/sim/platform.hpp"
#include "expect_error.hpp"
#include "sim_test_util.hpp"

namespace edgc::sim {
namespace {

using test::engine;

void expect_rejected(const ClusterSpec& s, const std::string& field) {
  SCOPED_TRACE("a spec with a bad " + field);
  edgc::test::expect_config_error([&] { validate(s, "x.json"); }, "x.json", field);
}

TEST(Validate, RejectsBadSpecsNamingTheField) {
  ClusterSpec s = test::h100_like(2);
  EXPECT_NO_THROW(validate(s));
  s.nics_per_node = 3;
  expect_rejected(s, "cluster.inter_node.nics_per_node");
  s = test::h100_like(0);
  expect_rejected(s, "cluster.nodes");
  s = test::h100_like(2);
  s.nic_bandwidth_GBps = 0;
  expect_rejected(s, "cluster.inter_node.nic_bandwidth_GBps");
  s = test::h100_like(2);
  s.intra_latency_us = -1;
  expect_rejected(s, "cluster.intra_node.latency_us");
  s = test::dgx1_like(2);
  s.gpus_per_node = 4;
  expect_rejected(s, "cluster.gpus_per_node");
  s = test::h100_like(8);
  s.fabric = Fabric::kFatTree;
  s.fat_tree_nodes_per_leaf = 4;
  s.oversubscription = 3;
  expect_rejected(s, "cluster.inter_node.oversubscription");
  s.oversubscription = 2;
  EXPECT_NO_THROW(validate(s));
  s.fat_tree_nodes_per_leaf = 3;
  expect_rejected(s, "cluster.inter_node.nodes_per_leaf");
}

TEST(Validate, BuildRejectsBeforeTouchingTheEngine) {
  ClusterSpec s = test::h100_like(2);
  s.gpus_per_node = 0;
  EXPECT_THROW(Platform::build(engine(), s, NetworkProfile{}), ConfigError);
}

TEST(EfficiencyCurve, InterpolatesLogLinearlyAndClamps) {
  EfficiencyCurve c;
  EXPECT_DOUBLE_EQ(efficiency_at(c, 123), 1.0);
  c.points = {{1e3, 0.2}, {1e5, 0.6}};
  EXPECT_DOUBLE_EQ(efficiency_at(c, 10), 0.2);
  EXPECT_DOUBLE_EQ(efficiency_at(c, 1e9), 0.6);
  EXPECT_NEAR(efficiency_at(c, 1e4), 0.4, 1e-12);
}

TEST(Routes, SwitchNodeAndNicsHaveTheDocumentedShape) {
  const Platform p = Platform::build(engine(), test::h100_like(2), NetworkProfile{});
  ASSERT_EQ(p.gpus(), 16);
  const Route intra = route_between(p.gpu(0), p.gpu(5));
  ASSERT_EQ(intra.links.size(), 2U);
  EXPECT_EQ(intra.links[0]->get_name(), "n0-nvl0_UP");
  EXPECT_EQ(intra.links[1]->get_name(), "n0-nvl5_DOWN");
  EXPECT_NEAR(intra.latency_s, 2e-6, 1e-15);
  EXPECT_DOUBLE_EQ(intra.bottleneck_Bps, 450e9);
  const Route inter = route_between(p.gpu(3), p.gpu(8 + 6));
  ASSERT_EQ(inter.links.size(), 2U);
  EXPECT_EQ(inter.links[0]->get_name(), "n0-nic3_UP");
  EXPECT_EQ(inter.links[1]->get_name(), "n1-nic6_DOWN");
  EXPECT_NEAR(inter.latency_s, 4e-6, 1e-15);
  EXPECT_DOUBLE_EQ(inter.bottleneck_Bps, 50e9);
  EXPECT_THROW(p.gpu(16), InternalError);
}

TEST(Routes, CubeMeshUsesLaneCountsAndDetoursUnwiredPairs) {
  const Platform p = Platform::build(engine(), test::dgx1_like(2), NetworkProfile{});
  const Route two_lanes = route_between(p.gpu(0), p.gpu(2));
  ASSERT_EQ(two_lanes.links.size(), 1U);
  EXPECT_DOUBLE_EQ(two_lanes.bottleneck_Bps, 50e9);
  const Route back = route_between(p.gpu(2), p.gpu(0));
  ASSERT_EQ(back.links.size(), 1U);
  EXPECT_EQ(back.links[0]->get_name(), "n0-nvl0-2_DOWN");
  const Route one_lane = route_between(p.gpu(0), p.gpu(1));
  EXPECT_DOUBLE_EQ(one_lane.bottleneck_Bps, 25e9);
  const Route detour = route_between(p.gpu(0), p.gpu(6));  // no NVLink between 0 and 6
  EXPECT_EQ(detour.links.size(), 2U);
  EXPECT_NEAR(detour.latency_s, 4e-6, 1e-15);
  // GPUs 0 and 1 share NIC 0; GPU 2 has NIC 1.
  EXPECT_EQ(route_between(p.gpu(1), p.gpu(8)).links[0]->get_name(), "n0-nic0_UP");
  EXPECT_EQ(route_between(p.gpu(2), p.gpu(8)).links[0]->get_name(), "n0-nic1_UP");
}

}  // namespace
}  // namespace edgc::sim
