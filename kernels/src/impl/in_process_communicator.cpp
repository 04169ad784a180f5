// InProcessGroup: all-reduce among threads of one process.
//
// One collective is three barriers: (1) every rank has published its buffer, and the sizes are checked; (2) each
// rank has written its slice of the sum into the group's result buffer, adding ranks in the order 0, 1, …, so
// every element is computed the same way whoever computes it; (3) every rank has copied the result out, so
// the next collective may reuse the result buffer. Waiting is on a condition variable, not spinning: emulated
// ranks may outnumber cores.
#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "../thread_pool.hpp"
#include "edgc/core/error.hpp"
#include "edgc/kernels/communicator.hpp"

namespace edgc::kernels {

struct InProcessGroup::State {
  explicit State(int n) : size(n), buffers(static_cast<std::size_t>(n)) {}

  // Blocks until all ranks have arrived. The last one to arrive runs `last` (under the lock) before waking the
  // others. Throws InternalError when the group is or becomes aborted.
  template <class F>
  void barrier(F&& last) {
    std::unique_lock lock(mu);
    if (aborted) throw InternalError("in-process all-reduce: the group was aborted (another rank failed)");
    const std::uint64_t gen = generation;
    if (++arrived == size) {
      last();
      arrived = 0;
      ++generation;
      cv.notify_all();
      return;
    }
    cv.wait(lock, [&] { return generation != gen || aborted; });
    if (generation == gen) throw InternalError("in-process all-reduce: the group was aborted (another rank failed)");
  }

  void barrier() {
    barrier([] {});
  }

  const int size;
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  std::uint64_t generation = 0;
  bool aborted = false;
  std::vector<std::span<float>> buffers;  // published by each rank for the current collective
  std::vector<float> result;
  std::string mismatch;  // set at barrier 1 when sizes differ, read by every rank before barrier 2
  std::vector<std::unique_ptr<Communicator>> members;
};

class InProcessGroup::Member final : public Communicator {
 public:
  Member(State& state, int rank) : s_(state), rank_(rank) {}
  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return s_.size; }

  void all_reduce_sum(std::span<float> data) override {
    {
      const std::lock_guard lock(s_.mu);
      s_.buffers[static_cast<std::size_t>(rank_)] = data;
    }
    s_.barrier([this] {
      s_.mismatch.clear();
      const std::size_t n0 = s_.buffers[0].size();
      for (int d = 1; d < s_.size; ++d) {
        const std::size_t nd = s_.buffers[static_cast<std::size_t>(d)].size();
        if (nd != n0) {
          s_.mismatch = "in-process all-reduce: rank " + std::to_string(d) + " passed " + std::to_string(nd) +
                        " floats, rank 0 passed " + std::to_string(n0);
          return;
        }
      }
      if (s_.result.size() < n0) s_.result.resize(n0);
    });
    // Every rank sees the same verdict; the group stays usable after a mismatch.
    if (!s_.mismatch.empty()) {
      std::string msg = s_.mismatch;
      s_.barrier();
      throw InternalError(msg);
    }
    const auto [begin, end] = split_range(static_cast<std::int64_t>(data.size()), s_.size, rank_);
    float* out = s_.result.data();
    for (std::int64_t i = begin; i < end; ++i) {
      float acc = s_.buffers[0][static_cast<std::size_t>(i)];
      for (int d = 1; d < s_.size; ++d) acc += s_.buffers[static_cast<std::size_t>(d)][static_cast<std::size_t>(i)];
      out[i] = acc;
    }
    s_.barrier();
    if (!data.empty()) std::memcpy(data.data(), s_.result.data(), data.size() * sizeof(float));
    s_.barrier();
  }

 private:
  State& s_;
  const int rank_;
};

InProcessGroup::InProcessGroup(int size) {
  if (size < 1) throw ConfigError("", "world_size", "must be at least 1, got " + std::to_string(size));
  state_ = std::make_unique<State>(size);
  for (int d = 0; d < size; ++d) state_->members.push_back(std::make_unique<Member>(*state_, d));
}

InProcessGroup::~InProcessGroup() = default;

int InProcessGroup::size() const noexcept { return state_->size; }

Communicator& InProcessGroup::communicator(int rank) {
  if (rank < 0 || rank >= state_->size)
    throw ConfigError("", "rank", std::to_string(rank) + " is outside [0, " + std::to_string(state_->size) + ")");
  return *state_->members[static_cast<std::size_t>(rank)];
}

void InProcessGroup::abort() noexcept {
  {
    const std::lock_guard lock(state_->mu);
    state_->aborted = true;
  }
  state_->cv.notify_all();
}

}  // namespace edgc::kernels
