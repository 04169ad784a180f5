// `edgc simulate --scenario F [--set k=v]... --out DIR [--timeline FILE] [--jobs N] [--policies LIST]`: whole
// training runs under several compression policies, each distinct per-stage rank vector simulated once in its own
// process (simulation.hpp), written as result.json (schema edgc.result/1) with a summary table.
#include <filesystem>
#include <iostream>
#include <thread>

#include "cli.hpp"
#include "edgc/core/atomic_file.hpp"
#include "edgc/core/error.hpp"
#include "edgc/engine/simulation.hpp"
#include "edgc/report/report.hpp"
#include "edgc/results/result_console.hpp"
#include "edgc/results/verdict.hpp"

namespace edgc::cli {
namespace {

namespace fs = std::filesystem;

int run_simulate_command(const std::vector<std::string>& args) {
  std::string scenario;
  std::string out;
  std::string timeline;
  std::string policies;
  std::vector<std::string> sets;
  std::string megatron_args;
  double min_saving = results::kDefaultMinSaving;
  int jobs = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  po::options_description opts;
  opts.add_options()("scenario", po::value(&scenario)->required(),
                     "scenario JSON (cluster, model, parallelism, "
                     "compression, run, trace or entropy)")("set", po::value(&sets)->composing(),
                                                            "override a scenario key: dotted.key=value (repeatable)")(
      "out", po::value(&out)->required(), "output directory for result.json (must not exist or be empty)")(
      "timeline", po::value(&timeline), "also write one iteration per distinct rank vector as Chrome-trace JSON")(
      "policies", po::value(&policies),
      "compared policies, e.g. none,static,edgc (default: simulate.policies, "
      "else none,static,<compression.policy>)")("jobs", po::value(&jobs),
                                                "simulations run in parallel (default: the CPU count)")(
      "report", "also write DIR/report.html (charts: entropy, ranks, breakdown) and DIR/report/*.svg")(
      "quiet", "print only the output paths")(
      "no-bandwidth-curve",
      "skip result.json's bandwidth section (the saving against the NIC bandwidth, and the bandwidth at which a "
      "policy that does not pay would: a few more simulate runs)")(
      "min-saving", po::value(&min_saving),
      "a policy pays when it saves more than this share of the uncompressed training time (default 0.02)")(
      "megatron-args", po::value(&megatron_args),
      "a Megatron-LM command line's model, batch and parallelism arguments (quoted), as model.megatron_args");
  po::variables_map vm;
  if (!parse("simulate",
             "--scenario F [--set k=v]... [--megatron-args \"ARGS\"] --out DIR [--timeline FILE] [--policies LIST] "
             "[--jobs N] [--min-saving F] [--no-bandwidth-curve] [--report] [--quiet]",
             opts, {}, args, vm))
    return 0;
  if (jobs < 1) throw UsageError("--jobs", "must be >= 1, got " + std::to_string(jobs));
  check_min_saving(min_saving);
  if (vm.count("policies") != 0U && policies.empty())
    throw UsageError("--policies", "is empty: name the compared policies, e.g. none,static,edgc");
  if (!timeline.empty()) check_output_file(timeline, "--timeline");  // before the simulations, not after

  StagingDir staging(out);  // before the simulations: a busy --out fails fast
  engine::SimulateRequest request;
  request.scenario = scenario;
  request.sets = sets;
  if (vm.count("megatron-args") != 0U) request.sets.push_back("model.megatron_args=" + megatron_args);
  request.policies = policies;
  request.jobs = jobs;
  request.timeline = !timeline.empty();
  request.min_saving = min_saving;
  request.bandwidth_curve = vm.count("no-bandwidth-curve") == 0U;
  const engine::SimulateOutcome outcome = engine::run_simulation(request);
  for (const std::string& w : outcome.warnings) std::cerr << "edgc: warning: " << w << "\n";
  write_file_atomic(staging.path() / "result.json", results::to_json(outcome.result).dump(2) + "\n");
  if (request.timeline) write_file_atomic(timeline, outcome.timeline.dump() + "\n");
  staging.commit();
  if (staging.in_place())  // an existing directory, perhaps a mount point: no rename could replace it whole
    std::cerr << "edgc: note: " << out << " existed, so the outputs were moved into it one file at a time\n";
  std::string report;
  if (vm.count("report") != 0U) report = report::write_report_into(out).string();

  if (vm.count("quiet") != 0U) {
    std::cout << out << "/result.json\n";
    if (request.timeline) std::cout << timeline << "\n";
    if (!report.empty()) std::cout << report << "\n";
    return 0;
  }
  results::print_result_summary(std::cout, outcome.result);
  std::cout << "\nwrote       " << out << "/result.json";
  if (request.timeline) std::cout << ", " << timeline;
  std::cout << "\n";
  if (!report.empty()) std::cout << "report      " << report << "\n";
  return 0;
}

}  // namespace

void add_simulate_command(std::vector<Command>& commands) {
  commands.push_back({"simulate", "whole training runs per compression policy on a simulated cluster (result.json)",
                      run_simulate_command});
}

}  // namespace edgc::cli
