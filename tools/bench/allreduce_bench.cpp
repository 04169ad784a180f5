// Benchmark: is this machine steady enough to validate live predictions on? One MPI_Allreduce size, timed the way
// `edgc live` times a step's collectives (barrier, then the call; the shortest duration over the ranks), in blocks
// of calls, each block's median printed in order. Run it several times: on a steady machine every block of every
// launch agrees within a few percent; a machine whose inter-core or memory speed changes between or within launches
// shows it here, outside edgc's model.
//
//   mpirun -np 2 edgc_bench_allreduce [--bytes 964096] [--blocks 20] [--calls 200] [--json FILE]
//
// The default size is the bundled live scenario's uncompressed dense all-reduce (241,024 floats). Prints one
// line: the block medians (ms), then their median, min, max and max/min.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "edgc/core/median.hpp"
#include "edgc/kernels/mpi_communicator.hpp"
#include "harness.hpp"

int main(int argc, char** argv) {
  // MpiRuntime, not MPI_Init: it also keeps Open MPI's own start-up allocations out of a sanitizer build's leak check.
  const edgc::kernels::MpiRuntime mpi(&argc, &argv);
  std::int64_t bytes = 964096;
  int blocks = 20;
  int calls = 200;
  std::string json_out;
  edgc::bench::Args args("[--bytes 964096] [--blocks 20] [--calls 200] [--json FILE]");
  args.integer("--bytes", bytes, 4).integer("--blocks", blocks, 1).integer("--calls", calls, 1);
  args.json_path("--json", json_out);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (const auto code = args.parse(argc, argv)) return *code;
  const int status = edgc::bench::run_main("edgc_bench_allreduce", [&] {
    std::vector<float> buf(static_cast<std::size_t>(bytes / 4), 1.0F);
    std::vector<double> medians;
    for (int b = 0; b < blocks; ++b) {
      std::vector<double> times;
      for (int c = 0; c < calls; ++c) {
        std::fill(buf.begin(), buf.end(), 1.0F);
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(buf.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double t = MPI_Wtime() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
        times.push_back(t);
      }
      medians.push_back(edgc::core::median(times));
    }
    if (rank != 0) return 0;
    const double lo = *std::min_element(medians.begin(), medians.end());
    const double hi = *std::max_element(medians.begin(), medians.end());
    const double mid = edgc::core::median(medians);
    std::printf("allreduce %lld bytes, block medians (ms):", static_cast<long long>(bytes));
    for (const double m : medians) std::printf(" %.4f", m * 1e3);
    std::printf("\nmedian %.4f ms, min %.4f, max %.4f, max/min %.2f\n", mid * 1e3, lo * 1e3, hi * 1e3, hi / lo);
    int world = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    edgc::bench::write_json(json_out, {{"bench", "edgc_bench_allreduce"},
                                       {"ranks", world},
                                       {"bytes", bytes},
                                       {"calls_per_block", calls},
                                       {"block_median_s", medians},
                                       {"median_s", mid},
                                       {"max_over_min", hi / lo}});
    return 0;
  });
  return status;
}
