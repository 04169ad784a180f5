#pragma once
// Upper bounds of the counts a scenario gives, checked when it is read: a value past them is a typo (or an integer
// overflow in the making: counts are 32-bit, products 64-bit), never a real machine or run. Each refusal is a
// ConfigError naming the scenario and the key, with the value, the limit and why it is there.
#include <cstdint>
#include <string>

#include "edgc/core/error.hpp"
#include "edgc/scenario/config.hpp"
#include "edgc/sim/spec.hpp"

namespace edgc::scenario {

/// Most GPUs of a cluster (cluster.nodes × cluster.gpus_per_node) and most of any one parallel degree
/// (parallelism.tp, pp, dp): about ten times the largest training clusters built (~100,000 GPUs).
inline constexpr std::int64_t kMaxGpus = std::int64_t{1} << 20;

/// Most micro-batches per iteration and pipeline (parallelism.microbatches, given or derived as
/// global_batch / (micro_batch·dp)): published runs use up to a few thousand, and each one is simulated.
inline constexpr std::int64_t kMaxMicrobatches = std::int64_t{1} << 16;

/// Most model chunks per GPU (parallelism.virtual_stages): no more than layers can ever be (model.layers' limit).
inline constexpr std::int64_t kMaxVirtualStages = std::int64_t{1} << 16;

/// Throws ConfigError(scenario, key, "<value> <unit> is beyond the supported maximum <limit> (<why>): check the
/// value") when value > limit.
inline void check_limit(const Scenario& scenario, const std::string& key, std::int64_t value, const std::string& unit,
                        std::int64_t limit, const std::string& why) {
  if (value <= limit) return;
  throw ConfigError(scenario.where(), key,
                    std::to_string(value) + " " + unit + " is beyond the supported maximum " + std::to_string(limit) +
                        " (" + why + "): check the value");
}

/// cluster.nodes and cluster.gpus_per_node, each and their product, against kMaxGpus.
inline void check_cluster_size(const Scenario& scenario, std::int64_t nodes, std::int64_t gpus_per_node) {
  const std::string why = "about ten times the largest GPU clusters built";
  check_limit(scenario, "cluster.gpus_per_node", gpus_per_node, "GPUs per node", kMaxGpus, why);
  check_limit(scenario, "cluster.nodes", nodes, "nodes", kMaxGpus, why);
  if (nodes > 0 && gpus_per_node > 0 && nodes * gpus_per_node > kMaxGpus)
    throw ConfigError(scenario.where(), "cluster.nodes",
                      std::to_string(nodes) + " nodes x " + std::to_string(gpus_per_node) + " GPUs = " +
                          std::to_string(nodes * gpus_per_node) + " GPUs is beyond the supported maximum " +
                          std::to_string(kMaxGpus) + " (" + why + "): check the value");
}

/// parallelism.tp, pp, dp against kMaxGpus, virtual_stages against kMaxVirtualStages, and the micro-batches per
/// iteration (parallelism.microbatches when given, else global_batch / (micro_batch·dp) as sim::validate derives
/// them) against kMaxMicrobatches. Zero and negative values are left to sim::validate.
inline void check_parallel_sizes(const Scenario& scenario, const sim::ModelSpec& model, const sim::ParallelSpec& p) {
  const std::string gpus = "about ten times the largest GPU clusters built";
  check_limit(scenario, "parallelism.tp", p.tp, "GPUs", kMaxGpus, gpus);
  check_limit(scenario, "parallelism.pp", p.pp, "stages", kMaxGpus, gpus);
  check_limit(scenario, "parallelism.dp", p.dp, "replicas", kMaxGpus, gpus);
  check_limit(scenario, "parallelism.ep", p.ep, "GPUs", kMaxGpus, gpus);
  check_limit(scenario, "parallelism.etp", p.etp, "GPUs", kMaxGpus, gpus);
  check_limit(scenario, "parallelism.virtual_stages", p.virtual_stages, "model chunks per GPU", kMaxVirtualStages,
              "no model has that many layers");
  const std::string batches = "published runs use a few thousand; every one is simulated";
  check_limit(scenario, "parallelism.microbatches", p.microbatches, "micro-batches", kMaxMicrobatches, batches);
  const std::int64_t per_step = std::int64_t{model.micro_batch_size} * p.dp;
  if (p.microbatches == 0 && per_step > 0 && model.global_batch_size / per_step > kMaxMicrobatches)
    throw ConfigError(scenario.where(), "model.global_batch_size",
                      std::to_string(model.global_batch_size) + " sequences / (micro_batch " +
                          std::to_string(model.micro_batch_size) + " x dp " + std::to_string(p.dp) +
                          ") = " + std::to_string(model.global_batch_size / per_step) +
                          " micro-batches per iteration is beyond the supported maximum " +
                          std::to_string(kMaxMicrobatches) + " (" + batches + "): check the value");
}

}  // namespace edgc::scenario
