#include "edgc/report/inputs.hpp"

#include <cmath>

#include "edgc/report/svg.hpp"

namespace edgc::report {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

ParamValue param_value(const ordered_json& j) {
  if (j.is_string()) return {std::nullopt, j.get<std::string>()};
  if (!j.is_number()) return {std::nullopt, j.dump()};
  const double v = j.get<double>();
  const bool integral = j.is_number_integer() || (v == std::floor(v) && std::abs(v) < 1e15);
  return {v, integral ? std::to_string(static_cast<std::int64_t>(v)) : fmt_compact(v, 4)};
}

const ParamValue* LabelledPoint::param(const std::string& key) const {
  for (const auto& [k, v] : params)
    if (k == key) return &v;
  return nullptr;
}

std::string describe_setup(const results::ResultDocument& r) {
  std::string out;
  const auto append = [&](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  if (r.cluster) append(std::to_string(r.cluster->gpus) + " \xC3\x97 " + r.cluster->gpu);
  if (r.parallelism)
    append("TP " + std::to_string(r.parallelism->tp) + " \xC3\x97 PP " + std::to_string(r.parallelism->pp) +
           " \xC3\x97 DP " + std::to_string(r.parallelism->dp));
  if (r.model_name)
    append("model " + *r.model_name +
           (r.model_parameters ? " (" + fmt_compact(*r.model_parameters, 3) + " parameters)" : ""));
  if (r.run) append(fmt_compact(static_cast<double>(r.run->iterations), 4) + " iterations");
  return out;
}

SimulateResult read_simulate_result(const fs::path& file) {
  results::ResultDocument doc = results::read_result_document(file);
  return {describe_setup(doc), std::move(doc.runs), std::move(doc.entropy_series),
          doc.warnings.value_or(std::vector<std::string>{})};
}

Sweep read_sweep(const fs::path& dir) {
  const results::SweepDocument doc = results::read_sweep_document(dir / "sweep.json");
  Sweep out;
  out.base = doc.base;
  out.mode = doc.mode;
  out.planned_points = doc.points;
  out.repeats = doc.repeats;
  out.policies = doc.policies;
  for (const results::SweepDocument::Axis& a : doc.axes) {
    LabelledAxis axis{a.key, {}};
    for (const ordered_json& v : a.values) axis.values.push_back(param_value(v));
    out.axes.push_back(std::move(axis));
  }
  const fs::path lines = dir / "results.jsonl";
  if (!fs::exists(lines)) return out;
  out.has_results = true;
  std::vector<results::SweepRecord> records = results::read_sweep_records(lines, &out.truncated_last_line);
  std::optional<double> budget;
  if (doc.spec.is_object() && doc.spec.contains("max_error") && doc.spec["max_error"].is_number())
    budget = doc.spec["max_error"].get<double>();
  out.warnings = results::sweep_warnings(doc, records, budget);
  for (results::SweepRecord& r : records) {
    LabelledPoint p{r.point, {}, std::move(r.runs), std::move(r.error)};
    for (const auto& [key, value] : r.params.items()) p.params.emplace_back(key, param_value(value));
    out.points.push_back(std::move(p));
  }
  return out;
}

Plan read_plan(const fs::path& file) {
  results::PlanDocument doc = results::read_plan_document(file);
  Plan out;
  if (doc.target_iterations > 0)
    out.target = fmt_compact(static_cast<double>(doc.target_iterations), 4) + " iterations";
  else if (doc.target_tokens)
    out.target = fmt_compact(*doc.target_tokens, 4) + " tokens";
  out.options = std::move(doc.options);
  out.verdicts = std::move(doc.verdicts);
  return out;
}

}  // namespace edgc::report
