#pragma once
// The saving-versus-value chart of simulate's "bandwidth" section and of `edgc breakeven`'s curve: each policy's
// simulated savings as points, the linear model's curve between them (simulate only) as small rings, the threshold
// as a dashed line; the value axis logarithmic when it spans a decade.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace edgc::report {

struct SavingCurve {
  std::string title;
  std::string x_label;  ///< with its unit, e.g. "NIC bandwidth (GB/s per NIC)"
  double threshold_pct = 0.0;
  std::string threshold_label;
  struct Line {
    std::string policy;
    std::vector<std::pair<double, double>> simulated;  ///< (value, saving %)
    std::vector<std::pair<double, double>> model;      ///< (value, saving %); may be empty
  };
  std::vector<Line> lines;
};

/// One ScatterChart SVG document (charts.hpp; marks: <circle class="mark point">), root element id `id`.
std::string render_saving_curve(const SavingCurve& curve, const std::string& id);

/// The curve of result.json's "bandwidth" section (bandwidth.hpp's layout). Throws nothing: fields it lacks are
/// left out.
SavingCurve bandwidth_saving_curve(const nlohmann::ordered_json& section);

}  // namespace edgc::report
