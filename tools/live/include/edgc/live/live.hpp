#pragma once
// `edgc live`: the same controller and PowerSGD kernels as `replay`, over real ranks and real all-reduces.
//
// World = pp × dp ranks (one process each, started by mpirun). Rank g replays pipeline stage g / dp as replica
// g % dp of that stage's data-parallel group (Megatron's order with tp = 1: a DP group is consecutive ranks).
// Every rank reads the trace, measures every stage's entropy exactly as `replay` does, and runs its own copy of
// the controller, so all ranks take the same decisions without exchanging observations (checked each step).
// Replica d's gradient is the trace gradient plus the noise DataParallelEmulator gives its rank d
// (kernels::replica_gradient), so a live group holds exactly the data of the in-process emulation.
//
// Phases, all ranks together:
//  1. machine rates: each rank times a GEMM and a memory copy (what the cluster file's gpu entry describes);
//  2. probe: steps at rank 0 and at each of a list of fixed ranks, giving the kernel profile (PowerSGD batches,
//     dense-buffer copies), the all-reduces in step context, measured T_com(r) and the fitted η, c;
//  3. calibration: dense all-reduces on every DP group at once, powers of two and every size the probe sent, each
//     with the caches as a step leaves them; written as a calibrated network profile;
//  4. one run per policy over the trace's captured iterations (replay's window bookkeeping drives the
//     controller; each step is a barrier, then every stage's PowerSgd::step over its group, timed).
// Rank 0 writes DIR/measurements.json (results/measurements.hpp), DIR/cluster.json, DIR/calibration.json,
// DIR/kernels.json and DIR/result.json (edgc.result/1), all at the end, so a failed run leaves nothing behind.
#include <cstdint>
#include <string>
#include <vector>

#include "edgc/scenario/compression_config.hpp"

namespace edgc::live {

struct LiveOptions {
  std::string trace_dir;
  std::string scenario_path;  ///< recorded in the outputs
  scenario::CompressionSettings compression;
  std::vector<std::string> policies;  ///< in order; "none" is always run first
  int pp = 0;  ///< pipeline stages; 0 = the largest divisor of the world ≤ trace stages with dp ≥ 2
  std::int64_t max_iterations = 0;  ///< captured iterations to replay per policy (0 = all)
  double perturbation = 0.1;        ///< replica noise, × std of the gradient
  std::uint64_t seed = 0;
  /// PowerSGD's kernels: cpu | cuda. With cuda each rank keeps its gradients, E, P and Q on its GPU (the
  /// communicator's with nccl, else the rank's index on its host) and times compression compute with CUDA events.
  std::string backend = "cpu";
  /// Where `backend` was set, for errors: "--backend" (where empty) or the scenario's live.backend.
  std::string backend_where;
  std::string backend_field = "--backend";
  std::string comm = "mpi";  ///< mpi | nccl
  double bins_per_sigma = 8.0;
  std::int64_t calibration_min_bytes = 4;
  std::int64_t calibration_max_bytes = std::int64_t{4} << 20;
  int calibration_repeats = 5;
  std::vector<int> probe_ranks{1, 2, 4, 8, 12};
  int probe_repeats = 5;
  bool verify = false;  ///< every step: compare with the in-process emulation and check error feedback
  bool quiet = false;
  std::string out_dir;
};

/// Reads the scenario's live.* keys (and trace, compression) into options; throws ConfigError naming the key.
/// Keys: live.{pp, max_iterations, perturbation, seed, backend, comm, bins_per_sigma, verify,
/// calibration.{min_bytes, max_bytes, repeats}, probe.{ranks ("4,8,12"), repeats}}.
void read_live_options(class scenario::Scenario& scenario, LiveOptions& options);

/// Runs live mode in this process as one rank of MPI_COMM_WORLD (initialising MPI when needed). Returns the
/// process exit code. Throws edgc errors for bad input found before any rank started communicating; failures
/// after that abort every rank (MPI_Abort) so none waits forever.
int run_live(const LiveOptions& options);

}  // namespace edgc::live
