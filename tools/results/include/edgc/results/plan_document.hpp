#pragma once
// plan.json (schema edgc.plan/1), written by `edgc plan` and read by `edgc report`: every simulated option
// (cluster × layout × policy) with its training time and cost to the target, its iteration time and peak memory
// per GPU against the GPU's capacity, the Pareto front and the verdicts.
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "edgc/results/json_reader.hpp"

namespace edgc::results {

inline constexpr const char* kPlanSchema = "edgc.plan/1";

struct PlanDocument {
  /// One simulated option under one policy.
  struct Option {
    std::string label;                              ///< "<option label> <policy>"
    std::string gpu;                                ///< empty when absent
    std::string policy;                             ///< empty when absent
    std::int64_t gpus = 0, tp = 0, pp = 0, dp = 0;  ///< 0 when absent
    double training_time_s = 0.0;
    double cost_usd = 0.0;
    double speedup_vs_none = 0.0;  ///< NaN when absent
    double gradient_error = 0.0;   ///< measured (else CQM-predicted) relative gradient error; NaN when absent
    /// no other option is at least as fast, as cheap and as accurate, and better in one
    bool pareto = false;
    double iteration_time_s = 0.0;     ///< mean seconds per iteration; NaN when absent
    double peak_memory_GiB = 0.0;      ///< per GPU on the fullest pipeline stage; NaN when absent
    double memory_capacity_GiB = 0.0;  ///< the GPU's memory; NaN when absent (the cluster gives none)
  };
  std::string spec;  ///< the plan spec file
  std::string base;  ///< its base scenario
  std::int64_t target_iterations = 0;
  std::optional<double> target_tokens;  ///< when the target was given in tokens
  double pays_threshold = 0.0;
  std::optional<double> max_error;  ///< the gradient-error budget, when the plan had one
  std::vector<Option> options;      ///< fastest first
  std::vector<std::string> infeasible;
  std::vector<std::string> verdicts;
};

nlohmann::ordered_json to_json(const PlanDocument& doc);
/// Needs the schema and every option's label, training time and cost; the rest is optional.
PlanDocument parse_plan_document(const JsonNode& root);
PlanDocument read_plan_document(const std::filesystem::path& file);

}  // namespace edgc::results
