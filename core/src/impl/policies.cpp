// Baseline policies: none, static rank, selective stages (Optimus-CC) and loss-driven (the public EDGC port).
#include <algorithm>
#include <cmath>

#include "policies.hpp"

namespace edgc::core::impl {

std::optional<double> stage_entropy(const StageObservation& s, EntropyEstimator e) {
  const auto& v = e == EntropyEstimator::kGaussian ? s.entropy_gaussian : s.entropy_histogram;
  if (v && std::isfinite(*v)) return v;
  return std::nullopt;
}

std::optional<double> mean_entropy(const WindowObservation& obs, EntropyEstimator e) {
  double sum = 0.0;
  int n = 0;
  for (const auto& s : obs.stages) {
    if (const auto h = stage_entropy(s, e)) {
      sum += *h;
      ++n;
    }
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

namespace {

class NonePolicy final : public Controller {
 public:
  explicit NonePolicy(const ControllerConfig& c) : stages_(c.stages) {}
  std::string_view policy() const noexcept override { return "none"; }
  std::unique_ptr<Controller> clone() const override { return std::make_unique<NonePolicy>(*this); }
  WindowDecision decide(const WindowObservation&) override {
    WindowDecision d;
    d.warmup = false;
    d.stages.assign(static_cast<std::size_t>(stages_), RankDecision{0, 0.0, RankBinding::kUncompressed});
    return d;
  }

 private:
  int stages_;
};

class StaticPolicy final : public WarmupPolicy {
 public:
  using WarmupPolicy::WarmupPolicy;
  std::string_view policy() const noexcept override { return "static"; }
  std::unique_ptr<Controller> clone() const override { return std::make_unique<StaticPolicy>(*this); }

 protected:
  std::vector<RankDecision> next(const WindowObservation&) override {
    return uniform(fixed_rank(), RankBinding::kNone);
  }
};

class SelectivePolicy final : public WarmupPolicy {
 public:
  using WarmupPolicy::WarmupPolicy;
  std::string_view policy() const noexcept override { return "selective"; }
  std::unique_ptr<Controller> clone() const override { return std::make_unique<SelectivePolicy>(*this); }

 protected:
  std::vector<RankDecision> next(const WindowObservation&) override {
    std::vector<RankDecision> out;
    const int r = fixed_rank();
    for (int s = 0; s < config_.stages; ++s) {
      out.push_back(s < config_.selective_stages ? RankDecision{r, static_cast<double>(r), RankBinding::kNone}
                                                 : RankDecision{0, 0.0, RankBinding::kUncompressed});
    }
    return out;
  }
};

// Loss-driven rank: Δ = |mean loss of this window − previous window|, normalised by the first such change after
// warm-up; r = r_min + (r_max − r_min)·min(1, Δ/Δ_ref), quantised down, changed by at most ±step per window, the
// same for every stage (DAC alignment on top when enabled).
class LossPolicy final : public WarmupPolicy {
 public:
  using WarmupPolicy::WarmupPolicy;
  std::string_view policy() const noexcept override { return "loss"; }
  std::unique_ptr<Controller> clone() const override { return std::make_unique<LossPolicy>(*this); }

 protected:
  std::vector<RankDecision> start(const WindowObservation& obs) override {
    previous_loss_ = obs.mean_loss;
    rank_ = config_.cqm.r_max;
    return spread(RankBinding::kMax);
  }
  std::vector<RankDecision> next(const WindowObservation& obs) override {
    if (!obs.mean_loss || !previous_loss_) {
      if (obs.mean_loss) previous_loss_ = obs.mean_loss;
      return spread(RankBinding::kFallback);
    }
    const double delta = std::abs(*obs.mean_loss - *previous_loss_);
    previous_loss_ = obs.mean_loss;
    if (!reference_ && delta > 0.0) reference_ = delta;
    const auto& c = config_.cqm;
    const double frac = reference_ ? std::min(1.0, delta / *reference_) : 1.0;
    const double ideal = c.r_min + (c.r_max - c.r_min) * frac;
    int r = static_cast<int>(std::floor(ideal / c.quantum)) * c.quantum;
    RankBinding b = RankBinding::kNone;
    if (r < rank_ - c.step || r > rank_ + c.step) b = RankBinding::kStep;
    r = std::clamp(r, std::max(c.r_min, rank_ - c.step), std::min(c.r_max, rank_ + c.step));
    rank_ = r;
    return spread(b);
  }

 private:
  std::vector<RankDecision> spread(RankBinding b) const {
    if (config_.dac.enabled) {
      std::vector<RankDecision> out;
      for (const StageRank& s : dac_align(rank_, config_.stages, config_.dac, config_.cqm))
        out.push_back({s.rank, static_cast<double>(s.rank), s.binding == RankBinding::kNone ? b : s.binding});
      return out;
    }
    return uniform(rank_, b);
  }

  std::optional<double> previous_loss_;
  std::optional<double> reference_;
  int rank_ = 0;
};

}  // namespace

std::vector<RankDecision> WarmupPolicy::uniform(int rank, RankBinding b) const {
  return std::vector<RankDecision>(static_cast<std::size_t>(config_.stages),
                                   RankDecision{rank, static_cast<double>(rank), b});
}

WindowDecision WarmupPolicy::decide(const WindowObservation& obs) {
  WindowDecision d;
  d.stages = uniform(0, RankBinding::kWarmup);
  const bool was_done = warmup_.done();
  if (!warmup_.update(obs.end_iteration, mean_entropy(obs, config_.estimator))) return d;
  d.warmup = false;
  d.stages = was_done ? next(obs) : start(obs);
  d.pipeline_ranks = pipeline_ranks();
  return d;
}

std::unique_ptr<Controller> make_none(const ControllerConfig& c) { return std::make_unique<NonePolicy>(c); }
std::unique_ptr<Controller> make_static(const ControllerConfig& c) { return std::make_unique<StaticPolicy>(c); }
std::unique_ptr<Controller> make_selective(const ControllerConfig& c) { return std::make_unique<SelectivePolicy>(c); }
std::unique_ptr<Controller> make_loss(const ControllerConfig& c) { return std::make_unique<LossPolicy>(c); }

}  // namespace edgc::core::impl
