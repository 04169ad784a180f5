#pragma once
// Private to `simulate`: the parts of result.json (edgc.result/1) it builds from the simulation's figures.
#include <cstdint>
#include <nlohmann/json.hpp>

#include "edgc/engine/whole_run_plan.hpp"
#include "edgc/scenario/compression_config.hpp"
#include "edgc/sim/iteration.hpp"
#include "edgc/sim/whole_run.hpp"

namespace edgc::engine {

/// "cluster", "network", "model", "parallelism", "run" and "variability", in that order.
nlohmann::ordered_json setup_json(const SimulationSetup& setup, std::int64_t iterations,
                                  const scenario::CompressionSettings& compression);

/// One entry of "runs": the policy's whole-run figures against the baseline run `base` (policy none).
nlohmann::ordered_json run_json(const PolicyRun& run, const sim::RunTotals& t, const sim::RunTotals& base,
                                double gpu_hours, double price_per_gpu_hour_usd);

/// One entry of "configurations": a simulated rank vector and its iteration.
nlohmann::ordered_json configuration_json(const sim::DpSyncPlan& plan, const sim::IterationResult& r);

}  // namespace edgc::engine
