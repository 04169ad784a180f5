// What a sweep shows of its points: summary.csv, the best-points table.
#include "sweep_summary.hpp"

#include <algorithm>
#include <cmath>

#include "edgc/core/atomic_file.hpp"
#include "edgc/core/error.hpp"
#include "edgc/results/table.hpp"

namespace edgc::engine {

using nlohmann::ordered_json;
namespace fs = std::filesystem;

void write_summary(const fs::path& dir, const scenario::SweepSpec& spec,
                   const std::vector<results::SweepRecord>& records) {
  std::vector<std::string> keys;
  for (const scenario::SweepAxis& a : spec.axes) keys.push_back(a.key);
  write_file_atomic(dir / "summary.csv", results::summary_csv(keys, records, spec.repeats > 1));
}

// The ten best points for the last compared policy, by `field` (times and cost ascending, others descending).
void print_best(std::ostream& os, const scenario::SweepSpec& spec, const std::vector<results::SweepRecord>& records,
                const std::string& field) {
  struct Row {
    double key;
    const results::SweepRecord* line;
    const results::SweepRun* run;
  };
  std::vector<Row> rows;
  for (const results::SweepRecord& l : records) {
    if (l.runs.empty()) continue;
    const results::SweepRun& run = l.runs.back();
    const std::optional<double> key = results::run_figure(run, field);
    if (!key || std::isnan(*key)) throw UsageError("--best-by", "'" + field + "' is not a run field of results.jsonl");
    rows.push_back({*key, &l, &run});
  }
  if (rows.empty()) return;
  const bool ascending =
      field.size() > 2 && (field.rfind("_s") == field.size() - 2 || field == "cost_usd" || field == "gpu_hours");
  std::stable_sort(rows.begin(), rows.end(),
                   [ascending](const Row& a, const Row& b) { return ascending ? a.key < b.key : a.key > b.key; });
  const std::string policy = rows.front().run->policy;
  os << "best points for policy " << policy << " by " << field << (ascending ? " (lowest first)" : " (highest first)")
     << "\n";
  std::vector<std::string> head = {"point"};
  for (const scenario::SweepAxis& a : spec.axes) head.push_back(a.key);
  for (const char* h : {"iter s", "comm -%", "train h", "speedup", "cost $"}) head.emplace_back(h);
  results::Table t(head);
  for (std::size_t i = 0; i < std::min<std::size_t>(10, rows.size()); ++i) {
    const results::SweepRecord& l = *rows[i].line;
    const results::SweepRun& r = *rows[i].run;
    std::vector<std::string> cells = {std::to_string(l.point)};
    for (const scenario::SweepAxis& a : spec.axes) {
      const ordered_json v = l.params.value(a.key, ordered_json());
      cells.push_back(v.is_string()         ? v.get<std::string>()
                      : v.is_number_float() ? results::fmt_g(v.get<double>(), 4)
                                            : v.dump());
    }
    cells.push_back(results::fmt_f(r.iteration_time_s, 4));
    cells.push_back(results::fmt_f(100.0 * r.comm_latency_reduction_vs_none, 2));
    cells.push_back(results::fmt_f(r.training_time_s / 3600.0, 2));
    cells.push_back(results::fmt_f(r.speedup_vs_none, 4));
    cells.push_back(results::fmt_f(r.cost_usd, 0));
    t.add_row(cells);
  }
  t.print(os);
}

}  // namespace edgc::engine
