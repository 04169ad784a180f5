#pragma once
// Buffer<T>: an owning array in a Backend's memory — device memory of its GPU for a device backend, host memory
// otherwise — so that the same code (PowerSgd, the data-parallel emulation, the tools) keeps its tensors where
// the backend's kernels want them. bf16 conversions match the kernels' (exact widening, round to nearest even).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "edgc/core/bf16.hpp"
#include "edgc/core/error.hpp"
#include "edgc/kernels/backend.hpp"

namespace edgc::kernels {

using edgc::bf16_to_float;  // core/bf16.hpp
using edgc::float_to_bf16;

/// `count` elements of T in `backend`'s memory, freed on destruction. Move-only; the backend must outlive it.
/// Contents are undefined until written (upload, zero, a kernel). Element access from the host is only valid for
/// host backends (data()); otherwise go through upload/download.
template <class T>
class Buffer {
 public:
  Buffer() = default;
  /// Throws what Backend::allocate throws.
  Buffer(Backend& backend, std::size_t count)
      : backend_(&backend), data_(static_cast<T*>(backend.allocate(count * sizeof(T)))), count_(count) {}
  Buffer(Buffer&& o) noexcept
      : backend_(o.backend_), data_(std::exchange(o.data_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      reset();
      backend_ = o.backend_;
      data_ = std::exchange(o.data_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { reset(); }

  /// Frees the memory; the buffer is then empty.
  void reset() noexcept {
    if (backend_ != nullptr && data_ != nullptr) backend_->deallocate(data_);
    data_ = nullptr;
    count_ = 0;
  }

  T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return count_; }
  bool empty() const noexcept { return count_ == 0; }
  std::size_t bytes() const noexcept { return count_ * sizeof(T); }
  /// The whole buffer as a span (of backend memory).
  std::span<T> span() const noexcept { return {data_, count_}; }

  /// Host → buffer; `host` must have size() elements. Throws InternalError otherwise.
  void upload(std::span<const T> host) {
    check(host.size(), "upload");
    if (count_ > 0) backend_->copy_to_device(data_, host.data(), bytes());
  }
  /// Buffer → host, after the backend's queued work; `host` must have size() elements.
  void download(std::span<T> host) const {
    check(host.size(), "download");
    if (count_ > 0) backend_->copy_to_host(host.data(), data_, bytes());
  }
  std::vector<T> to_host() const {
    std::vector<T> h(count_);
    download(h);
    return h;
  }
  /// All bits zero (0.0 for float and bf16).
  void zero() {
    if (count_ > 0) backend_->memset(data_, 0, bytes());
  }

 private:
  void check(std::size_t n, const char* what) const {
    if (n != count_)
      throw InternalError(std::string("Buffer::") + what + ": " + std::to_string(n) + " elements for a buffer of " +
                          std::to_string(count_));
  }

  Backend* backend_ = nullptr;
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace edgc::kernels
