// Ring collectives on the ideal profile against the closed form steps · (L + (S/D)/B), two rings sharing NICs,
// the calibrated profile's factors, and the timed sweep taking closed forms where they apply. Each TEST is one
// simulation and runs in its own process.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "edgc/sim/collectives.hpp"
#include "edgc/sim/platform.hpp"
#include "sim_test_util.hpp"

namespace edgc::sim {
namespace {

using test::engine;

// Latency and bottleneck bandwidth of the slowest neighbour route of the ring `hosts`.
Route slowest_hop(const std::vector<sg4::Host*>& hosts) {
  Route worst;
  worst.bottleneck_Bps = 1e300;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    const Route r = route_between(hosts[i], hosts[(i + 1) % hosts.size()]);
    worst.latency_s = std::max(worst.latency_s, r.latency_s);
    worst.bottleneck_Bps = std::min(worst.bottleneck_Bps, r.bottleneck_Bps);
  }
  return worst;
}

// The ideal profile with all-reduces forced to `algorithm`.
NetworkProfile ideal(CollectiveAlgorithm algorithm) {
  NetworkProfile p;
  p.algorithm = algorithm;
  return p;
}

const std::vector<std::uint64_t> kSizes = {1ULL << 20, 100ULL << 20, 1ULL << 30};

// Ring all-reduce over `ranks` of `spec` on the ideal profile: simulated time equals 2(D-1)/D·S/B + 2(D-1)·L.
void expect_all_reduce_closed_form(const ClusterSpec& spec, const std::vector<int>& ranks) {
  // A forced ring: auto would run a tree over packed nodes.
  const Platform p = Platform::build(engine(), spec, ideal(CollectiveAlgorithm::kRing));
  Group g{{}, "ar"};
  for (int r : ranks) g.hosts.push_back(p.gpu(r));
  const Route hop = slowest_hop(g.hosts);
  const double d = g.size();
  const auto times = time_collective_sweep(engine(), CollectiveOp::kAllReduce, g, kSizes);
  for (std::size_t i = 0; i < kSizes.size(); ++i) {
    const double s = static_cast<double>(kSizes[i]);
    const double expected = 2 * (d - 1) / d * s / hop.bottleneck_Bps + 2 * (d - 1) * hop.latency_s;
    EXPECT_NEAR(times[i] / expected, 1.0, 1e-3) << "D=" << d << " S=" << s << " sim " << times[i] << " s";
  }
}

std::vector<int> spread(int d) {  // one GPU per node: every hop crosses the fabric
  std::vector<int> r;
  for (int i = 0; i < d; ++i) r.push_back(i * 8);
  return r;
}

std::vector<int> packed(int d) {
  std::vector<int> r;
  for (int i = 0; i < d; ++i) r.push_back(i);
  return r;
}

Group group_of(const Platform& p, const std::vector<int>& ranks, const std::string& tag) {
  Group g{{}, tag};
  for (int r : ranks) g.hosts.push_back(p.gpu(r));
  return g;
}

// All-to-all over `ranks` of `spec` on the ideal profile: every member sends S/D to each of the D − 1 others at
// once, so its own link carries (D − 1)/D · S: L + (D − 1)/D · S/B with L and B of the slowest route.
void expect_all_to_all_closed_form(const ClusterSpec& spec, const std::vector<int>& ranks) {
  const Platform p = Platform::build(engine(), spec, NetworkProfile{});
  Group g{{}, "a2a"};
  for (int r : ranks) g.hosts.push_back(p.gpu(r));
  Route worst;
  worst.bottleneck_Bps = 1e300;
  for (sg4::Host* a : g.hosts)
    for (sg4::Host* b : g.hosts)
      if (a != b) {
        const Route r = route_between(a, b);
        worst.latency_s = std::max(worst.latency_s, r.latency_s);
        worst.bottleneck_Bps = std::min(worst.bottleneck_Bps, r.bottleneck_Bps);
      }
  const double d = g.size();
  const auto times = time_collective_sweep(engine(), CollectiveOp::kAllToAll, g, kSizes);
  for (std::size_t i = 0; i < kSizes.size(); ++i) {
    const double s = static_cast<double>(kSizes[i]);
    const double expected = (d - 1) / d * s / worst.bottleneck_Bps + worst.latency_s;
    EXPECT_NEAR(times[i] / expected, 1.0, 1e-3) << "D=" << d << " S=" << s << " sim " << times[i] << " s";
  }
}

TEST(AllToAllClosedForm, IntraNodeD8) { expect_all_to_all_closed_form(test::h100_like(1), packed(8)); }
TEST(AllToAllClosedForm, FabricD4) { expect_all_to_all_closed_form(test::h100_like(4), spread(4)); }
TEST(AllToAllClosedForm, BusFactorAndName) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::kAllToAll, 8), 7.0 / 8.0);
  EXPECT_EQ(collective_op_from_name("all_to_all"), CollectiveOp::kAllToAll);
  EXPECT_EQ(collective_op_name(CollectiveOp::kAllToAll), "all_to_all");
}

TEST(RingClosedForm, FabricD2) { expect_all_reduce_closed_form(test::h100_like(2), spread(2)); }
TEST(RingClosedForm, FabricD8) { expect_all_reduce_closed_form(test::h100_like(8), spread(8)); }
TEST(RingClosedForm, FabricD32) { expect_all_reduce_closed_form(test::h100_like(32), spread(32)); }
TEST(RingClosedForm, IntraNodeD2) { expect_all_reduce_closed_form(test::h100_like(1), packed(2)); }
TEST(RingClosedForm, IntraNodeD8) { expect_all_reduce_closed_form(test::h100_like(1), packed(8)); }
TEST(RingClosedForm, PackedD32AcrossFourNodesWithOneNic) {
  // Rank order 0..31, one NIC per node: one ring, 7 NVLink hops and one NIC hop per node; the NIC is the bottleneck.
  ClusterSpec s = test::h100_like(4);
  s.nics_per_node = 1;
  expect_all_reduce_closed_form(s, packed(32));
}

// 8 GPUs and 8 NICs per node: 8 rings, each leaving every node through another NIC with 1/8 of each chunk. A member
// sends 7 of its 8 parts over NVLink and one over its NIC, so a step takes the slower of the two.
TEST(Channels, PackedRingsUseEveryNic) {
  const ClusterSpec spec = test::h100_like(4);
  const Platform p = Platform::build(engine(), spec, ideal(CollectiveAlgorithm::kRing));
  const Group g = group_of(p, packed(32), "ch");
  ASSERT_EQ(ring_channels(g), 8);
  const double d = 32;
  const double nic = spec.nic_bandwidth_GBps * 1e9;
  const double nvl = spec.intra_bandwidth_GBps * 1e9;
  const auto times = time_collective_sweep(engine(), CollectiveOp::kAllReduce, g, kSizes);
  for (std::size_t i = 0; i < kSizes.size(); ++i) {
    const double chunk = static_cast<double>(kSizes[i]) / d;
    const double step =
        std::max(spec.inter_latency_us * 1e-6 + chunk / 8 / nic, spec.intra_latency_us * 1e-6 + chunk * 7 / 8 / nvl);
    EXPECT_NEAR(times[i] / (2 * (d - 1) * step), 1.0, 1e-3) << "S=" << kSizes[i];
    EXPECT_NEAR(times[i] / ring_estimate_s(g, kSizes[i]), 1.0, 1e-3) << "S=" << kSizes[i];
  }
}

// A whole DGX-1 node: the rings over direct NVLinks, each also reversed, keep all 6 lanes of every GPU busy both
// ways, so a step moves a chunk at 6 × 25 GB/s (one ring over single lanes: 25 GB/s).
TEST(Channels, CubeMeshNodeRingsUseEveryLane) {
  const ClusterSpec spec = test::dgx1_like(1);
  const Platform p = Platform::build(engine(), spec, NetworkProfile{});
  const Group g = group_of(p, packed(8), "cube8");
  EXPECT_GE(ring_channels(g), 2);
  const double lanes_Bps = 6 * spec.intra_bandwidth_GBps * 1e9;
  const auto times = time_collective_sweep(engine(), CollectiveOp::kAllReduce, g, kSizes);
  for (std::size_t i = 0; i < kSizes.size(); ++i) {
    const double expected = 14 * (spec.intra_latency_us * 1e-6 + static_cast<double>(kSizes[i]) / 8 / lanes_Bps);
    EXPECT_NEAR(times[i] / expected, 1.0, 1e-3) << "S=" << kSizes[i];
    EXPECT_NEAR(times[i] / ring_estimate_s(g, kSizes[i]), 1.0, 1e-3) << "S=" << kSizes[i];
  }
}

// GPUs 0-3 of a DGX-1: GPUs 0 and 1 have 4 lanes to the other three (2 and 3 have 5), so a step runs at 4 × 25 GB/s.
TEST(Channels, CubeMeshQuadRingsUseItsFourLanes) {
  const ClusterSpec spec = test::dgx1_like(1);
  const Platform p = Platform::build(engine(), spec, NetworkProfile{});
  const Group g = group_of(p, packed(4), "cube4");
  const auto times = time_collective_sweep(engine(), CollectiveOp::kAllReduce, g, {1ULL << 30});
  const double expected =
      6 * (spec.intra_latency_us * 1e-6 + static_cast<double>(1ULL << 30) / 4 / (4 * spec.intra_bandwidth_GBps * 1e9));
  EXPECT_NEAR(times[0] / expected, 1.0, 1e-3);
}

TEST(Channels, CubeMeshAcrossNodesAndOneGpuPerNodeKeepOneRing) {
  const Platform p = Platform::build(engine(), test::dgx1_like(2), NetworkProfile{});
  const Group cube = group_of(p, packed(16), "cube");
  Group spread_ring{{p.gpu(0), p.gpu(8)}, "spread"};
  EXPECT_EQ(ring_channels(cube), 1);
  EXPECT_EQ(ring_channels(spread_ring), 1);
  EXPECT_EQ(chosen_allreduce_algorithm(cube, 1ULL << 30), CollectiveAlgorithm::kRing);  // no tree over cube-mesh
}

// Two nodes of 8: 8 channels × 2 trees each carry S/16. Inside a node every member is, over the channels, once the
// chain's head, once its tail and six times in the middle, so its NVLink up-link carries (1 + 12 + 1)·2 = 28 flows
// of S/16 = 1.75·S; a NIC carries S/8 each way. NVLink (1.75/450 GB/s) is the bottleneck, not the NICs (1/400).
TEST(Tree, TwoNodesTakeTheMostLoadedLinkPlusThePathLatency) {
  const ClusterSpec spec = test::h100_like(2);
  const Platform p = Platform::build(engine(), spec, ideal(CollectiveAlgorithm::kTree));
  const Group g = group_of(p, packed(16), "tree");
  ASSERT_EQ(chosen_allreduce_algorithm(g, 1ULL << 30), CollectiveAlgorithm::kTree);
  const double l_intra = spec.intra_latency_us * 1e-6;
  const double l_inter = spec.inter_latency_us * 1e-6;
  const double path_s = 2 * (1 * l_inter + 7 * l_intra);  // depth 1 between nodes, a chain of 8 inside
  const auto times = time_collective_sweep(engine(), CollectiveOp::kAllReduce, g, kSizes);
  for (std::size_t i = 0; i < kSizes.size(); ++i) {
    const double s = static_cast<double>(kSizes[i]);
    // The slowest flow, NVLink or NIC, then the path latency the flows have not paid (less the NIC route's).
    const double nvlink_s = l_intra + 1.75 * s / (spec.intra_bandwidth_GBps * 1e9);
    const double nic_s = l_inter + s / 8 / (spec.nic_bandwidth_GBps * 1e9);
    const double expected = std::max(nvlink_s, nic_s) + path_s - l_inter;
    EXPECT_NEAR(times[i] / expected, 1.0, 1e-3) << "S=" << s << " sim " << times[i];
    EXPECT_NEAR(tree_estimate_s(g, kSizes[i]), path_s + 1.75 * s / (spec.intra_bandwidth_GBps * 1e9), 1e-12);
  }
}

// Auto: a tree where several members share a node and it is estimated faster; always a ring with one GPU per node.
TEST(Tree, AutoChoosesByTheLineRateEstimates) {
  const Platform p = Platform::build(engine(), test::h100_like(4), NetworkProfile{});
  const Group two_nodes = group_of(p, packed(16), "two");
  const Group spread_ring = group_of(p, spread(4), "spread");
  for (const std::uint64_t bytes : std::vector<std::uint64_t>{8, 1ULL << 20, 1ULL << 30}) {
    const bool tree_faster = tree_estimate_s(two_nodes, bytes) < ring_estimate_s(two_nodes, bytes);
    EXPECT_EQ(chosen_allreduce_algorithm(two_nodes, bytes),
              tree_faster ? CollectiveAlgorithm::kTree : CollectiveAlgorithm::kRing);
    EXPECT_EQ(chosen_allreduce_algorithm(spread_ring, bytes), CollectiveAlgorithm::kRing);
    EXPECT_LT(tree_estimate_s(spread_ring, bytes), 1e300);  // a tree could run (forced), auto keeps the ring
  }
  // 2 nodes × 8: the ring moves 2·15/16 = 1.875·S over each node's 8 NICs, the tree S, so at 1 GiB the tree wins.
  EXPECT_EQ(chosen_allreduce_algorithm(two_nodes, 1ULL << 30), CollectiveAlgorithm::kTree);
}

// The algorithm table: names round-trip, only the ring (and auto, which keeps the ring over one member per node)
// keeps the iteration's closed forms, and each algorithm's transfer is what it sends per flow: a ring step's chunk
// per channel, a tree edge's S/(2C).
TEST(AlgorithmTable, NamesCapabilitiesAndTransferBytes) {
  for (const CollectiveAlgorithm a :
       {CollectiveAlgorithm::kAuto, CollectiveAlgorithm::kRing, CollectiveAlgorithm::kTree})
    EXPECT_EQ(allreduce_algorithm_from_name(allreduce_algorithm_name(a)), a);
  EXPECT_FALSE(allreduce_algorithm_from_name("nvls").has_value());
  EXPECT_TRUE(allreduce_ring_closed_form(CollectiveAlgorithm::kRing));
  EXPECT_TRUE(allreduce_ring_closed_form(CollectiveAlgorithm::kAuto));
  EXPECT_FALSE(allreduce_ring_closed_form(CollectiveAlgorithm::kTree));
  const Platform p = Platform::build(engine(), test::h100_like(2), NetworkProfile{});
  const Group g = group_of(p, packed(16), "table");
  const auto channels = static_cast<std::uint64_t>(ring_channels(g));
  ASSERT_GT(channels, 1U);
  const std::uint64_t bytes = (1ULL << 30) + 7;
  EXPECT_EQ(allreduce_transfer_bytes(CollectiveAlgorithm::kTree, g, bytes),
            (bytes + 2 * channels - 1) / (2 * channels));
  EXPECT_EQ(allreduce_transfer_bytes(CollectiveAlgorithm::kRing, g, bytes),
            (ring_chunk_bytes(CollectiveOp::kAllReduce, 16, bytes) + channels - 1) / channels);
  EXPECT_EQ(allreduce_transfer_bytes(CollectiveAlgorithm::kAuto, g, bytes),
            allreduce_transfer_bytes(chosen_allreduce_algorithm(g, bytes), g, bytes));
}

TEST(RingClosedForm, NonBlockingFatTreeD8) {
  ClusterSpec s = test::h100_like(8);
  s.fabric = Fabric::kFatTree;
  s.fat_tree_nodes_per_leaf = 4;
  s.oversubscription = 1;
  expect_all_reduce_closed_form(s, spread(8));
}

TEST(RingClosedForm, ReduceScatterAndAllGatherTakeHalfTheSteps) {
  const Platform p = Platform::build(engine(), test::h100_like(4), NetworkProfile{});
  Group g{{p.gpu(0), p.gpu(8), p.gpu(16), p.gpu(24)}, "rs"};
  const Route hop = slowest_hop(g.hosts);
  const std::uint64_t bytes = 1ULL << 28;
  const auto t = time_collective_sweep(engine(), CollectiveOp::kReduceScatter, g, {bytes});
  const double expected = 3 * (static_cast<double>(bytes) / 4 / hop.bottleneck_Bps + hop.latency_s);
  EXPECT_NEAR(t[0] / expected, 1.0, 1e-3);
}

// DGX-1: GPUs 0 and 1 of a node share NIC 0. Ring A (GPU 0 of each node) alone, then rings A and B (GPU 1 of
// each node) at the same time: both cross the same NICs, so A takes about twice as long.
TEST(SharedNic, TwoRingsOnOneNicTakeTwiceAsLong) {
  const Platform p = Platform::build(engine(), test::dgx1_like(4), NetworkProfile{});
  Group a{{}, "ringA"};
  Group b{{}, "ringB"};
  for (int n = 0; n < 4; ++n) {
    a.hosts.push_back(p.gpu(n * 8));
    b.hosts.push_back(p.gpu(n * 8 + 1));
  }
  const std::uint64_t bytes = 1ULL << 30;
  double alone_s = 0;
  double shared_s = 0;
  const auto both = sg4::Barrier::create(8);
  for (int i = 0; i < 4; ++i) {
    sg4::Actor::create("a" + std::to_string(i), a.hosts[static_cast<std::size_t>(i)], [&, i] {
      const double t0 = sg4::Engine::get_clock();
      ring_all_reduce(a, i, bytes);
      alone_s = std::max(alone_s, sg4::Engine::get_clock() - t0);
      both->wait();
      const double t1 = sg4::Engine::get_clock();
      ring_all_reduce(a, i, bytes);
      shared_s = std::max(shared_s, sg4::Engine::get_clock() - t1);
    });
    sg4::Actor::create("b" + std::to_string(i), b.hosts[static_cast<std::size_t>(i)], [&, i] {
      both->wait();
      ring_all_reduce(b, i, bytes);
    });
  }
  engine().run();
  ASSERT_GT(alone_s, 0);
  EXPECT_NEAR(shared_s / alone_s, 2.0, 0.1) << alone_s << " s alone, " << shared_s << " s shared";
}

TEST(Calibrated, EfficiencyAndLatencyFactorScaleTheClosedForm) {
  NetworkProfile prof;
  prof.kind = NetworkProfileKind::kCalibrated;
  prof.inter.points = {{1e3, 0.5}, {1e12, 0.5}};
  prof.inter.latency_factor = 3;
  prof.intra.points = {{1e3, 0.9}};
  const Platform p = Platform::build(engine(), test::h100_like(2), prof);
  Group g{{p.gpu(0), p.gpu(8)}, "cal"};
  const Route hop = route_between(g.hosts[0], g.hosts[1]);
  const std::uint64_t bytes = 1ULL << 26;
  const auto t = time_collective_sweep(engine(), CollectiveOp::kAllReduce, g, {bytes});
  const double expected = 2 * (static_cast<double>(bytes) / 2 / (0.5 * hop.bottleneck_Bps) + 3 * hop.latency_s);
  EXPECT_NEAR(t[0] / expected, 1.0, 1e-3);
}

TEST(SendRecv, OneStepOfTheFullSize) {
  const Platform p = Platform::build(engine(), test::h100_like(2), NetworkProfile{});
  Group g{{p.gpu(0), p.gpu(8)}, "p2p"};
  const Route hop = slowest_hop(g.hosts);
  const std::uint64_t bytes = 1ULL << 24;
  const auto t = time_collective_sweep(engine(), CollectiveOp::kSendRecv, g, {bytes, bytes});
  const double expected = static_cast<double>(bytes) / hop.bottleneck_Bps + hop.latency_s;
  EXPECT_NEAR(t[0] / expected, 1.0, 1e-3);
  EXPECT_DOUBLE_EQ(t[0], t[1]);  // sizes timed one after the other do not disturb each other
}

// The sweep with closed forms: sizes whose transfers run alone take lone_collective_s (here one lone transfer), the
// others are simulated, in order, and only they start SimGrid communications (an empty sendrecv has no closed
// form). The closed forms against the simulation, table by table: tests/tools/engine/collective_closed_form_test.cpp.
TEST(SweepClosedForms, SimulatesOnlyTheSizesWithoutOne) {
  std::uint64_t comms = 0;
  sg4::Comm::on_send_cb([&comms](const sg4::Comm&) { ++comms; });
  const Platform p = Platform::build(engine(), test::h100_like(2), NetworkProfile{});
  const Group g{{p.gpu(0), p.gpu(8)}, "mixed"};
  const std::vector<std::uint64_t> sizes = {1ULL << 20, 0, 1ULL << 24};
  EXPECT_FALSE(lone_collective_s(p, CollectiveOp::kSendRecv, g, 0).has_value());
  EXPECT_FALSE(lone_collective_s(p, CollectiveOp::kAllToAll, g, 1024).has_value());
  EXPECT_EQ(lone_collective_s(p, CollectiveOp::kAllReduce, Group{{p.gpu(0)}, "one"}, 1024), 0.0);
  const double four_steps = 2 * lone_collective_s(p, CollectiveOp::kReduceScatter, g, 1ULL << 20).value_or(0);
  EXPECT_EQ(lone_collective_s(p, CollectiveOp::kAllReduce, g, 1ULL << 20), four_steps);
  const auto t = time_collective_sweep(engine(), p, CollectiveOp::kSendRecv, g, sizes, false);
  ASSERT_EQ(t.size(), 3U);
  EXPECT_EQ(t[0], p.lone_transfer_s(g.hosts[0], g.hosts[1], static_cast<double>(sizes[0])));
  EXPECT_EQ(t[2], p.lone_transfer_s(g.hosts[0], g.hosts[1], static_cast<double>(sizes[2])));
  EXPECT_GE(t[1], 0.0);
  EXPECT_EQ(comms, 2U);  // the empty size: one send per member
}

}  // namespace
}  // namespace edgc::sim
