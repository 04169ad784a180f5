#pragma once
// The CUDA backend's workspace types: device and pinned host buffers that grow and never shrink, the host-side list
// of small arguments uploaded per call, and cuBLAS batch operands. Used by cuda_backend.cu only.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "cuda_check.hpp"

namespace edgc::kernels::impl {

/// Frees `ptr` with `release` and allocates `bytes` with `acquire` in its place (`ptr` null and `size` 0 while
/// nothing is held, so a failed allocation leaves a consistent empty buffer); the new pointer.
template <class Release, class Acquire>
void* replace_allocation(void*& ptr, std::size_t& size, std::size_t bytes, Release release, Acquire acquire) {
  EDGC_CUDA_CHECK(release(ptr));
  ptr = nullptr;
  size = 0;
  EDGC_CUDA_CHECK(acquire(&ptr, bytes));
  size = bytes;
  return ptr;
}

/// A device allocation that grows and never shrinks.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(ptr_); }  // no throw from a destructor: an error here cannot be handled anyway

  /// At least `bytes`, 256-byte aligned; synchronises `stream` before replacing a smaller allocation.
  void* grow(std::size_t bytes, cudaStream_t stream) {
    if (bytes <= bytes_) return ptr_;
    EDGC_CUDA_CHECK(cudaStreamSynchronize(stream));
    return replace_allocation(
        ptr_, bytes_, bytes, [](void* p) { return cudaFree(p); },
        [](void** p, std::size_t n) { return cudaMalloc(p, n); });
  }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

/// Pinned host memory for results copied back from the device.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() { cudaFreeHost(ptr_); }
  void* grow(std::size_t bytes) {
    if (bytes <= bytes_) return ptr_;
    return replace_allocation(
        ptr_, bytes_, bytes, [](void* p) { return cudaFreeHost(p); },
        [](void** p, std::size_t n) { return cudaMallocHost(p, n); });
  }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

/// Host-side list of 8-byte words (pointers, piece offsets) uploaded to the device in one copy per call.
class Staging {
 public:
  void clear() { words_.clear(); }
  template <class T>
  std::size_t add(std::span<T* const> ptrs) {
    const std::size_t at = words_.size();
    for (T* p : ptrs) words_.push_back(reinterpret_cast<std::uintptr_t>(p));
    return at;
  }
  std::vector<std::uint64_t>& mutable_words() noexcept { return words_; }
  const std::vector<std::uint64_t>& words() const noexcept { return words_; }

 private:
  std::vector<std::uint64_t> words_;
};

/// A batch operand of a cuBLAS GEMM: equally strided (base + stride) or only a device array of pointers.
struct Operand {
  const float* base = nullptr;
  long long stride = 0;
  bool strided = false;
  const void* d_array = nullptr;  // device array of `batch` pointers, or null
};

// Whether ptrs[i] = ptrs[0] + i·stride (in floats) for all i.
template <class T>
Operand operand_of(std::span<T* const> ptrs, const void* d_array) {
  Operand o;
  o.base = ptrs.empty() ? nullptr : ptrs[0];
  o.d_array = d_array;
  o.strided = true;
  if (ptrs.size() >= 2) {
    const auto bytes = reinterpret_cast<std::intptr_t>(ptrs[1]) - reinterpret_cast<std::intptr_t>(ptrs[0]);
    if (bytes % static_cast<std::intptr_t>(sizeof(float)) != 0) {
      o.strided = false;
    } else {
      o.stride = static_cast<long long>(bytes / static_cast<std::intptr_t>(sizeof(float)));
      for (std::size_t i = 2; i < ptrs.size() && o.strided; ++i)
        o.strided = reinterpret_cast<std::intptr_t>(ptrs[i]) - reinterpret_cast<std::intptr_t>(ptrs[0]) ==
                    static_cast<std::intptr_t>(i) * bytes;
    }
  }
  return o;
}

inline Operand strided_operand(const float* base, long long stride) { return {base, stride, true, nullptr}; }

}  // namespace edgc::kernels::impl
