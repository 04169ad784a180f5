// edgc-megatron: the rank rule of the paper's first author's Megatron-Core port (megatron_rule.hpp), on edgc's
// window observations. Differences from the port's code path are stated in scenarios/README.md.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

#include "edgc/core/megatron_rule.hpp"
#include "policies.hpp"

namespace edgc::core::impl {
namespace {

class MegatronPolicy final : public Controller {
 public:
  explicit MegatronPolicy(const ControllerConfig& c)
      : config_(c),
        step_(c.megatron_step > 0 ? c.megatron_step : megatron_default_step(c.megatron_signal)),
        // The port's warm-up is a share of the run (--grad-comp-warm-up, 0.1), not a stability test.
        warmup_end_(c.warmup.mode == WarmupConfig::Mode::kFixed ? std::max(c.warmup.fixed_iters, c.warmup.floor_iters)
                                                                : c.warmup.floor_iters) {}
  std::string_view policy() const noexcept override { return "edgc-megatron"; }
  std::unique_ptr<Controller> clone() const override { return std::make_unique<MegatronPolicy>(*this); }

  WindowDecision decide(const WindowObservation& obs) override {
    const std::optional<double> s = signal(obs);
    // The reference change comes from the run's first two windows with a signal, warm-up included.
    if (s && !first_)
      first_ = s;
    else if (s && !second_)
      second_ = s;
    WindowDecision d;
    if (obs.end_iteration < warmup_end_) {
      previous_ = s;
      d.stages.assign(static_cast<std::size_t>(config_.stages), RankDecision{0, 0.0, RankBinding::kWarmup});
      return d;
    }
    d.warmup = false;
    RankUpdate u;
    if (s && previous_ && second_) {
      const MegatronMapped m =
          megatron_map_rank(std::abs(*s - *previous_), std::abs(*first_ - *second_), config_.cqm.r_max);
      u = megatron_limit_step(m, rank_, config_.cqm.r_max, step_);
    } else if (rank_) {  // no signal this window: keep the last decision
      u = {static_cast<double>(*rank_), *rank_, RankBinding::kFallback};
    } else {  // fewer than two windows of signal: the port starts at r_max
      u = {static_cast<double>(config_.cqm.r_max), config_.cqm.r_max, RankBinding::kMax};
    }
    if (s) previous_ = s;
    rank_ = u.rank;
    d.stages.assign(static_cast<std::size_t>(config_.stages), RankDecision{u.rank, u.continuous, u.binding});
    if (config_.dac.enabled) {  // the port's time-budget alignment of the later stages
      const std::vector<StageRank> aligned = megatron_align(u.rank, config_.stages, config_.dac, config_.cqm.r_max);
      for (std::size_t k = 1; k < aligned.size(); ++k)
        d.stages[k] = {aligned[k].rank, static_cast<double>(aligned[k].rank), aligned[k].binding};
    }
    return d;
  }

 private:
  std::optional<double> signal(const WindowObservation& obs) const {
    if (config_.megatron_signal == MegatronSignal::kEntropy) return mean_entropy(obs, config_.estimator);
    if (obs.mean_loss && std::isfinite(*obs.mean_loss)) return obs.mean_loss;
    return std::nullopt;
  }

  ControllerConfig config_;
  int step_;
  std::int64_t warmup_end_;
  std::optional<double> first_;
  std::optional<double> second_;
  std::optional<double> previous_;
  std::optional<int> rank_;
};

}  // namespace

std::unique_ptr<Controller> make_edgc_megatron(const ControllerConfig& c) {
  return std::make_unique<MegatronPolicy>(c);
}

}  // namespace edgc::core::impl
