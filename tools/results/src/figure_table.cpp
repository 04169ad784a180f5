#include "edgc/results/figure_table.hpp"

#include <algorithm>
#include <cmath>

#include "edgc/core/error.hpp"
#include "edgc/results/table.hpp"

namespace edgc::results {
namespace {

using nlohmann::ordered_json;

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

const RunFigureSpec* find_run_figure(std::string_view key) {
  for (const RunFigureSpec& f : kRunFigures)
    if (key == f.key) return &f;
  return nullptr;
}

std::string ci95_key(const RunFigureSpec& figure) { return std::string(figure.key) + "_ci95"; }

bool is_figure_key(std::string_view key) { return key == "policy" || find_run_figure(key) != nullptr; }

void write_figures(const RunFigures& f, ordered_json& out) {
  out["policy"] = f.policy;
  for (const RunFigureSpec& s : kRunFigures) {
    const double v = f.*s.member;
    if (s.presence != Presence::kOptional || std::isfinite(v)) out[s.key] = v;
  }
}

void read_figures(const JsonNode& r, bool times_required, RunFigures& f) {
  f.policy = r.at("policy").string();
  // The figures every reader requires first: a line missing several names the one a reader cannot do without.
  for (const RunFigureSpec& s : kRunFigures)
    if (s.presence == Presence::kRequired) f.*s.member = r.number_at(s.key);
  for (const RunFigureSpec& s : kRunFigures) {
    if (s.presence == Presence::kRequired) continue;
    const bool required = s.presence == Presence::kRequiredInResult && times_required;
    f.*s.member = required ? r.number_at(s.key) : r.optional_number(s.key);
  }
}

void write_ci95(const SweepRun& run, ordered_json& out) {
  for (const RunFigureSpec& s : kRunFigures)
    if (s.ci95 != nullptr && std::isfinite(run.*s.ci95)) out[ci95_key(s)] = run.*s.ci95;
}

void read_ci95(const JsonNode& r, SweepRun& run) {
  for (const RunFigureSpec& s : kRunFigures)
    if (s.ci95 != nullptr) run.*s.ci95 = r.optional_number(ci95_key(s));
}

void average_figures(const std::vector<const RunFigures*>& repeats, SweepRun& out) {
  const std::size_t n = repeats.size();
  if (n == 0) throw InternalError("average_figures: no repeats");
  for (const RunFigureSpec& s : kRunFigures) {
    double sum = 0.0;
    for (const RunFigures* rep : repeats) sum += rep->*s.member;
    out.*s.member = sum / static_cast<double>(n);
  }
  if (n < 2) return;
  for (const RunFigureSpec& s : kRunFigures) {
    if (s.ci95 == nullptr) continue;
    const double mean = out.*s.member;
    double ss = 0.0;
    for (const RunFigures* rep : repeats) {
      const double d = rep->*s.member - mean;
      ss += d * d;
    }
    const double sd = std::sqrt(ss / static_cast<double>(n - 1));
    out.*s.ci95 = t95(static_cast<int>(n - 1)) * sd / std::sqrt(static_cast<double>(n));
  }
}

std::vector<std::string> run_figure_names(bool with_ci) {
  std::vector<std::string> names;
  for (const RunFigureSpec& s : kRunFigures) names.emplace_back(s.key);
  if (with_ci)
    for (const RunFigureSpec& s : kRunFigures)
      if (s.ci95 != nullptr) names.push_back(ci95_key(s));
  for (const RunCountSpec& c : kRunCounts) names.emplace_back(c.key);
  return names;
}

std::optional<double> run_figure(const SweepRun& run, const std::string& name) {
  for (const RunFigureSpec& s : kRunFigures)
    if (name == s.key) return run.*s.member;
  for (const RunFigureSpec& s : kRunFigures)
    if (s.ci95 != nullptr && name == ci95_key(s)) return run.*s.ci95;
  for (const RunCountSpec& c : kRunCounts)
    if (name == c.key && run.*c.member) return static_cast<double>(*(run.*c.member));
  return std::nullopt;
}

Better better_of(const std::string& name) {
  if (const RunFigureSpec* f = find_run_figure(name)) return f->better;
  for (const RunFigureSpec& s : kRunFigures)
    if (s.ci95 != nullptr && name == ci95_key(s)) return Better::kNone;
  for (const RunCountSpec& c : kRunCounts)
    if (name == c.key) return c.better;
  throw InternalError("better_of: '" + name + "' is not a run figure");
}

std::vector<std::string> csv_figure_columns(bool with_ci) {
  std::vector<std::string> columns;
  for (const RunFigureSpec& s : kRunFigures)
    if (s.csv) columns.emplace_back(s.key);
  if (with_ci)
    for (const RunFigureSpec& s : kRunFigures)
      if (s.csv && s.ci95 != nullptr) columns.push_back(ci95_key(s));
  return columns;
}

std::vector<const RunFigureSpec*> console_figures() {
  std::vector<const RunFigureSpec*> out;
  for (const RunFigureSpec& s : kRunFigures)
    if (s.console.header != nullptr) out.push_back(&s);
  std::stable_sort(out.begin(), out.end(), [](const RunFigureSpec* a, const RunFigureSpec* b) {
    return a->console.position < b->console.position;
  });
  return out;
}

std::string console_cell(const RunFigureSpec& figure, const RunFigures& run) {
  const double v = run.*figure.member;
  if (!std::isfinite(v)) return "-";
  return fmt_f(v * figure.console.times / figure.console.per, figure.console.decimals);
}

}  // namespace edgc::results
