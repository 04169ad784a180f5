#pragma once
// Shared helpers of the simulation tests. Every simulation test runs in its own process (CTest runs this binary
// once per test with --gtest_filter): SimGrid's engine cannot be reset within a process.
#include <memory>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "edgc/sim/spec.hpp"

namespace edgc::sim::test {

/// The engine of this test process (argv[0] only). In a sanitizer build (EDGC_SANITIZE) actor stacks get no guard
/// page as well: SimGrid protects one page inside the heap block of each stack, and LeakSanitizer's scan of the heap
/// at exit faults on it wherever a stack is still allocated then (tests/sanitizer/README.md).
inline simgrid::s4u::Engine& engine() {
  static char name[] = "edgc_sim_tests";
#ifdef EDGC_SANITIZE
  static char no_guard[] = "--cfg=contexts/guard-size:0";
  static char* argv[] = {name, no_guard, nullptr};
  static int argc = 2;
#else
  static char* argv[] = {name, nullptr};
  static int argc = 1;
#endif
  static simgrid::s4u::Engine e(&argc, argv);
  return e;
}

/// DGX H100-like nodes (round numbers: 450 GB/s NVSwitch links, 8 × 50 GB/s NICs, 2 µs / 4 µs latency).
inline ClusterSpec h100_like(int nodes) {
  ClusterSpec s;
  s.name = "h100-test";
  s.gpus_per_node = 8;
  s.nodes = nodes;
  s.gpu = {"H100", 989.4, 3350};
  s.intra_topology = IntraNodeTopology::kSwitch;
  s.intra_bandwidth_GBps = 450;
  s.intra_latency_us = 2;
  s.nics_per_node = 8;
  s.nic_bandwidth_GBps = 50;
  s.inter_latency_us = 4;
  return s;
}

/// DGX-1 V100-like nodes: cube-mesh of 25 GB/s lanes, 4 × 12.5 GB/s NICs (two GPUs per NIC).
inline ClusterSpec dgx1_like(int nodes) {
  ClusterSpec s = h100_like(nodes);
  s.name = "dgx1-test";
  s.gpu = {"V100", 125, 900};
  s.intra_topology = IntraNodeTopology::kDgx1CubeMesh;
  s.intra_bandwidth_GBps = 25;
  s.nics_per_node = 4;
  s.nic_bandwidth_GBps = 12.5;
  return s;
}

}  // namespace edgc::sim::test
