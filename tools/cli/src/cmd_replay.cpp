// `edgc replay --trace DIR [--scenario F] [--set k=v]... --out DIR`: the rank controller run over a gradient trace
// (engine::run_replay), written as DIR/windows.csv and DIR/replay.json (schema edgc.replay/1) with a summary.
#include <iostream>

#include "cli.hpp"
#include "edgc/core/atomic_file.hpp"
#include "edgc/engine/replay.hpp"
#include "edgc/results/replay_report.hpp"

namespace edgc::cli {
namespace {

int run_replay_command(const std::vector<std::string>& args) {
  engine::ReplayRequest request;
  std::string out;
  po::options_description opts;
  opts.add_options()("trace", po::value(&request.trace), "trace directory (default: the scenario's trace.path)")(
      "scenario", po::value(&request.scenario), "scenario JSON (compression and replay sections are used)")(
      "set", po::value(&request.sets)->composing(), "override a scenario key: dotted.key=value (repeatable)")(
      "out", po::value(&out)->required(), "output directory (must not exist or be empty)")(
      "backend", po::value(&request.backend),
      "kernels: cpu | cuda (default: replay.backend, else cpu; cuda needs edgc-nccl and a GPU)")(
      "quiet", "print only the output paths");
  po::variables_map vm;
  if (!parse("replay", "--trace DIR [--scenario F] [--set k=v]... [--backend cpu|cuda] --out DIR", opts, {}, args, vm))
    return 0;
  engine::ReplayOptions options = engine::read_replay_options(request);

  StagingDir staging(out);  // before the run: a busy --out fails fast
  engine::ReplayResult result = engine::run_replay(options);
  for (const std::string& w : result.warnings) std::cerr << "edgc: warning: " << w << "\n";
  for (const std::string& n : result.notes) std::cerr << "edgc: note: " << options.where << ": " << n << "\n";
  const results::ReplayReport report = engine::replay_report(options, std::move(result));
  write_file_atomic(staging.path() / "windows.csv", results::windows_csv(report));
  write_file_atomic(staging.path() / "replay.json", results::to_json(report).dump(1) + "\n");
  staging.commit();
  if (staging.in_place())  // an existing directory, perhaps a mount point: no rename could replace it whole
    std::cerr << "edgc: note: " << out << " existed, so the outputs were moved into it one file at a time\n";
  if (vm.count("quiet") != 0U) {
    std::cout << out << "/windows.csv\n" << out << "/replay.json\n";
    return 0;
  }
  results::print_replay_summary(std::cout, report);
  std::cout << "wrote       " << out << "/windows.csv, " << out << "/replay.json\n";
  return 0;
}

}  // namespace

void add_replay_command(std::vector<Command>& commands) {
  commands.push_back(
      {"replay", "run the rank controller over a gradient trace (entropy, ranks, errors)", run_replay_command});
}

}  // namespace edgc::cli
