// The section of a sweep: training time against gradient error over every point (the trade-off, with its Pareto
// front), how speedup, communication-latency reduction and gradient error vary over two swept parameters
// (heatmaps; a line chart when only one parameter varies) and which differences exceed the model's noise, the best
// points and the failed ones.
#include <algorithm>
#include <cmath>
#include <optional>

#include "edgc/core/error.hpp"
#include "edgc/core/policy_registry.hpp"
#include "edgc/report/charts.hpp"
#include "edgc/report/plot.hpp"
#include "edgc/report/sections.hpp"
#include "edgc/report/svg.hpp"

namespace edgc::report {
namespace {

constexpr std::size_t kMaxExactNumbers = 12;  // more distinct numbers than this (random sweeps) are binned
constexpr std::size_t kBestPoints = 10;
constexpr std::size_t kListedFailures = 5;

// How one sweep axis is laid out on a chart: its categories, in order, and the category of a parameter value.
// The values listed in sweep.json when every point uses one of them (grid sweeps); otherwise the distinct values
// the points used, sorted, and binned on a 1-2-5 grid when there are many numbers (random sweeps).
class AxisLayout {
 public:
  AxisLayout(const LabelledAxis& axis, const std::vector<LabelledPoint>& points) : key_(axis.key) {
    std::vector<ParamValue> seen;
    for (const LabelledPoint& p : points)
      if (const ParamValue* v = p.param(key_); v && std::find(seen.begin(), seen.end(), *v) == seen.end())
        seen.push_back(*v);
    const bool listed = !axis.values.empty() && std::all_of(seen.begin(), seen.end(), [&](const ParamValue& v) {
      return std::find(axis.values.begin(), axis.values.end(), v) != axis.values.end();
    });
    if (listed) {
      exact_ = axis.values;
    } else {
      const bool all_numbers = std::all_of(seen.begin(), seen.end(), [](const ParamValue& v) { return v.number; });
      std::sort(seen.begin(), seen.end(), [&](const ParamValue& a, const ParamValue& b) {
        return all_numbers ? *a.number < *b.number : a.label < b.label;
      });
      exact_ = seen;
    }
    const bool all_numbers =
        std::all_of(exact_.begin(), exact_.end(), [](const ParamValue& v) { return v.number.has_value(); });
    if (all_numbers && exact_.size() > kMaxExactNumbers) {
      double lo = *exact_.front().number;
      double hi = lo;
      for (const ParamValue& v : exact_) {
        lo = std::min(lo, *v.number);
        hi = std::max(hi, *v.number);
      }
      const Ticks t = nice_ticks(lo, hi, 8);
      edges_ = t.values;
      exact_.clear();
      for (std::size_t i = 0; i + 1 < edges_.size(); ++i)
        labels_.push_back(t.label(edges_[i]) + "\xE2\x80\x93" + t.label(edges_[i + 1]));
      return;
    }
    for (const ParamValue& v : exact_) labels_.push_back(v.label);
  }

  const std::string& key() const { return key_; }
  const std::vector<std::string>& labels() const { return labels_; }
  bool varies() const { return labels_.size() > 1; }
  bool binned() const { return !edges_.empty(); }
  /// Exact numeric categories can go on a numeric axis.
  bool numeric() const {
    return edges_.empty() && std::all_of(exact_.begin(), exact_.end(), [](const ParamValue& v) { return v.number; });
  }
  double number(std::size_t i) const { return *exact_[i].number; }

  std::optional<std::size_t> index(const LabelledPoint& p) const {
    const ParamValue* v = p.param(key_);
    if (v == nullptr) return std::nullopt;
    if (!edges_.empty()) {
      if (!v->number) return std::nullopt;
      const auto it = std::upper_bound(edges_.begin(), edges_.end(), *v->number);
      const auto bin = static_cast<std::size_t>(std::max<std::ptrdiff_t>(0, it - edges_.begin() - 1));
      return std::min(bin, edges_.size() - 2);
    }
    const auto it = std::find(exact_.begin(), exact_.end(), *v);
    if (it == exact_.end()) return std::nullopt;
    return static_cast<std::size_t>(it - exact_.begin());
  }

 private:
  std::string key_;
  std::vector<ParamValue> exact_;
  std::vector<double> edges_;
  std::vector<std::string> labels_;
};

const SweepRun* run_of(const LabelledPoint& p, const std::string& policy) {
  for (const SweepRun& r : p.runs)
    if (r.policy == policy) return &r;
  return nullptr;
}

// Half-width of a figure's run-to-run noise at a point, in the figure's own units before Metric::scale: the 95 %
// interval over the point's repeats; NaN when the point ran once (not measured).
using NoiseOf = double (*)(const LabelledPoint&, const SweepRun&);
double speedup_noise(const LabelledPoint&, const SweepRun& r) { return r.speedup_vs_none_ci95; }
// The reduction 1 − c / c_none moves by ci(c) / c_none: the repeats of a point use the same seeds for every policy,
// so the baseline's own spread is left out.
double comm_reduction_noise(const LabelledPoint& p, const SweepRun& r) {
  const SweepRun* none = run_of(p, std::string(core::baseline_policy().name));
  if (none == nullptr || !(none->comm_latency_s > 0.0)) return kNoValue;
  return r.comm_latency_s_ci95 / none->comm_latency_s;
}

struct Metric {
  const char* stem;
  const char* title;
  const char* value_label;
  const char* suffix;
  double scale;
  double SweepRun::*field;
  NoiseOf noise;  ///< nullptr: the figure is exact (a deterministic replay), whatever the repeats
};
const Metric kMetrics[] = {
    {"speedup", "Speedup vs none", "speedup vs none (\xC3\x97)", "\xC3\x97", 1.0, &SweepRun::speedup_vs_none,
     &speedup_noise},
    {"comm-reduction", "Comm-latency reduction vs none", "comm latency reduction (%)", "%", 100.0,
     &SweepRun::comm_latency_reduction_vs_none, &comm_reduction_noise},
    {"gradient-error", "Gradient error", "gradient error (%)", "%", 100.0, &SweepRun::gradient_error, nullptr}};

// The compressing policies, in the order sweep.json lists them, then any others the results hold.
std::vector<std::string> compared_policies(const Sweep& s) {
  std::vector<std::string> out;
  const auto add = [&](const std::string& p) {
    if (!core::is_baseline_policy(p) && std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  };
  for (const std::string& p : s.policies) add(p);
  for (const LabelledPoint& p : s.points)
    for (const SweepRun& r : p.runs) add(r.policy);
  return out;
}

// Mean of the metric per (x, y) cell over the finished points, row-major; NaN where no point landed.
struct CellMeans {
  std::vector<double> values;
  int most_points = 0;  ///< in one cell
  /// The widest noise half-width over the points (scaled like the values); NaN when no point measured it.
  double noise = kNoValue;
};

CellMeans cell_means(const Sweep& s, const AxisLayout& x, const AxisLayout* y, const std::string& policy,
                     const Metric& m) {
  const std::size_t nx = x.labels().size();
  const std::size_t ny = y ? y->labels().size() : 1;
  std::vector<double> sum(nx * ny, 0.0);
  std::vector<int> count(nx * ny, 0);
  double noise_seen = kNoValue;
  for (const LabelledPoint& p : s.points) {
    const SweepRun* r = run_of(p, policy);
    const auto i = x.index(p);
    const auto j = y ? y->index(p) : std::optional<std::size_t>(0);
    if (r == nullptr || !i || !j || !std::isfinite(r->*m.field)) continue;
    sum[*j * nx + *i] += r->*m.field * m.scale;
    ++count[*j * nx + *i];
    const double noise = m.noise ? m.noise(p, *r) * m.scale : 0.0;
    noise_seen = std::fmax(noise_seen, noise);  // fmax skips NaN: the widest noise any point measured
  }
  CellMeans out{std::vector<double>(nx * ny, kNoValue), 0, noise_seen};
  for (std::size_t k = 0; k < sum.size(); ++k) {
    if (count[k] > 0) out.values[k] = sum[k] / count[k];
    out.most_points = std::max(out.most_points, count[k]);
  }
  return out;
}

// What a cell (or a point of a line) stands for: which other parameters it averages over.
std::string averaging_caption(const std::vector<AxisLayout>& layouts, const AxisLayout& x, const AxisLayout* y,
                              int most_points) {
  std::string others;
  for (const AxisLayout& a : layouts)
    if (a.varies() && a.key() != x.key() && (y == nullptr || a.key() != y->key()))
      others += (others.empty() ? "" : ", ") + a.key() + " (" + std::to_string(a.labels().size()) +
                (a.binned() ? " bins)" : " values)");
  if (!others.empty()) return "Averaged over the other swept parameters: " + others + ".";
  if (x.binned() || (y != nullptr && y->binned()))
    return "Values are binned; each mark averages the points in its bins.";
  if (most_points > 1) return "Each mark averages the points that share its values.";
  return y ? "One point per value pair." : "One point per value.";
}

// Which differences of a metric mean something: what the sweep knows of the model's run-to-run noise.
std::string noise_caption(const Sweep& s, const Metric& m, double noise) {
  if (m.noise == nullptr)
    return std::string(" ") + m.title +
           " is a deterministic replay of the rank schedule on the trace: its differences are exact for that trace.";
  if (!std::isfinite(noise) && s.repeats > 1)
    return " The results carry no 95 % interval for this figure: its run-to-run noise is not known.";
  if (!std::isfinite(noise))
    return " One run per point: the model's run-to-run noise is not measured. Without a variability section it is "
           "deterministic; with one, set repeats \xE2\x89\xA5 3 to tell differences from noise.";
  const std::string repeats = std::to_string(s.repeats) + " repeats";
  if (noise == 0.0)
    return " The " + repeats +
           " of every point agree exactly (no variability set): the model is deterministic here, so no difference is "
           "noise.";
  return " Differences below \xC2\xB1" + fmt_compact(noise, 3) + m.suffix + " (the widest 95 % interval over " +
         repeats + ") are within the model's run-to-run noise; the colour scale spans at least that band.";
}

Heatmap heatmap(const Metric& m, const std::string& policy, const AxisLayout& x, const AxisLayout& y,
                std::vector<double> values, double noise) {
  Heatmap h;
  h.noise = std::isfinite(noise) ? noise : 0.0;
  h.title = std::string(m.title) + ", " + policy;
  h.x_label = x.key();
  h.y_label = y.key();
  h.value_label = m.value_label;
  h.value_suffix = m.suffix;
  h.x_categories = x.labels();
  h.y_categories = y.labels();
  h.values = std::move(values);
  h.width = std::clamp(230.0 + 60.0 * static_cast<double>(h.x_categories.size()), 480.0, 1100.0);
  h.height = std::clamp(150.0 + 38.0 * static_cast<double>(h.y_categories.size()), 300.0, 720.0);
  return h;
}

// Two axes: one heatmap per metric and compressing policy. One axis: one line chart per metric, a line per policy.
void add_charts(Section& s, const Sweep& sweep, const std::vector<AxisLayout>& layouts, const AxisLayout& x,
                const AxisLayout* y) {
  const std::vector<std::string> policies = compared_policies(sweep);
  if (policies.empty()) {
    s.blocks.emplace_back(Note{"No chart: the results hold no policy to compare with none."});
    return;
  }
  const auto any_value = [](const std::vector<double>& v) {
    return std::any_of(v.begin(), v.end(), [](double d) { return std::isfinite(d); });
  };
  FigureGroup group;
  std::string missing;  // metrics no point reported, said once below the charts
  for (const Metric& m : kMetrics) {
    LineChart line;
    line.title = std::string(m.title) + " over " + x.key();
    line.x_label = x.key();
    line.y_label = m.value_label;
    if (!x.numeric()) {
      line.x_categories = x.labels();
      // Rotated category labels take their room from the plot, not from the chart's height and width.
      const double band = (line.width - 80.0) / static_cast<double>(std::max<std::size_t>(1, x.labels().size()));
      line.height += plot::category_axis_margin(x.labels(), band) - plot::kBottomMargin;
      line.width += plot::category_left_margin(x.labels(), 60.0, line.width - plot::kRightMargin) - 60.0;
    }
    int most_points = 0;
    double noise = kNoValue;
    bool drawn = false;
    for (std::size_t pi = 0; pi < policies.size(); ++pi) {
      const std::string& policy = policies[pi];
      CellMeans means = cell_means(sweep, x, y, policy, m);
      if (!any_value(means.values)) continue;
      drawn = true;
      most_points = std::max(most_points, means.most_points);
      noise = std::fmax(noise, means.noise);
      if (y == nullptr) {
        Series series{policy, {}, std::move(means.values), "", false, false};
        for (std::size_t i = 0; i < series.y.size(); ++i)
          series.x.push_back(x.numeric() ? x.number(i) : static_cast<double>(i));
        line.series.push_back(std::move(series));
        continue;
      }
      const std::string stem = file_stem(policy);
      const std::string name =
          std::string("sweep-") + m.stem + "-" + stem + (stem == policy ? "" : "-" + std::to_string(pi));
      std::string caption = averaging_caption(layouts, x, y, means.most_points);
      if (!std::all_of(means.values.begin(), means.values.end(), [](double v) { return std::isfinite(v); }))
        caption += " Hatched cells: no finished point.";
      caption += noise_caption(sweep, m, means.noise);
      group.figures.push_back(
          {name, render(heatmap(m, policy, x, *y, std::move(means.values), means.noise), name), caption});
    }
    if (!drawn) {
      missing += (missing.empty() ? "" : ", ") + std::string(m.title);
    } else if (y == nullptr) {
      const std::string name = std::string("sweep-") + m.stem;
      group.figures.push_back(
          {name, render(line, name), averaging_caption(layouts, x, y, most_points) + noise_caption(sweep, m, noise)});
    }
  }
  if (!group.figures.empty()) s.blocks.emplace_back(std::move(group));
  if (!missing.empty()) s.blocks.emplace_back(Note{"No chart of " + missing + ": no finished point reports it."});
}

std::string params_label(const LabelledPoint& p) {
  std::string out;
  for (const auto& [key, value] : p.params) {
    const std::size_t dot = key.rfind('.');
    out += (out.empty() ? "" : " ") + (dot == std::string::npos ? key : key.substr(dot + 1)) + "=" + value.label;
  }
  return out;
}

// Every finished point and policy: training time against gradient error, with the points no other beats on both.
void add_time_error(Section& s, const Sweep& sweep) {
  struct Entry {
    const LabelledPoint* point;
    const SweepRun* run;
    double hours;
    double error;  // %
  };
  std::vector<Entry> entries;
  bool any_compressed = false;
  for (const LabelledPoint& p : sweep.points)
    for (const SweepRun& r : p.runs) {
      const double e = results::judged_error(r);
      if (!std::isfinite(e) || !std::isfinite(r.training_time_s)) continue;
      entries.push_back({&p, &r, r.training_time_s / 3600.0, 100.0 * e});
      any_compressed = any_compressed || !core::is_baseline_policy(r.policy);
    }
  if (!any_compressed) {
    s.blocks.emplace_back(
        Note{"No time\xE2\x80\x93"
             "error chart: no point reports a gradient error for a compressing "
             "policy (results written by an older edgc)."});
    return;
  }
  ScatterChart c;
  c.title = "Training time vs gradient error, every point and policy";
  c.x_label = "training time (h)";
  c.y_label = "gradient error (%)";
  c.groups = {{"Pareto front (time, error)", "#e15759", 6.0, true, false},
              {"other point", "#8c9aa8", 4.5, false, false}};
  c.front_staircase = true;
  c.width = 760;
  c.height = 440;
  if (sweep.max_error) c.thresholds.push_back({*sweep.max_error * 100.0, "error budget"});
  for (const Entry& e : entries) {
    const bool dominated = std::any_of(entries.begin(), entries.end(), [&](const Entry& o) {
      return o.hours <= e.hours && o.error <= e.error && (o.hours < e.hours || o.error < e.error);
    });
    // Without compression the compression settings mean nothing: "none" alone says what the point is.
    const bool none = core::is_baseline_policy(e.run->policy);
    c.points.push_back({e.hours, e.error, none ? e.run->policy : e.run->policy + " " + params_label(*e.point),
                        dominated ? 1u : 0u, none ? "" : "p" + std::to_string(e.point->point)});
  }
  s.blocks.emplace_back(FigureGroup{
      {{"sweep-time-error", render(c, "sweep-time-error"),
        "The speed each setting buys and the gradient fidelity it costs: relative error of the compressed averaged "
        "gradient, measured on the trace (else the CQM's prediction; 0 without compression). The staircase bounds "
        "the points no other is both faster and more accurate than; front points are labelled with their policy "
        "and parameters, or p<point> where that does not fit."}}});
}

TableBlock best_points(const Sweep& sweep) {
  std::vector<std::pair<const LabelledPoint*, const SweepRun*>> rows;
  std::size_t over = 0;
  for (const LabelledPoint& p : sweep.points)
    for (const SweepRun& r : p.runs) {
      if (core::is_baseline_policy(r.policy)) continue;
      if (sweep.max_error && !results::over_budget(r, *sweep.max_error).empty()) {
        ++over;
        continue;
      }
      rows.emplace_back(&p, &r);
    }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.second->training_time_s < b.second->training_time_s; });
  if (rows.size() > kBestPoints) rows.resize(kBestPoints);
  TableBlock t;
  t.caption = "The " + std::to_string(rows.size()) + " fastest points by training time";
  if (sweep.max_error)
    t.caption += " within the gradient-error budget of " + fmt_percent(*sweep.max_error) + " (" + std::to_string(over) +
                 " compressing runs over it left out)";
  t.header = {"#", "point"};
  for (const LabelledAxis& a : sweep.axes) t.header.push_back(a.key);
  for (const char* h : {"policy", "training time (h)", "speedup vs none (\xC3\x97)", "comm latency reduction",
                        "cost (USD)", "gradient error", "CQM error"})
    t.header.push_back(h);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& [p, r] = rows[i];
    std::vector<std::string> row{std::to_string(i + 1), std::to_string(p->point)};
    for (const LabelledAxis& a : sweep.axes) {
      const ParamValue* v = p->param(a.key);
      row.push_back(v ? v->label : "\xE2\x80\x93");
    }
    std::string time = fmt_compact(r->training_time_s / 3600.0, 4);
    if (std::isfinite(r->training_time_s_ci95) && sweep.repeats > 1)
      time += " \xC2\xB1 " + fmt_compact(r->training_time_s_ci95 / 3600.0, 2);
    row.insert(row.end(),
               {r->policy, time, fmt_compact(r->speedup_vs_none, 4), fmt_percent(r->comm_latency_reduction_vs_none),
                fmt_compact(r->cost_usd, 4), fmt_percent(r->gradient_error), fmt_percent(r->cqm_error)});
    t.rows.push_back(std::move(row));
  }
  return t;
}

std::string describe(const Sweep& s, std::size_t finished, std::size_t failed) {
  std::string keys;
  for (const LabelledAxis& a : s.axes) keys += (keys.empty() ? "" : " \xC3\x97 ") + a.key;
  std::string out = (s.mode.empty() ? "Sweep" : s.mode + " sweep") + " over " + std::to_string(s.axes.size()) +
                    (s.axes.size() == 1 ? " axis" : " axes") + (keys.empty() ? "" : " (" + keys + ")");
  if (!s.base.empty()) out += " of " + s.base;
  out += ": " + std::to_string(finished) + " points finished";
  if (failed > 0) out += ", " + std::to_string(failed) + " failed";
  if (s.planned_points > 0) out += " of " + std::to_string(s.planned_points) + " planned";
  if (s.repeats > 1) out += ", " + std::to_string(s.repeats) + " repeats per point (\xC2\xB1 is the 95% interval)";
  return out + ".";
}

const AxisLayout* pick_axis(const std::vector<AxisLayout>& layouts, const std::string& key, const char* option,
                            const AxisLayout* other) {
  if (!key.empty()) {
    std::string names;
    for (const AxisLayout& a : layouts) {
      if (a.key() == key) {
        if (other != nullptr && other->key() == key)
          throw UsageError(option, "'" + key + "' is already the other axis");
        return &a;
      }
      names += (names.empty() ? "" : ", ") + a.key();
    }
    throw UsageError(option, "'" + key + "' is not a sweep axis (axes: " + (names.empty() ? "none" : names) + ")");
  }
  for (const AxisLayout& a : layouts)
    if (a.varies() && (other == nullptr || a.key() != other->key())) return &a;
  return nullptr;
}

}  // namespace

Section sweep_section(const Sweep& sweep, const std::string& source, const std::string& x_key,
                      const std::string& y_key) {
  std::vector<AxisLayout> layouts;
  for (const LabelledAxis& a : sweep.axes) layouts.emplace_back(a, sweep.points);
  // Choose before looking at results, so that a bad --x or --y fails even on an empty sweep.
  const AxisLayout* x = nullptr;
  const AxisLayout* y = nullptr;
  if (x_key.empty() && !y_key.empty()) {
    y = pick_axis(layouts, y_key, "--y", nullptr);
    x = pick_axis(layouts, "", "--x", y);
  } else {
    x = pick_axis(layouts, x_key, "--x", nullptr);
    y = pick_axis(layouts, y_key, "--y", x);
  }
  if (x == nullptr) std::swap(x, y);  // only the chosen --y varies: a line chart over it

  std::vector<const LabelledPoint*> failed;
  for (const LabelledPoint& p : sweep.points)
    if (!p.error.empty()) failed.push_back(&p);
  const std::size_t finished = sweep.points.size() - failed.size();
  Section s{"sweep", "Sweep", source, describe(sweep, finished, failed.size()), {}};

  if (!sweep.has_results) s.blocks.emplace_back(Note{"No results.jsonl yet: the sweep has not finished a point."});
  if (sweep.truncated_last_line)
    s.blocks.emplace_back(
        Note{"The last line of results.jsonl is incomplete (the sweep may still be running) and "
             "was left out."});
  if (finished > 0) {
    add_time_error(s, sweep);
    if (x == nullptr)
      s.blocks.emplace_back(Note{"No chart: every point has the same parameters."});
    else
      add_charts(s, sweep, layouts, *x, y);
    s.blocks.emplace_back(best_points(sweep));
  }
  if (!sweep.warnings.empty()) s.blocks.emplace_back(ListBlock{"Warnings (sweep printed them too)", sweep.warnings});
  if (!failed.empty()) {
    ListBlock l{std::to_string(failed.size()) + (failed.size() == 1 ? " point failed" : " points failed"), {}};
    for (std::size_t i = 0; i < failed.size() && i < kListedFailures; ++i) {
      std::string params;
      for (const auto& [k, v] : failed[i]->params) params += (params.empty() ? "" : ", ") + k + "=" + v.label;
      l.items.push_back("point " + std::to_string(failed[i]->point) + " (" + params + "): " + failed[i]->error);
    }
    if (failed.size() > kListedFailures)
      l.items.push_back("and " + std::to_string(failed.size() - kListedFailures) + " more (see results.jsonl)");
    s.blocks.emplace_back(std::move(l));
  }
  return s;
}

}  // namespace edgc::report
