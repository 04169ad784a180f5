#pragma once
// A Communicator decorator that records every all-reduce PowerSgd::step makes, so that a step's collectives
// (dense, P, Q) can be reported with their sizes and times without changing the kernels.
#include <mpi.h>

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "edgc/kernels/communicator.hpp"

namespace edgc::live {

/// Records the float count and duration of every all-reduce that passes through it.
class TimedCommunicator final : public kernels::Communicator {
 public:
  struct Call {
    std::int64_t floats = 0;
    double seconds = 0.0;
  };

  explicit TimedCommunicator(kernels::Communicator& inner) : inner_(inner) {}

  int rank() const noexcept override { return inner_.rank(); }
  int size() const noexcept override { return inner_.size(); }
  bool device_buffers() const noexcept override { return inner_.device_buffers(); }
  int device() const noexcept override { return inner_.device(); }
  void all_reduce_sum(std::span<float> data) override {
    const double t0 = MPI_Wtime();
    inner_.all_reduce_sum(data);
    const double wall = MPI_Wtime() - t0;
    // NCCL measures the collective itself with CUDA events (staging copies excluded); MPI only has the wall clock.
    calls_.push_back({static_cast<std::int64_t>(data.size()), inner_.last_device_seconds().value_or(wall)});
  }

  /// The calls recorded since the last take(), oldest first.
  std::vector<Call> take() { return std::exchange(calls_, {}); }

 private:
  kernels::Communicator& inner_;
  std::vector<Call> calls_;
};

}  // namespace edgc::live
