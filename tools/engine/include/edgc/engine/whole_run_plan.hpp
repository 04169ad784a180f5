#pragma once
// What `simulate` does around the one-iteration simulation (sim/README.md, "Whole runs"):
//  * an EntropySource gives each simulated pipeline stage its gradient entropy at any point of the run: from a
//    recorded trace (replay), or from a synthetic curve;
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
#include "edgc/sim/iteration.hpp"
#include "edgc/sim/run_planner.hpp"
#include "edgc/sim/spec.hpp"
#include "edgc/sim/variability.hpp"
#include "edgc/sim/whole_run.hpp"

namespace edgc::engine {

// ---- entropy over the run ----

/// Entropy of every captured iteration of a trace, per trace pipeline stage (filled by measure_trace_entropy()).
struct TraceEntropyPoint {
  std::int64_t iteration = 0;
  std::optional<double> loss;
  std::vector<core::StageObservation> stages;
};
struct TraceEntropy {
  std::string path;
  std::int64_t steps = 0;                    ///< last captured iteration + 1: the trace's training length
  std::vector<std::int64_t> stage_elements;  ///< gradient elements per trace stage (all tensors)
  std::vector<TraceEntropyPoint> points;     ///< one per captured iteration, in order
};

/// Entropy of simulated stage `stage` at run fraction f ∈ [0, 1] (sim::EntropyCurve), and how it was made.
class EntropySource : public sim::EntropyCurve {
 public:
  /// How the curve was made, for result.json.
  virtual nlohmann::ordered_json describe() const = 0;
};

/// H(f) = end + (start − end)·exp(−f / decay_fraction) + stage·stage_step_nats + noise, the same value for both
/// estimators; noise is uniform with standard deviation noise_nats, a fixed function of (seed, stage, f).
struct SyntheticEntropy {
  double start_nats = -5.0;
  double end_nats = -7.0;
  double decay_fraction = 0.1;
  double stage_step_nats = 0.0;
  double noise_nats = 0.0;
  std::uint64_t seed = 0;
};
/// Throws ConfigError naming `where` and the entropy.synthetic key unless decay_fraction > 0 and noise_nats ≥ 0.
std::unique_ptr<EntropySource> make_synthetic_source(const SyntheticEntropy& s, const std::string& where);

/// A trace's entropy curve mapped onto the simulated run (scenarios/SOURCES.md §14): the iteration axis is scaled so
/// that the trace's training length spans the whole run (run fraction f ↔ trace iteration f·steps, values interpolated
/// linearly between captured iterations and held outside them), and simulated stage s takes the trace stage
/// that holds the middle of s's share of the parameters (both sides split by parameter count).
/// `stage_parameters` holds the simulated stages' parameter counts.
std::unique_ptr<EntropySource> make_trace_source(TraceEntropy trace, const std::vector<double>& stage_parameters);
using sim::map_stages;  // the trace stage each simulated stage reads, by the parameter-count rule above

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
  std::string where = "simulate";       ///< the scenario file, named in errors found while simulating
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
