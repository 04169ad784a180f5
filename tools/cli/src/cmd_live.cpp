// `edgc live`: see live.hpp.
#include <filesystem>
#include <iostream>

#include "cli.hpp"
#include "edgc/core/error.hpp"
#include "edgc/live/live.hpp"
#include "edgc/scenario/compression_config.hpp"
#include "edgc/scenario/config.hpp"

namespace edgc::cli {
namespace {

namespace fs = std::filesystem;

int run_live_command(const std::vector<std::string>& args) {
  std::string scenario;
  std::string trace;
  std::string out;
  std::string policies;
  std::vector<std::string> sets;
  live::LiveOptions o;
  o.backend.clear();
  o.comm.clear();
  po::options_description opts;
  auto add = opts.add_options();
  add("scenario", po::value(&scenario)->required(), "scenario JSON (trace, compression and live sections are used)");
  add("set", po::value(&sets)->composing(), "override a scenario key: dotted.key=value (repeatable)");
  add("trace", po::value(&trace), "trace directory (default: the scenario's trace.path)");
  add("out", po::value(&out)->required(), "output directory (must not exist or be empty); written by rank 0");
  add("policies", po::value(&policies), "comma-separated policies to run (default: none and the scenario's policy)");
  add("comm", po::value(&o.comm), "mpi | nccl (default: live.comm, else mpi)");
  add("backend", po::value(&o.backend), "cpu | cuda (default: live.backend, else cpu)");
  add("verify", "check every step against the in-process emulation and the error-feedback invariant");
  add("quiet", "print nothing but errors");
  po::variables_map vm;
  if (!parse("live",
             "--scenario F [--set k=v]... [--trace DIR] --out DIR [--policies LIST] [--comm mpi|nccl] "
             "[--backend cpu|cuda] [--verify] [--quiet]\n  run it under MPI: mpirun -np N edgc live ...",
             opts, {}, args, vm))
    return 0;
  scenario::Scenario sc = scenario::load_scenario(scenario, sets);
  if (!trace.empty()) o.trace_dir = fs::path(trace).lexically_normal().string();
  o.verify = vm.count("verify") != 0U;
  o.quiet = vm.count("quiet") != 0U;
  live::read_live_options(sc, o);
  if (o.trace_dir.empty())
    throw UsageError("--trace", "no trace given (use --trace DIR or trace.path in the scenario)");
  sc.reject_unknown({"compression", "live", "trace"});
  // A replay scenario runs live as it is (its replay section is what live does not read).
  sc.reject_unknown_sections({"compression", "live", "trace", "replay"});
  o.scenario_path = scenario;
  o.out_dir = out;
  o.policies = scenario::policies_with_baseline(policies.empty() ? o.compression.controller.policy : policies, "live",
                                                "--policies");
  return live::run_live(o);
}

}  // namespace

void add_live_command(std::vector<Command>& commands) {
  commands.push_back(
      {"live", "replay a trace through real compressed all-reduces over MPI ranks and time them", run_live_command});
}

}  // namespace edgc::cli
