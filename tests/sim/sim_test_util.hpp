#pragma once
// Shared helpers of the simulation tests. Every simulation test runs in its own process (CTest runs this binary
// once per test with --gtest_filter): SimGrid's engine cannot be reset within a process.
#include <memory>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "edgc/sim/engine_info.hpp"
#include "edgc/sim/spec.hpp"

namespace edgc::sim::test {

/// The engine of this test process, booted as edgc boots it (sim::boot_engine). In a sanitizer build (EDGC_SANITIZE)
/// actor stacks get no guard page, as edgc's do when vm.max_map_count is too low for them (sim::ActorStacks):
/// SimGrid protects one page inside the heap block of each stack, and LeakSanitizer's scan of the heap at exit
/// faults on it wherever a stack is still allocated then (tests/sanitizer/README.md).
inline simgrid::s4u::Engine& engine() {
#ifdef EDGC_SANITIZE
  static const std::unique_ptr<simgrid::s4u::Engine> e = boot_engine(false);
#else
  static const std::unique_ptr<simgrid::s4u::Engine> e = boot_engine(true);
#endif
  return *e;
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

/// A small GPT for iteration tests: 8 layers, 16 heads, micro-batch 1.
inline ModelSpec small_gpt(int hidden, int seq_len, int vocab, int global_batch) {
  ModelSpec m;
  m.name = "small";
  m.layers = 8;
  m.hidden = hidden;
  m.heads = 16;
  m.seq_len = seq_len;
  m.vocab = vocab;
  m.micro_batch_size = 1;
  m.global_batch_size = global_batch;
  return m;
}

}  // namespace edgc::sim::test
