#include "edgc/core/controller.hpp"

#include <algorithm>

#include <string>

#include "edgc/core/error.hpp"

namespace edgc::core {

namespace {

// PowerSGD cannot find more independent directions than the matrix has.
void check_rank_bound(const ControllerConfig& c, const PolicyInfo* policy, const char* where) {
  if ((policy != nullptr && !policy->compresses_dp) || c.stage_shapes.size() != static_cast<std::size_t>(c.stages))
    return;
  for (std::size_t s = 0; s < c.stage_shapes.size(); ++s) {
    const auto [rows, cols] = c.stage_shapes[s];
    if (c.cqm.r_max > std::min(rows, cols))
      throw ConfigError(where, "compression.r_max",
                        std::to_string(c.cqm.r_max) + " exceeds the rank of stage " + std::to_string(s) + "'s " +
                            std::to_string(rows) + "x" + std::to_string(cols) + " matrices");
  }
}

}  // namespace

const char* pipeline_rank_mode_name(PipelineRankMode m) {
  return m == PipelineRankMode::kEntropy ? "entropy" : "static";
}

std::optional<PipelineRankMode> pipeline_rank_mode_from_name(std::string_view name) noexcept {
  for (const PipelineRankMode m : {PipelineRankMode::kStatic, PipelineRankMode::kEntropy})
    if (name == pipeline_rank_mode_name(m)) return m;
  return std::nullopt;
}

std::unique_ptr<Controller> make_controller(const ControllerConfig& c, const char* where) {
  // An unknown name is reported after the settings, as it always was: the settings' messages come first.
  const PolicyInfo* policy = find_policy(c.policy);
  const bool pipeline = policy != nullptr && policy->compresses_pipeline;
  if (c.stages < 1) throw ConfigError(where, "stages", "must be >= 1");
  validate(c.warmup, where);
  validate(c.cqm, where);
  validate(c.dac, where);
  if (c.static_rank < 0 || c.static_rank % c.cqm.quantum != 0)
    throw ConfigError(where, "compression.static_rank", "must be 0 (= r_max) or a positive multiple of the quantum");
  if (c.selective_stages < 0 || c.selective_stages > c.stages)
    throw ConfigError(where, "compression.selective_stages",
                      "must be between 0 and the number of stages (" + std::to_string(c.stages) + ")");
  if (pipeline && c.pipeline_rank < 1)
    throw ConfigError(where, "compression.pp_rank",
                      "must be >= 1 for the edgc-pp policy, got " + std::to_string(c.pipeline_rank));
  if (pipeline && c.pipeline_rank_mode == PipelineRankMode::kEntropy) {
    if (c.pipeline_r_min < 1 || c.pipeline_r_min % c.cqm.quantum != 0 || c.pipeline_r_min > c.pipeline_rank)
      throw ConfigError(where, "compression.pp_r_min",
                        "must be a positive multiple of compression.quantum (" + std::to_string(c.cqm.quantum) +
                            ") and at most compression.pp_rank (" + std::to_string(c.pipeline_rank) + "), got " +
                            std::to_string(c.pipeline_r_min));
    if (c.pipeline_rank % c.cqm.quantum != 0)
      throw ConfigError(where, "compression.pp_rank",
                        "must be a multiple of compression.quantum (" + std::to_string(c.cqm.quantum) +
                            ") when pp_rank_mode is entropy, got " + std::to_string(c.pipeline_rank));
    if (!c.pipeline_shapes.empty() && c.pipeline_shapes.size() != static_cast<std::size_t>(c.stages))
      throw ConfigError(where, "pipeline_shapes", "one (tokens, hidden) per stage, or none");
    for (const auto& [m, n] : c.pipeline_shapes)
      if (m < 0 || n < 0 || (m == 0) != (n == 0))
        throw ConfigError(where, "pipeline_shapes", "shapes must be positive or (0, 0)");
  }
  if (c.megatron_step < 0)
    throw ConfigError(where, "compression.step", "must be >= 1, got " + std::to_string(c.megatron_step));
  check_rank_bound(c, policy, where);
  const PolicyInfo& info = policy_info(c.policy, where, "compression.policy");
  if (info.needs_stage_shapes) {
    if (c.stage_shapes.size() != static_cast<std::size_t>(c.stages))
      throw ConfigError(where, "stage_shapes", "one (m, n) per stage is needed by the edgc policy");
    for (const auto& [m, n] : c.stage_shapes)
      if (m < 1 || n < 1) throw ConfigError(where, "stage_shapes", "shapes must be positive");
  }
  return info.factory(c);
}

}  // namespace edgc::core
