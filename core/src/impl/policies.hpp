#pragma once
// Policy implementations behind core::Controller; registered explicitly in policy_registry.cpp.
#include <memory>

#include "edgc/core/controller.hpp"

namespace edgc::core::impl {

std::unique_ptr<Controller> make_none(const ControllerConfig& c);
std::unique_ptr<Controller> make_static(const ControllerConfig& c);
std::unique_ptr<Controller> make_selective(const ControllerConfig& c);
std::unique_ptr<Controller> make_loss(const ControllerConfig& c);
std::unique_ptr<Controller> make_edgc(const ControllerConfig& c);
std::unique_ptr<Controller> make_edgc_pp(const ControllerConfig& c);
std::unique_ptr<Controller> make_edgc_megatron(const ControllerConfig& c);

/// Shared skeleton of the compressing policies: uncompressed until the warm-up detector says stop, then the
/// policy's ranks.
class WarmupPolicy : public Controller {
 public:
  explicit WarmupPolicy(const ControllerConfig& c) : config_(c), warmup_(c.warmup) {}
  WindowDecision decide(const WindowObservation& obs) final;

 protected:
  /// Ranks for the first window after warm-up.
  virtual std::vector<RankDecision> start(const WindowObservation& obs) { return next(obs); }
  /// Ranks for every later window.
  virtual std::vector<RankDecision> next(const WindowObservation& obs) = 0;

  /// Per stage, the rank of the pipeline's backward messages once warm-up is over (WindowDecision::pipeline_ranks,
  /// after start() or next() of the same window); empty = none.
  virtual std::vector<int> pipeline_ranks() const { return {}; }

  int fixed_rank() const { return config_.static_rank > 0 ? config_.static_rank : config_.cqm.r_max; }
  std::vector<RankDecision> uniform(int rank, RankBinding b) const;

  ControllerConfig config_;

 private:
  WarmupDetector warmup_;
};

/// Mean over stages of the selected estimator's entropy; drives the warm-up detector of every policy.
std::optional<double> mean_entropy(const WindowObservation& obs, EntropyEstimator e);

/// Entropy of one stage by the selected estimator.
std::optional<double> stage_entropy(const StageObservation& s, EntropyEstimator e);

}  // namespace edgc::core::impl
