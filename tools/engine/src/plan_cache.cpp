// PlanCache (plan_cache.hpp): simulated iterations per rank vector, composed where the layout allows, read from and
// stored to a shared cache directory.
#include "plan_cache.hpp"

#include <algorithm>

#include "cache_entry.hpp"
#include "edgc/core/atomic_file.hpp"
#include "edgc/engine/whole_run_plan.hpp"

namespace edgc::engine {

namespace fs = std::filesystem;

fs::path PlanCache::entry(const sim::DpSyncPlan& p) const {
  if (!setup_digest || digested_key != setup_key) {
    setup_digest.emplace(setup_key);
    setup_digest->add("|");
    digested_key = setup_key;
  }
  return fs::path(dir) / ("iteration-" + Digest(*setup_digest).add(plan_label(p)).hex() + ".json");
}

// Simulates (or reads) each of `wanted` not yet in simulated_plans.
void PlanCache::simulate_exact(const SimulationSetup& setup, const std::vector<sim::DpSyncPlan>& wanted, bool timeline,
                               int jobs) {
  const bool stored = !dir.empty() && !timeline;  // timelines are large and wanted fresh: not cached
  std::vector<sim::DpSyncPlan> missing;
  for (const auto& p : wanted) {
    if (std::find(simulated_plans.begin(), simulated_plans.end(), p) != simulated_plans.end() ||
        std::find(missing.begin(), missing.end(), p) != missing.end())
      continue;
    if (earlier != nullptr && !timeline) {
      if (const std::size_t k = index_of(earlier->simulated_plans, p); k < earlier->simulated_plans.size()) {
        simulated_plans.push_back(p);
        simulated_results.push_back(earlier->simulated_results[k]);
        if (!stored) ++simulated;
        continue;
      }
    }
    if (stored) {
      if (const auto j = read_json_if_present(entry(p), true)) {
        simulated_plans.push_back(p);
        simulated_results.push_back(iteration_from_json(*j));
        continue;
      }
    }
    missing.push_back(p);
  }
  if (missing.empty()) return;
  // Other processes sharing the cache (sweep workers) may be simulating some of them: those are read once done.
  std::vector<fs::path> entries;
  for (const auto& p : missing) entries.push_back(entry(p));
  EntryClaims claims(stored ? entries : std::vector<fs::path>{});
  std::vector<sim::DpSyncPlan> mine = stored ? std::vector<sim::DpSyncPlan>{} : missing;
  for (const std::size_t i : claims.mine()) mine.push_back(missing[i]);
  run_and_store(setup, mine, timeline, jobs, stored);
  claims.release();
  for (const std::size_t i : claims.others()) {
    EntryClaims::wait_for(entries[i]);
    if (const auto j = read_json_if_present(entries[i], true)) {
      simulated_plans.push_back(missing[i]);
      simulated_results.push_back(iteration_from_json(*j));
    } else {
      run_and_store(setup, {missing[i]}, false, jobs, stored);  // its simulator gave up: simulated here
    }
  }
}

void PlanCache::run_and_store(const SimulationSetup& setup, const std::vector<sim::DpSyncPlan>& todo, bool timeline,
                              int jobs, bool stored) {
  if (todo.empty()) return;
  std::vector<sim::IterationResult> r = simulate_plans(setup, todo, timeline, jobs);
  simulated += static_cast<int>(todo.size());
  for (std::size_t i = 0; i < todo.size(); ++i) {
    if (stored) write_file_atomic(entry(todo[i]), iteration_to_json(r[i], false).dump() + "\n");
    simulated_plans.push_back(todo[i]);
    simulated_results.push_back(std::move(r[i]));
  }
}

void PlanCache::simulate(const SimulationSetup& setup, const std::vector<sim::DpSyncPlan>& wanted, bool timeline,
                         int jobs) {
  std::vector<sim::DpSyncPlan> fresh;
  for (const auto& p : wanted)
    if (std::find(plans.begin(), plans.end(), p) == plans.end() &&
        std::find(fresh.begin(), fresh.end(), p) == fresh.end())
      fresh.push_back(p);
  if (fresh.empty()) return;
  if (!compose || timeline) {
    simulate_exact(setup, fresh, timeline, jobs);
    for (const auto& p : fresh) {
      plans.push_back(p);
      results.push_back(simulated_results[index_of(simulated_plans, p)]);
    }
    return;
  }
  // Plans whose boundaries differ in pipeline rank (edgc-pp with entropy-driven ranks) have their own pipeline
  // part: simulated as they are; the others composed.
  std::vector<sim::DpSyncPlan> composable;
  std::vector<sim::DpSyncPlan> own;
  for (const auto& p : fresh) {
    const bool uniform_pp =
        std::all_of(p.begin(), p.end(), [&](const sim::StageSync& x) { return x.pp_rank == p.front().pp_rank; });
    (uniform_pp ? composable : own).push_back(p);
  }
  if (!own.empty()) simulate_exact(setup, own, false, jobs);
  const std::vector<sim::DpSyncPlan> basis = sim::separable_basis(composable);
  simulate_exact(setup, basis, false, jobs);
  std::vector<sim::IterationResult> basis_results;
  for (const auto& b : basis) basis_results.push_back(simulated_results[index_of(simulated_plans, b)]);
  for (const auto& p : fresh) {
    plans.push_back(p);
    results.push_back(std::find(own.begin(), own.end(), p) != own.end()
                          ? simulated_results[index_of(simulated_plans, p)]
                          : sim::compose_separable(p, basis, basis_results));
  }
}

std::size_t PlanCache::index_of(const std::vector<sim::DpSyncPlan>& v, const sim::DpSyncPlan& p) {
  return static_cast<std::size_t>(std::find(v.begin(), v.end(), p) - v.begin());
}

}  // namespace edgc::engine
