// The section of a capacity plan: every option's training time against its cost and against its gradient error,
// the Pareto front of options that no other option beats on all three, the planner's verdicts, and the options
// ranked by training time.
#include <algorithm>
#include <cmath>

#include "edgc/report/charts.hpp"
#include "edgc/report/sections.hpp"
#include "edgc/report/svg.hpp"

namespace edgc::report {
namespace {

constexpr std::size_t kListedInfeasible = 8;

std::string count_or_dash(std::int64_t v) { return v > 0 ? std::to_string(v) : "\xE2\x80\x93"; }

// Options are distinct clusters and layouts, not samples of a continuum: points, never joined. The front is
// labelled where labels fit, else by the option's row in the table below.
ScatterChart options_chart(const std::vector<const PlanOption*>& ranked, const std::string& title,
                           const std::string& y_label, double PlanOption::*field, double scale) {
  ScatterChart c;
  c.title = title;
  c.x_label = "training time (h)";
  c.y_label = y_label;
  c.groups = {{"Pareto front (time, cost, error)", "#e15759", 6.0, true, false},
              {"dominated option", "#8c9aa8", 4.5, false, false}};
  c.width = 760;
  c.height = 440;
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const PlanOption& o = *ranked[i];
    c.points.push_back(
        {o.training_time_s / 3600.0, o.*field * scale, o.label, o.pareto ? 0u : 1u, "#" + std::to_string(i + 1)});
  }
  return c;
}

}  // namespace

Section plan_section(const Plan& plan, const std::string& source) {
  const auto on_front =
      std::count_if(plan.options.begin(), plan.options.end(), [](const PlanOption& o) { return o.pareto; });
  std::string summary = plan.target.empty() ? "" : "Target: " + plan.target + ". ";
  summary += std::to_string(plan.options.size()) + (plan.options.size() == 1 ? " option, " : " options, ") +
             std::to_string(on_front) +
             " on the Pareto front (no other option is at least as fast, as cheap and as accurate, and better in "
             "one).";
  if (plan.max_error)
    summary += " Gradient-error budget: " + fmt_percent(*plan.max_error) + "; options above it are left out.";
  Section s{"plan", "Capacity plan", source, summary, {}};
  if (!plan.verdicts.empty()) s.blocks.emplace_back(ListBlock{"Verdicts", plan.verdicts});

  std::vector<const PlanOption*> ranked;
  for (const PlanOption& o : plan.options) ranked.push_back(&o);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const PlanOption* a, const PlanOption* b) { return a->training_time_s < b->training_time_s; });
  if (plan.options.empty()) {
    s.blocks.emplace_back(Note{"plan.json lists no options."});
  } else {
    FigureGroup group;
    const ScatterChart cost = options_chart(ranked, "Training time vs cost", "cost (USD)", &PlanOption::cost_usd, 1.0);
    group.figures.push_back({"plan-time-cost", render(cost, "plan-time-cost"),
                             "Each point is one cluster, layout and policy. Axes are logarithmic where values span a "
                             "decade or more. Front points are labelled where a label fits, else by their row (#) in "
                             "the table; hover a point for its name."});
    const bool any_error =
        std::any_of(ranked.begin(), ranked.end(), [](const PlanOption* o) { return std::isfinite(o->gradient_error); });
    if (any_error) {
      ScatterChart err = options_chart(ranked, "Training time vs gradient error", "gradient error (%)",
                                       &PlanOption::gradient_error, 100.0);
      if (plan.max_error) err.thresholds.push_back({*plan.max_error * 100.0, "budget"});
      group.figures.push_back({"plan-time-error", render(err, "plan-time-error"),
                               "The price of the speed: relative error of the compressed averaged gradient (measured "
                               "on the trace, else the CQM's prediction; 0 without compression)."});
    }
    s.blocks.emplace_back(std::move(group));
  }

  if (!ranked.empty()) {
    TableBlock t{"Options by training time",
                 {"#", "option", "GPU", "GPUs", "TP", "PP", "DP", "policy", "training time (h)", "cost (USD)",
                  "speedup vs none (\xC3\x97)", "gradient error", "Pareto"},
                 {}};
    for (std::size_t i = 0; i < ranked.size(); ++i) {
      const PlanOption& o = *ranked[i];
      t.rows.push_back({std::to_string(i + 1), o.label, o.gpu.empty() ? "\xE2\x80\x93" : o.gpu, count_or_dash(o.gpus),
                        count_or_dash(o.tp), count_or_dash(o.pp), count_or_dash(o.dp),
                        o.policy.empty() ? "\xE2\x80\x93" : o.policy, fmt_compact(o.training_time_s / 3600.0, 4),
                        fmt_compact(o.cost_usd, 4), fmt_compact(o.speedup_vs_none, 4), fmt_percent(o.gradient_error),
                        o.pareto ? "yes" : ""});
    }
    s.blocks.emplace_back(std::move(t));
  }
  if (!plan.infeasible.empty()) {
    ListBlock l{std::to_string(plan.infeasible.size()) + " left out", {}};
    for (std::size_t i = 0; i < plan.infeasible.size() && i < kListedInfeasible; ++i)
      l.items.push_back(plan.infeasible[i]);
    if (plan.infeasible.size() > kListedInfeasible)
      l.items.push_back("and " + std::to_string(plan.infeasible.size() - kListedInfeasible) + " more (see plan.json)");
    s.blocks.emplace_back(std::move(l));
  }
  return s;
}

}  // namespace edgc::report
