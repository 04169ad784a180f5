// Saving-versus-value charts (saving_curve.hpp).
#include "edgc/report/saving_curve.hpp"

#include "edgc/report/charts.hpp"
#include "edgc/report/svg.hpp"

namespace edgc::report {
namespace {

const char* const kPalette[] = {"#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#b07aa1", "#76b7b2"};

std::vector<std::pair<double, double>> policy_points(const nlohmann::ordered_json& list, const std::string& policy) {
  std::vector<std::pair<double, double>> out;
  if (!list.is_array()) return out;
  for (const auto& p : list) {
    if (!p.is_object() || !p.contains("value") || !p["value"].is_number() || !p.contains("saving_pct")) continue;
    const auto& s = p["saving_pct"];
    if (s.is_object() && s.contains(policy) && s[policy].is_number())
      out.emplace_back(p["value"].get<double>(), s[policy].get<double>());
  }
  return out;
}

}  // namespace

std::string render_saving_curve(const SavingCurve& c, const std::string& id) {
  ScatterChart chart;
  chart.title = c.title;
  chart.x_label = c.x_label;
  chart.y_label = "training-time saving vs none (%)";
  chart.x_scale = AxisScale::kAuto;
  chart.y_scale = AxisScale::kLinear;
  chart.thresholds.push_back({c.threshold_pct, c.threshold_label});
  for (std::size_t i = 0; i < c.lines.size(); ++i) {
    const SavingCurve::Line& line = c.lines[i];
    const std::string colour = kPalette[i % (sizeof kPalette / sizeof kPalette[0])];
    chart.groups.push_back({line.policy + " (simulated)", colour, 5.0, false, false});
    const std::size_t simulated = chart.groups.size() - 1;
    for (const auto& [x, y] : line.simulated) chart.points.push_back({x, y, line.policy + " (simulated)", simulated});
    if (line.model.empty()) continue;
    chart.groups.push_back({line.policy + " (linear model)", colour, 2.0, false, true});
    for (const auto& [x, y] : line.model)
      chart.points.push_back({x, y, line.policy + " (linear model)", chart.groups.size() - 1});
  }
  return render(chart, id);
}

SavingCurve bandwidth_saving_curve(const nlohmann::ordered_json& b) {
  SavingCurve c;
  c.title = "Training-time saving vs inter-node NIC bandwidth";
  c.x_label = "NIC bandwidth (GB/s per NIC)";
  if (!b.is_object()) return c;
  c.threshold_pct = b.value("target_saving_pct", 0.0);
  c.threshold_label = "pays above " + fmt_compact(c.threshold_pct, 3) + " % (--min-saving)";
  if (b.contains("policies") && b["policies"].is_array())
    for (const auto& p : b["policies"]) {
      if (!p.is_object() || !p.contains("policy") || !p["policy"].is_string()) continue;
      const std::string policy = p["policy"].get<std::string>();
      c.lines.push_back({policy, policy_points(b.value("curve", nlohmann::ordered_json()), policy),
                         policy_points(b.value("model_curve", nlohmann::ordered_json()), policy)});
    }
  return c;
}

}  // namespace edgc::report
