#include "edgc/results/calibration_report.hpp"

#include <algorithm>
#include <cmath>

#include "edgc/results/table.hpp"

namespace edgc::results {
namespace {

using nlohmann::ordered_json;

ordered_json curve_json(const CalibrationCurve& c) {
  // A class without a log keeps the line rate: one point at 1 byte (written as an integer) with efficiency 1.
  if (!c.from_log) return {{"points", {{1, 1.0}}}, {"latency_factor", 1.0}, {"note", "no log given: line rate"}};
  ordered_json points = ordered_json::array();
  for (const auto& [bytes, efficiency] : c.points) points.push_back({bytes, efficiency});
  ordered_json trip = ordered_json::array();
  for (const CalibrationTripRow& r : c.round_trip)
    trip.push_back({{"bytes", r.bytes},
                    {"measured_us", r.measured_us},
                    {"simulated_us", r.simulated_us},
                    {"error", r.error},
                    {"algorithm", r.algorithm}});
  return {{"points", points},   {"latency_factor", c.latency_factor},
          {"ranks", c.ranks},   {"busbw_ceiling_GBps", c.busbw_ceiling_GBps},
          {"source", c.source}, {"round_trip", trip}};
}

}  // namespace

ordered_json to_json(const CalibrationReport& report) {
  ordered_json j = {{"schema", kCalibrationSchema}, {"cluster", report.cluster}, {"algorithm", report.algorithm}};
  for (const CalibrationCurve& c : report.curves) j[c.kind] = curve_json(c);
  return j;
}

void print_calibration_report(std::ostream& os, const CalibrationReport& report) {
  for (const CalibrationCurve& c : report.curves) {
    if (!c.from_log) continue;
    Table table({"size(B)", "measured(us)", "simulated(us)", "error", "algorithm"});
    double worst = 0;
    for (const CalibrationTripRow& r : c.round_trip) {
      worst = std::max(worst, std::abs(r.error));
      table.add_row({fmt_g(r.bytes, 6), fmt_f(r.measured_us, 2), fmt_f(r.simulated_us, 2),
                     fmt_f(100 * r.error, 1) + " %", r.algorithm});
    }
    os << "# " << c.source << ": " << c.ranks << " ranks, " << c.kind
       << "-node curve; simulated with the fitted profile (largest |error| " << fmt_f(100 * worst, 1) << " %)\n";
    table.print(os);
  }
}

void print_calibration_written(std::ostream& os, const CalibrationReport& report, const std::string& path) {
  os << "wrote " << path << " (" << report.logs << " log" << (report.logs == 1 ? "" : "s");
  if (report.skipped_lines > 0)
    os << "; skipped " << report.skipped_lines << " NCCL INFO/WARN line" << (report.skipped_lines == 1 ? "" : "s");
  os << ")\n";
}

}  // namespace edgc::results
