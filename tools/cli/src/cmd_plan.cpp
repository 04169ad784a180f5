// `edgc plan --spec F --out DIR [--jobs N] [--resume] [--quiet]`: capacity planning. A plan spec lists cluster
// types, GPU counts and layouts; every feasible combination is simulated under each compression policy (as one
// sweep, so runs are parallel, cached and resumable, and spread over mpirun ranks), then ranked by the time and
// cost to reach the target, with the time–cost Pareto front and a verdict on whether compression pays.
// The spec format: tools/scenario/include/edgc/scenario/plan_spec.hpp; what runs: edgc/engine/plan.hpp.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>
#include <thread>

#include "cli.hpp"
#include "edgc/core/atomic_file.hpp"
#include "edgc/core/error.hpp"
#include "edgc/engine/console.hpp"
#include "edgc/engine/mpi_session.hpp"
#include "edgc/engine/plan.hpp"
#include "edgc/report/report.hpp"
#include "edgc/results/sweep_document.hpp"

namespace edgc::cli {
namespace {

namespace fs = std::filesystem;

int run_plan_command(const std::vector<std::string>& args) {
  std::string spec_path;
  engine::SweepOptions so;
  so.jobs = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  po::options_description opts;
  opts.add_options()("spec", po::value(&spec_path)->required(), "plan spec JSON (scenarios/plans/)")(
      "out", po::value(&so.out)->required(), "output directory: plan.json plus the sweep's files")(
      "jobs", po::value(&so.jobs), "worker processes (on each MPI rank; default: the CPU count)")(
      "resume", "continue a plan whose simulations were interrupted")(
      "max-error", po::value<double>(), "gradient-error budget: options above it are infeasible (e.g. 0.2)")(
      "min-saving", po::value<double>(),
      "compression pays when it saves more than this share of the uncompressed training time (default: the spec's "
      "pays_threshold, else 0.02)")(
      "report", "also write DIR/report.html (time-cost Pareto front, heatmaps) and DIR/report/*.svg")(
      "quiet", "print only the output paths");
  po::variables_map vm;
  if (!parse("plan", "--spec F --out DIR [--jobs N] [--resume] [--max-error X] [--min-saving F] [--report] [--quiet]",
             opts, {}, args, vm))
    return 0;
  so.resume = vm.count("resume") != 0U;
  so.quiet = true;  // the plan prints its own tables
  const bool quiet = vm.count("quiet") != 0U;
  if (so.jobs < 1) throw UsageError("--jobs", "must be >= 1, got " + std::to_string(so.jobs));

  scenario::PlanSpec plan = scenario::read_plan_spec(spec_path);
  if (vm.count("max-error") != 0U) {
    plan.max_error = vm["max-error"].as<double>();
    if (!(*plan.max_error > 0.0))
      throw UsageError("--max-error", "must be > 0 (a relative error of the averaged gradient, e.g. 0.2)");
  }
  if (vm.count("min-saving") != 0U) {
    plan.pays_threshold = vm["min-saving"].as<double>();
    check_min_saving(plan.pays_threshold);
  }
  so.min_saving = plan.pays_threshold;
  const std::unique_ptr<engine::MpiSession> mpi = engine::MpiSession::open_if_launched();
  const std::optional<engine::PlanOutcome> outcome = engine::run_plan(plan, so, mpi.get());
  if (!outcome) return 0;  // an MPI rank other than 0: its share is done
  const fs::path dir(so.out);
  write_file_atomic(dir / "plan.json", results::to_json(engine::plan_document(plan, *outcome)).dump(2) + "\n");
  std::string report;
  if (vm.count("report") != 0U) report = report::write_report_into(dir).string();
  // The error bar of the compute model the options were priced with (the sweep's other warnings are about its
  // axes, which the plan generates).
  for (const std::string& w : results::kernel_model_warnings(outcome->sweep.results))
    std::cerr << "edgc: warning: " << spec_path << ": " << w << "\n";

  if (quiet) {
    std::cout << so.out << "/plan.json\n";
    if (!report.empty()) std::cout << report << "\n";
    return 0;
  }
  engine::print_plan_outcome(std::cout, spec_path, plan, *outcome);
  std::cout << "\nwrote       " << so.out << "/plan.json\n";
  if (!report.empty()) std::cout << "report      " << report << "\n";
  return 0;
}

}  // namespace

void add_plan_command(std::vector<Command>& commands) {
  commands.push_back({"plan",
                      "rank cluster options (GPU type x count x layout x policy) by time and cost; Pareto front",
                      run_plan_command});
}

}  // namespace edgc::cli
