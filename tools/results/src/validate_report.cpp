#include "edgc/results/validate_report.hpp"

#include <cmath>
#include <string>

#include "edgc/results/table.hpp"

namespace edgc::results {
namespace {

using nlohmann::ordered_json;

ordered_json number_or_null(double x) { return std::isfinite(x) ? ordered_json(x) : ordered_json(nullptr); }
// The console shows what the JSON holds: a figure JSON writes null is "-".
double finite_or_nan(double x) { return std::isfinite(x) ? x : ValidateRow::kNaN; }

ordered_json row_json(const ValidateRow& r) {
  ordered_json j = {{"category", r.category}};
  if (!r.policy.empty()) j["policy"] = r.policy;
  if (r.stage >= 0) j["stage"] = r.stage;
  if (!r.kind.empty()) j["kind"] = r.kind;
  j["count"] = r.count;
  j["median_measured_s"] = number_or_null(r.median_measured_s);
  j["p10_measured_s"] = number_or_null(r.p10_measured_s);
  j["p90_measured_s"] = number_or_null(r.p90_measured_s);
  j["mean_measured_s"] = number_or_null(r.mean_measured_s);
  j["mean_predicted_s"] = number_or_null(r.mean_predicted_s);
  j["error_pct"] = number_or_null(r.error_pct);
  j["mape_pct"] = number_or_null(r.mape_pct);
  j["max_ape_pct"] = number_or_null(r.max_ape_pct);
  if (r.has_parts) {
    j["mean_difference_s"] = {{"collectives", r.mean_difference_collectives_s},
                              {"compute", r.mean_difference_compute_s},
                              {"other", r.mean_difference_other_s}};
    j["dominant"] = r.dominant;
  }
  return j;
}

ordered_json calibration_json(const ValidateCalibration& cal) {
  ordered_json j = {{"ranks", cal.ranks},
                    {"latency_s", cal.latency_s},
                    {"bandwidth_Bps", cal.bandwidth_Bps},
                    {"rows", ordered_json::array()}};
  for (const ValidateCalibrationRow& r : cal.rows)
    j["rows"].push_back({{"bytes", r.bytes},
                         {"measured_s", r.measured_s},
                         {"fit_s", number_or_null(r.fit_s)},
                         {"predicted_s", r.predicted_s},
                         {"ape_pct", number_or_null(r.ape_pct)}});
  j["step_rows"] = ordered_json::array();
  for (const ValidateCalibrationRow& r : cal.step_rows)
    j["step_rows"].push_back({{"bytes", r.bytes},
                              {"measured_s", r.measured_s},
                              {"predicted_s", r.predicted_s},
                              {"ape_pct", number_or_null(r.ape_pct)}});
  j["mape_pct"] = number_or_null(cal.mape_pct);
  j["max_ape_pct"] = number_or_null(cal.max_ape_pct);
  return j;
}

ordered_json tcom_json(const ValidateReport& report) {
  ordered_json j = {{"points", ordered_json::array()}, {"fit", ordered_json::array()}};
  for (const ValidateTcomPoint& p : report.tcom_points)
    j["points"].push_back({{"stage", p.stage},
                           {"rank", p.rank},
                           {"measured_comm_s", p.measured_comm_s},
                           {"fit_comm_s", number_or_null(p.fit_comm_s)},
                           {"predicted_comm_s", number_or_null(p.predicted_comm_s)},
                           {"ape_pct", number_or_null(p.ape_pct)}});
  for (const TcomFit& f : report.tcom_fit) j["fit"].push_back(to_json(f));
  return j;
}

ordered_json patterns_json(const std::vector<ValidatePattern>& patterns) {
  ordered_json out = ordered_json::array();
  for (const ValidatePattern& p : patterns) {
    ordered_json stages = ordered_json::array();
    for (const ValidatePattern::Stage& s : p.stages) {
      ordered_json colls = ordered_json::array();
      for (const ValidatePattern::Collective& c : s.collectives)
        colls.push_back({{"kind", c.kind}, {"bytes", c.bytes}, {"predicted_s", c.predicted_s}});
      stages.push_back({{"sync_s", s.sync_s},
                        {"compute_s", s.compute_s},
                        {"compressed_matrices", s.compressed_matrices},
                        {"collectives", std::move(colls)}});
    }
    out.push_back({{"iteration_s", p.iteration_s}, {"stages", std::move(stages)}});
  }
  return out;
}

std::string ms(double s) { return fmt_g(s * 1e3, 4); }

// "collectives −0.061 ms": the dominant part of a sync or iteration row and its mean predicted − measured.
std::string dominant_text(const ValidateRow& r) {
  const std::string& d = r.dominant;
  if (d.empty()) return "";
  const double mean = d == "collectives" ? r.mean_difference_collectives_s
                      : d == "compute"   ? r.mean_difference_compute_s
                                         : r.mean_difference_other_s;
  const double mean_ms = mean * 1e3;
  return d + " " + (mean_ms >= 0 ? "+" : "") + fmt_g(mean_ms, 3) + " ms";
}

void print_rows(std::ostream& os, const std::vector<ValidateRow>& rows) {
  Table t({"category", "policy", "stage", "kind", "n", "measured ms", "p10-p90 ms", "predicted ms", "error %",
           "step MAPE %", "dominant difference"});
  for (const ValidateRow& r : rows)
    t.add_row({r.category, r.policy.empty() ? "all" : r.policy, r.stage >= 0 ? std::to_string(r.stage) : "all", r.kind,
               std::to_string(r.count), ms(r.median_measured_s), ms(r.p10_measured_s) + "-" + ms(r.p90_measured_s),
               ms(r.mean_predicted_s), fmt_f(r.error_pct, 2), fmt_f(r.mape_pct, 2), dominant_text(r)});
  t.print(os);
}

void print_calibration(std::ostream& os, const ValidateCalibration& cal) {
  if (!cal.rows.empty()) {
    os << "\ncalibration: dense all-reduce over " << cal.ranks
       << " ranks of stage 0 (fit = the ring alpha-beta fit, a summary; simulated = the cluster file's network, "
          "which prices the run)\n";
    Table t({"bytes", "measured ms", "fit ms", "simulated ms", "APE %"});
    for (const ValidateCalibrationRow& r : cal.rows)
      t.add_row({std::to_string(r.bytes), ms(finite_or_nan(r.measured_s)), ms(finite_or_nan(r.fit_s)),
                 ms(finite_or_nan(r.predicted_s)), fmt_f(finite_or_nan(r.ape_pct), 2)});
    t.print(os);
  }
  if (!cal.step_rows.empty()) {
    os << "\nthe probe's all-reduces inside steps (median per size; the network profile uses these over their size "
          "range)\n";
    Table t({"bytes", "measured ms", "simulated ms", "APE %"});
    for (const ValidateCalibrationRow& r : cal.step_rows)
      t.add_row({std::to_string(r.bytes), ms(finite_or_nan(r.measured_s)), ms(finite_or_nan(r.predicted_s)),
                 fmt_f(finite_or_nan(r.ape_pct), 2)});
    t.print(os);
  }
}

void print_tcom(std::ostream& os, const ValidateReport& report) {
  if (report.tcom_points.empty()) return;
  os << "\nT_com probes: measured P + Q + dense all-reduce time vs the simulated one of a step at the same rank\n";
  Table t({"stage", "rank", "measured ms", "fit ms", "simulated ms", "APE %"});
  for (const ValidateTcomPoint& p : report.tcom_points)
    t.add_row({std::to_string(p.stage), std::to_string(p.rank), ms(finite_or_nan(p.measured_comm_s)),
               ms(finite_or_nan(p.fit_comm_s)), ms(finite_or_nan(p.predicted_comm_s)),
               fmt_f(finite_or_nan(p.ape_pct), 2)});
  t.print(os);
  for (const TcomFit& f : report.tcom_fit)
    os << "  fit stage " << f.stage << ": T_com(r) = " << ms(f.eta_s) << " ms · r + " << ms(f.c_s) << " ms (eta +- "
       << ms(f.eta_stderr_s) << " ms, R² of P + Q " << fmt_f(f.r2, 3) << ", " << f.points << " points)"
       << (f.significant ? "" : ": the slope is noise, not for DAC") << "\n";
}

}  // namespace

ordered_json to_json(const ValidateReport& report) {
  ordered_json j = {
      {"schema", kValidateSchema},
      {"measurements", report.measurements},
      {"measured_runs", report.measured_runs},
      {"calibrated_on", report.calibrated_on},
      {"calibration_drift", number_or_null(report.calibration_drift)},
      {"within_run_shift", report.within_run_shift},
      {"notes", report.notes},
      {"cluster_file", report.cluster_file},
      {"cluster", {{"name", report.cluster_name}, {"nodes", report.nodes}, {"gpus_per_node", report.gpus_per_node}}},
      {"network", report.network},
      {"compute",
       {{"efficiency", report.compute_efficiency},
        {"hbm_efficiency", report.hbm_efficiency},
        {"kernel_profile", report.kernel_profile}}},
      {"simgrid", report.simgrid},
      {"world_size", report.world_size},
      {"pp", report.pp},
      {"dp", report.dp},
      {"steps", report.steps},
      {"distinct_patterns", report.distinct_patterns}};
  j["rows"] = ordered_json::array();
  for (const ValidateRow& r : report.rows) j["rows"].push_back(row_json(r));
  j["overall"] = ordered_json::array();
  for (const ValidateRow& r : report.overall) j["overall"].push_back(row_json(r));
  j["calibration"] = calibration_json(report.calibration);
  j["tcom"] = tcom_json(report);
  j["patterns"] = patterns_json(report.patterns);
  j["pattern_of_step"] = report.pattern_of_step;
  j["verdict"] = report.verdict;
  return j;
}

void print_validate_report(std::ostream& os, const ValidateReport& report) {
  const std::size_t more = report.measured_runs.empty() ? 0 : report.measured_runs.size() - 1;
  os << "validate    " << report.measurements
     << (more > 0 ? " and " + std::to_string(more) + " more run(s), pooled" : std::string()) << ": "
     << report.world_size << " ranks (pp " << report.pp << " x dp " << report.dp << ", " << report.comm << "/"
     << report.backend << "), " << report.policies << " policies, " << report.steps << " steps, "
     << report.distinct_patterns << " distinct step patterns simulated on '" << report.cluster_name << "' ("
     << report.nodes << " x " << report.gpus_per_node << " GPUs, " << report.network << " network), priced by "
     << report.calibrated_on << "\n";
  for (const std::string& n : report.notes) os << "note: " << n << "\n";
  os << "\n";
  os << "error % = |predicted - median measured| / median measured per step pattern, weighted by steps (the model "
        "predicts the typical step; p10-p90 is the measured spread); step MAPE % = the same per step\n";
  print_rows(os, report.rows);
  os << "\noverall\n";
  print_rows(os, report.overall);
  print_calibration(os, report.calibration);
  print_tcom(os, report);
  os << "\nverdict: " << report.verdict << "\n";
}

}  // namespace edgc::results
