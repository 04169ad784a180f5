#pragma once
// Measured training steps replayed on a platform: what every pipeline stage of a live run synchronised in a step
// (its all-reduces in order, and the compute around them), simulated for each distinct step, all in ONE SimGrid run
// (the engine cannot be reset): steps one after another, each starting when all ranks have met at a barrier, as a
// live run puts a world barrier before each step. Then the calibration all-reduces, one after another.
//
// Within a step every stage's data-parallel group does what PowerSgd::step does (the order of sim::StageSync): half
// of the dense buffer's copies before the dense all-reduce (pack) and half after it (unpack), ⅓ of the compression
// compute before the first P all-reduce, ⅓ after the last P all-reduce, ⅓ after the last Q all-reduce, and the
// recorded all-reduces as all-reduces over the group's GPUs.
#include <cstdint>
#include <simgrid/s4u.hpp>
#include <vector>

#include "edgc/sim/platform.hpp"

namespace edgc::sim {

namespace sg4 = simgrid::s4u;

/// What an all-reduce of a step carries.
enum class ReplayedAllReduce { kP, kQ, kDense };

struct ReplayedCollective {
  ReplayedAllReduce kind = ReplayedAllReduce::kDense;
  std::uint64_t bytes = 0;
};

/// What one stage synchronised in a step.
struct ReplayedStage {
  std::vector<ReplayedCollective> collectives;  ///< in the order the stage issued them
  double copy_s = 0.0;   ///< the dense buffer's pack + unpack, seconds (slept half before, half after the dense one)
  double batch_s = 0.0;  ///< compression compute, seconds (slept in thirds around the P and Q all-reduces)
};

/// Where one rank of the measured run sits: its pipeline stage, its index in the stage's data-parallel group (ring
/// order), and the platform GPU it runs on (Platform::gpu).
struct ReplayedRank {
  int stage = 0;
  int replica = 0;
  int gpu = 0;
};

struct StepReplay {
  std::vector<ReplayedRank> ranks;                ///< every rank once, in rank order; each (stage, replica) once
  std::vector<std::vector<ReplayedStage>> steps;  ///< [step][stage]: every stage of every distinct step
  /// Calibration all-reduces (bytes each), one after another over the first `calibration_ranks` members of stage
  /// 0's group; none when calibration_ranks < 2.
  int calibration_ranks = 0;
  std::vector<std::uint64_t> calibration_bytes;
};

/// Simulated durations, seconds.
struct StepReplayTimes {
  /// [step][stage][i]: the all-reduce's shortest duration over the group's members, counted from when the member
  /// entered it (the statistic a live run records: the last member to arrive waits for nobody).
  std::vector<std::vector<std::vector<double>>> collective_s;
  std::vector<std::vector<double>> sync_s;  ///< [step][stage]: common start → the stage's last member done
  std::vector<double> calibration_s;        ///< per calibration all-reduce: common start → the last member done
};

/// Runs `replay` on `engine` (once per process, after Platform::build: SimGrid runs one simulation per process).
StepReplayTimes replay_steps(sg4::Engine& engine, const Platform& platform, const StepReplay& replay);

}  // namespace edgc::sim
