#pragma once
// The simulated iterations of one simulate run's rank vectors (simulation.cpp): each distinct plan simulated once,
// composed from uniform plans where the layout is stage-separable, and shared with other processes through a cache
// directory.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cache_entry.hpp"
#include "edgc/engine/whole_run_plan.hpp"
#include "edgc/sim/iteration.hpp"
#include "edgc/sim/whole_run.hpp"

namespace edgc::engine {

// Iterations of plans, in order of first request. simulate() adds the ones not seen before: with `compose`
// (stages_separable) each is composed from uniform plans, which are simulated once; otherwise each is simulated.
// With a cache directory, a simulation some earlier run stored there is read instead of run.
struct PlanCache {
  std::vector<sim::DpSyncPlan> plans;
  std::vector<sim::IterationResult> results;
  std::string dir;        ///< SimulateRequest::cache_dir
  std::string setup_key;  ///< Inputs::setup_key
  bool compose = false;
  std::vector<sim::DpSyncPlan> simulated_plans;  ///< what was actually simulated (or read from the cache)
  std::vector<sim::IterationResult> simulated_results;
  int simulated = 0;  ///< simulations run by this process (cache misses)
  /// Another cache of the same setup and composition (the break-even probe's): the plans it simulated or read are
  /// taken from it instead of being simulated again, and count as they would have here (simulated without a cache
  /// directory, read with one, where the other stored them). Not for timelines, which it does not hold.
  const PlanCache* earlier = nullptr;

  std::filesystem::path entry(const sim::DpSyncPlan& p) const;  ///< the cache file of `p`
  // The digest of setup_key + "|", made on the first entry() for the current setup_key.
  mutable std::string digested_key;
  mutable std::optional<Digest> setup_digest;
  /// Simulates (or reads) each of `wanted` not yet in simulated_plans.
  void simulate_exact(const SimulationSetup& setup, const std::vector<sim::DpSyncPlan>& wanted, bool timeline,
                      int jobs);
  void run_and_store(const SimulationSetup& setup, const std::vector<sim::DpSyncPlan>& todo, bool timeline, int jobs,
                     bool stored);
  /// Adds the plans of `wanted` not seen before to plans and results.
  void simulate(const SimulationSetup& setup, const std::vector<sim::DpSyncPlan>& wanted, bool timeline, int jobs);
  static std::size_t index_of(const std::vector<sim::DpSyncPlan>& v, const sim::DpSyncPlan& p);
  const sim::IterationResult& at(const sim::DpSyncPlan& p) const { return results[index_of(plans, p)]; }
};

}  // namespace edgc::engine
