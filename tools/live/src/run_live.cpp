// run_live of a build with MPI: checks what every rank can check alone, starts MPI, lays out the world and runs
// this rank's part; a failure on one rank of several aborts them all, so that none waits forever.
#include <mpi.h>

#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include "edgc/core/atomic_file.hpp"
#include "edgc/core/error.hpp"
#include "edgc/engine/replay.hpp"
#include "edgc/kernels/mpi_communicator.hpp"
#include "edgc/live/live.hpp"
#include "edgc/traces/reader.hpp"
#include "live_run.hpp"
#include "step/world.hpp"

namespace edgc::live {

namespace {

void check_options(const LiveOptions& o) {
  if (o.comm == "nccl" && !kernels::nccl_available())
    throw UsageError("--comm", "nccl needs the edgc-nccl binary (a build with CUDA, MPI and NCCL); this is plain edgc");
  // Before MPI starts, on every rank alike: a cuda backend in plain edgc or without a usable GPU is one clear line.
  engine::require_backend(o.backend, o.backend_where, o.backend_field);
  if (o.out_dir.empty()) throw UsageError("--out", "is required");
}

// The layout: every rank computes it from the same world size, live.pp and trace, so a bad one fails on every rank
// alike. Rank 0 alone says so (one line, not one per rank interleaved into garbled text) and ends the job; the
// others wait in a barrier that rank 0's MPI_Abort ends.
void lay_out(const LiveOptions& o, World& w, int trace_stages) {
  try {
    w.split(o.pp > 0 ? o.pp : auto_pp(w.size, trace_stages), trace_stages, o.scenario_path);
  } catch (const InputError& e) {
    if (w.size == 1) throw;
    if (w.rank == 0) {
      std::cerr << "edgc: error: " << e.what() << std::endl;
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    throw;  // not reached: rank 0's abort ends this rank
  }
  // Started without mpirun (or with -np 1): one rank does every stage, and no all-reduce crosses a process.
  if (w.size == 1)
    std::cerr << "edgc: warning: live runs on 1 MPI rank (started without mpirun?): data parallelism is 1, so its "
                 "figures measure no all-reduce between processes; run it as mpirun -np N edgc live ...\n";
}

// Everything after MPI is up, on every rank: layout, the run, rank 0's outputs and console text.
void run_rank(const LiveOptions& o, World& w, int trace_stages) {
  lay_out(o, w, trace_stages);
  const std::string host = processor_name();
  std::optional<StagingDir> staging;
  if (w.rank == 0) staging.emplace(o.out_dir);  // a busy --out fails before the run
  LiveRun run(o, w, host);
  run.run();
  run.write_outputs(staging ? staging->path() : std::filesystem::path());
  if (staging) staging->commit();
  if (w.rank == 0 && !o.quiet) run.print();
  if (w.rank == 0 && !o.quiet) {
    for (const auto& [policy, t] : run.boundary_totals()) {
      std::cout << "boundaries: " << policy << ": " << t.sent << " stage-boundary messages sent backward over MPI, "
                << t.sent_compressed << " compressed, " << t.wire_floats << " of " << t.dense_floats << " floats ("
                << (t.dense_floats > 0
                        ? 100.0 * static_cast<double>(t.wire_floats) / static_cast<double>(t.dense_floats)
                        : 0.0)
                << " %); codec " << t.codec_s << " s, transfers and waits for the peer " << t.transfer_s
                << " s (summed over ranks)";
      if (o.verify) std::cout << "; " << t.verified << " verified bit-identical to the in-process compressor";
      std::cout << "\n";
    }
  }
  if (w.rank == 0 && o.verify && !o.quiet)
    std::cout << "verify: " << run.verified_steps() << " steps per rank bit-identical across replicas and to the "
              << "in-process emulation; error feedback holds (max |M - G^ - E| / max |M| = " << run.worst_ef() << ")\n";
  w.free_group();
}

}  // namespace

int run_live(const LiveOptions& o) {
  check_options(o);
  // A bad trace is found before any rank communicates: every rank checks the same things.
  const int trace_stages = traces::TraceReader(o.trace_dir).manifest().num_stages;
  kernels::MpiRuntime runtime;
  World w = World::of_comm_world();
  try {
    run_rank(o, w, trace_stages);
  } catch (const std::exception& e) {
    if (w.size > 1) {
      std::cerr << "edgc live: rank " << w.rank << ": " << e.what() << "\n";
      MPI_Abort(MPI_COMM_WORLD, dynamic_cast<const InputError*>(&e) != nullptr ? 2 : 1);
    }
    throw;
  }
  return 0;
}

}  // namespace edgc::live
