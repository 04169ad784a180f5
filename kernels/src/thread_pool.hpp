#pragma once
// A fixed team of threads that runs one function on every member and waits for all of them — the only kind of
// parallelism the CPU kernels use (static splits of rows or of a batch), so no queue and no allocation per call.
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace edgc::kernels {

class ThreadPool {
 public:
  /// A team of `threads` (≥ 1): the caller plus threads − 1 workers started here.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const noexcept { return threads_; }
  /// Calls fn(i) once for every i in [0, size()), the caller taking i = 0, and returns when all calls have.
  /// Rethrows the first exception a call threw. Not reentrant.
  void run(const std::function<void(int)>& fn);

 private:
  void work(int index);

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_;
  std::condition_variable done_;
  const std::function<void(int)>* job_ = nullptr;
  std::uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

/// [begin, end) of part `part` when `total` items are split into `parts` nearly equal contiguous parts.
inline std::pair<std::int64_t, std::int64_t> split_range(std::int64_t total, int parts, int part) {
  const std::int64_t base = total / parts;
  const std::int64_t extra = total % parts;
  const std::int64_t begin = part * base + std::min<std::int64_t>(part, extra);
  return {begin, begin + base + (part < extra ? 1 : 0)};
}

}  // namespace edgc::kernels
