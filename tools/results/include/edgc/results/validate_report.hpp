#pragma once
// validate.json (schema edgc.validate/1) and `edgc validate`'s console tables: a live run's measurements replayed on
// the simulated cluster, and the prediction error per collective, stage sync, iteration and compression compute.
// The engine (edgc/engine/validation.hpp) fills the report; the writers below only lay it out. All times are
// seconds, errors percent; NaN is a figure that does not exist (written null in JSON, "-" on the console).
//
// Errors are absolute percentage errors against the measurement, |predicted − measured| / measured · 100; a
// measured 0 is counted but has no percentage.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "edgc/results/measurements.hpp"

namespace edgc::results {

inline constexpr const char* kValidateSchema = "edgc.validate/1";

/// One row of the report: category "collective" | "sync" | "iteration" | "compute" | "calibration"; policy empty
/// and stage −1 where the row is not per policy or per stage (overall rows).
struct ValidateRow {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  std::string category;
  std::string policy;
  int stage = -1;
  std::string kind;  ///< collective rows: "P" | "Q" | "dense"; else empty
  std::int64_t count = 0;
  double median_measured_s = kNaN;
  double p10_measured_s = kNaN;
  double p90_measured_s = kNaN;
  double mean_measured_s = kNaN;
  double mean_predicted_s = kNaN;
  double error_pct = kNaN;    ///< of the typical step: per step pattern, |predicted − median measured| / median
  double mape_pct = kNaN;     ///< per step
  double max_ape_pct = kNaN;  ///< per step
  /// Sync and iteration rows: the mean over steps of predicted − measured of the step's parts (its all-reduces, its
  /// compute, the rest) and the part with the largest |difference| ("collectives" | "compute" | "other"; empty where
  /// every difference is rounding).
  bool has_parts = false;
  double mean_difference_collectives_s = 0.0;
  double mean_difference_compute_s = 0.0;
  double mean_difference_other_s = 0.0;
  std::string dominant;
};

/// A calibration all-reduce: measured, the ring fit (NaN for the probe's in-step rows), simulated.
struct ValidateCalibrationRow {
  std::int64_t bytes = 0;
  double measured_s = 0.0;
  double fit_s = ValidateRow::kNaN;
  double predicted_s = 0.0;
  double ape_pct = ValidateRow::kNaN;
};

/// The dense all-reduces of the live run's calibration, over `ranks` ranks of stage 0.
struct ValidateCalibration {
  int ranks = 0;
  double latency_s = 0.0;                         ///< the ring fit's, per step
  double bandwidth_Bps = 0.0;                     ///< the ring fit's, per link
  std::vector<ValidateCalibrationRow> rows;       ///< the isolated all-reduces
  std::vector<ValidateCalibrationRow> step_rows;  ///< the probe's all-reduces inside steps
  double mape_pct = ValidateRow::kNaN;            ///< over `rows`
  double max_ape_pct = ValidateRow::kNaN;
};

/// A T_com probe point: the measured P + Q + dense all-reduce time beside the simulated one of a step at that rank.
struct ValidateTcomPoint {
  int stage = 0;
  int rank = 0;
  double measured_comm_s = 0.0;
  double fit_comm_s = ValidateRow::kNaN;
  double predicted_comm_s = ValidateRow::kNaN;  ///< NaN when no step ran at this rank
  double ape_pct = ValidateRow::kNaN;
};

/// The simulated figures of one distinct step pattern.
struct ValidatePattern {
  struct Collective {
    std::string kind;  ///< "P" | "Q" | "dense"
    std::int64_t bytes = 0;
    double predicted_s = 0.0;
  };
  struct Stage {
    double sync_s = 0.0;
    double compute_s = 0.0;
    std::int64_t compressed_matrices = 0;
    std::vector<Collective> collectives;
  };
  double iteration_s = 0.0;
  std::vector<Stage> stages;
};

struct ValidateReport {
  // Provenance: what was replayed, on what, priced by what.
  std::string measurements;                      ///< the first measured run's measurements.json
  std::vector<std::string> measured_runs;        ///< every measured run's (pooled when several)
  std::string calibrated_on;                     ///< where the prices come from, in words
  double calibration_drift = ValidateRow::kNaN;  ///< this run's calibration times / the pricing run's (median)
  double within_run_shift = 1.0;                 ///< largest early/late median step ratio (SpeedShift)
  std::vector<std::string> notes;
  std::string cluster_file;
  std::string cluster_name;
  int nodes = 0;
  int gpus_per_node = 0;
  std::string network;  ///< "ideal" | "calibrated"
  double compute_efficiency = 0.0;
  double hbm_efficiency = 0.0;
  bool kernel_profile = false;
  std::string simgrid;
  int world_size = 0;
  int pp = 0;
  int dp = 0;
  std::string comm;          ///< console only: the live run's communicator …
  std::string backend;       ///< … and kernels
  std::size_t policies = 0;  ///< console only: measured policies
  std::size_t steps = 0;
  std::size_t distinct_patterns = 0;

  std::vector<ValidateRow> rows;     ///< per policy: collective (stage, kind), sync (stage), iteration, compute (stage)
  std::vector<ValidateRow> overall;  ///< one per category, over all policies and stages
  ValidateCalibration calibration;
  std::vector<ValidateTcomPoint> tcom_points;
  std::vector<TcomFit> tcom_fit;
  std::vector<ValidatePattern> patterns;                  ///< one per distinct step pattern
  std::vector<std::vector<std::size_t>> pattern_of_step;  ///< [run][step] → index into `patterns`
  std::string verdict;                                    ///< whether the overall rows are within their targets
};

/// validate.json: schema, provenance, rows, overall, calibration, tcom, patterns, pattern_of_step, verdict.
nlohmann::ordered_json to_json(const ValidateReport& report);

/// The console output: what was simulated on what, the notes, the tables and the verdict.
void print_validate_report(std::ostream& os, const ValidateReport& report);

}  // namespace edgc::results
