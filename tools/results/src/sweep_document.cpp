#include "edgc/results/sweep_document.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "edgc/core/atomic_file.hpp"
#include "edgc/core/checked_int.hpp"
#include "edgc/core/error.hpp"
#include "edgc/core/policy_registry.hpp"
#include "edgc/results/caveats.hpp"
#include "edgc/results/sweep_lines.hpp"

namespace edgc::results {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// An axis value as the spec wrote it (the first equal to `v`).
std::string axis_value_text(const ordered_json& values, double v) {
  for (const ordered_json& x : values)
    if (x.is_number() && x.get<double>() == v) return x.dump();
  return std::to_string(v);
}

ordered_json optional_int(const std::optional<std::int64_t>& v) { return v ? ordered_json(*v) : ordered_json(nullptr); }

ordered_json run_json(const SweepRun& r) {
  ordered_json j;
  write_figures(r, j);
  j["warmup_end_iteration"] = optional_int(r.warmup_end_iteration);
  j["compressed_iterations"] = optional_int(r.compressed_iterations);
  write_ci95(r, j);
  if (!r.rank_bindings.empty()) j["rank_bindings"] = r.rank_bindings;
  return j;
}

SweepRun read_run(const JsonNode& r) {
  SweepRun run;
  read_figures(r, false, run);
  if (const auto w = r.find("warmup_end_iteration")) run.warmup_end_iteration = w->integer();
  if (const auto c = r.find("compressed_iterations")) run.compressed_iterations = c->integer(0);
  read_ci95(r, run);
  if (const auto b = r.find("rank_bindings"))
    for (const std::string& key : b->member_keys()) run.rank_bindings[key] = b->at(key).integer(0);
  return run;
}

}  // namespace

const SweepRun* SweepRecord::find_run(const std::string& policy) const {
  for (const SweepRun& r : runs)
    if (r.policy == policy) return &r;
  return nullptr;
}

ordered_json to_json(const SweepRecord& r) {
  ordered_json j = {{"point", r.point}, {"params", r.params}};
  if (r.failed()) return (j["error"] = r.error, j);
  j["gpus"] = r.gpus;
  j["gpu"] = r.gpu;
  if (!r.compute.empty()) j["compute"] = r.compute;
  j["repeats"] = r.repeats;
  j["simulations"] = r.simulations;
  j["runs"] = ordered_json::array();
  for (const SweepRun& run : r.runs) j["runs"].push_back(run_json(run));
  if (std::isfinite(r.wall_s)) j["wall_s"] = r.wall_s;
  if (std::isfinite(r.peak_memory_GiB)) j["peak_memory_GiB"] = r.peak_memory_GiB;
  if (std::isfinite(r.memory_capacity_GiB)) j["memory_capacity_GiB"] = r.memory_capacity_GiB;
  if (!r.measured_val_loss_change.empty()) j["measured_val_loss_change"] = r.measured_val_loss_change;
  if (std::isfinite(r.trace_smaller_by)) j["trace_smaller_by"] = r.trace_smaller_by;
  return j;
}

SweepRecord parse_sweep_record(const JsonNode& line) {
  SweepRecord out;
  out.point = line.at("point").integer(0);
  const JsonNode params = line.at("params");
  for (const std::string& key : params.member_keys()) out.params[key] = params.at(key).raw();
  if (const auto e = line.find("error")) {
    out.error = e->string();
    if (out.error.empty()) out.error = "failed (no message)";
    return out;
  }
  out.gpus = line.optional_integer("gpus");
  out.gpu = line.optional_string("gpu");
  out.compute = line.optional_string("compute");
  if (const auto r = line.find("repeats")) out.repeats = r->integer(1);
  out.simulations = line.optional_integer("simulations");
  out.wall_s = line.optional_number("wall_s");
  out.peak_memory_GiB = line.optional_number("peak_memory_GiB");
  out.memory_capacity_GiB = line.optional_number("memory_capacity_GiB");
  out.trace_smaller_by = line.optional_number("trace_smaller_by");
  if (const auto m = line.find("measured_val_loss_change"))
    for (const std::string& policy : m->member_keys()) out.measured_val_loss_change[policy] = m->at(policy).number();
  const JsonNode runs = line.at("runs");
  if (runs.size() == 0) runs.fail("is empty");
  for (std::size_t i = 0; i < runs.size(); ++i) out.runs.push_back(read_run(runs[i]));
  return out;
}

std::vector<SweepRecord> read_sweep_records(const std::filesystem::path& file, bool* truncated) {
  const SweepLines lines = read_sweep_lines(file);
  if (truncated != nullptr) *truncated = lines.truncated_last_line;
  std::vector<SweepRecord> out;
  for (std::size_t i = 0; i < lines.lines.size(); ++i) {
    const ordered_json line = lines.lines[i];
    out.push_back(
        parse_sweep_record(JsonNode(line, file.string(), line_label(static_cast<std::size_t>(lines.line_numbers[i])))));
  }
  return out;
}

std::vector<SweepRun> average_runs(const std::vector<ResultDocument>& reps) {
  std::vector<SweepRun> out;
  for (std::size_t i = 0; i < reps.front().runs.size(); ++i) {
    const ResultRun& first = reps.front().runs[i];
    SweepRun r;
    r.policy = first.policy;
    std::vector<const RunFigures*> figures;
    for (const ResultDocument& rep : reps) figures.push_back(&rep.runs.at(i));
    average_figures(figures, r);
    r.warmup_end_iteration = first.warmup_end_iteration;
    r.compressed_iterations = first.compressed_iterations;
    if (const auto b = first.detail.find("rank_bindings"); b != first.detail.end() && b->is_object())
      for (const auto& [key, count] : b->items())  // counts; other values of this free-form detail are left out
        if (const auto n = json_integer_if<std::int64_t>(count, 0, std::numeric_limits<std::int64_t>::max()))
          r.rank_bindings[key] = *n;
    out.push_back(std::move(r));
  }
  return out;
}

// ---- sweep.json ----

ordered_json to_json(const SweepDocument& d) {
  ordered_json axes = ordered_json::array();
  for (const SweepDocument::Axis& a : d.axes) {
    ordered_json axis = {{"key", a.key}, {"values", a.values}};
    if (a.range) axis["range"] = {a.range->first, a.range->second};
    axes.push_back(std::move(axis));
  }
  ordered_json j = {{"schema", kSweepSchema}, {"spec_file", d.spec_file},
                    {"base", d.base},         {"description", d.description},
                    {"mode", d.mode},         {"axes", axes},
                    {"points", d.points},     {"repeats", d.repeats},
                    {"policies", d.policies}, {"spec", d.spec}};
  if (d.max_error) j["max_error"] = *d.max_error;
  j["min_saving"] = d.min_saving;
  return j;
}

SweepDocument parse_sweep_document(const JsonNode& root) {
  root.check_schema(kSweepSchema);
  SweepDocument out;
  out.spec_file = root.optional_string("spec_file");
  out.base = root.optional_string("base");
  out.description = root.optional_string("description");
  if (const auto m = root.find("mode")) out.mode = m->one_of({"grid", "random"});
  out.points = root.optional_integer("points");
  if (const auto r = root.find("repeats")) out.repeats = r->integer(1);
  if (const auto ps = root.find("policies"))
    for (std::size_t i = 0; i < ps->size(); ++i) out.policies.push_back((*ps)[i].string());
  const JsonNode axes = root.at("axes");
  for (std::size_t i = 0; i < axes.size(); ++i) {
    SweepDocument::Axis a{axes[i].at("key").string(), ordered_json::array(), std::nullopt};
    if (const auto vs = axes[i].find("values"))
      for (std::size_t k = 0; k < vs->size(); ++k) a.values.push_back((*vs)[k].raw());
    if (const auto r = axes[i].find("range")) {
      if (r->size() != 2) r->fail("expected [low, high]");
      a.range = std::pair{(*r)[0].number(), (*r)[1].number()};
    }
    out.axes.push_back(std::move(a));
  }
  if (const auto s = root.find("spec")) out.spec = s->raw();
  if (const auto m = root.find("max_error")) out.max_error = m->number();
  if (const auto m = root.find("min_saving")) out.min_saving = m->number();
  return out;
}

SweepDocument read_sweep_document(const std::filesystem::path& file) {
  const ordered_json j = read_json_file(file);
  return parse_sweep_document(JsonNode(j, file.string()));
}

// ---- summary.csv ----

double judged_error(const RunFigures& run) {
  return std::isfinite(run.gradient_error) ? run.gradient_error : run.cqm_error;
}

std::string over_budget(const RunFigures& run, double max_error) {
  const double e = judged_error(run);
  if (!std::isfinite(e)) return "no gradient-error figure to check against the budget";
  if (e <= max_error) return "";
  const auto pct = [](double x) {
    std::ostringstream os;
    os.setf(std::ios::fixed);
    os.precision(1);
    os << 100.0 * x;
    return os.str();
  };
  return std::string(std::isfinite(run.gradient_error) ? "gradient error " : "CQM-predicted gradient error ") + pct(e) +
         " % > budget " + pct(max_error) + " %";
}

std::string summary_csv(const std::vector<std::string>& axis_keys, const std::vector<SweepRecord>& records,
                        bool with_ci, std::optional<double> max_error) {
  std::vector<std::string> policies;
  for (const SweepRecord& r : records)
    for (const SweepRun& run : r.runs)
      if (std::find(policies.begin(), policies.end(), run.policy) == policies.end()) policies.push_back(run.policy);
  const std::vector<std::string> fields = csv_figure_columns(with_ci);
  std::ostringstream os;
  os << "point";
  for (const std::string& k : axis_keys) os << ',' << csv_cell(json(k));
  os << ",gpus,gpu";
  for (const std::string& p : policies) {
    for (const std::string& f : fields) os << ',' << p << '.' << f;
    if (max_error) os << ',' << p << ".error_budget";
  }
  os << ",error\n";
  for (const SweepRecord& r : records) {
    os << r.point;
    for (const std::string& k : axis_keys) os << ',' << csv_cell(r.params.value(k, ordered_json()));
    os << ',' << (r.failed() ? "" : std::to_string(r.gpus)) << ',' << csv_cell(json(r.gpu));
    for (const std::string& p : policies) {
      const SweepRun* run = r.find_run(p);
      for (const std::string& f : fields) {
        os << ',';
        if (run == nullptr) continue;
        if (const std::optional<double> v = run_figure(*run, f); v && std::isfinite(*v)) os << csv_cell(json(*v));
      }
      if (max_error) {
        os << ',';
        if (run != nullptr) {
          const std::string why = over_budget(*run, *max_error);
          os << csv_cell(json(why.empty() ? "ok" : "infeasible: " + why));
        }
      }
    }
    os << ',' << csv_cell(r.failed() ? json(r.error) : json()) << '\n';
  }
  return os.str();
}

std::vector<std::string> kernel_model_warnings(const std::vector<SweepRecord>& records) {
  std::vector<std::pair<std::string, std::int64_t>> kernel_points;  // GPU, points, in first-seen order
  for (const SweepRecord& r : records) {
    if (r.failed() || r.compute != "kernels") continue;
    auto it = std::find_if(kernel_points.begin(), kernel_points.end(), [&](const auto& g) { return g.first == r.gpu; });
    if (it == kernel_points.end()) it = kernel_points.insert(kernel_points.end(), {r.gpu, 0});
    ++it->second;
  }
  std::vector<std::string> out;
  for (const auto& [gpu, points] : kernel_points)
    out.push_back(std::to_string(points) + " point(s) on " + gpu + ": " + kernel_model_caveat(gpu));
  return out;
}

std::vector<std::string> sweep_warnings(const SweepDocument& doc, const std::vector<SweepRecord>& records,
                                        std::optional<double> max_error) {
  std::vector<std::string> out;
  std::vector<std::string> policies;
  for (const SweepRecord& r : records)
    for (const SweepRun& run : r.runs)
      if (!core::is_baseline_policy(run.policy) &&
          std::find(policies.begin(), policies.end(), run.policy) == policies.end())
        policies.push_back(run.policy);
  // Rank bounds that never bind along their own axis.
  for (const SweepDocument::Axis& a : doc.axes) {
    const std::string bound = a.key == "compression.r_min" ? "r_min" : a.key == "compression.r_max" ? "r_max" : "";
    if (bound.empty()) continue;
    for (const std::string& policy : policies) {
      // A fixed-rank policy (static, selective) takes r_max whatever the bounds say: no binding to look for.
      if (const core::PolicyInfo* info = core::find_policy(policy); info != nullptr && info->fixed_rank) continue;
      std::int64_t with_bindings = 0, bound_count = 0;
      for (const SweepRecord& r : records) {
        const SweepRun* run = r.find_run(policy);
        if (run == nullptr || run->rank_bindings.empty()) continue;
        ++with_bindings;
        const auto it = run->rank_bindings.find(bound);
        bound_count += it == run->rank_bindings.end() ? 0 : it->second;
      }
      if (with_bindings > 0 && bound_count == 0)
        out.push_back("axis " + a.key + ": " + bound + " decided no rank of policy " + policy + " at any of " +
                      std::to_string(with_bindings) +
                      " points: the axis changes nothing for it (the entropy never drove the rank to that bound; "
                      "widen the run, or sweep a knob that binds)");
    }
  }
  // Best points on the edge of the grid. Points tied with the fastest (to 1e-9) count as fastest too: the warning
  // is given only when every one of them sits on the same edge of the axis.
  for (const std::string& policy : policies) {
    std::vector<std::pair<const SweepRecord*, double>> candidates;
    double best_time = std::numeric_limits<double>::infinity();
    for (const SweepRecord& r : records) {
      const SweepRun* run = r.find_run(policy);
      if (run == nullptr || !std::isfinite(run->training_time_s)) continue;
      if (max_error && !over_budget(*run, *max_error).empty()) continue;
      candidates.emplace_back(&r, run->training_time_s);
      best_time = std::min(best_time, run->training_time_s);
    }
    std::vector<const SweepRecord*> best;
    for (const auto& [r, t] : candidates)
      if (t <= best_time * (1.0 + 1e-9)) best.push_back(r);
    if (best.empty()) continue;
    for (const SweepDocument::Axis& a : doc.axes) {
      if (a.values.size() < kEdgeAxisValues ||
          !std::all_of(a.values.begin(), a.values.end(), [](const ordered_json& v) { return v.is_number(); }))
        continue;
      double lo = a.values.front().get<double>(), hi = lo;
      for (const ordered_json& x : a.values) {
        lo = std::min(lo, x.get<double>());
        hi = std::max(hi, x.get<double>());
      }
      const auto value_of = [&a](const SweepRecord* r) {
        const auto it = r->params.find(a.key);
        return it != r->params.end() && it->is_number() ? it->get<double>() : std::numeric_limits<double>::quiet_NaN();
      };
      const bool at_lo = std::all_of(best.begin(), best.end(), [&](const SweepRecord* r) { return value_of(r) == lo; });
      const bool at_hi = std::all_of(best.begin(), best.end(), [&](const SweepRecord* r) { return value_of(r) == hi; });
      if (!at_lo && !at_hi) continue;
      out.push_back("policy " + policy + ": its fastest point" + (max_error ? " within the error budget" : "") +
                    " (point " + std::to_string(best.front()->point) + ") has " + a.key + " = " +
                    axis_value_text(a.values, at_lo ? lo : hi) + ", the " + (at_lo ? "smallest" : "largest") +
                    " value swept: the optimum may lie beyond the grid (extend the axis)");
    }
  }
  for (std::string& w : kernel_model_warnings(records)) out.push_back(std::move(w));
  return out;
}

}  // namespace edgc::results
