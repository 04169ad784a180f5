#include "edgc/report/inputs.hpp"

#include <cmath>

#include "edgc/core/policy_registry.hpp"
#include "edgc/report/svg.hpp"
#include "edgc/results/convergence.hpp"
#include "edgc/results/verdict.hpp"

namespace edgc::report {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

ParamValue param_value(const ordered_json& j) {
  if (j.is_string()) return {std::nullopt, j.get<std::string>()};
  if (!j.is_number()) return {std::nullopt, j.dump()};
  const double v = j.get<double>();
  // An integer is shown as written (through a double, 2^64 - 1 would overflow the cast and 2^53 + 1 lose its digit).
  if (j.is_number_integer()) return {v, j.dump()};
  const bool integral = v == std::floor(v) && std::abs(v) < 1e15;
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

std::vector<std::string> verdict_lines(const results::ResultDocument& doc) {
  std::vector<std::string> out;
  for (const results::Verdict& v : results::result_verdicts(doc, results::result_min_saving(doc)))
    out.push_back(v.text);
  return out;
}

std::vector<std::string> settings_lines(const results::ResultDocument& doc) {
  std::vector<std::string> out;
  if (doc.run)
    out.push_back("compression: window " + std::to_string(doc.run->window) + " iterations, \xCE\xB1 " +
                  fmt_compact(doc.run->alpha, 3) + ", \xCE\xB2 " + fmt_compact(doc.run->beta, 3) + ", r_min " +
                  std::to_string(doc.run->r_min) + ", r_max " + std::to_string(doc.run->r_max) + ", step " +
                  std::to_string(doc.run->step) + "; " + fmt_compact(static_cast<double>(doc.run->iterations), 4) +
                  " iterations");
  const auto section = [&doc](const char* name) -> const nlohmann::ordered_json* {
    const auto it = doc.sections.find(name);
    return it == doc.sections.end() ? nullptr : &*it;
  };
  if (const std::string b = results::break_even_line(doc); !b.empty()) out.push_back(b);
  if (const auto* n = section("network"); n != nullptr && n->is_string())
    out.push_back("network profile: " + n->get<std::string>());
  if (const auto* e = section("entropy"); e != nullptr && e->is_object()) {
    const std::string source = e->value("source", "");
    if (source == "trace")
      out.push_back("entropy: trace " + e->value("path", std::string("?")) + " (" +
                    std::to_string(e->value("trace_iterations", std::int64_t{0})) + " steps stretched over the run)");
    else if (source == "synthetic")
      out.push_back("entropy: synthetic curve from " + fmt_compact(e->value("start_nats", 0.0), 3) + " to " +
                    fmt_compact(e->value("end_nats", 0.0), 3) + " nats, time constant " +
                    fmt_compact(e->value("decay_fraction", 0.0), 3) + " of the run, noise " +
                    fmt_compact(e->value("noise_nats", 0.0), 3) + " nats");
  }
  if (const auto* f = section("fidelity"); f != nullptr && f->is_object()) {
    if (f->value("source", "") == "trace")
      out.push_back("gradient error: PowerSGD with error feedback replayed on " + f->value("trace", std::string("?")) +
                    " (" + fmt_compact(f->value("stretch", 0.0), 3) + "\xC3\x97 stretch); ranks mapped by " +
                    f->value("rank_mapping", std::string("?")));
    else
      out.push_back("gradient error: " + f->value("note", std::string("CQM prediction only")));
  }
  return out;
}

SimulateResult read_simulate_result(const fs::path& file) {
  results::ResultDocument doc = results::read_result_document(file);
  std::vector<std::string> verdicts = verdict_lines(doc);
  std::vector<std::string> settings = settings_lines(doc);
  const auto bandwidth = doc.sections.find("bandwidth");
  const auto convergence = doc.sections.find("convergence");
  std::vector<std::string> loss = results::convergence_lines(doc);
  return {describe_setup(doc),
          std::move(doc.runs),
          std::move(doc.entropy_series),
          doc.warnings.value_or(std::vector<std::string>{}),
          std::move(verdicts),
          std::move(settings),
          bandwidth == doc.sections.end() ? ordered_json() : *bandwidth,
          std::move(loss),
          convergence == doc.sections.end() ? ordered_json() : *convergence};
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
  out.max_error = doc.max_error;  // the budget the sweep last ran under (--max-error, else the spec's)
  if (!out.max_error && doc.spec.is_object() && doc.spec.contains("max_error") && doc.spec["max_error"].is_number())
    out.max_error = doc.spec["max_error"].get<double>();  // a sweep.json written before max_error was stored
  const fs::path lines = dir / "results.jsonl";
  if (!fs::exists(lines)) return out;
  out.has_results = true;
  std::vector<results::SweepRecord> records = results::read_sweep_records(lines, &out.truncated_last_line);
  out.warnings = results::sweep_warnings(doc, records, out.max_error);
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
  out.max_error = doc.max_error;
  out.infeasible = std::move(doc.infeasible);
  return out;
}

}  // namespace edgc::report
