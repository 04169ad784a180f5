#pragma once
// One `collective` run as a function: one collective over a range of message sizes on the simulated cluster, timed
// one size after the other in one simulation (SimGrid cannot be reset within a process), or from the closed form
// where that provably gives the simulated time.
#include <cstdint>
#include <string>
#include <vector>

#include "edgc/results/collective_report.hpp"

namespace edgc::engine {

struct CollectiveRequest {
  std::string scenario;           ///< scenario file with a cluster section; exactly one of this and `cluster`
  std::string cluster;            ///< cluster file
  std::vector<std::string> sets;  ///< "dotted.key=value" overrides, applied in order
  std::string op = "all_reduce";  ///< all_reduce | reduce_scatter | all_gather | sendrecv
  int ranks = 0;                  ///< GPUs taking part, 1 to the cluster's (sendrecv: at least 2)
  /// Smallest and largest message as nccl-tests reads -b/-e: "8", "64K", "1M", "1G" (binary multiples).
  std::string min_bytes = "8";
  std::string max_bytes = "1G";
  std::int64_t step_factor = 2;      ///< size multiplier between rows (≥ 2)
  std::string network;               ///< "ideal" | "calibrated"; empty: the scenario's, else ideal
  std::string placement = "spread";  ///< spread (one GPU per node first) | packed (fill nodes)
  /// Simulate every size with SimGrid, also those whose time comes from the closed form of a collective whose
  /// transfers provably run alone on their links (sim::lone_collective_s; the same times to ≤ 1e-9 relative).
  bool simulate_all = false;
};

/// The message sizes from min to max, multiplied by `factor` each time, rounded down to whole floats (at least
/// one float).
std::vector<std::uint64_t> collective_sizes(std::uint64_t min_bytes, std::uint64_t max_bytes, std::uint64_t factor);

/// Throws UsageError (bad options: names, sizes, ranks for the cluster) or ConfigError (the scenario or cluster
/// file), all before anything is simulated. Builds a SimGrid platform (and simulates): call once per process.
results::CollectiveReport run_collective_sweep(const CollectiveRequest& request);

}  // namespace edgc::engine
