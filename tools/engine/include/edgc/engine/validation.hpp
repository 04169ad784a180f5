#pragma once
// One `validate` run as a function: live runs' measurements (+ what prices them) in, the validate.json report out.
//
// What happens (validate.hpp): the measured runs are read and pooled; the cluster they ran on is read from the live
// run's own cluster file, from other live runs' (an independent prediction; several are pooled by medians), or from
// a cluster or scenario file; every distinct step pattern and the calibration all-reduces are simulated in one
// SimGrid run (so: once per process); every measured step is compared with its pattern's prediction.
//
// Compute is priced by the cluster file's kernel profile (live writes kernels.json: its probe's PowerSGD batches and
// dense-buffer copies), else by the roofline of sim::powersgd_batch_s at the cluster's GPU figures and the compute.*
// knobs (defaults as for `edgc simulate`: compute.efficiency 0.4, compute.hbm_efficiency 0.85); live's cluster file
// holds its measured GEMM rate and copy bandwidth divided by those defaults.
#include <string>
#include <vector>

#include "edgc/results/validate_report.hpp"

namespace edgc::engine {

struct ValidateRequest {
  /// Directories written by `edgc live` (measurements.json and its cluster file); several are repeated runs of one
  /// configuration, pooled so that each row's median and spread cover every run.
  std::vector<std::string> measured;
  /// Other live directories whose calibration prices the measured run (several are pooled by medians); empty: the
  /// measured run's own. Not together with `scenario`.
  std::vector<std::string> calibration;
  std::string scenario;           ///< a cluster or scenario file that prices the run instead (empty: none)
  std::vector<std::string> sets;  ///< "dotted.key=value" overrides of the cluster file, applied in order
  std::string out;                ///< the report's file; empty: validate.json in the first measured directory
};

struct ValidateOutcome {
  results::ValidateReport report;  ///< validate.json (schema edgc.validate/1) and the console tables
  std::string out_path;            ///< where the report goes (`out`, or its default)
};

/// Throws UsageError (a directory that is not one, --calibration with --scenario, an output path in no directory)
/// or ConfigError (bad measurements or cluster file, a cluster too small for the measured run), all before anything
/// is simulated. Simulates with SimGrid: call once per process.
ValidateOutcome run_validation(const ValidateRequest& request);

}  // namespace edgc::engine
