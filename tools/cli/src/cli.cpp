#include "cli.hpp"

#include <iostream>

#include "edgc/core/error.hpp"

namespace edgc::cli {

bool parse(const std::string& command, const std::string& usage, const po::options_description& options,
           const po::positional_options_description& positional, const std::vector<std::string>& args,
           po::variables_map& vm) {
  po::options_description all("Options");
  all.add_options()("help,h", "print this help");
  all.add(options);
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
    if (vm.count("help") != 0U) {
      std::cout << "usage: edgc " << command << " " << usage << "\n\n" << all << "\n";
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(std::string(e.what()) + " (see 'edgc " + command + " --help')");
  }
  return true;
}

void check_min_saving(double value) {
  if (!(value >= 0.0 && value < 1.0))
    throw UsageError("--min-saving", "must be a share of training time in [0, 1), got " + std::to_string(value));
}

std::vector<Command> all_commands() {
  std::vector<Command> commands;
  add_calibrate_command(commands);
  add_collective_command(commands);
  add_cqm_command(commands);
  add_live_command(commands);
  add_replay_command(commands);
  add_report_command(commands);
  add_simulate_command(commands);
  add_sweep_command(commands);
  add_plan_command(commands);
  add_breakeven_command(commands);
  add_trace_commands(commands);
  add_validate_command(commands);
  add_version_command(commands);
  return commands;
}

}  // namespace edgc::cli
