// The EDGC policy: per stage, the CQM rule turns the window-to-window entropy change into a rank change;
// with DAC enabled, stage 0's rank is spread over the pipeline by the alignment rule instead. edgc-pp is the same on
// the DP side and also compresses the pipeline's backward messages after warm-up: every boundary at
// ControllerConfig::pipeline_rank (static mode), or each boundary by the same CQM rule on the entropy trend of the
// messages it carries, between pipeline_r_min and pipeline_rank (entropy mode).
#include <algorithm>
#include <cmath>

#include "edgc/core/cqm.hpp"
#include "policies.hpp"

namespace edgc::core::impl {
namespace {

class EdgcPolicy final : public WarmupPolicy {
 public:
  EdgcPolicy(const ControllerConfig& c, bool pipeline) : WarmupPolicy(c), pipeline_(pipeline) {
    for (const auto& [m, n] : c.stage_shapes) models_.emplace_back(m, n);
    pp_cqm_ = c.cqm;
    pp_cqm_.r_min = c.pipeline_r_min;
    pp_cqm_.r_max = c.pipeline_rank;
    const bool entropy = pipeline && c.pipeline_rank_mode == PipelineRankMode::kEntropy;
    for (int s = 0; s < c.stages; ++s) {
      const auto shape = static_cast<std::size_t>(s) < c.pipeline_shapes.size()
                             ? c.pipeline_shapes[static_cast<std::size_t>(s)]
                             : std::pair<std::int64_t, std::int64_t>{0, 0};
      pp_models_.emplace_back(std::max<std::int64_t>(shape.first, 1), std::max<std::int64_t>(shape.second, 1));
      pp_observed_.push_back(entropy && s > 0 && shape.first > 0);
    }
  }
  std::string_view policy() const noexcept override { return pipeline_ ? "edgc-pp" : "edgc"; }
  std::unique_ptr<Controller> clone() const override { return std::make_unique<EdgcPolicy>(*this); }

 protected:
  // Compression starts at r_max in every stage (assumed: the paper does not say where it starts); the entropy
  // of this window is the reference for the next.
  std::vector<RankDecision> start(const WindowObservation& obs) override {
    const int r = config_.cqm.r_max;
    state_.assign(static_cast<std::size_t>(config_.stages), {static_cast<double>(r), r, std::nullopt});
    for (std::size_t s = 0; s < state_.size(); ++s) state_[s].entropy = stage_entropy(obs.stages[s], config_.estimator);
    if (pipeline_) {
      const int p = config_.pipeline_rank;
      pp_state_.assign(state_.size(), {static_cast<double>(p), p, std::nullopt});
      for (std::size_t s = 0; s < pp_state_.size(); ++s) pp_state_[s].entropy = boundary_entropy(obs, s);
    }
    return align(std::vector<RankDecision>(state_.size(), RankDecision{r, static_cast<double>(r), RankBinding::kMax}));
  }

  std::vector<int> pipeline_ranks() const override {
    if (!pipeline_) return {};
    std::vector<int> out;
    for (std::size_t s = 0; s < pp_state_.size(); ++s) out.push_back(s == 0 ? 0 : pp_state_[s].rank);
    return out;
  }

  std::vector<RankDecision> next(const WindowObservation& obs) override {
    std::vector<RankDecision> out;
    for (std::size_t s = 0; s < state_.size(); ++s) {
      StageState& st = state_[s];
      const auto h1 = stage_entropy(obs.stages[s], config_.estimator);
      if (!h1 || !st.entropy) {
        // Explicit fallback: no estimate this window, keep the previous decision.
        if (h1) st.entropy = h1;
        out.push_back({st.rank, st.continuous, RankBinding::kFallback});
        continue;
      }
      const RankUpdate u = cqm_update(models_[s], st.continuous, st.rank, *st.entropy, *h1, config_.cqm);
      st = {u.continuous, u.rank, h1};
      out.push_back({u.rank, u.continuous, u.binding});
    }
    // Entropy mode: each observed boundary by the same rule on its own messages' entropy (explicit fallback
    // likewise); unobserved boundaries stay at pipeline_rank.
    for (std::size_t s = 0; s < pp_state_.size(); ++s) {
      if (!pp_observed_[s]) continue;
      StageState& st = pp_state_[s];
      const auto h1 = boundary_entropy(obs, s);
      if (!h1 || !st.entropy) {
        if (h1) st.entropy = h1;
        continue;
      }
      const RankUpdate u = cqm_update(pp_models_[s], st.continuous, st.rank, *st.entropy, *h1, pp_cqm_);
      st = {u.continuous, u.rank, h1};
    }
    return align(std::move(out));
  }

 private:
  struct StageState {
    double continuous;
    int rank;
    std::optional<double> entropy;  // H0 for the next update
  };

  std::vector<RankDecision> align(std::vector<RankDecision> cqm) const {
    if (!config_.dac.enabled) return cqm;
    // edgc-pp compresses the backward messages in the windows these ranks apply to (warm-up is over): the stagger
    // per stage is then the compressed hop (dac.hpp). In entropy mode the boundaries' ranks differ; the hop time is
    // the one given for pipeline_rank.
    const auto aligned = dac_align(cqm[0].rank, config_.stages, config_.dac, config_.cqm, pipeline_);
    for (std::size_t k = 1; k < cqm.size(); ++k) {
      cqm[k].rank = aligned[k].rank;
      cqm[k].continuous = aligned[k].rank;
      cqm[k].binding = aligned[k].binding;
    }
    return cqm;
  }

  std::optional<double> boundary_entropy(const WindowObservation& obs, std::size_t s) const {
    if (!pp_observed_[s] || s >= obs.boundaries.size()) return std::nullopt;
    return stage_entropy(obs.boundaries[s], config_.estimator);
  }

  bool pipeline_;
  CqmConfig pp_cqm_;
  std::vector<RankErrorModel> models_;
  std::vector<StageState> state_;
  std::vector<RankErrorModel> pp_models_;
  std::vector<bool> pp_observed_;  // per stage: entropy mode and the stage sends an observed boundary
  std::vector<StageState> pp_state_;
};

}  // namespace

std::unique_ptr<Controller> make_edgc(const ControllerConfig& c) { return std::make_unique<EdgcPolicy>(c, false); }
std::unique_ptr<Controller> make_edgc_pp(const ControllerConfig& c) { return std::make_unique<EdgcPolicy>(c, true); }

}  // namespace edgc::core::impl
