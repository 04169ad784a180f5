#pragma once
// What `simulate` does around the one-iteration simulation (sim/README.md, "Whole runs"):
//  * an entropy curve (sim/entropy_curves.hpp) gives each simulated pipeline stage its gradient entropy at any
//    point of the run: from a recorded trace (measured by replay), or synthetic;
//  * sim::plan_policy() (sim/run_planner.hpp) runs a rank controller over the run window by window, sampling the
//    source at the GDS's sampled iterations, and turns its decisions into a RunSchedule;
//  * simulate_plans() simulates each distinct plan once, in its own child process, and returns the results.
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "edgc/core/controller.hpp"
#include "edgc/core/gds.hpp"
#include "edgc/sim/cost_model.hpp"
#include "edgc/sim/entropy_curves.hpp"
#include "edgc/sim/iteration.hpp"
#include "edgc/sim/run_planner.hpp"
#include "edgc/sim/spec.hpp"
#include "edgc/sim/variability.hpp"
#include "edgc/sim/whole_run.hpp"

namespace edgc::engine {

// ---- entropy over the run (sim/entropy_curves.hpp) ----

using sim::map_stages;  // the trace stage each simulated stage reads, by parameter count
using sim::SyntheticCurve;
using sim::SyntheticEntropy;
using sim::TraceCurve;
using sim::TraceEntropy;
using sim::TraceEntropyPoint;

// ---- rank schedules (sim/run_planner.hpp) ----

using sim::plan_policy;
using sim::PolicyRun;

// ---- simulation of distinct plans ----

struct SimulationSetup {
  sim::ClusterSpec cluster;
  sim::NetworkProfile network;
  sim::ModelSpec model;
  sim::ParallelSpec parallel;
  sim::CostParams cost;
  sim::ComputeVariability variability;  ///< the same draws in every simulation of a run (one seed)
  std::string framework;                ///< the scenario's `framework` (scenario::Framework), empty when not set
  std::string where = "simulate";       ///< the scenario file, named in errors found while simulating
  bool guard_pages = true;              ///< actor stacks with guard pages (sim::ActorStacks)
};

/// Simulates each plan once, each in its own child process (at most `jobs` at once), recording timelines when
/// asked. Input errors found in a child come back as ConfigError.
std::vector<sim::IterationResult> simulate_plans(const SimulationSetup& setup,
                                                 const std::vector<sim::DpSyncPlan>& plans, bool timeline, int jobs);

nlohmann::ordered_json iteration_to_json(const sim::IterationResult& r, bool with_timeline);
sim::IterationResult iteration_from_json(const nlohmann::json& j);

/// "32/32/40/uncompressed"-style label of a plan.
std::string plan_label(const sim::DpSyncPlan& plan);

/// Chrome trace (Perfetto) JSON of one iteration per plan: process = plan, thread = GPU rank.
nlohmann::ordered_json chrome_trace(const std::vector<sim::DpSyncPlan>& plans,
                                    const std::vector<sim::IterationResult>& results, const sim::ParallelSpec& parallel,
                                    int gpus_per_node);

}  // namespace edgc::engine
