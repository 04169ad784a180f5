#pragma once
// One check macro per CUDA API: a failed call throws edgc::CudaError naming the call, the file and the line.
// The kernels themselves never throw; only the host code around them checks.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "edgc/core/error.hpp"

namespace edgc::kernels::cuda {

[[noreturn]] void throw_cuda_error(const char* call, const char* file, int line, const std::string& what);

inline void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess)
    throw_cuda_error(call, file, line, std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status));
}

inline void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw_cuda_error(call, file, line, std::string(cublasGetStatusName(status)) + ": " + cublasGetStatusString(status));
}

}  // namespace edgc::kernels::cuda

#define EDGC_CUDA_CHECK(call) ::edgc::kernels::cuda::check_cuda((call), #call, __FILE__, __LINE__)
#define EDGC_CUBLAS_CHECK(call) ::edgc::kernels::cuda::check_cublas((call), #call, __FILE__, __LINE__)
// After a kernel launch: a bad launch configuration shows up here, not at the next synchronising call.
#define EDGC_CUDA_CHECK_LAUNCH() EDGC_CUDA_CHECK(cudaGetLastError())
