#pragma once
// What `edgc report` shows of the files it reads: result.json of `edgc simulate`, sweep.json + results.jsonl of
// `edgc sweep`, plan.json of `edgc plan`. The documents are read by their one strict reader in edgc::results
// (result_document.hpp, sweep_document.hpp, plan_document.hpp), which throws ConfigError naming the file, the
// field (and for results.jsonl the line); here they become the report's views: a setup line, labelled sweep
// parameters, a target phrase.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "edgc/results/plan_document.hpp"
#include "edgc/results/result_document.hpp"
#include "edgc/results/sweep_document.hpp"

namespace edgc::report {

// ---- result.json (schema edgc.result/1) ----

using Breakdown = sim::IterationBreakdown;
using results::EntropySeries;
using results::RankSegment;
using results::RunFigures;
using results::StageEntropy;
using SimulatedRun = results::ResultRun;

struct SimulateResult {
  std::string setup;  ///< one line on cluster, layout, model and run length; empty when the file lacks them
  std::vector<SimulatedRun> runs;
  std::optional<EntropySeries> entropy;    ///< absent in results written before entropy_series existed
  std::vector<std::string> warnings;       ///< result.json's warnings[] (absent in older results: none)
  std::vector<std::string> verdicts;       ///< one line per compressing policy: does it pay, by how much, at what error
  std::vector<std::string> settings;       ///< the settings that produced the result (compression, network, trace)
  nlohmann::ordered_json bandwidth;        ///< result.json's "bandwidth" section (engine/bandwidth.hpp); null if absent
  std::vector<std::string> measured_loss;  ///< results::convergence_lines: the measured loss change per policy
  nlohmann::ordered_json convergence;      ///< result.json's "convergence" section; null if absent
};

/// Per policy other than `none`, the verdict of results::judge (verdict.hpp) at the threshold the result was written
/// with: "edgc marginal: saves 0.281 % of training time (…) at 48.5 % gradient error …". Empty without a `none` run.
std::vector<std::string> verdict_lines(const results::ResultDocument& doc);
/// The settings behind a result: compression (window, α, β, r_min, r_max, step), network profile, the entropy
/// source and the trace the gradient error was measured on, with its mapping; what the document has.
std::vector<std::string> settings_lines(const results::ResultDocument& doc);

SimulateResult read_simulate_result(const std::filesystem::path& file);

/// One line on cluster, layout, model and run length ("64 × H100, TP 8 × PP 4 × DP 2, model …"), from what the
/// document has; empty when it has none of them.
std::string describe_setup(const results::ResultDocument& doc);

// ---- sweep.json (schema edgc.sweep/1) + results.jsonl ----

/// A sweep parameter value: a number or a string, labelled as written in the file.
struct ParamValue {
  std::optional<double> number;
  std::string label;
  bool operator==(const ParamValue& o) const { return number && o.number ? *number == *o.number : label == o.label; }
};

/// Strings as such; numbers labelled exactly when integral, else with 4 significant digits (random sweeps
/// draw values like 0.4807023266571021); anything else (booleans, bundles of settings) by its JSON text.
ParamValue param_value(const nlohmann::ordered_json& value);

/// A sweep axis with its values labelled.
struct LabelledAxis {
  std::string key;
  std::vector<ParamValue> values;  ///< as listed in sweep.json; may be empty (e.g. random ranges)
};

using results::SweepRun;

/// A sweep point with its parameters labelled.
struct LabelledPoint {
  std::int64_t point = 0;
  std::vector<std::pair<std::string, ParamValue>> params;
  std::vector<SweepRun> runs;  ///< empty for a failed point
  std::string error;           ///< non-empty for a failed point
  const ParamValue* param(const std::string& key) const;
};

struct Sweep {
  std::string base;
  std::string mode;
  std::vector<LabelledAxis> axes;
  std::int64_t planned_points = 0;  ///< "points" in sweep.json; 0 when absent
  std::int64_t repeats = 1;
  std::vector<std::string> policies;
  bool has_results = false;           ///< results.jsonl exists
  std::vector<LabelledPoint> points;  ///< by point number
  bool truncated_last_line = false;   ///< an unterminated, unparsable last line was ignored (a sweep still running)
  std::vector<std::string> warnings;  ///< results::sweep_warnings (budget: the spec's max_error, when it has one)
  std::optional<double> max_error;    ///< the spec's gradient-error budget, when it has one
};

/// Reads DIR/sweep.json and, when present, DIR/results.jsonl.
Sweep read_sweep(const std::filesystem::path& dir);

// ---- plan.json (schema edgc.plan/1) ----

using PlanOption = results::PlanDocument::Option;

struct Plan {
  std::string target;  ///< e.g. "100k iterations"; empty when absent
  std::vector<PlanOption> options;
  std::vector<std::string> verdicts;
  std::optional<double> max_error;      ///< the gradient-error budget, when the plan had one
  std::vector<std::string> infeasible;  ///< options left out, each with its reason
};

Plan read_plan(const std::filesystem::path& file);

}  // namespace edgc::report
