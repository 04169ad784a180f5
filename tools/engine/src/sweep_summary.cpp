// What a sweep shows of its points: summary.csv, the best-points table.
#include "sweep_summary.hpp"

#include <algorithm>
#include <cmath>

#include "edgc/core/atomic_file.hpp"
#include "edgc/core/error.hpp"
#include "edgc/results/figure_table.hpp"
#include "edgc/results/table.hpp"
#include "edgc/results/verdict.hpp"

namespace edgc::engine {

using nlohmann::ordered_json;
namespace fs = std::filesystem;

void write_summary(const fs::path& dir, const scenario::SweepSpec& spec,
                   const std::vector<results::SweepRecord>& records, std::optional<double> max_error) {
  std::vector<std::string> keys;
  for (const scenario::SweepAxis& a : spec.axes) keys.push_back(a.key);
  write_file_atomic(dir / "summary.csv", results::summary_csv(keys, records, spec.repeats > 1, max_error));
}

namespace {

struct Row {
  double key;
  const results::SweepRecord* line;
  const results::SweepRun* run;
};

// A table of `rows`: the point, its axis values and the run figures the table shows (results::console_figures).
void print_rows(std::ostream& os, const scenario::SweepSpec& spec, const std::vector<Row>& rows) {
  std::vector<std::string> head = {"point"};
  for (const scenario::SweepAxis& a : spec.axes) head.push_back(a.key);
  const std::vector<const results::RunFigureSpec*> figures = results::console_figures();
  for (const results::RunFigureSpec* f : figures) head.emplace_back(f->console.header);
  results::Table t(head);
  for (const Row& row : rows) {
    const results::SweepRecord& l = *row.line;
    const results::SweepRun& r = *row.run;
    std::vector<std::string> cells = {std::to_string(l.point)};
    for (const scenario::SweepAxis& a : spec.axes) {
      const ordered_json v = l.params.value(a.key, ordered_json());
      cells.push_back(v.is_string()         ? v.get<std::string>()
                      : v.is_number_float() ? results::fmt_g(v.get<double>(), 4)
                                            : v.dump());
    }
    for (const results::RunFigureSpec* f : figures) cells.push_back(results::console_cell(*f, r));
    t.add_row(cells);
  }
  t.print(os);
}

// The verdict (results::judge) of `policy` at the point `line`, against the point's own none (and static) runs.
void print_verdict(std::ostream& os, const results::SweepRecord& line, const std::string& policy, double min_saving) {
  std::vector<const results::RunFigures*> runs;
  for (const results::SweepRun& r : line.runs) runs.push_back(&r);
  for (const results::Verdict& v : results::judge_runs(runs, min_saving, line.trace_smaller_by))
    if (v.policy == policy) os << "verdict at point " << line.point << ": " << v.text << "\n";
}

}  // namespace

void print_best(std::ostream& os, const scenario::SweepSpec& spec, const std::vector<results::SweepRecord>& records,
                const std::string& field, std::optional<double> max_error, double min_saving) {
  std::vector<Row> rows;
  std::int64_t over = 0;
  for (const results::SweepRecord& l : records) {
    if (l.runs.empty()) continue;
    const results::SweepRun& run = l.runs.back();
    const std::optional<double> key = results::run_figure(run, field);
    if (!key || std::isnan(*key)) throw UsageError("--best-by", "'" + field + "' is not a run field of results.jsonl");
    if (max_error && !results::over_budget(run, *max_error).empty()) {
      ++over;
      continue;
    }
    rows.push_back({*key, &l, &run});
  }
  if (rows.empty()) {
    if (over > 0)
      os << "no point is within the gradient-error budget of " << results::fmt_f(100.0 * *max_error, 1) << " % ("
         << over << " over it; summary.csv says by how much)\n";
    return;
  }
  const bool ascending = results::better_of(field) == results::Better::kLower;
  std::stable_sort(rows.begin(), rows.end(),
                   [ascending](const Row& a, const Row& b) { return ascending ? a.key < b.key : a.key > b.key; });
  const std::string policy = rows.front().run->policy;
  os << "best points for policy " << policy << " by " << field << (ascending ? " (lowest first)" : " (highest first)");
  if (max_error)
    os << ", within a gradient error of " << results::fmt_f(100.0 * *max_error, 1) << " % (" << over
       << " points over it left out)";
  os << "\n";
  print_rows(os, spec, std::vector<Row>(rows.begin(), rows.begin() + std::min<std::ptrdiff_t>(10, std::ssize(rows))));
  print_verdict(os, *rows.front().line, policy, min_saving);
  // The time–error trade-off: points no other point beats on both training time and gradient error.
  std::vector<Row> front;
  for (const Row& r : rows) {
    const double t = r.run->training_time_s;
    const double e = results::judged_error(*r.run);
    if (!std::isfinite(e)) continue;
    const bool dominated = std::any_of(rows.begin(), rows.end(), [&](const Row& x) {
      const double xe = results::judged_error(*x.run);
      return x.run->training_time_s <= t && xe <= e && (x.run->training_time_s < t || xe < e);
    });
    if (!dominated) front.push_back({t, r.line, r.run});
  }
  std::stable_sort(front.begin(), front.end(), [](const Row& a, const Row& b) { return a.key < b.key; });
  if (front.size() > 1) {
    os << "\ntime-error Pareto front for policy " << policy << " (no other point is both faster and more accurate)\n";
    print_rows(os, spec, front);
  }
}

}  // namespace edgc::engine
