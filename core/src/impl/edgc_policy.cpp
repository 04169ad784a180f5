// The EDGC policy: per stage, the CQM rule turns the window-to-window entropy change into a rank change;
// with DAC enabled, stage 0's rank is spread over the pipeline by the alignment rule instead. edgc-pp is the same on
// the DP side and also compresses the pipeline's backward messages at ControllerConfig::pipeline_rank after warm-up.
#include <cmath>

#include "edgc/core/cqm.hpp"
#include "policies.hpp"

namespace edgc::core::impl {
namespace {

class EdgcPolicy final : public WarmupPolicy {
 public:
  EdgcPolicy(const ControllerConfig& c, bool pipeline) : WarmupPolicy(c), pipeline_(pipeline) {
    for (const auto& [m, n] : c.stage_shapes) models_.emplace_back(m, n);
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
    return align(std::vector<RankDecision>(state_.size(), RankDecision{r, static_cast<double>(r), RankBinding::kMax}));
  }

  int pipeline_rank() const override { return pipeline_ ? config_.pipeline_rank : 0; }

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
    const auto aligned = dac_align(cqm[0].rank, config_.stages, config_.dac, config_.cqm);
    for (std::size_t k = 1; k < cqm.size(); ++k) {
      cqm[k].rank = aligned[k].rank;
      cqm[k].continuous = aligned[k].rank;
      cqm[k].binding = aligned[k].binding;
    }
    return cqm;
  }

  bool pipeline_;
  std::vector<RankErrorModel> models_;
  std::vector<StageState> state_;
};

}  // namespace

std::unique_ptr<Controller> make_edgc(const ControllerConfig& c) { return std::make_unique<EdgcPolicy>(c, false); }
std::unique_ptr<Controller> make_edgc_pp(const ControllerConfig& c) { return std::make_unique<EdgcPolicy>(c, true); }

}  // namespace edgc::core::impl
