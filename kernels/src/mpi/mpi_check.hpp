#pragma once
// The one check for MPI calls (EDGC_MPI_CHECK), the checks that MPI is usable (initialised, not finalised, bound
// to the real MPI library rather than SimGrid's SMPI) and the element-count agreement that starts every
// all-reduce. Private to edgc::kernels_mpi and the communicators built on it (edgc::kernels_nccl).
#include <mpi.h>

#include <cstddef>
#include <cstdint>

namespace edgc::kernels::mpi_detail {

/// Throws InternalError "<what>: <MPI_Error_string>" unless rc is MPI_SUCCESS.
void check(int rc, const char* what);

/// Throws InternalError when MPI_Init resolves to SimGrid's library (SMPI): the program linked SimGrid before
/// MPI::MPI_CXX.
void ensure_real_mpi();

/// ensure_real_mpi(), then throws InternalError "<who>: MPI is not initialised (create an MpiRuntime first) or
/// already finalised" unless MPI is initialised and not finalised.
void ensure_mpi_ready(const char* who);

/// What every rank learns, in one MPI_Allreduce, before an all-reduce starts.
struct CountAgreement {
  std::int64_t smallest = 0;  ///< the smallest element count passed by any rank
  std::int64_t largest = 0;   ///< the largest
  int worst_status = 0;       ///< the largest `status` any rank passed (see agree_on_count)
};

/// Collective over `comm`: every rank passes its element count `n` and a `status` ≥ 0 (0: ready; a caller's
/// own codes for "cannot take part" otherwise); every rank gets the same answer, so all of them can throw
/// together instead of leaving the others waiting in the collective that follows. Throws InternalError when
/// the MPI call fails.
CountAgreement agree_on_count(MPI_Comm comm, std::size_t n, int status = 0);

/// Throws InternalError "<what>: the ranks disagree on the element count: smallest …, largest … (rank … passed
/// …)" unless every rank passed the same count.
void check_counts(const CountAgreement& agreed, const char* what, int rank, std::size_t n);

}  // namespace edgc::kernels::mpi_detail

#define EDGC_MPI_CHECK(call) ::edgc::kernels::mpi_detail::check((call), #call)
