// The section of a capacity plan: every option's training time against its cost, the Pareto front of options
// that no other option beats on both, the planner's verdicts, and the options ranked by training time.
#include <algorithm>
#include <cmath>

#include "edgc/report/charts.hpp"
#include "edgc/report/sections.hpp"
#include "edgc/report/svg.hpp"

namespace edgc::report {
namespace {

std::string count_or_dash(std::int64_t v) { return v > 0 ? std::to_string(v) : "\xE2\x80\x93"; }

}  // namespace

Section plan_section(const Plan& plan, const std::string& source) {
  const auto on_front =
      std::count_if(plan.options.begin(), plan.options.end(), [](const PlanOption& o) { return o.pareto; });
  std::string summary = plan.target.empty() ? "" : "Target: " + plan.target + ". ";
  summary += std::to_string(plan.options.size()) + (plan.options.size() == 1 ? " option, " : " options, ") +
             std::to_string(on_front) + " on the Pareto front (no other option is both faster and cheaper).";
  Section s{"plan", "Capacity plan", source, summary, {}};
  if (plan.options.empty()) {
    s.blocks.emplace_back(Note{"plan.json lists no options."});
  } else {
    ScatterChart c;
    c.title = "Training time vs cost";
    c.x_label = "training time (h)";
    c.y_label = "cost (USD)";
    c.highlight_name = "Pareto front";
    c.other_name = "dominated option";
    c.width = 760;
    c.height = 440;
    for (const PlanOption& o : plan.options)
      c.points.push_back({o.training_time_s / 3600.0, o.cost_usd, o.label, o.pareto});
    s.blocks.emplace_back(FigureGroup{{{"plan-time-cost", render(c, "plan-time-cost"),
                                        "Each point is one cluster, layout and policy; the front joins the options "
                                        "worth considering, labelled; hover a point for its name."}}});
  }
  if (!plan.verdicts.empty()) s.blocks.emplace_back(ListBlock{"Verdicts", plan.verdicts});

  std::vector<const PlanOption*> ranked;
  for (const PlanOption& o : plan.options) ranked.push_back(&o);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const PlanOption* a, const PlanOption* b) { return a->training_time_s < b->training_time_s; });
  if (!ranked.empty()) {
    TableBlock t{"Options by training time",
                 {"#", "option", "GPU", "GPUs", "TP", "PP", "DP", "policy", "training time (h)", "cost (USD)",
                  "speedup vs none (\xC3\x97)", "Pareto"},
                 {}};
    for (std::size_t i = 0; i < ranked.size(); ++i) {
      const PlanOption& o = *ranked[i];
      t.rows.push_back({std::to_string(i + 1), o.label, o.gpu.empty() ? "\xE2\x80\x93" : o.gpu, count_or_dash(o.gpus),
                        count_or_dash(o.tp), count_or_dash(o.pp), count_or_dash(o.dp),
                        o.policy.empty() ? "\xE2\x80\x93" : o.policy, fmt_compact(o.training_time_s / 3600.0, 4),
                        fmt_compact(o.cost_usd, 4), fmt_compact(o.speedup_vs_none, 4), o.pareto ? "yes" : ""});
    }
    s.blocks.emplace_back(std::move(t));
  }
  return s;
}

}  // namespace edgc::report
