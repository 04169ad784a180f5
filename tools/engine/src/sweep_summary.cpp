// What a sweep keeps of each point and how it shows them: repeats averaged with a 95 % confidence half-width,
// summary.csv, the best-points table.
#include "sweep_summary.hpp"

#include <algorithm>
#include <cmath>

#include "edgc/core/atomic_file.hpp"
#include "edgc/core/error.hpp"
#include "edgc/results/sweep_lines.hpp"
#include "edgc/results/table.hpp"

namespace edgc::engine {

using nlohmann::json;
using nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

// The per-run figures a sweep keeps (result.json has far more).
const std::vector<std::string> kRunFields = {"iteration_time_s",
                                             "comm_latency_s",
                                             "training_time_s",
                                             "speedup_vs_none",
                                             "comm_latency_reduction_vs_none",
                                             "training_time_reduction_vs_none",
                                             "gpu_hours",
                                             "cost_usd"};
// Fields that get a 95 % confidence half-width when a point is repeated.
const std::vector<std::string> kCiFields = {"iteration_time_s", "comm_latency_s", "training_time_s", "speedup_vs_none",
                                            "cost_usd"};

// Two-sided 95 % Student-t quantile for `dof` degrees of freedom.
double t95(int dof) {
  static const double table[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                 2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                 2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (dof < 1) return 0.0;
  if (dof <= 30) return table[dof - 1];
  return 1.960 + 2.5 / dof;  // within 0.002 of the exact quantile beyond 30
}

}  // namespace

ordered_json aggregate_runs(const std::vector<ordered_json>& reps) {
  ordered_json runs = ordered_json::array();
  const std::size_t n = reps.size();
  for (std::size_t i = 0; i < reps.front().at("runs").size(); ++i) {
    const ordered_json& first = reps.front()["runs"][i];
    ordered_json r = {{"policy", first.at("policy")}};
    for (const std::string& f : kRunFields) {
      double sum = 0.0;
      for (const ordered_json& rep : reps) sum += rep["runs"][i].at(f).get<double>();
      r[f] = sum / static_cast<double>(n);
    }
    r["warmup_end_iteration"] = first.at("warmup_end_iteration");
    r["compressed_iterations"] = first.at("compressed_iterations");
    if (n > 1) {
      for (const std::string& f : kCiFields) {
        const double mean = r[f].get<double>();
        double ss = 0.0;
        for (const ordered_json& rep : reps) {
          const double d = rep["runs"][i].at(f).get<double>() - mean;
          ss += d * d;
        }
        const double sd = std::sqrt(ss / static_cast<double>(n - 1));
        r[f + "_ci95"] = t95(static_cast<int>(n - 1)) * sd / std::sqrt(static_cast<double>(n));
      }
    }
    runs.push_back(std::move(r));
  }
  return runs;
}

void write_summary(const fs::path& dir, const scenario::SweepSpec& spec, const std::vector<json>& lines) {
  std::vector<std::string> policies;
  for (const json& l : lines)
    if (l.contains("runs"))
      for (const json& r : l["runs"])
        if (std::find(policies.begin(), policies.end(), r["policy"].get<std::string>()) == policies.end())
          policies.push_back(r["policy"].get<std::string>());
  std::vector<std::string> fields = kRunFields;
  if (spec.repeats > 1)
    for (const std::string& f : kCiFields) fields.push_back(f + "_ci95");
  std::ostringstream os;
  os << "point";
  for (const scenario::SweepAxis& a : spec.axes) os << ',' << results::csv_cell(a.key);
  os << ",gpus,gpu";
  for (const std::string& p : policies)
    for (const std::string& f : fields) os << ',' << p << '.' << f;
  os << ",error\n";
  for (const json& l : lines) {
    os << l["point"].get<std::int64_t>();
    for (const scenario::SweepAxis& a : spec.axes) os << ',' << results::csv_cell(l["params"].value(a.key, json()));
    os << ',' << results::csv_cell(l.value("gpus", json())) << ',' << results::csv_cell(l.value("gpu", json()));
    for (const std::string& p : policies) {
      const json* run = nullptr;
      if (l.contains("runs"))
        for (const json& r : l["runs"])
          if (r["policy"] == p) run = &r;
      for (const std::string& f : fields) os << ',' << (run != nullptr ? results::csv_cell(run->value(f, json())) : "");
    }
    os << ',' << results::csv_cell(l.value("error", json())) << '\n';
  }
  write_file_atomic(dir / "summary.csv", os.str());
}

// The ten best points for the last compared policy, by `field` (times and cost ascending, others descending).
void print_best(std::ostream& os, const scenario::SweepSpec& spec, const std::vector<json>& lines,
                const std::string& field) {
  struct Row {
    double key;
    const json* line;
    const json* run;
  };
  std::vector<Row> rows;
  for (const json& l : lines) {
    if (!l.contains("runs") || l["runs"].empty()) continue;
    const json& run = l["runs"].back();
    if (!run.contains(field)) throw UsageError("--best-by", "'" + field + "' is not a run field of results.jsonl");
    rows.push_back({run[field].get<double>(), &l, &run});
  }
  if (rows.empty()) return;
  const bool ascending =
      field.size() > 2 && (field.rfind("_s") == field.size() - 2 || field == "cost_usd" || field == "gpu_hours");
  std::stable_sort(rows.begin(), rows.end(),
                   [ascending](const Row& a, const Row& b) { return ascending ? a.key < b.key : a.key > b.key; });
  const std::string policy = rows.front().run->at("policy").get<std::string>();
  os << "best points for policy " << policy << " by " << field << (ascending ? " (lowest first)" : " (highest first)")
     << "\n";
  std::vector<std::string> head = {"point"};
  for (const scenario::SweepAxis& a : spec.axes) head.push_back(a.key);
  for (const char* h : {"iter s", "comm -%", "train h", "speedup", "cost $"}) head.emplace_back(h);
  results::Table t(head);
  for (std::size_t i = 0; i < std::min<std::size_t>(10, rows.size()); ++i) {
    const json& l = *rows[i].line;
    const json& r = *rows[i].run;
    std::vector<std::string> cells = {std::to_string(l["point"].get<std::int64_t>())};
    for (const scenario::SweepAxis& a : spec.axes) {
      const json v = l["params"].value(a.key, json());
      cells.push_back(v.is_string()         ? v.get<std::string>()
                      : v.is_number_float() ? results::fmt_g(v.get<double>(), 4)
                                            : v.dump());
    }
    cells.push_back(results::fmt_f(r["iteration_time_s"].get<double>(), 4));
    cells.push_back(results::fmt_f(100.0 * r["comm_latency_reduction_vs_none"].get<double>(), 2));
    cells.push_back(results::fmt_f(r["training_time_s"].get<double>() / 3600.0, 2));
    cells.push_back(results::fmt_f(r["speedup_vs_none"].get<double>(), 4));
    cells.push_back(results::fmt_f(r["cost_usd"].get<double>(), 0));
    t.add_row(cells);
  }
  t.print(os);
}

}  // namespace edgc::engine
