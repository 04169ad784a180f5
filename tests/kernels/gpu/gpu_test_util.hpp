#pragma once
// Shared by the GPU tests: why they cannot run on this machine (they then skip), from the CUDA runtime itself.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>

namespace edgc::kernels::testing {

/// Why the GPU tests cannot run here, or empty when they can.
inline std::string no_device_reason() {
  int count = 0;
  const cudaError_t st = cudaGetDeviceCount(&count);
  if (st != cudaSuccess) return std::string("no usable CUDA device (") + cudaGetErrorName(st) + ")";
  if (count == 0) return "no CUDA device";
  return "";
}

}  // namespace edgc::kernels::testing

#define SKIP_WITHOUT_GPU()                                                   \
  do {                                                                       \
    const std::string reason = ::edgc::kernels::testing::no_device_reason(); \
    if (!reason.empty()) GTEST_SKIP() << "GPU test skipped: " << reason;     \
  } while (0)
