#pragma once
// The calibration file `edgc calibrate` writes (schema edgc.calibration/1) and its console tables: the calibrated
// network profile fitted to nccl-tests all_reduce_perf logs, with each log's round trip (its all-reduces simulated
// with the fitted profile beside the measured times). The engine (edgc/engine/calibration.hpp) fills the report;
// the writers below only lay it out.
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace edgc::results {

inline constexpr const char* kCalibrationSchema = "edgc.calibration/1";

/// One all-reduce of a log: measured, simulated with the fitted profile, and the relative error.
struct CalibrationTripRow {
  double bytes = 0.0;         ///< message size, bytes
  double measured_us = 0.0;   ///< the log's time, microseconds
  double simulated_us = 0.0;  ///< microseconds
  double error = 0.0;         ///< simulated / measured − 1 (a fraction, not percent)
  std::string algorithm;      ///< the all-reduce algorithm the simulator ran: "ring" | "tree"
};

/// One link class's efficiency curve: fitted to a log, or the line rate where no log was given.
struct CalibrationCurve {
  std::string kind;       ///< "intra" (all ranks on one node) | "inter"
  bool from_log = false;  ///< false: no log for this class (efficiency 1, latency factor 1; the fields below unused)
  /// (bytes of one transfer as the simulator runs it, efficiency in (0, 1]), sorted by bytes.
  std::vector<std::pair<double, double>> points;
  double latency_factor = 1.0;                 ///< multiplies the cluster's route latency
  int ranks = 0;                               ///< ranks of the log
  double busbw_ceiling_GBps = 0.0;             ///< the hardware's bus bandwidth the efficiencies refer to, GB/s
  std::string source;                          ///< the log's path
  std::vector<CalibrationTripRow> round_trip;  ///< one row per row of the log
};

struct CalibrationReport {
  std::string cluster;    ///< the cluster file's name
  std::string algorithm;  ///< the all-reduce algorithm the fit simulated: "auto" | "ring" | "tree"
  /// The curves as written: those fitted to logs in the order the logs were given, then the classes without one
  /// (intra before inter).
  std::vector<CalibrationCurve> curves;
  int logs = 0;           ///< logs read
  int skipped_lines = 0;  ///< NCCL INFO/WARN lines skipped in them
};

/// The calibration file (schema edgc.calibration/1), keys in the order written.
nlohmann::ordered_json to_json(const CalibrationReport& report);

/// Per log: a heading (its ranks, curve and largest |error|) and the round-trip table.
void print_calibration_report(std::ostream& os, const CalibrationReport& report);

/// The closing line: "wrote PATH (N logs; skipped K NCCL INFO/WARN lines)".
void print_calibration_written(std::ostream& os, const CalibrationReport& report, const std::string& path);

}  // namespace edgc::results
