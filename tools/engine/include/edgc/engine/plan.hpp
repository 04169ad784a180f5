#pragma once
// `edgc plan` as a function: every option of a plan spec is simulated under each policy (as one sweep, so runs
// are parallel, cached, resumable and spread over mpirun ranks), then ranked by the time and cost to reach the
// target, with the time–cost Pareto front and verdicts on whether compression pays.
//
// DIR holds the sweep's files (sweep.json, results.jsonl, summary.csv, cache/), the generated sweep spec
// (plan-sweep.json) and plan.json (schema edgc.plan/1).
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "edgc/engine/sweep.hpp"
#include "edgc/results/plan_document.hpp"
#include "edgc/scenario/plan_spec.hpp"

namespace edgc::engine {

/// One option under one policy, from its whole-run result.
struct PlanEntry {
  const scenario::PlanOption* option = nullptr;  ///< into the PlanSpec given to run_plan
  std::string policy;
  double time_s = 0.0;  ///< training time to the target
  double cost = 0.0;    ///< USD
  double speedup = 1.0;
  double error = 0.0;   ///< measured (else CQM-predicted) relative gradient error; NaN when unknown
  bool pareto = false;  ///< no other entry is at least as fast, as cheap and as accurate, and strictly better in one
  double iteration_time_s = 0.0;                                          ///< mean over the run
  double peak_memory_GiB = std::numeric_limits<double>::quiet_NaN();      ///< per GPU, the fullest stage; NaN: unknown
  double memory_capacity_GiB = std::numeric_limits<double>::quiet_NaN();  ///< of the GPU; NaN: not given
};

struct PlanOutcome {
  std::vector<PlanEntry> entries;       ///< fastest first
  std::vector<std::string> infeasible;  ///< skipped combinations and failed simulations, with the reason
  std::vector<std::string> verdicts;
  SweepOutcome sweep;
};

/// Runs the plan's sweep into options.out (refusing a foreign DIR before writing) and ranks the results. On MPI
/// ranks other than 0 returns nullopt once their share is done. Throws ConfigError when nothing could be
/// simulated.
std::optional<PlanOutcome> run_plan(const scenario::PlanSpec& plan, const SweepOptions& options, MpiSession* mpi);

/// The plan.json document (schema edgc.plan/1).
results::PlanDocument plan_document(const scenario::PlanSpec& plan, const PlanOutcome& outcome);

/// Hours and dollars as printed: whole numbers when large, 4 significant digits when small.
std::string plan_amount(double x);

}  // namespace edgc::engine
