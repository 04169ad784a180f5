#pragma once
// Shared command-line plumbing of the edgc subcommands (Boost.Program_options lives here and in the commands).
#include <boost/program_options.hpp>
#include <functional>
#include <string>
#include <vector>

namespace edgc::cli {

namespace po = boost::program_options;

/// A subcommand: `edgc <name> ...` (or `edgc <group> <name> ...`).
struct Command {
  std::string name;     ///< e.g. "trace inspect"
  std::string summary;  ///< one line for `edgc --help`
  std::function<int(const std::vector<std::string>& args)> run;
};

/// Parses `args` against `options` (plus --help) and `positional`. Returns false when --help was given (after
/// printing usage). Throws UsageError on unknown options, missing required options or bad values.
bool parse(const std::string& command, const std::string& usage, const po::options_description& options,
           const po::positional_options_description& positional, const std::vector<std::string>& args,
           po::variables_map& vm);

/// Checks `--min-saving` (a share of the uncompressed training time): UsageError unless 0 <= value < 1.
void check_min_saving(double value);

/// All subcommands, in the order `edgc --help` lists them.
std::vector<Command> all_commands();

// Registration functions, one per command file (explicit: static self-registration is dropped by linkers).
void add_breakeven_command(std::vector<Command>& commands);
void add_calibrate_command(std::vector<Command>& commands);
void add_collective_command(std::vector<Command>& commands);
void add_cqm_command(std::vector<Command>& commands);
void add_live_command(std::vector<Command>& commands);
void add_plan_command(std::vector<Command>& commands);
void add_replay_command(std::vector<Command>& commands);
void add_report_command(std::vector<Command>& commands);
void add_simulate_command(std::vector<Command>& commands);
void add_sweep_command(std::vector<Command>& commands);
void add_trace_commands(std::vector<Command>& commands);
void add_validate_command(std::vector<Command>& commands);
void add_version_command(std::vector<Command>& commands);

}  // namespace edgc::cli
