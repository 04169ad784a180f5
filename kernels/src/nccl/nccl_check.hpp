#pragma once
// The check macros of edgc::kernels_nccl: a failed NCCL call (EDGC_NCCL_CHECK) or CUDA runtime call
// (EDGC_CUDA_CHECK) throws edgc::CudaError "<call> failed at <file>:<line>: <message>". Private to this library.
//
// EDGC_CUDA_CHECK behaves like the CUDA backend's (kernels/src/cuda/cuda_check.hpp) but is defined here: that
// header's thrower lives in the backend's object file, which would pull the CUDA backend and cuBLAS into every
// program that only wants NCCL. The two headers are never included together.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

namespace edgc::kernels::nccl_detail {

[[noreturn]] void throw_call_error(const char* call, const char* file, int line, const std::string& what);

inline void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess)
    throw_call_error(call, file, line, std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status));
}

/// The message carries ncclGetErrorString and, when NCCL has one, ncclGetLastError's detail.
void check_nccl(ncclResult_t status, const char* call, const char* file, int line);

}  // namespace edgc::kernels::nccl_detail

#define EDGC_CUDA_CHECK(call) ::edgc::kernels::nccl_detail::check_cuda((call), #call, __FILE__, __LINE__)
#define EDGC_NCCL_CHECK(call) ::edgc::kernels::nccl_detail::check_nccl((call), #call, __FILE__, __LINE__)
