#pragma once
// The collective PowerSGD needs — an in-place sum all-reduce across data-parallel ranks — as an interface, so
// the same compressor runs on one rank, on threads in one process (tests, trace replay), over MPI or over NCCL.
#include <memory>
#include <optional>
#include <span>

namespace edgc::kernels {

class Communicator {
 public:
  virtual ~Communicator() = default;

  /// This rank, 0 ≤ rank() < size().
  virtual int rank() const noexcept = 0;
  /// Number of ranks in the group.
  virtual int size() const noexcept = 0;
  /// In-place element-wise sum over all ranks. Every rank calls it in the same order with the same number of
  /// elements; on return every rank holds the same sum. Throws edgc::InternalError when the ranks disagree on
  /// the size or the group was aborted.
  virtual void all_reduce_sum(std::span<float> data) = 0;
  /// Device time of the last all_reduce_sum where the implementation measures one (NCCL: CUDA events around
  /// the collective, staging copies excluded); nullopt where only the caller's wall clock can tell.
  virtual std::optional<double> last_device_seconds() const noexcept { return std::nullopt; }
  /// Whether all_reduce_sum sums device memory in place (NCCL), so a caller keeping its data on the GPU passes
  /// device pointers straight through. false (the default): it takes host memory, and a device caller stages
  /// through host buffers.
  virtual bool device_buffers() const noexcept { return false; }
  /// The CUDA device its collectives run on, or −1 for a communicator without one. A caller putting its own
  /// GPU work next to the collectives uses this device.
  virtual int device() const noexcept { return -1; }
};

/// A group of one: the sum over one rank is the data itself.
class LocalCommunicator final : public Communicator {
 public:
  int rank() const noexcept override { return 0; }
  int size() const noexcept override { return 1; }
  void all_reduce_sum(std::span<float> /*data*/) override {}
};

/// `size` ranks in one process, one thread per rank: `InProcessGroup group(D);` then thread d uses
/// `group.communicator(d)`. Collectives are barrier-based; each rank sums one slice of the data over ranks in
/// the fixed order rank 0 + rank 1 + …, so results are bit-identical on every rank and from run to run. The
/// group owns its communicators; they live as long as the group.
class InProcessGroup {
 public:
  /// Throws ConfigError when size < 1.
  explicit InProcessGroup(int size);
  ~InProcessGroup();
  InProcessGroup(const InProcessGroup&) = delete;
  InProcessGroup& operator=(const InProcessGroup&) = delete;

  int size() const noexcept;
  /// The communicator of `rank`. Throws ConfigError when rank is outside [0, size).
  Communicator& communicator(int rank);
  /// Wakes every rank waiting in a collective and makes this and all later collectives throw
  /// edgc::InternalError: a rank that failed calls this so that the others do not wait for it forever.
  void abort() noexcept;

 private:
  struct State;
  class Member;
  std::unique_ptr<State> state_;
};

}  // namespace edgc::kernels
