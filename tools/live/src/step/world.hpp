#pragma once
// Who this process is among the pp x dp ranks of `edgc live`, and the few MPI calls the run makes itself: the
// barriers, the reductions of timings over a DP group or the world, and the gathers of strings at rank 0. MPI is
// started by kernels::MpiRuntime and the gradient all-reduces go through a kernels::Communicator; this is only
// the layout and the bookkeeping traffic.
#include <mpi.h>

#include <string>
#include <vector>

namespace edgc::live {

/// The automatic live.pp: the largest divisor p of `world` with p <= trace_stages that still leaves dp >= 2
/// (1 for a single rank, or when no divisor does).
int auto_pp(int world, int trace_stages);

/// Rank g replays stage g / dp as replica g % dp of that stage's DP group (Megatron's order with tp = 1).
struct World {
  int rank = 0;
  int size = 1;
  int pp = 1;
  int dp = 1;
  int stage = 0;
  int replica = 0;
  MPI_Comm group = MPI_COMM_NULL;  // the stage's DP group, replica order

  /// This process's rank and the size of MPI_COMM_WORLD (MPI must be initialised); one stage of one replica.
  static World of_comm_world();

  /// Lays the world out as `pp` stages (collective: splits MPI_COMM_WORLD into the DP groups). Throws
  /// ConfigError naming live.pp in `scenario_path` when pp does not divide the world or exceeds the trace's
  /// stages.
  void split(int pp_stages, int trace_stages, const std::string& scenario_path);
  /// Frees the DP group made by split().
  void free_group();

  void barrier() const;
  /// Element-wise MIN or MAX over the DP group, in place.
  void group_reduce(std::vector<double>& v, MPI_Op op) const;
  /// Element-wise MIN or MAX over every rank, in place.
  void world_reduce(std::vector<double>& v, MPI_Op op) const;
  /// Every rank's string at rank 0, in rank order (empty elsewhere).
  std::vector<std::string> gather(const std::string& mine) const;
  /// Rank 0's `s` on every rank, in place. Collective.
  void broadcast(std::string& s) const;
  /// This rank's index among the ranks of its host (MPI_COMM_TYPE_SHARED, in world rank order). Collective.
  int host_rank() const;
};

/// MPI_Get_processor_name: the host this rank runs on, as the placement in measurements.json names it.
std::string processor_name();

}  // namespace edgc::live
