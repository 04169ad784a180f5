#include "edgc/results/sweep_document.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "edgc/core/atomic_file.hpp"
#include "edgc/core/error.hpp"
#include "edgc/results/sweep_lines.hpp"

namespace edgc::results {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// The figures of a run that get a 95 % half-width when a point is repeated, in column order: name, the figure,
// its half-width.
struct CiField {
  const char* name;
  double RunFigures::*figure;
  double SweepRun::*ci;
};
constexpr CiField kCiFields[] = {{"iteration_time_s", &RunFigures::iteration_time_s, &SweepRun::iteration_time_s_ci95},
                                 {"comm_latency_s", &RunFigures::comm_latency_s, &SweepRun::comm_latency_s_ci95},
                                 {"training_time_s", &RunFigures::training_time_s, &SweepRun::training_time_s_ci95},
                                 {"speedup_vs_none", &RunFigures::speedup_vs_none, &SweepRun::speedup_vs_none_ci95},
                                 {"cost_usd", &RunFigures::cost_usd, &SweepRun::cost_usd_ci95}};

// Every averaged figure, in column order.
constexpr std::pair<const char*, double RunFigures::*> kFigures[] = {
    {"iteration_time_s", &RunFigures::iteration_time_s},
    {"comm_latency_s", &RunFigures::comm_latency_s},
    {"training_time_s", &RunFigures::training_time_s},
    {"speedup_vs_none", &RunFigures::speedup_vs_none},
    {"comm_latency_reduction_vs_none", &RunFigures::comm_latency_reduction_vs_none},
    {"training_time_reduction_vs_none", &RunFigures::training_time_reduction_vs_none},
    {"gpu_hours", &RunFigures::gpu_hours},
    {"cost_usd", &RunFigures::cost_usd},
    {"gradient_error", &RunFigures::gradient_error},
    {"cqm_error", &RunFigures::cqm_error}};

// Two-sided 95 % Student-t quantile for `dof` degrees of freedom.
double t95(int dof) {
  static const double table[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                 2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                 2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (dof < 1) return 0.0;
  if (dof <= 30) return table[dof - 1];
  return 1.960 + 2.5 / dof;  // within 0.002 of the exact quantile beyond 30
}

ordered_json optional_int(const std::optional<std::int64_t>& v) { return v ? ordered_json(*v) : ordered_json(nullptr); }

ordered_json run_json(const SweepRun& r) {
  ordered_json j;
  write_figures(r, j);
  j["warmup_end_iteration"] = optional_int(r.warmup_end_iteration);
  j["compressed_iterations"] = optional_int(r.compressed_iterations);
  for (const CiField& c : kCiFields)
    if (std::isfinite(r.*c.ci)) j[std::string(c.name) + "_ci95"] = r.*c.ci;
  return j;
}

SweepRun read_run(const JsonNode& r) {
  SweepRun run;
  read_figures(r, false, run);
  if (const auto w = r.find("warmup_end_iteration")) run.warmup_end_iteration = w->integer();
  if (const auto c = r.find("compressed_iterations")) run.compressed_iterations = c->integer(0);
  for (const CiField& c : kCiFields) run.*c.ci = r.optional_number(std::string(c.name) + "_ci95");
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
  j["repeats"] = r.repeats;
  j["simulations"] = r.simulations;
  j["runs"] = ordered_json::array();
  for (const SweepRun& run : r.runs) j["runs"].push_back(run_json(run));
  if (std::isfinite(r.wall_s)) j["wall_s"] = r.wall_s;
  return j;
}

SweepRecord parse_sweep_record(const JsonNode& line) {
  SweepRecord out;
  out.point = line.at("point").integer();
  const JsonNode params = line.at("params");
  for (const std::string& key : params.member_keys()) out.params[key] = params.at(key).raw();
  if (const auto e = line.find("error")) {
    out.error = e->string();
    if (out.error.empty()) out.error = "failed (no message)";
    return out;
  }
  out.gpus = line.optional_integer("gpus");
  out.gpu = line.optional_string("gpu");
  if (const auto r = line.find("repeats")) out.repeats = r->integer(1);
  out.simulations = line.optional_integer("simulations");
  out.wall_s = line.optional_number("wall_s");
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
  const std::size_t n = reps.size();
  for (std::size_t i = 0; i < reps.front().runs.size(); ++i) {
    const ResultRun& first = reps.front().runs[i];
    SweepRun r;
    r.policy = first.policy;
    for (const auto& [name, field] : kFigures) {
      double sum = 0.0;
      for (const ResultDocument& rep : reps) sum += rep.runs.at(i).*field;
      r.*field = sum / static_cast<double>(n);
    }
    r.warmup_end_iteration = first.warmup_end_iteration;
    r.compressed_iterations = first.compressed_iterations;
    if (n > 1) {
      for (const CiField& c : kCiFields) {
        const double mean = r.*c.figure;
        double ss = 0.0;
        for (const ResultDocument& rep : reps) {
          const double d = rep.runs.at(i).*c.figure - mean;
          ss += d * d;
        }
        const double sd = std::sqrt(ss / static_cast<double>(n - 1));
        r.*c.ci = t95(static_cast<int>(n - 1)) * sd / std::sqrt(static_cast<double>(n));
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::string> run_figure_names(bool with_ci) {
  std::vector<std::string> names;
  for (const auto& [name, field] : kFigures) names.emplace_back(name);
  if (with_ci)
    for (const CiField& c : kCiFields) names.push_back(std::string(c.name) + "_ci95");
  names.emplace_back("warmup_end_iteration");
  names.emplace_back("compressed_iterations");
  return names;
}

std::optional<double> run_figure(const SweepRun& run, const std::string& name) {
  for (const auto& [n, field] : kFigures)
    if (name == n) return run.*field;
  for (const CiField& c : kCiFields)
    if (name == std::string(c.name) + "_ci95") return run.*c.ci;
  if (name == "warmup_end_iteration" && run.warmup_end_iteration) return static_cast<double>(*run.warmup_end_iteration);
  if (name == "compressed_iterations" && run.compressed_iterations)
    return static_cast<double>(*run.compressed_iterations);
  return std::nullopt;
}

// ---- sweep.json ----

ordered_json to_json(const SweepDocument& d) {
  ordered_json axes = ordered_json::array();
  for (const SweepDocument::Axis& a : d.axes) {
    ordered_json axis = {{"key", a.key}, {"values", a.values}};
    if (a.range) axis["range"] = {a.range->first, a.range->second};
    axes.push_back(std::move(axis));
  }
  return {{"schema", kSweepSchema}, {"spec_file", d.spec_file},
          {"base", d.base},         {"description", d.description},
          {"mode", d.mode},         {"axes", axes},
          {"points", d.points},     {"repeats", d.repeats},
          {"policies", d.policies}, {"spec", d.spec}};
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
  std::vector<std::string> fields = run_figure_names(with_ci);
  fields.resize(fields.size() - 2);  // the iteration counts are not averaged: not in the summary
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

}  // namespace edgc::results
