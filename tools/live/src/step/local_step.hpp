#pragma once
// One rank's record of one step (LocalStep) and its reduction over the DP group into the StageStep that
// measurements.json stores: a step is as slow as its slowest replica, a collective as fast as its first finisher.
#include <cstdint>
#include <vector>

#include "edgc/kernels/powersgd.hpp"
#include "edgc/results/measurements.hpp"
#include "timed_communicator.hpp"
#include "world.hpp"

namespace edgc::live {

/// Bytes of one element on the wire: PowerSGD all-reduces fp32.
constexpr int kElementBytes = 4;

/// One rank's record of one step before the group reduction.
struct LocalStep {
  std::int64_t iteration = 0;
  int rank = 0;
  double sync_s = 0.0;
  double compute_s = 0.0;
  std::int64_t wire_bytes = 0;
  std::int64_t dense_bytes = 0;
  std::vector<results::Collective> collectives;
  std::vector<results::MatrixGroup> matrices;
  /// The parts of compute_s: the dense buffer's pack + unpack, and each batch of `matrices` (same order).
  double copy_s = 0.0;
  std::vector<double> batch_s;
};

/// A step's stats and the all-reduces it made (`calls`, in order) as a LocalStep (iteration, rank and sync_s
/// left for the caller). Throws InternalError when the calls are not the dense / P / Q the step implies.
LocalStep describe(const kernels::StepStats& st, const kernels::PowerSgd& psgd,
                   std::vector<TimedCommunicator::Call> calls);

/// Reduces every rank's steps over its DP group (collectives: MIN, sync and compute: MAX); the group's replica 0
/// returns them, the others an empty list. Collective over the group.
std::vector<results::StageStep> reduce_steps(const World& w, const std::vector<LocalStep>& local);

}  // namespace edgc::live
