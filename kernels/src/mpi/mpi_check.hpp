#pragma once
// The one check for MPI calls (EDGC_MPI_CHECK) and the check that MPI binds to the real MPI library, not to
// SimGrid's SMPI. Private to edgc::kernels_mpi.
#include <mpi.h>

namespace edgc::kernels::mpi_detail {

/// Throws InternalError "<what>: <MPI_Error_string>" unless rc is MPI_SUCCESS.
void check(int rc, const char* what);

/// Throws InternalError when MPI_Init resolves to SimGrid's library (SMPI): the program linked SimGrid before
/// MPI::MPI_CXX.
void ensure_real_mpi();

}  // namespace edgc::kernels::mpi_detail

#define EDGC_MPI_CHECK(call) ::edgc::kernels::mpi_detail::check((call), #call)
