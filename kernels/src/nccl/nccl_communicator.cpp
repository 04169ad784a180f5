// NcclCommunicator: PowerSGD's all-reduce over NCCL, one process per GPU, MPI for start-up and agreement.
//
// The rule that shapes this file: NCCL collectives (ncclCommInitRank, ncclAllReduce) wait for every rank, so a
// rank that throws before joining one leaves the others blocked for good. Everything that can fail on one rank
// alone (finding its GPU, allocating, classifying the pointer) therefore happens first, and the ranks agree
// over MPI on whether all of them can go on; only then does any rank enter NCCL.
#include "edgc/kernels/nccl_communicator.hpp"

#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "edgc/core/error.hpp"
#include "mpi/mpi_check.hpp"
#include "nccl_check.hpp"

namespace edgc::kernels {
namespace nccl_detail {

void throw_call_error(const char* call, const char* file, int line, const std::string& what) {
  throw CudaError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " + what);
}

void check_nccl(ncclResult_t status, const char* call, const char* file, int line) {
  if (status == ncclSuccess) return;
  std::string what = std::string(ncclGetErrorString(status)) + " (ncclResult_t " + std::to_string(status) + ")";
  // NCCL keeps the detail of its last error per process; the argument is unused, so none is passed.
  const char* last = ncclGetLastError(nullptr);
  if (last != nullptr && last[0] != '\0') what += ": " + std::string(last);
  throw_call_error(call, file, line, what);
}

}  // namespace nccl_detail

namespace {

constexpr int kBusIdChars = 64;  // cudaDeviceGetPCIBusId writes "dddd:bb:dd.f" and a NUL

// Status codes of the count agreement before each all-reduce (the largest over the ranks wins).
constexpr int kReady = 0;
constexpr int kCannotStart = 1;  // this call only: a local step failed, nothing was started
constexpr int kBroken = 2;       // for good: an earlier CUDA or NCCL failure inside a collective

// Collective over `comm`: whether any rank failed a step of the set-up. A rank that failed rethrows its own
// error; the others throw one naming the lowest failed rank (ConfigError when that rank's was one, else
// InternalError). So no rank goes on into a collective that another will never join.
void agree_on_setup(MPI_Comm comm, int rank, int size, const std::exception_ptr& local, const char* step) {
  int config = 0;
  if (local) {
    try {
      std::rethrow_exception(local);
    } catch (const ConfigError&) {
      config = 1;
    } catch (...) {
    }
  }
  // 2·rank + (0 for ConfigError, 1 otherwise); 2·size when this rank is fine. The minimum names the lowest rank.
  const int mine = local ? 2 * rank + (1 - config) : 2 * size;
  int first = 2 * size;
  EDGC_MPI_CHECK(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm));
  if (local) std::rethrow_exception(local);
  if (first == 2 * size) return;
  const std::string what = "NcclCommunicator: rank " + std::to_string(first / 2) + " of " + std::to_string(size) +
                           " failed while " + step + " (that rank's error says why)";
  if (first % 2 == 0) throw ConfigError("", "device", what);
  throw InternalError(what);
}

std::string processor_name() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  if (MPI_Get_processor_name(name, &len) != MPI_SUCCESS || len <= 0) return "?";
  return std::string(name, static_cast<std::size_t>(len));
}

// Where this rank sits on its host, as gathered over the host's ranks.
struct Seat {
  int rank = 0;    // in the communicator
  int device = 0;  // CUDA device index as that process numbers them; -1 when it has none
  int count = 0;   // CUDA devices that process sees
};

// A ConfigError when two ranks of this host would drive the same GPU (same PCI bus id), else nullptr. Every rank
// of the host sees the same lists and so reaches the same verdict.
std::exception_ptr shared_gpu(const std::vector<Seat>& seats, const std::vector<char>& bus_ids,
                              const std::string& host) {
  const std::size_t n = seats.size();
  auto bus = [&](std::size_t i) { return std::string(bus_ids.data() + i * kBusIdChars); };
  for (std::size_t a = 0; a < n; ++a) {
    if (seats[a].device < 0) continue;
    for (std::size_t b = a + 1; b < n; ++b) {
      if (seats[b].device < 0 || bus(a) != bus(b)) continue;
      std::string what =
          "host " + host + ": ranks " + std::to_string(seats[a].rank) + " and " + std::to_string(seats[b].rank) +
          " would share the GPU at PCI bus id " + bus(a) + " (CUDA device " + std::to_string(seats[a].device) +
          " and " + std::to_string(seats[b].device) + " as each process numbers them); NCCL needs one GPU per rank";
      if (static_cast<int>(n) > seats[a].count)
        what += ": this host runs " + std::to_string(n) + " ranks but rank " + std::to_string(seats[a].rank) +
                " sees only " + std::to_string(seats[a].count) +
                " CUDA device(s); start at most that many ranks per host";
      else
        what += ": pass each rank its own device, or let the communicator choose";
      return std::make_exception_ptr(ConfigError("", "device", what));
    }
  }
  return nullptr;
}

// Whether NCCL can sum `p` in place on `device`: memory of that device, or managed memory. Anything else
// (pageable or pinned host memory, another device's memory) goes through the staging buffer.
bool usable_in_place(const void* p, int device) {
  cudaPointerAttributes attr{};
  const cudaError_t st = cudaPointerGetAttributes(&attr, p);
  if (st == cudaErrorInvalidValue) {
    // Before CUDA 11 this was the answer for memory CUDA does not know: plain host memory. Clear it.
    (void)cudaGetLastError();
    return false;
  }
  nccl_detail::check_cuda(st, "cudaPointerGetAttributes(&attr, data)", __FILE__, __LINE__);
  if (attr.type == cudaMemoryTypeManaged) return true;
  return attr.type == cudaMemoryTypeDevice && attr.device == device;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

NcclCommunicator::NcclCommunicator(MPI_Comm comm, int device, std::size_t chunk_floats) : chunk_floats_(chunk_floats) {
  if (chunk_floats == 0) throw ConfigError("", "chunk_floats", "must be at least 1, got 0");
  mpi_detail::ensure_mpi_ready("NcclCommunicator");
  // Errors on `comm` itself abort by default; the duplicate returns them, so they become exceptions.
  EDGC_MPI_CHECK(MPI_Comm_dup(comm, &comm_));
  MPI_Comm node = MPI_COMM_NULL;
  try {
    EDGC_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    EDGC_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    EDGC_MPI_CHECK(MPI_Comm_size(comm_, &size_));
    // The ranks that share this host (and so its GPUs), ordered by their rank in comm_.
    EDGC_MPI_CHECK(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
    EDGC_MPI_CHECK(MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN));
    EDGC_MPI_CHECK(MPI_Comm_rank(node, &local_rank_));
    EDGC_MPI_CHECK(MPI_Comm_size(node, &local_size_));
    set_up(node, device);
    EDGC_MPI_CHECK(MPI_Comm_free(&node));
  } catch (...) {
    if (node != MPI_COMM_NULL) MPI_Comm_free(&node);
    // The group may be half-formed: abort (local, never waits for other ranks) rather than destroy.
    broken_ = true;
    release();
    throw;
  }
}

void NcclCommunicator::set_up(MPI_Comm node, int requested_device) {
  // 1. This rank's GPU, as far as it can tell alone.
  std::exception_ptr local;
  Seat seat{.rank = rank_, .device = -1, .count = 0};
  char bus_id[kBusIdChars] = {};
  try {
    const cudaError_t st = cudaGetDeviceCount(&seat.count);
    if (st != cudaSuccess) {
      (void)cudaGetLastError();
      throw ConfigError("", "device",
                        std::string("no usable CUDA device: cudaGetDeviceCount failed with ") + cudaGetErrorName(st) +
                            ": " + cudaGetErrorString(st) + "; NcclCommunicator needs one GPU per rank");
    }
    if (seat.count <= 0) throw ConfigError("", "device", "no CUDA device; NcclCommunicator needs one GPU per rank");
    if (requested_device != kAutoDevice && (requested_device < 0 || requested_device >= seat.count))
      throw ConfigError("", "device",
                        "CUDA device " + std::to_string(requested_device) + " does not exist: rank " +
                            std::to_string(rank_) + " sees " + std::to_string(seat.count) + " device(s), 0 to " +
                            std::to_string(seat.count - 1));
    const int chosen = requested_device == kAutoDevice ? local_rank_ % seat.count : requested_device;
    EDGC_CUDA_CHECK(cudaDeviceGetPCIBusId(bus_id, kBusIdChars - 1, chosen));
    seat.device = chosen;
  } catch (...) {
    local = std::current_exception();
    seat.device = -1;
    std::memset(bus_id, 0, sizeof bus_id);
  }

  // 2. No two ranks of this host on one GPU (compared by PCI bus id, so per-rank CUDA_VISIBLE_DEVICES is fine).
  const auto ranks_here = static_cast<std::size_t>(local_size_);
  std::vector<Seat> seats(ranks_here);
  std::vector<char> bus_ids(ranks_here * kBusIdChars);
  static_assert(sizeof(Seat) == 3 * sizeof(int));
  EDGC_MPI_CHECK(MPI_Allgather(&seat, 3, MPI_INT, seats.data(), 3, MPI_INT, node));
  EDGC_MPI_CHECK(MPI_Allgather(bus_id, kBusIdChars, MPI_CHAR, bus_ids.data(), kBusIdChars, MPI_CHAR, node));
  if (!local) local = shared_gpu(seats, bus_ids, processor_name());
  agree_on_setup(comm_, rank_, size_, local, "choosing its GPU");
  device_ = seat.device;

  // 3. This rank's stream, events and (on rank 0) NCCL's unique id.
  ncclUniqueId id{};
  try {
    EDGC_CUDA_CHECK(cudaSetDevice(device_));
    // A blocking stream: work the caller queued on the legacy default stream is ordered before the collective.
    EDGC_CUDA_CHECK(cudaStreamCreate(&stream_));
    EDGC_CUDA_CHECK(cudaEventCreate(&start_));
    EDGC_CUDA_CHECK(cudaEventCreate(&stop_));
    if (rank_ == 0) EDGC_NCCL_CHECK(ncclGetUniqueId(&id));
  } catch (...) {
    local = std::current_exception();
  }
  agree_on_setup(comm_, rank_, size_, local, "creating its CUDA stream and events or NCCL's unique id");
  EDGC_MPI_CHECK(MPI_Bcast(&id, static_cast<int>(sizeof id), MPI_BYTE, 0, comm_));

  // 4. Join the NCCL communicator (collective over all ranks; its device is the current one).
  ncclComm_t joined = nullptr;
  try {
    EDGC_NCCL_CHECK(ncclCommInitRank(&joined, size_, id, rank_));
    nccl_ = joined;
  } catch (...) {
    local = std::current_exception();
  }
  agree_on_setup(comm_, rank_, size_, local, "joining the NCCL communicator");
}

NcclCommunicator::~NcclCommunicator() { release(); }

void NcclCommunicator::release() noexcept {
  // Errors are ignored here: nothing can be done about them in a destructor.
  if (device_ >= 0) (void)cudaSetDevice(device_);
  if (nccl_ != nullptr) {
    // ncclCommDestroy flushes outstanding work and may wait for the host's other ranks; after a failure that
    // could hang, so the communicator is aborted instead.
    if (broken_) {
      (void)ncclCommAbort(nccl_);
    } else {
      (void)ncclCommDestroy(nccl_);
    }
    nccl_ = nullptr;
  }
  if (d_staging_ != nullptr) (void)cudaFree(d_staging_);
  d_staging_ = nullptr;
  staging_floats_ = 0;
  if (start_ != nullptr) (void)cudaEventDestroy(start_);
  if (stop_ != nullptr) (void)cudaEventDestroy(stop_);
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  start_ = stop_ = nullptr;
  stream_ = nullptr;
  int finalized = 0;
  if (comm_ != MPI_COMM_NULL && MPI_Finalized(&finalized) == MPI_SUCCESS && finalized == 0) MPI_Comm_free(&comm_);
  comm_ = MPI_COMM_NULL;
}

void NcclCommunicator::grow_staging(std::size_t floats) {
  if (floats <= staging_floats_) return;
  // Doubling (capped at the round size) keeps a slowly growing sequence of calls from reallocating each time.
  const std::size_t target = std::max(floats, std::min(chunk_floats_, 2 * staging_floats_));
  if (d_staging_ != nullptr) {
    // The stream is idle between calls, and cudaFree waits for the device anyway.
    float* old = d_staging_;
    d_staging_ = nullptr;
    staging_floats_ = 0;
    EDGC_CUDA_CHECK(cudaFree(old));
  }
  void* p = nullptr;
  EDGC_CUDA_CHECK(cudaMalloc(&p, target * sizeof(float)));
  d_staging_ = static_cast<float*>(p);
  staging_floats_ = target;
}

void NcclCommunicator::wait_for_stream() {
  // Polled rather than cudaStreamSynchronize: when a peer fails, NCCL reports it through
  // ncclCommGetAsyncError, and a plain synchronise would wait for the stuck collective forever. Checked once
  // more after the stream is done: a communicator NCCL has marked failed must not be used again.
  for (;;) {
    const cudaError_t st = cudaStreamQuery(stream_);
    if (st != cudaSuccess && st != cudaErrorNotReady)
      nccl_detail::check_cuda(st, "cudaStreamQuery(stream_)", __FILE__, __LINE__);
    ncclResult_t async = ncclSuccess;
    EDGC_NCCL_CHECK(ncclCommGetAsyncError(nccl_, &async));
    if (async != ncclSuccess && async != ncclInProgress)
      nccl_detail::check_nccl(async, "ncclAllReduce (asynchronous error)", __FILE__, __LINE__);
    if (st == cudaSuccess) return;
    std::this_thread::yield();
  }
}

double NcclCommunicator::elapsed_seconds() {
  float ms = 0.0F;
  EDGC_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return static_cast<double>(ms) * 1e-3;
}

void NcclCommunicator::all_reduce_sum(std::span<float> data) {
  const auto t0 = std::chrono::steady_clock::now();
  last_collective_seconds_ = 0.0;
  last_call_seconds_ = 0.0;

  // Everything that can fail on this rank alone, before the agreement: then every rank either starts the
  // collective or throws.
  std::exception_ptr local;
  bool in_place = false;
  if (!broken_ && !data.empty()) {
    try {
      EDGC_CUDA_CHECK(cudaSetDevice(device_));
      in_place = usable_in_place(data.data(), device_);
      if (!in_place) grow_staging(std::min(data.size(), chunk_floats_));
    } catch (...) {
      local = std::current_exception();
    }
  }
  const int status = broken_ ? kBroken : local ? kCannotStart : kReady;
  const mpi_detail::CountAgreement agreed = mpi_detail::agree_on_count(comm_, data.size(), status);
  if (agreed.worst_status == kBroken) {
    // A rank whose NCCL communicator failed can never join another collective: the group is done for.
    const bool was_mine = broken_;
    broken_ = true;
    throw InternalError(std::string("NCCL all-reduce: the communicator is broken by an earlier CUDA or NCCL failure") +
                        (was_mine ? "" : " on another rank") + "; create a new one");
  }
  if (local) std::rethrow_exception(local);
  if (agreed.worst_status != kReady)
    throw InternalError("NCCL all-reduce: another rank could not start it (that rank's error says why); rank " +
                        std::to_string(rank_) + "'s data is untouched");
  mpi_detail::check_counts(agreed, "NCCL all-reduce", rank_, data.size());
  if (data.empty()) {
    last_call_seconds_ = seconds_since(t0);
    return;
  }

  double collective = 0.0;
  try {
    if (in_place) {
      EDGC_CUDA_CHECK(cudaEventRecord(start_, stream_));
      EDGC_NCCL_CHECK(ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat, ncclSum, nccl_, stream_));
      EDGC_CUDA_CHECK(cudaEventRecord(stop_, stream_));
      wait_for_stream();
      collective = elapsed_seconds();
    } else {
      // Rounds of at most chunk_floats_ (the staging buffer holds one); each round waits for its copy back,
      // so the buffer is free for the next and the events can be read.
      for (std::size_t base = 0; base < data.size(); base += chunk_floats_) {
        const std::size_t len = std::min(chunk_floats_, data.size() - base);
        float* h_chunk = data.data() + base;
        // cudaMemcpyDefault: the direction follows from the pointers (pageable, pinned or another GPU's memory).
        EDGC_CUDA_CHECK(cudaMemcpyAsync(d_staging_, h_chunk, len * sizeof(float), cudaMemcpyDefault, stream_));
        EDGC_CUDA_CHECK(cudaEventRecord(start_, stream_));
        EDGC_NCCL_CHECK(ncclAllReduce(d_staging_, d_staging_, len, ncclFloat, ncclSum, nccl_, stream_));
        EDGC_CUDA_CHECK(cudaEventRecord(stop_, stream_));
        EDGC_CUDA_CHECK(cudaMemcpyAsync(h_chunk, d_staging_, len * sizeof(float), cudaMemcpyDefault, stream_));
        wait_for_stream();
        collective += elapsed_seconds();
      }
    }
  } catch (...) {
    broken_ = true;
    throw;
  }
  last_collective_seconds_ = collective;
  last_call_seconds_ = seconds_since(t0);
}

namespace impl {
// The strong definition of the factory declared weak in ../mpi/mpi_communicator.cpp.
std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm comm, int device) {
  return std::make_unique<NcclCommunicator>(comm, device);
}
}  // namespace impl

}  // namespace edgc::kernels
