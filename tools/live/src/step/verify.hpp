#pragma once
// --verify (live.verify): checks of every step on this rank, so that a live run proves it computed what the
// in-process emulation computes. Each step: error feedback holds, every replica of the group ended with the same
// bits, and replica 0 holds exactly what the in-process emulation of the group computes (host backends: the same
// bits; a device backend: within kDeviceTolerance, since cuBLAS may pick other kernels for the emulation's buffer
// layout and NCCL sums in its own order).
#include <cstdint>
#include <memory>
#include <vector>

#include "edgc/kernels/dp_emulation.hpp"
#include "edgc/kernels/powersgd.hpp"
#include "stage_tensors.hpp"
#include "world.hpp"

namespace edgc::live {

class Verifier {
 public:
  /// Relative Frobenius distance allowed between replica 0 and the emulation on a device backend.
  static constexpr double kDeviceTolerance = 1e-3;

  /// `emulator`: the in-process emulation of this rank's DP group, on replica 0 only (nullptr elsewhere).
  /// `exact`: compare with it bit for bit (host backends), else within kDeviceTolerance.
  explicit Verifier(std::unique_ptr<kernels::DataParallelEmulator> emulator = nullptr, bool exact = true);

  /// Before PowerSgd::step: remembers M = G + E per tensor.
  void before(const StageTensors& t, const kernels::PowerSgd& psgd);
  /// After it (collective over the DP group): throws InternalError naming what broke. `ranks` per tensor.
  void after(const World& w, const StageTensors& t, const kernels::PowerSgd& psgd, const kernels::StepStats& st,
             const std::vector<int>& ranks);

  /// The worst max |M - G^ - E| / max |M| seen on this rank.
  double worst_ef() const { return worst_ef_; }
  /// Steps verified on this rank.
  std::int64_t steps() const { return steps_; }

 private:
  void check_error_feedback(const StageTensors& t, const kernels::PowerSgd& psgd, const kernels::StepStats& st);
  void check_emulation(const World& w, const StageTensors& t, const std::vector<int>& ranks);

  std::unique_ptr<kernels::DataParallelEmulator> emulator_;
  bool exact_ = true;
  std::vector<std::vector<float> > m_before_;  // M = G + E per tensor, before the step
  double worst_ef_ = 0.0;
  std::int64_t steps_ = 0;
};

}  // namespace edgc::live
