#pragma once
// The command-line edges of `sweep` and `plan`: their options checked and overrides applied, and their console
// summaries (their documents are written by edgc::results): what ran, how long it took, and for a plan the ranked
// options and its verdicts.
#include <ostream>
#include <string>
#include <vector>

#include "edgc/engine/plan.hpp"
#include "edgc/engine/sweep.hpp"
#include "edgc/scenario/plan_spec.hpp"
#include "edgc/scenario/sweep_spec.hpp"

namespace edgc::engine {

/// Throws UsageError naming the option for jobs < 1, max_points < 1 or a max_error that is not > 0.
void check_sweep_options(const SweepOptions& options);

/// Adds the command line's --set overrides to every point of `spec`, and to the sweep's identity (so that a
/// --resume with other overrides is refused). Throws UsageError naming --set for one that is not dotted.key=value.
void add_command_line_sets(scenario::SweepSpec& spec, const std::vector<std::string>& sets);

/// run_sweep, where under mpirun a failure on one rank ends them all (the others would wait for it forever): the
/// failing rank prints it on stderr and aborts the MPI job (exit 2 for an InputError, else 1).
SweepOutcome run_sweep_on_all_ranks(const scenario::SweepSpec& spec, const SweepOptions& options, MpiSession* mpi);

/// "sweep F: N points on W workers; …" and the files written. `mpi_ranks` 0: not under mpirun.
void print_sweep_outcome(std::ostream& os, const std::string& spec_path, const SweepOutcome& outcome,
                         const SweepOptions& options, int mpi_ranks);

/// What was simulated, the options ranked (fastest first) with their iteration time, peak memory per GPU against the
/// GPU's capacity and Pareto marks, the verdicts and what could not be simulated.
void print_plan_outcome(std::ostream& os, const std::string& spec_path, const scenario::PlanSpec& plan,
                        const PlanOutcome& outcome);

}  // namespace edgc::engine
