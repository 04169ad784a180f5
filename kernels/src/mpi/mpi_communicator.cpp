// MpiCommunicator: the fixed-order all-reduce of InProcessGroup over MPI.
//
// Why not MPI_Allreduce: MPI may add contributions in any order (tree, ring, recursive halving all differ, and
// the choice depends on size and process count), so the float sum could differ from the in-process emulation
// and, for some algorithms, between ranks. Here the owner of each slice adds rank 0, rank 1, … itself.
#include "edgc/kernels/mpi_communicator.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

#include "edgc/core/error.hpp"
#include "mpi_check.hpp"

#ifdef EDGC_SANITIZE
#include <sanitizer/lsan_interface.h>
#endif

namespace edgc::kernels {
namespace {

// In a sanitizer build, what Open MPI allocates inside MPI_Init and MPI_Finalize is not leak-checked: it keeps that
// state until exit by design, and it unloads the components that allocated it at MPI_Finalize, so LeakSanitizer
// can name no frame of those allocations for a suppression to match (tests/sanitizer/README.md).
class OpenMpiAllocations {
 public:
  OpenMpiAllocations() {
#ifdef EDGC_SANITIZE
    __lsan_disable();
#endif
  }
  ~OpenMpiAllocations() {
#ifdef EDGC_SANITIZE
    __lsan_enable();
#endif
  }
  OpenMpiAllocations(const OpenMpiAllocations&) = delete;
  OpenMpiAllocations& operator=(const OpenMpiAllocations&) = delete;
};

}  // namespace

namespace mpi_detail {

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  throw InternalError(std::string(what) + " failed: " +
                      (len > 0 ? std::string(text, static_cast<std::size_t>(len)) : "MPI error " + std::to_string(rc)));
}

void ensure_real_mpi() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&MPI_Init), &info) != 0 && info.dli_fname != nullptr &&
      std::string(info.dli_fname).find("simgrid") != std::string::npos)
    throw InternalError(std::string("MPI_Init resolves to SimGrid's SMPI (") + info.dli_fname +
                        "): link MPI::MPI_CXX before SimGrid");
}

void ensure_mpi_ready(const char* who) {
  ensure_real_mpi();
  int initialized = 0;
  int finalized = 0;
  EDGC_MPI_CHECK(MPI_Initialized(&initialized));
  EDGC_MPI_CHECK(MPI_Finalized(&finalized));
  if (initialized == 0 || finalized != 0)
    throw InternalError(std::string(who) +
                        ": MPI is not initialised (create an MpiRuntime first) or already finalised");
}

CountAgreement agree_on_count(MPI_Comm comm, std::size_t n, int status) {
  // Max of n and max of −n in one call give the largest and the smallest count.
  const auto count = static_cast<std::int64_t>(n);
  std::int64_t in[3] = {count, -count, status};
  std::int64_t out[3] = {0, 0, 0};
  EDGC_MPI_CHECK(MPI_Allreduce(in, out, 3, MPI_INT64_T, MPI_MAX, comm));
  return CountAgreement{.smallest = -out[1], .largest = out[0], .worst_status = static_cast<int>(out[2])};
}

void check_counts(const CountAgreement& agreed, const char* what, int rank, std::size_t n) {
  if (agreed.smallest == agreed.largest) return;
  throw InternalError(std::string(what) + ": the ranks disagree on the element count: smallest " +
                      std::to_string(agreed.smallest) + ", largest " + std::to_string(agreed.largest) + " (rank " +
                      std::to_string(rank) + " passed " + std::to_string(n) + ")");
}

}  // namespace mpi_detail

namespace {

// [begin, end) of part `d` of `n` elements split into `parts` nearly equal parts.
std::size_t part_begin(std::size_t n, int parts, int d) {
  return n / static_cast<std::size_t>(parts) * static_cast<std::size_t>(d) +
         std::min(n % static_cast<std::size_t>(parts), static_cast<std::size_t>(d));
}

}  // namespace

MpiRuntime::MpiRuntime(int* argc, char*** argv) {
  mpi_detail::ensure_real_mpi();
  int finalized = 0;
  EDGC_MPI_CHECK(MPI_Finalized(&finalized));
  if (finalized != 0) throw InternalError("MpiRuntime: MPI was already finalised");
  int initialized = 0;
  EDGC_MPI_CHECK(MPI_Initialized(&initialized));
  if (initialized != 0) return;
  int provided = 0;
  const OpenMpiAllocations not_ours;
  EDGC_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
  owns_ = true;
}

MpiRuntime::~MpiRuntime() {
  if (!owns_) return;
  int finalized = 0;
  const OpenMpiAllocations not_ours;
  if (MPI_Finalized(&finalized) == MPI_SUCCESS && finalized == 0) MPI_Finalize();
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm, std::size_t chunk_floats) : chunk_floats_(chunk_floats) {
  if (chunk_floats == 0) throw ConfigError("", "chunk_floats", "must be at least 1, got 0");
  // Half of INT_MAX leaves room for the receive offsets, which pass the chunk length by up to size() − 1.
  if (chunk_floats > static_cast<std::size_t>(INT_MAX / 2))
    throw ConfigError(
        "", "chunk_floats",
        "must fit MPI's int counts (<= " + std::to_string(INT_MAX / 2) + "), got " + std::to_string(chunk_floats));
  mpi_detail::ensure_mpi_ready("MpiCommunicator");
  // Errors on `comm` itself abort by default; the duplicate returns them, so they become exceptions.
  EDGC_MPI_CHECK(MPI_Comm_dup(comm, &comm_));
  try {
    EDGC_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    EDGC_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    EDGC_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  } catch (...) {
    MPI_Comm_free(&comm_);
    throw;
  }
  const auto d = static_cast<std::size_t>(size_);
  slice_counts_.resize(d);
  slice_displs_.resize(d);
  recv_counts_.resize(d);
  recv_displs_.resize(d);
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  if (comm_ != MPI_COMM_NULL && MPI_Finalized(&finalized) == MPI_SUCCESS && finalized == 0) MPI_Comm_free(&comm_);
}

void MpiCommunicator::all_reduce_sum(std::span<float> data) {
  // Agree on the count first, so that a mismatch throws on every rank instead of hanging the collective.
  mpi_detail::check_counts(mpi_detail::agree_on_count(comm_, data.size()), "MPI all-reduce", rank_, data.size());
  if (size_ == 1 || data.empty()) return;

  const std::size_t ranks = static_cast<std::size_t>(size_);
  const std::size_t me = static_cast<std::size_t>(rank_);
  for (std::size_t base = 0; base < data.size(); base += chunk_floats_) {
    const std::size_t len = std::min(chunk_floats_, data.size() - base);
    float* chunk = data.data() + base;
    for (int d = 0; d < size_; ++d) {
      const std::size_t b = part_begin(len, size_, d);
      slice_displs_[static_cast<std::size_t>(d)] = static_cast<int>(b);
      slice_counts_[static_cast<std::size_t>(d)] = static_cast<int>(part_begin(len, size_, d + 1) - b);
    }
    const int mine = slice_counts_[me];
    for (std::size_t d = 0; d < ranks; ++d) {
      recv_counts_[d] = mine;
      recv_displs_[d] = static_cast<int>(d) * mine;  // < len + D: fits (see the constructor)
    }
    recv_.resize(ranks * static_cast<std::size_t>(mine));
    // Reduce-scatter: slice d of every rank's chunk goes to rank d.
    EDGC_MPI_CHECK(MPI_Alltoallv(chunk, slice_counts_.data(), slice_displs_.data(), MPI_FLOAT, recv_.data(),
                                 recv_counts_.data(), recv_displs_.data(), MPI_FLOAT, comm_));
    // The same float additions in the same order as InProcessGroup: acc = x0; acc += x1; …
    float* own = chunk + slice_displs_[me];
    const float* contrib = recv_.data();
    for (int k = 0; k < mine; ++k) {
      float acc = contrib[k];
      for (std::size_t d = 1; d < ranks; ++d) acc += contrib[d * static_cast<std::size_t>(mine) + k];
      own[k] = acc;
    }
    // All-gather the summed slices; this rank's is already in place.
    EDGC_MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_FLOAT, chunk, slice_counts_.data(), slice_displs_.data(),
                                  MPI_FLOAT, comm_));
  }
}

namespace impl {
// Defined in edgc::kernels_nccl; null unless that library is linked whole.
__attribute__((weak)) std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm comm, int device);
}  // namespace impl

void check_mpi(int rc, const char* what) { mpi_detail::check(rc, what); }

bool nccl_available() noexcept { return impl::make_nccl_communicator != nullptr; }

std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm comm, int device) {
  if (!nccl_available())
    throw ConfigError("", "comm",
                      "nccl: this program was built without the NCCL communicator (use the edgc-nccl binary of a "
                      "build with CUDA, MPI and NCCL)");
  return impl::make_nccl_communicator(comm, device);
}

}  // namespace edgc::kernels
