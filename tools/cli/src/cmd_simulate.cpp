// `edgc simulate --scenario F [--set k=v]... --out DIR [--timeline FILE] [--jobs N] [--policies LIST]`: whole
// training runs under several compression policies, each distinct per-stage rank vector simulated once in its own
// process (simulation.hpp), written as result.json (schema edgc.result/1) with a summary table.
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli.hpp"
#include "edgc/core/atomic_file.hpp"
#include "edgc/core/error.hpp"
#include "edgc/engine/simulation.hpp"
#include "edgc/report/report.hpp"
#include "edgc/results/table.hpp"

namespace edgc::cli {
namespace {

using nlohmann::ordered_json;
namespace fs = std::filesystem;

// Hours, GPU-hours and dollars: whole numbers when large, 4 significant digits when small.
std::string fmt_amount(double x) { return x >= 100.0 ? results::fmt_f(x, 0) : results::fmt_g(x, 4); }

std::string pct(double fraction) { return results::fmt_f(100.0 * fraction, 2); }

// The summary and breakdown tables, read back from result.json.
void print_summary(std::ostream& os, const ordered_json& r) {
  const auto& par = r.at("parallelism");
  os << "simulate    " << r.at("scenario").get<std::string>() << ": " << r.at("cluster").at("gpus").get<int>() << " x "
     << r.at("cluster").at("gpu").get<std::string>() << ", tp " << par.at("tp").get<int>() << " pp "
     << par.at("pp").get<int>() << " dp " << par.at("dp").get<int>() << ", "
     << r.at("run").at("iterations").get<std::int64_t>() << " iterations, " << r.at("simulations").get<std::size_t>()
     << " distinct rank vectors";
  if (r.at("composition") == "stage-separable")
    os << " composed from " << r.at("simulated_iterations").get<std::size_t>() << " simulated uniform-rank iterations";
  else
    os << " simulated";
  os << "\n\n";
  const double price = r.at("cluster").at("price_per_gpu_hour_usd").get<double>();
  results::Table t({"policy", "iter s", "comm latency s", "comm -%", "train h", "train -%", "speedup", "GPU-h",
                    "cost $", "warm-up end"});
  for (const auto& x : r.at("runs")) {
    const double gpu_hours = x.at("gpu_hours").get<double>();
    const auto& w = x.at("warmup_end_iteration");
    t.add_row({x.at("policy").get<std::string>(), results::fmt_f(x.at("iteration_time_s").get<double>(), 3),
               results::fmt_f(x.at("comm_latency_s").get<double>(), 3),
               pct(x.at("comm_latency_reduction_vs_none").get<double>()),
               fmt_amount(x.at("training_time_s").get<double>() / 3600.0),
               pct(x.at("training_time_reduction_vs_none").get<double>()),
               results::fmt_f(x.at("speedup_vs_none").get<double>(), 3), fmt_amount(gpu_hours),
               fmt_amount(gpu_hours * price), w.is_null() ? std::string("-") : std::to_string(w.get<std::int64_t>())});
  }
  t.print(os);
  os << "\nper iteration (mean over the run), seconds\n";
  results::Table b({"policy", "compute", "TP comm", "bubble+PP", "exposed DP", "exposed compress", "compress total"});
  for (const auto& x : r.at("runs")) {
    const auto& d = x.at("breakdown");
    b.add_row({x.at("policy").get<std::string>(), results::fmt_f(d.at("compute_s").get<double>(), 3),
               results::fmt_f(d.at("tp_comm_s").get<double>(), 3), results::fmt_f(d.at("bubble_s").get<double>(), 3),
               results::fmt_f(d.at("exposed_dp_comm_s").get<double>(), 3),
               results::fmt_f(d.at("exposed_compression_s").get<double>(), 4),
               results::fmt_f(d.at("compression_s").get<double>(), 4)});
  }
  b.print(os);
}

int run_simulate_command(const std::vector<std::string>& args) {
  std::string scenario;
  std::string out;
  std::string timeline;
  std::string policies;
  std::vector<std::string> sets;
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
      "quiet", "print only the output paths");
  po::variables_map vm;
  if (!parse(
          "simulate",
          "--scenario F [--set k=v]... --out DIR [--timeline FILE] [--policies LIST] [--jobs N] [--report] [--quiet]",
          opts, {}, args, vm))
    return 0;
  if (jobs < 1) throw UsageError("--jobs", "must be >= 1, got " + std::to_string(jobs));
  if (!timeline.empty() && fs::is_directory(timeline))
    throw UsageError("--timeline", "'" + timeline + "' is a directory");

  StagingDir staging(out);  // before the simulations: a busy --out fails fast
  engine::SimulateRequest request;
  request.scenario = scenario;
  request.sets = sets;
  request.policies = policies;
  request.jobs = jobs;
  request.timeline = !timeline.empty();
  const engine::SimulateOutcome outcome = engine::run_simulation(request);
  const ordered_json& result = outcome.result;

  write_file_atomic(staging.path() / "result.json", result.dump(2) + "\n");
  if (request.timeline) write_file_atomic(timeline, outcome.timeline.dump() + "\n");
  staging.commit();
  std::string report;
  if (vm.count("report") != 0U) report = report::write_report_into(out).string();

  if (vm.count("quiet") != 0U) {
    std::cout << out << "/result.json\n";
    if (request.timeline) std::cout << timeline << "\n";
    if (!report.empty()) std::cout << report << "\n";
    return 0;
  }
  print_summary(std::cout, result);
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
