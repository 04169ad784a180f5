#pragma once
// Device helpers shared by the streaming kernels (cuda_kernels.cu, cuda_project.cu): element access for float32 and
// bf16 storage, 16-byte alignment tests, and the per-CTA double sum written to a partials array.
#include <cub/block/block_reduce.cuh>

#include <cstdint>

#include "cuda_kernels.hpp"

namespace edgc::kernels::cuda {

__device__ __forceinline__ bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15U) == 0; }

// The CTA's sum of `s` to partials[at] (by default blockIdx.y · gridDim.x + blockIdx.x: CTA-major per matrix).
__device__ __forceinline__ void write_partial(double s, double* partials,
                                              std::int64_t at = blockIdx.y * gridDim.x + blockIdx.x) {
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  const double total = Reduce(tmp).Sum(s);
  if (threadIdx.x == 0) partials[at] = total;
}

// Σ v² of four floats, in double, in the order x, y, z, w.
__device__ __forceinline__ double squares(float4 v) {
  return static_cast<double>(v.x) * v.x + static_cast<double>(v.y) * v.y + static_cast<double>(v.z) * v.z +
         static_cast<double>(v.w) * v.w;
}

// Element access for float32 and bf16 (std::uint16_t bit patterns) storage: bf16 widens exactly on load and
// rounds to nearest even on store, as the CPU twin (buffer.hpp) does. Vector loads take four elements (16 bytes of
// float, 8 of bf16) when the pointer is aligned to that.
__device__ __forceinline__ float widen(std::uint16_t h) { return __uint_as_float(static_cast<unsigned int>(h) << 16); }
__device__ __forceinline__ std::uint16_t narrow(float f) {
  const unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffU) > 0x7f800000U) return static_cast<std::uint16_t>((u >> 16) | 0x0040U);
  return static_cast<std::uint16_t>((u + 0x7fffU + ((u >> 16) & 1U)) >> 16);
}
__device__ __forceinline__ float load1(const float* p, std::int64_t i) { return __ldg(p + i); }
__device__ __forceinline__ float load1(const std::uint16_t* p, std::int64_t i) { return widen(__ldg(p + i)); }
__device__ __forceinline__ void store1(float* p, std::int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void store1(std::uint16_t* p, std::int64_t i, float v) { p[i] = narrow(v); }
__device__ __forceinline__ float4 load4(const float* p, std::int64_t i) {
  return __ldg(reinterpret_cast<const float4*>(p) + i);
}
__device__ __forceinline__ float4 load4(const std::uint16_t* p, std::int64_t i) {
  const uint2 v = __ldg(reinterpret_cast<const uint2*>(p) + i);
  return {__uint_as_float(v.x << 16), __uint_as_float(v.x & 0xffff0000U), __uint_as_float(v.y << 16),
          __uint_as_float(v.y & 0xffff0000U)};
}
__device__ __forceinline__ void store4(float* p, std::int64_t i, float4 v) { reinterpret_cast<float4*>(p)[i] = v; }
__device__ __forceinline__ void store4(std::uint16_t* p, std::int64_t i, float4 v) {
  const uint2 w{static_cast<unsigned int>(narrow(v.x)) | (static_cast<unsigned int>(narrow(v.y)) << 16),
                static_cast<unsigned int>(narrow(v.z)) | (static_cast<unsigned int>(narrow(v.w)) << 16)};
  reinterpret_cast<uint2*>(p)[i] = w;
}
template <class T>
__device__ __forceinline__ bool aligned4(const T* p) {
  return (reinterpret_cast<std::uintptr_t>(p) % (4 * sizeof(T))) == 0;
}

}  // namespace edgc::kernels::cuda
