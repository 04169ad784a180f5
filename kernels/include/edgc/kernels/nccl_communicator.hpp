#pragma once
// Communicator over NCCL: one process per GPU, for the live path on a user's GPU cluster, e.g.
//   mpirun -np 8 edgc live --comm nccl ...
// MPI starts the processes and hands out NCCL's unique id; the sums themselves run through NCCL on the GPUs.
// Part of edgc::kernels_nccl, built only when CUDA, MPI and NCCL are all found (EDGC_ENABLE_NCCL, default ON);
// edgc::kernels itself never needs CUDA, MPI or NCCL.
//
// Results: the sums are NOT bit-identical to MpiCommunicator's or InProcessGroup's fixed rank order. NCCL
// chooses the algorithm (ring, tree, NVLS, …), the protocol and the channel count from the message size, the
// world size and the topology, and each adds the contributions in its own order, so the float sums differ in the
// last bits between algorithms and world sizes. Every rank receives the same bits, and a run repeats its bits
// only as far as NCCL does: for a fixed topology, NCCL version and environment (NCCL_ALGO, NCCL_PROTO, …). With
// one rank the data is returned unchanged.
//
// Link order: as for MpiCommunicator (mpi_communicator.hpp), MPI::MPI_CXX must come before SimGrid.
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <cstddef>
#include <optional>
#include <span>

#include "edgc/kernels/communicator.hpp"

struct ncclComm;  // nccl.h's ncclComm_t is `ncclComm*`; nccl.h itself stays out of this header

namespace edgc::kernels {

/// In-place sum all-reduce over NCCL among the processes of an MPI communicator, one GPU per process.
///
/// Construction is collective over `comm`: rank 0 creates NCCL's unique id, MPI_Bcast hands it to every rank,
/// and every rank joins with ncclCommInitRank on its GPU. The GPU is `device` when given, otherwise the rank's
/// index among the ranks of its host (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)) modulo the number of visible
/// devices. Ranks of one host must use different GPUs: the constructor compares the GPUs' PCI bus ids across
/// each host (so per-rank CUDA_VISIBLE_DEVICES works) and rejects duplicates. Every check's outcome is agreed
/// over MPI, so a problem on one rank makes every rank throw rather than leaving the others waiting.
///
/// all_reduce_sum takes device memory (cudaMalloc'd on this communicator's GPU, or managed memory) and sums it
/// in place; any other memory (host memory as PowerSGD keeps it, pinned host memory, another GPU's memory) goes
/// through a device staging buffer of at most `chunk_floats` floats, copied in and out in rounds. The call is
/// synchronous: on return the sum is in `data`. Device data must be complete when the call starts: finish or
/// synchronise the stream that produced it (work on the legacy default stream is ordered before the
/// collective).
///
/// Ownership: the object owns its NCCL communicator, a duplicate of `comm`, one CUDA stream (on its GPU), two
/// CUDA events and the staging buffer. Destroy it on every rank before MPI_Finalize (NCCL may synchronise the
/// ranks of a host while freeing a communicator). Use it from one thread at a time.
///
/// Errors: a failed CUDA or NCCL call throws edgc::CudaError naming the call, file:line and the library's
/// message (for NCCL, ncclGetErrorString and ncclGetLastError); a failed MPI call throws InternalError. After a
/// CUDA or NCCL failure inside a collective the communicator is broken: every later all_reduce_sum throws
/// InternalError on every rank (all ranks agree on it first), and the destructor aborts the NCCL communicator
/// instead of finalising it. A failure inside NCCL on one rank can leave the other ranks blocked in the same
/// collective until the job launcher tears the job down (as mpirun does when a rank exits with an error).
class NcclCommunicator final : public Communicator {
 public:
  /// Pass as `device` to pick the GPU from the rank's position on its host.
  static constexpr int kAutoDevice = -1;
  /// Floats per staging round for non-device memory unless told otherwise: 256 MiB of device memory.
  static constexpr std::size_t kDefaultChunkFloats = std::size_t{1} << 26;

  /// `comm`: the group (not owned; a duplicate is kept). `device`: CUDA device index as this process sees it,
  /// or kAutoDevice. `chunk_floats` ≥ 1: the most floats staged per round; the staging buffer grows on demand
  /// up to this size. Collective over `comm`. Throws ConfigError for chunk_floats = 0 (before any collective),
  /// for no usable CUDA device, a device index out of range, or two ranks of one host on the same GPU (naming
  /// the host, ranks, devices and, when a host runs more ranks than it has GPUs, both counts); InternalError
  /// when MPI is not initialised, already finalised, bound to SimGrid's SMPI, or an MPI call fails; CudaError
  /// when a CUDA or NCCL call fails.
  explicit NcclCommunicator(MPI_Comm comm = MPI_COMM_WORLD, int device = kAutoDevice,
                            std::size_t chunk_floats = kDefaultChunkFloats);
  /// Frees everything; never throws. Aborts the NCCL communicator when an earlier call broke it.
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }

  /// Every rank calls it with the same number of elements. First agrees on the count over MPI (one small
  /// MPI_Allreduce): when the ranks disagree, every rank throws InternalError naming the smallest and largest
  /// count and leaves its data untouched, and the communicator stays usable. An empty span only takes part in
  /// that agreement. Throws CudaError when a CUDA or NCCL call fails (the communicator is then broken, see the
  /// class comment) and InternalError when it was already broken or an MPI call fails.
  void all_reduce_sum(std::span<float> data) override;

  /// Seconds the last all_reduce_sum spent in ncclAllReduce on the GPU, summed over its staging rounds, from
  /// CUDA events around each ncclAllReduce (copies to and from the staging buffer excluded). 0 after an empty
  /// call or a call that threw. Includes waiting for the other ranks and, on the first calls, NCCL's lazy
  /// connection setup.
  double last_collective_seconds() const noexcept { return last_collective_seconds_; }
  std::optional<double> last_device_seconds() const noexcept override { return last_collective_seconds_; }
  /// Wall seconds of the whole last all_reduce_sum: count agreement, copies, collective and synchronisation.
  double last_call_seconds() const noexcept { return last_call_seconds_; }

  /// Device memory of device() is summed in place: PowerSgd on a device backend passes its buffers straight in.
  bool device_buffers() const noexcept override { return true; }
  /// The CUDA device this rank's NCCL communicator runs on, as this process numbers its devices.
  int device() const noexcept override { return device_; }
  /// This rank's index among the ranks of its host, and their number.
  int local_rank() const noexcept { return local_rank_; }
  int local_size() const noexcept { return local_size_; }
  /// The stream the collectives and copies run on (idle between calls; do not destroy it).
  cudaStream_t stream() const noexcept { return stream_; }
  /// The duplicated MPI communicator used for agreement (for diagnostics; do not free it).
  MPI_Comm comm() const noexcept { return comm_; }
  /// Whether an earlier CUDA or NCCL failure broke the communicator (see the class comment).
  bool broken() const noexcept { return broken_; }

 private:
  void set_up(MPI_Comm node_comm, int requested_device);
  void release() noexcept;
  void grow_staging(std::size_t floats);
  void wait_for_stream();
  double elapsed_seconds();

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
  int device_ = -1;
  std::size_t chunk_floats_ = kDefaultChunkFloats;
  ncclComm* nccl_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  float* d_staging_ = nullptr;
  std::size_t staging_floats_ = 0;
  bool broken_ = false;
  double last_collective_seconds_ = 0.0;
  double last_call_seconds_ = 0.0;
};

}  // namespace edgc::kernels
