// `edgc sweep --spec F --out DIR [--jobs N] [--resume] [--set k=v]... [--best-by FIELD] [--quiet]`: every point
// of a sweep spec simulated in its own worker process, results appended to DIR/results.jsonl (sweep.hpp). Under
// `mpirun -np K`, the points are shared among the K ranks and rank 0 writes DIR.
#include <iostream>
#include <thread>

#include "cli.hpp"
#include "edgc/core/error.hpp"
#include "edgc/engine/console.hpp"
#include "edgc/engine/mpi_session.hpp"
#include "edgc/engine/sweep.hpp"
#include "edgc/report/report.hpp"

namespace edgc::cli {
namespace {

int run_sweep_command(const std::vector<std::string>& args) {
  std::string spec_path;
  engine::SweepOptions o;
  std::vector<std::string> sets;
  o.jobs = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  po::options_description opts;
  opts.add_options()("spec", po::value(&spec_path)->required(), "sweep spec JSON (scenarios/sweeps/)")(
      "out", po::value(&o.out)->required(), "sweep directory: sweep.json, results.jsonl, summary.csv, cache/")(
      "jobs", po::value(&o.jobs), "worker processes (on each MPI rank; default: the CPU count)")(
      "resume", "continue the sweep in --out: points already in results.jsonl are skipped")(
      "set", po::value(&sets)->composing(), "override a key of every point: dotted.key=value (repeatable)")(
      "best-by", po::value(&o.best_by), "rank the printed best points by this run field (default training_time_s)")(
      "max-error", po::value<double>(),
      "gradient-error budget: points whose relative gradient error exceeds it are infeasible (e.g. 0.2)")(
      "min-saving", po::value(&o.min_saving),
      "a policy pays when it saves more than this share of the uncompressed training time (default 0.02)")(
      "max-points", po::value(&o.max_points),
      ("refuse a sweep of more points than this (default " + std::to_string(o.max_points) + ")").c_str())(
      "report", "also write DIR/report.html (heatmaps, best points) and DIR/report/*.svg")("quiet",
                                                                                           "no progress and no table");
  po::variables_map vm;
  if (!parse(
          "sweep",
          "--spec F --out DIR [--jobs N] [--resume] [--set k=v]... [--best-by FIELD] [--max-error X] [--max-points N] "
          "[--min-saving F] [--report] [--quiet]",
          opts, {}, args, vm))
    return 0;
  o.resume = vm.count("resume") != 0U;
  o.quiet = vm.count("quiet") != 0U;
  if (vm.count("max-error") != 0U) o.max_error = vm["max-error"].as<double>();
  engine::check_sweep_options(o);
  check_min_saving(o.min_saving);

  scenario::SweepSpec spec = scenario::read_sweep_spec(spec_path);
  engine::add_command_line_sets(spec, sets);

  const std::unique_ptr<engine::MpiSession> mpi = engine::MpiSession::open_if_launched();
  const engine::SweepOutcome r = engine::run_sweep_on_all_ranks(spec, o, mpi.get());
  if (mpi != nullptr && mpi->rank() != 0) return 0;
  for (const std::string& w : r.warnings) std::cerr << "edgc: warning: " << spec_path << ": " << w << "\n";
  if (o.quiet) {
    std::cout << o.out << "/results.jsonl\n" << o.out << "/summary.csv\n";
  } else {
    engine::print_sweep_outcome(std::cout, spec_path, r, o, mpi != nullptr ? mpi->size() : 0);
  }
  if (vm.count("report") != 0U) {
    const std::string page = report::write_report_into(o.out).string();
    std::cout << (o.quiet ? "" : "report      ") << page << "\n";
  }
  if (r.failed > 0) {
    std::cerr << "edgc: error: " << r.failed << " sweep point(s) have invalid scenarios; their \"error\" in " << o.out
              << "/results.jsonl names the key\n";
    return 2;
  }
  return 0;
}

// `edgc sweep-point --spec F --point N --cache DIR [--set k=v]...`: one point, its results.jsonl line on stdout.
// The worker of MPI sweeps, which start it with exec (a process with MPI initialised must not fork workers).
int run_sweep_point_command(const std::vector<std::string>& args) {
  std::string spec_path;
  std::string cache;
  std::int64_t point = -1;
  std::vector<std::string> sets;
  po::options_description opts;
  opts.add_options()("spec", po::value(&spec_path)->required(), "sweep spec JSON")(
      "point", po::value(&point)->required(), "point index")("cache", po::value(&cache)->required(), "cache directory")(
      "set", po::value(&sets)->composing(), "the sweep's command-line overrides");
  po::variables_map vm;
  if (!parse("sweep-point", "--spec F --point N --cache DIR [--set k=v]...", opts, {}, args, vm)) return 0;
  scenario::SweepSpec spec = scenario::read_sweep_spec(spec_path);
  spec.sets.insert(spec.sets.end(), sets.begin(), sets.end());
  spec.command_line_sets = sets;
  std::cout << engine::sweep_point_line(spec, point, cache) << std::flush;
  return 0;
}

// `edgc sweep-worker --spec F --cache DIR [--set k=v]...`: the long-lived worker of MPI sweeps; point indices on
// stdin, their results.jsonl lines on stdout (engine::serve_sweep_worker).
int run_sweep_worker_command(const std::vector<std::string>& args) {
  std::string spec_path;
  std::string cache;
  std::vector<std::string> sets;
  po::options_description opts;
  opts.add_options()("spec", po::value(&spec_path)->required(), "sweep spec JSON")(
      "cache", po::value(&cache)->required(), "cache directory")("set", po::value(&sets)->composing(),
                                                                 "the sweep's command-line overrides");
  po::variables_map vm;
  if (!parse("sweep-worker", "--spec F --cache DIR [--set k=v]...", opts, {}, args, vm)) return 0;
  scenario::SweepSpec spec = scenario::read_sweep_spec(spec_path);
  spec.sets.insert(spec.sets.end(), sets.begin(), sets.end());
  spec.command_line_sets = sets;
  engine::serve_sweep_worker(spec, cache);
  return 0;
}

}  // namespace

void add_sweep_command(std::vector<Command>& commands) {
  commands.push_back({"sweep", "simulate every point of a sweep spec (resumable; splits points across mpirun ranks)",
                      run_sweep_command});
  commands.push_back({"sweep-point",
                      "(internal) one point of a sweep as a results.jsonl line: the worker of MPI sweeps",
                      run_sweep_point_command});
  commands.push_back({"sweep-worker",
                      "(internal) serves sweep points read on stdin with their results.jsonl lines: the long-lived "
                      "worker of MPI sweeps",
                      run_sweep_worker_command});
}

}  // namespace edgc::cli
