#include "edgc/engine/console.hpp"

#include <cmath>
#include <exception>
#include <iostream>
#include <string>

#include "edgc/core/error.hpp"
#include "edgc/engine/mpi_session.hpp"
#include "edgc/results/table.hpp"

namespace edgc::engine {

void check_sweep_options(const SweepOptions& o) {
  if (o.jobs < 1) throw UsageError("--jobs", "must be >= 1, got " + std::to_string(o.jobs));
  if (o.max_points < 1) throw UsageError("--max-points", "must be >= 1, got " + std::to_string(o.max_points));
  if (o.max_error && !(*o.max_error > 0.0))
    throw UsageError("--max-error", "must be > 0 (a relative error of the averaged gradient, e.g. 0.2)");
}

void add_command_line_sets(scenario::SweepSpec& spec, const std::vector<std::string>& sets) {
  for (const std::string& s : sets) {
    if (s.find('=') == std::string::npos || s.front() == '=')
      throw UsageError("--set", "'" + s + "' is not of the form dotted.key=value");
    spec.sets.push_back(s);
    spec.command_line_sets.push_back(s);
  }
  if (!sets.empty()) spec.document["command_line_set"] = sets;  // part of the sweep's identity for --resume
}

SweepOutcome run_sweep_on_all_ranks(const scenario::SweepSpec& spec, const SweepOptions& options, MpiSession* mpi) {
  try {
    return run_sweep(spec, options, mpi);
  } catch (const std::exception& e) {
    if (mpi != nullptr) {
      std::cerr << "edgc: error: rank " << mpi->rank() << ": " << e.what() << "\n";
      mpi->abort(dynamic_cast<const InputError*>(&e) != nullptr ? 2 : 1);
    }
    throw;
  }
}

void print_sweep_outcome(std::ostream& os, const std::string& spec_path, const SweepOutcome& r, const SweepOptions& o,
                         int mpi_ranks) {
  os << "\nsweep       " << spec_path << ": " << r.points << " points";
  if (mpi_ranks > 0)
    os << " on " << mpi_ranks << " MPI ranks x " << o.jobs << " workers";
  else
    os << " on " << o.jobs << " workers";
  os << "; " << r.already_done << " already done, " << r.ran << " run in " << results::fmt_f(r.wall_s, 1) << " s ("
     << results::fmt_f(r.wall_s > 0 ? static_cast<double>(r.ran) / r.wall_s * 60.0 : 0.0, 1) << " points/min)";
  if (r.failed > 0) os << ", " << r.failed << " failed (see \"error\" in results.jsonl)";
  os << "\nwrote       " << o.out << "/results.jsonl, " << o.out << "/summary.csv\n";
}

namespace {

// "41.2/80": the peak per GPU against the GPU's capacity, the headroom a layout leaves ("-" where unknown).
std::string plan_memory(double peak_GiB, double capacity_GiB) {
  if (!std::isfinite(peak_GiB)) return "-";
  return results::fmt_f(peak_GiB, 1) + "/" + (std::isfinite(capacity_GiB) ? results::fmt_g(capacity_GiB, 4) : "-");
}

}  // namespace

void print_plan_outcome(std::ostream& os, const std::string& spec_path, const scenario::PlanSpec& plan,
                        const PlanOutcome& outcome) {
  os << "plan        " << spec_path << ": " << plan.options.size() << " cluster options x " << plan.policies.size()
     << " policies, target " << *plan.iterations << " iterations; " << outcome.sweep.ran << " simulated now, "
     << outcome.sweep.already_done << " from an earlier run\n\n";
  results::Table t({"#", "option", "policy", "iter s", "mem GiB peak/cap", "train h", "cost $", "speedup vs none",
                    "grad err %", "Pareto"});
  for (std::size_t i = 0; i < outcome.entries.size(); ++i) {
    const PlanEntry& e = outcome.entries[i];
    t.add_row({std::to_string(i + 1), e.option->label, e.policy, results::fmt_g(e.iteration_time_s, 4),
               plan_memory(e.peak_memory_GiB, e.memory_capacity_GiB), plan_amount(e.time_s / 3600.0),
               plan_amount(e.cost), results::fmt_f(e.speedup, 4),
               std::isfinite(e.error) ? results::fmt_f(100.0 * e.error, 1) : "-", e.pareto ? "*" : ""});
  }
  t.print(os);
  os << "\n";
  for (const std::string& v : outcome.verdicts) os << "- " << v << "\n";
  if (!outcome.infeasible.empty()) {
    os << "\ninfeasible or not simulated (" << outcome.infeasible.size() << "):\n";
    for (const std::string& s : outcome.infeasible) os << "  " << s << "\n";
  }
}

}  // namespace edgc::engine
