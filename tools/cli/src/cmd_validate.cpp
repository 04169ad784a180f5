// `edgc validate --measured DIR [--calibration DIR2 | --scenario F] [--set k=v]... [--out FILE] [--json]`: the run
// `edgc live` measured (DIR/measurements.json), simulated on the cluster it ran on as priced by its own calibration
// (DIR/<cluster_file>), by another live run's calibration (--calibration: an independent prediction), or on another
// cluster and network (--scenario), and the prediction error per collective, stage sync, iteration and compression
// compute (engine::run_validation, validation.hpp). Writes DIR/validate.json (schema edgc.validate/1) atomically and
// prints the tables.
#include <iostream>

#include "cli.hpp"
#include "edgc/core/atomic_file.hpp"
#include "edgc/engine/validation.hpp"
#include "edgc/results/validate_report.hpp"

namespace edgc::cli {
namespace {

int run_validate_command(const std::vector<std::string>& args) {
  engine::ValidateRequest request;
  po::options_description opts;
  auto add = opts.add_options();
  add("measured", po::value(&request.measured)->required()->composing(),
      "directory written by 'edgc live' (measurements.json, cluster.json); repeat it for repeated runs of one "
      "configuration: their steps are pooled, so each row's median and spread cover every run");
  add("calibration", po::value(&request.calibration)->composing(),
      "another 'edgc live' directory whose calibration (network profile, kernel profile) prices the measured run: "
      "an independent prediction (default: the measured run's own); repeat it to pool repeated calibration runs by "
      "medians");
  add("scenario", po::value(&request.scenario),
      "cluster or scenario file with cluster and optional network and compute sections (instead of --calibration)");
  add("set", po::value(&request.sets)->composing(),
      "override a key of the cluster file: dotted.key=value (repeatable)");
  add("out", po::value(&request.out), "output file (default DIR/validate.json, DIR the first --measured)");
  add("json", "print validate.json instead of the tables");
  po::variables_map vm;
  if (!parse("validate",
             "--measured DIR... [--calibration DIR2... | --scenario F] [--set k=v]... [--out FILE] [--json]", opts, {},
             args, vm))
    return 0;

  const engine::ValidateOutcome outcome = engine::run_validation(request);
  const std::string doc = results::to_json(outcome.report).dump(2);
  write_file_atomic(outcome.out_path, doc + "\n");
  if (vm.count("json") != 0U) {
    std::cout << doc << "\n";
    return 0;
  }
  results::print_validate_report(std::cout, outcome.report);
  std::cout << "\nwrote       " << outcome.out_path << "\n";
  return 0;
}

}  // namespace

void add_validate_command(std::vector<Command>& commands) {
  commands.push_back({"validate", "replay a live run's measurements on the simulated cluster: prediction error",
                      run_validate_command});
}

}  // namespace edgc::cli
