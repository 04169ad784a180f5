#pragma once
// The all-reduce algorithms as a table (algorithms.cpp): one entry per algorithm, each implemented in its own file
// (ring.cpp, tree.cpp). Everything outside this folder asks the table's capabilities through collectives.hpp
// (chosen_allreduce_algorithm, allreduce_transfer_bytes, allreduce_ring_closed_form, …) and never compares an
// algorithm's name. How to add one: sim/README.md, "How to add a collective algorithm".
#include <cstdint>
#include <vector>

#include "edgc/sim/collectives.hpp"
#include "edgc/sim/spec.hpp"

namespace edgc::sim::collectives {

struct AllReduceAlgorithm {
  CollectiveAlgorithm id;
  const char* name;  // network.algorithm's value, and what `edgc collective` and `edgc calibrate` print
  // Whether it can run over `group` (a forced algorithm that cannot falls back to the ring).
  bool (*runs_over)(const Group& group);
  // Whether network.algorithm = auto weighs it for `group` (the ring is always weighed).
  bool (*auto_weighs)(const Group& group);
  // Line-rate estimate (seconds) of an all-reduce of `bytes` over `group` alone on the platform: its path's
  // latency plus the most loaded link's bytes over its bandwidth; +inf where it cannot run. Auto picks the least.
  double (*estimate_s)(const Group& group, std::uint64_t bytes);
  // Runs member `my_index`'s part of an all-reduce of `bytes`.
  void (*run)(const Group& group, int my_index, std::uint64_t bytes);
  // Bytes of one of its transfers as SimGrid sees them (the size the calibrated profile's curves are keyed by).
  std::uint64_t (*transfer_bytes)(const Group& group, std::uint64_t bytes);
  // Whether it runs as the ring of collectives.hpp, whose contention-free closed form simulate_iteration's proofs
  // use (sim/README.md, "Closed forms and folding").
  bool ring_closed_form;
  // Whether auto_weighs() can hold for a group with one member per node (then auto may leave the ring there).
  bool auto_weighs_spread_groups;
};

// The entries, ring first (the fallback). Defined by each algorithm's file.
const AllReduceAlgorithm& ring_algorithm();
const AllReduceAlgorithm& tree_algorithm();

// Every algorithm, ring first.
const std::vector<const AllReduceAlgorithm*>& allreduce_algorithms();

}  // namespace edgc::sim::collectives
