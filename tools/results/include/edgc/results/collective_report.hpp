#pragma once
// What `edgc collective` prints: one collective timed over a range of message sizes on the simulated cluster, as
// one JSON document (schema edgc.collective/1) or in nccl-tests' table layout, so that a simulated table can be laid
// beside a measured log. The engine (edgc/engine/collective_sweep.hpp) fills the report; the writers only lay it
// out.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace edgc::results {

inline constexpr const char* kCollectiveSchema = "edgc.collective/1";
inline constexpr std::uint64_t kCollectiveElementBytes = 4;  ///< nccl-tests' default data type, float

/// One message size.
struct CollectiveRow {
  std::uint64_t size_bytes = 0;
  double time_s = 0.0;    ///< simulated time of the collective, seconds
  std::string algorithm;  ///< "ring" | "tree" (what all_reduce() chose; rings for the other operations)
};

struct CollectiveReport {
  std::string cluster;  ///< the cluster file's name
  int cluster_gpus = 0;
  std::string op;  ///< "all_reduce" | "reduce_scatter" | "all_gather" | "sendrecv"
  int ranks = 0;
  std::string placement;  ///< "spread" | "packed"
  std::string network;    ///< "ideal" | "calibrated"
  int channels = 1;       ///< ring channels of the group
  std::string simgrid;    ///< SimGrid's version
  /// Bus bandwidth / algorithm bandwidth for this operation and rank count (nccl-tests' busbw convention).
  double bus_factor = 1.0;
  std::vector<CollectiveRow> rows;
};

/// The JSON document (schema edgc.collective/1): per row its size, element count, time (us) and bandwidths (GB/s).
nlohmann::ordered_json to_json(const CollectiveReport& report);

/// nccl-tests' layout: a header line, one row per size, the average bus bandwidth.
void print_collective_table(std::ostream& os, const CollectiveReport& report);

}  // namespace edgc::results
