#pragma once
// One `calibrate` run as a function: nccl-tests all_reduce_perf logs and a cluster file in, the calibrated network
// profile (with each log's round trip) out.
//
// Each log becomes the intra-node curve (all ranks on one node) or the inter-node curve. The fit runs the simulator
// itself (channels, ring or tree as all_reduce() chooses them):
//   start   latency factor = time of the smallest message / (2(n-1) · route latency of the cluster file),
//           efficiency(row) = ideal ring time 2(n-1)/n · S / B / (measured time - latency part), B the busbw ceiling
//           of the hardware (the GPU's NVLink inside a node, 6 lanes on the DGX-1 cube-mesh; min(node NICs, NVLink)
//           across nodes);
//   repeat  simulate every log's sizes (ranks packed on nodes, as nccl-tests places them) in a child process, then
//           latency factor ×= measured / simulated time of the smallest message, and each row's efficiency
//           ×= simulated / measured time beyond that smallest message's (clamped to (0, 1]);
// keyed by the bytes of one transfer of that row's all-reduce as the simulator runs it (a ring step's chunk per
// channel, S/(n·C); a tree edge's S/(2C)), because that is the size SimGrid's factor callbacks see.
#include <optional>
#include <string>
#include <vector>

#include "edgc/results/calibration_report.hpp"

namespace edgc::engine {

struct CalibrateRequest {
  std::vector<std::string> logs;      ///< all_reduce_perf logs: at most one intra-node and one inter-node
  std::string cluster;                ///< cluster file whose line rates the efficiencies refer to
  std::vector<std::string> sets;      ///< "dotted.key=value" overrides of the cluster file, applied in order
  std::optional<int> ranks_per_node;  ///< GPUs per node in the logs (≥ 1; default: the cluster's)
  std::optional<int> ranks;           ///< ranks of every log (≥ 2; default: counted from its '# Rank' lines)
  std::string algorithm = "auto";     ///< all-reduce algorithm the fit simulates: auto | ring | tree
  std::string out;                    ///< where the calibration file goes (checked writable first)
};

/// Throws UsageError (an unwritable `out`, bad ranks, an unknown algorithm, two logs for one curve) or ConfigError
/// (an unreadable log or cluster file, a log without ranks, a busbw above the cluster's line rate), all before
/// anything is simulated. Each simulation runs in a forked child process (core::run_isolated), so this may be
/// called from any process, more than once.
results::CalibrationReport run_calibration(const CalibrateRequest& request);

}  // namespace edgc::engine
