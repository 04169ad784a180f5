// `edgc collective`: one collective over a range of message sizes on the simulated cluster
// (engine::run_collective_sweep, collective_sweep.hpp), printed the way nccl-tests prints its measurements, so a
// simulated table can be laid beside a measured log, or as one JSON document (schema edgc.collective/1).
#include <iostream>

#include "cli.hpp"
#include "edgc/engine/collective_sweep.hpp"
#include "edgc/results/collective_report.hpp"

namespace edgc::cli {
namespace {

int run_collective_cmd(const std::vector<std::string>& args) {
  engine::CollectiveRequest request;
  po::options_description opts;
  auto add = opts.add_options();
  add("scenario", po::value(&request.scenario), "scenario JSON with a cluster section (or an included cluster file)");
  add("cluster", po::value(&request.cluster), "cluster file (scenarios/clusters/*.json), instead of --scenario");
  add("set", po::value(&request.sets)->composing(), "override a scenario key: dotted.key=value (repeatable)");
  add("op", po::value(&request.op),
      "all_reduce | reduce_scatter | all_gather | sendrecv | all_to_all (default all_reduce)");
  add("ranks", po::value(&request.ranks)->required(), "number of GPUs taking part");
  add("minbytes", po::value(&request.min_bytes), "smallest message, e.g. 8, 1K, 1M (default 8)");
  add("maxbytes", po::value(&request.max_bytes), "largest message (default 1G)");
  add("stepfactor", po::value(&request.step_factor), "size multiplier between rows (default 2)");
  add("network", po::value(&request.network),
      "network profile: ideal | calibrated (default: the scenario's, else ideal)");
  add("placement", po::value(&request.placement),
      "spread (one GPU per node first) | packed (fill nodes) (default spread)");
  add("simulate-all", "simulate every size with SimGrid, also where the closed form gives its time");
  add("json", "print one JSON document");
  po::variables_map vm;
  if (!parse("collective",
             "(--scenario F | --cluster F) [--set k=v]... --op OP --ranks N [--minbytes 8] [--maxbytes 1G] "
             "[--stepfactor 2] [--network ideal|calibrated] [--placement spread|packed] [--simulate-all] [--json]",
             opts, {}, args, vm))
    return 0;

  request.simulate_all = vm.count("simulate-all") != 0U;
  const results::CollectiveReport report = engine::run_collective_sweep(request);
  if (vm.count("json") != 0U)
    std::cout << results::to_json(report).dump(1) << "\n";
  else
    results::print_collective_table(std::cout, report);
  return 0;
}

}  // namespace

void add_collective_command(std::vector<Command>& commands) {
  commands.push_back(
      {"collective", "simulate one NCCL-style collective over message sizes (nccl-tests layout)", run_collective_cmd});
}

}  // namespace edgc::cli
