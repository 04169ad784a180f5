#pragma once
// Shared by the CUDA backend's kernel files: launch shapes and the one-wave grid size. Host code, compiled by nvcc.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "cuda_kernels.hpp"

namespace edgc::kernels::cuda {

inline constexpr int kWarps = kThreads / 32;

/// One grid row per matrix of a batch, `ctas` CTAs along it.
inline dim3 batch_grid(int ctas, int batch) {
  return dim3(static_cast<unsigned int>(ctas), static_cast<unsigned int>(batch));
}

/// CTAs of a grid-stride pass over `count` elements: about four per thread, at most 1024 CTAs.
inline unsigned int ctas_for(std::int64_t count) {
  const std::int64_t c = (count + kThreads * 4 - 1) / (kThreads * 4);
  return static_cast<unsigned int>(c < 1 ? 1 : (c > 1024 ? 1024 : c));
}

/// The CTAs of `kernel` one wave of the current device holds (kThreads each, with `shared` bytes of dynamic shared
/// memory); at least 1.
template <class Kernel>
int one_wave(Kernel kernel, std::size_t shared) {
  int device = 0;
  int sms = 1;
  int per_sm = 1;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, shared) != cudaSuccess) {
    (void)cudaGetLastError();
  }
  return std::max(1, sms) * std::max(1, per_sm);
}

}  // namespace edgc::kernels::cuda
