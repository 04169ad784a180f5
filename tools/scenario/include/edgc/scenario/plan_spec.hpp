#pragma once
// The plan spec of `edgc plan`: cluster types, GPU counts and layouts, expanded into every option that can be
// laid out (the others are kept with the reason). Format (every key: scenarios/README.md):
//
//   {
//     "description": "…",
//     "base": "../paper/gpt2-12.1b-64xh100.json",       model, recipe, compression settings, trace
//     "target": {"iterations": 100000},                 or {"tokens": 2.0e11}: iterations = tokens / (global
//                                                       batch · sequence length), rounded up
//     "policies": ["none", "edgc"],                     compared policies (none is always included)
//     "clusters": ["../clusters/dgx-h100.json",         cluster files (relative to this spec), or objects
//                  {"cluster": "../clusters/dgx1-v100.json", "label": "V100", "set": {"compute.efficiency": 0.32},
//                   "gpus": [256]}],                    the entry's own GPU counts (whole nodes of it), else:
//     "gpus": [32, 64, 128],                            total GPU counts for every entry without its own
//                                                       (required unless every entry has them)
//     "layouts": [{"tp": 8, "pp": 4}, {"tp": 4, "pp": 4}],   dp = gpus / (tp · pp)
//     "set": {"network.profile": "ideal"},              optional overrides of every option
//     "pays_threshold": 0.02                            compression "pays" when it cuts training time by more
//   }
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace edgc::scenario {

/// One cluster option: a cluster type × GPU count × layout, as scenario overrides of the base.
struct PlanOption {
  std::string label;  ///< "64xH100 tp8 pp4 dp2"
  std::string gpu;    ///< the cluster's label (its GPU name unless given)
  int gpus = 0;
  int tp = 0;
  int pp = 0;
  int dp = 0;
  nlohmann::json sets;  ///< dotted key → value, applied on the base scenario
};

struct PlanSpec {
  std::string path;  ///< the spec file
  std::string base;  ///< absolute path of the base scenario
  std::string description;
  std::optional<std::int64_t> iterations;  ///< set for both targets once read
  std::optional<double> tokens;
  std::vector<std::string> policies = {"none"};
  std::vector<PlanOption> options;
  std::vector<std::string> skipped;  ///< combinations that cannot be laid out, with the reason
  nlohmann::json sets = nlohmann::json::object();
  double pays_threshold = 0.02;  ///< fraction of training time (results/verdict.hpp; `plan --min-saving` overrides)
  /// "max_error": the gradient-error budget (relative error of the averaged gradient, > 0): an option whose policy
  /// exceeds it is infeasible, with the figure. `edgc plan --max-error` overrides it.
  std::optional<double> max_error;
  nlohmann::ordered_json document;
};

/// Reads and expands a plan spec; throws ConfigError naming the file and key. When no combination can be laid out,
/// the message gives each one's reason (reason_list).
PlanSpec read_plan_spec(const std::string& path);

/// "<reason 1>; <reason 2>; …" for the first `shown` reasons, then "; and N more": why every option of a plan was
/// left out, in one line.
std::string reason_list(const std::vector<std::string>& reasons, std::size_t shown = 8);

}  // namespace edgc::scenario
