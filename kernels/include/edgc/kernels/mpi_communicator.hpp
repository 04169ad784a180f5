#pragma once
// Communicator over MPI: one process per CPU rank (`mpirun -np D`), so the live path runs and is tested without
// GPUs. Part of edgc::kernels_mpi, built only when MPI is found; edgc::kernels itself never needs MPI.
//
// Link order: SimGrid's library also defines MPI_Init & co. (its SMPI). A program that links both must put
// MPI::MPI_CXX before SimGrid on the link line; MpiRuntime and MpiCommunicator check that the MPI calls bind to
// the real MPI library and throw otherwise, instead of letting SMPI abort the process.
#include <mpi.h>

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "edgc/kernels/communicator.hpp"

namespace edgc::kernels {

/// Initialises MPI for the lifetime of the object when nobody has yet, and finalises it on destruction only if
/// this object initialised it. Create one at the top of main(), before any MpiCommunicator, and let every
/// MpiCommunicator die first. Requests MPI_THREAD_FUNNELED: only the thread that created the runtime may call
/// MPI. Throws InternalError when MPI_Init binds to SimGrid's SMPI, when MPI was already finalised, or when an
/// MPI call fails (the message carries MPI_Error_string).
class MpiRuntime {
 public:
  /// `argc`/`argv` are passed to MPI_Init_thread (both may be null).
  explicit MpiRuntime(int* argc = nullptr, char*** argv = nullptr);
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;

  /// Whether this object called MPI_Init (and will call MPI_Finalize).
  bool owns() const noexcept { return owns_; }

 private:
  bool owns_ = false;
};

/// In-place sum all-reduce over an MPI communicator, bit-identical to InProcessGroup: every element is summed
/// in the fixed order rank 0 + rank 1 + … in float, so every rank ends with the same bits, the same from run to
/// run, and the same as the in-process emulation of the same ranks.
///
/// How: in rounds of at most `chunk_floats` elements, a reduce-scatter by slices (MPI_Alltoallv; the owner of a
/// slice adds the D contributions in rank order) and an all-gather of the summed slices (MPI_Allgatherv). Each
/// rank sends and receives about 2·(D−1)/D of the data, like a ring all-reduce, but with MPI's latency per round.
///
/// MPI must be initialised (see MpiRuntime) before construction, and the object destroyed before MPI_Finalize.
/// The constructor duplicates `comm` (collective over `comm`), so the traffic of this communicator never mixes
/// with the caller's, and sets MPI_ERRORS_RETURN on the duplicate so that failures become exceptions. Use it
/// from one thread at a time.
class MpiCommunicator final : public Communicator {
 public:
  /// Floats per reduce-scatter round unless told otherwise: 16 MiB of data per round.
  static constexpr std::size_t kDefaultChunkFloats = std::size_t{1} << 22;

  /// `comm`: the group (not owned; a duplicate is kept). `chunk_floats` ≥ 1: elements per round; bounds the
  /// scratch memory to about chunk_floats + size() floats. Throws ConfigError for chunk_floats = 0 or
  /// > INT_MAX / 2 (MPI counts are ints), InternalError when MPI is not initialised, already finalised, bound
  /// to SimGrid's SMPI, or an MPI call fails.
  explicit MpiCommunicator(MPI_Comm comm = MPI_COMM_WORLD, std::size_t chunk_floats = kDefaultChunkFloats);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }

  /// Every rank calls it with the same number of elements. First agrees on the count (one small
  /// MPI_Allreduce): when the ranks disagree, every rank throws InternalError naming the smallest and largest
  /// count and leaves its data untouched, and the communicator stays usable. Throws InternalError (with
  /// MPI_Error_string) when an MPI call fails.
  void all_reduce_sum(std::span<float> data) override;

  /// The duplicated communicator this object talks on (for diagnostics; do not free it).
  MPI_Comm comm() const noexcept { return comm_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::size_t chunk_floats_ = kDefaultChunkFloats;
  std::vector<float> recv_;        // the D contributions to this rank's slice of one round
  std::vector<int> slice_counts_;  // per rank: length of its slice of the round
  std::vector<int> slice_displs_;  // per rank: offset of its slice in the round
  std::vector<int> recv_counts_;   // per rank: length of this rank's slice (what each sends here)
  std::vector<int> recv_displs_;   // per rank: where its contribution lands in recv_
};

/// Throws InternalError "<what>: <MPI_Error_string>" unless rc is MPI_SUCCESS: the one check of an MPI call's
/// return code, for programs that make their own MPI calls next to the communicators (`edgc live`, sweeps).
void check_mpi(int rc, const char* what);

/// Whether this program can make NCCL communicators: it links edgc::kernels_nccl whole (the `edgc-nccl` build of
/// the CLI does; plain `edgc` does not, so that it never loads cudart and NCCL).
bool nccl_available() noexcept;

/// An NcclCommunicator over `comm` (collective; see nccl_communicator.hpp) behind the Communicator interface,
/// `device` = -1 for the automatic choice. Throws ConfigError when !nccl_available(), else what the
/// NcclCommunicator constructor throws.
std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm comm, int device = -1);

}  // namespace edgc::kernels
