#pragma once
// Private to `simulate`: the result document (edgc.result/1) built from the simulation's figures.
#include <cstdint>
#include <nlohmann/json.hpp>

#include "edgc/engine/whole_run_plan.hpp"
#include "edgc/results/result_document.hpp"
#include "edgc/scenario/compression_config.hpp"
#include "edgc/sim/iteration.hpp"
#include "edgc/sim/whole_run.hpp"

namespace edgc::engine {

/// Sets the document's cluster, model, parallelism and run members, and its "simgrid", "network" and
/// "variability" sections.
void set_setup(results::ResultDocument& doc, const SimulationSetup& setup, std::int64_t iterations,
               const scenario::CompressionSettings& compression);

/// One entry of "runs": the policy's whole-run figures against the baseline run `base` (policy none).
results::ResultRun result_run(const PolicyRun& run, const sim::RunTotals& t, const sim::RunTotals& base,
                              double gpu_hours, double price_per_gpu_hour_usd);

/// One entry of "configurations": a simulated rank vector and its iteration.
nlohmann::ordered_json configuration_json(const sim::DpSyncPlan& plan, const sim::IterationResult& r);

}  // namespace edgc::engine
