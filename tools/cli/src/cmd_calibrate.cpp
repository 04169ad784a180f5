// `edgc calibrate`: fits the calibrated network profile to nccl-tests all_reduce_perf logs, so that simulating each
// log's all-reduces reproduces the log (engine::run_calibration, calibration.hpp). Writes the calibration file
// (schema edgc.calibration/1) atomically, with the round trip: per row the measured time, the simulated time with
// the fitted profile, and the error; prints the round-trip tables.
#include <iostream>
#include <optional>

#include "cli.hpp"
#include "edgc/core/atomic_file.hpp"
#include "edgc/engine/calibration.hpp"
#include "edgc/results/calibration_report.hpp"

namespace edgc::cli {
namespace {

int run_calibrate(const std::vector<std::string>& args) {
  engine::CalibrateRequest request;
  int ranks_per_node = 0;
  int ranks = 0;
  po::options_description opts;
  auto add = opts.add_options();
  add("nccl-tests", po::value(&request.logs)->required()->composing(),
      "all_reduce_perf log (repeatable: one per node count)");
  add("cluster", po::value(&request.cluster)->required(), "cluster file whose line rates the efficiencies refer to");
  add("set", po::value(&request.sets)->composing(), "override a cluster key: dotted.key=value (repeatable)");
  add("ranks-per-node", po::value(&ranks_per_node), "GPUs per node in the logs (default: the cluster's)");
  add("ranks", po::value(&ranks), "ranks of every log (default: counted from its '# Rank' lines)");
  add("algorithm", po::value(&request.algorithm),
      "all-reduce algorithm the fit simulates: auto | ring | tree (default auto)");
  add("out", po::value(&request.out)->required(), "calibration JSON to write (atomically)");
  po::variables_map vm;
  if (!parse("calibrate", "--nccl-tests LOG... --cluster F [--ranks-per-node N] [--ranks N] [--algorithm A] --out FILE",
             opts, {}, args, vm))
    return 0;
  if (vm.count("ranks-per-node") != 0U) request.ranks_per_node = ranks_per_node;
  if (vm.count("ranks") != 0U) request.ranks = ranks;

  const results::CalibrationReport report = engine::run_calibration(request);
  results::print_calibration_report(std::cout, report);
  write_file_atomic(request.out, results::to_json(report).dump(1) + "\n");
  results::print_calibration_written(std::cout, report, request.out);
  return 0;
}

}  // namespace

void add_calibrate_command(std::vector<Command>& commands) {
  commands.push_back(
      {"calibrate", "fit the calibrated network profile to nccl-tests all_reduce_perf logs", run_calibrate});
}

}  // namespace edgc::cli
