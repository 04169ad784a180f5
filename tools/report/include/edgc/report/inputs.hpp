#pragma once
// Typed views of the files `edgc report` reads: result.json of `edgc simulate`, sweep.json + results.jsonl of
// `edgc sweep`, plan.json of `edgc plan`. Readers check the schema name and every field the report uses, and
// throw ConfigError naming the file, the field (and for results.jsonl the line) on malformed input. Fields
// the report does not use are ignored, so newer writers that add fields stay readable.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "edgc/sim/whole_run.hpp"

namespace edgc::report {

// ---- result.json (schema edgc.result/1) ----

/// Mean seconds per iteration by where the time goes (the simulator's own record): compute, TP communication,
/// bubble, exposed DP communication and exposed compression add up to the iteration time; compression_s is all
/// compression compute, overlapped or not, NaN when the file has none.
using Breakdown = sim::IterationBreakdown;

/// Iterations [begin, end) run with these per-stage PowerSGD ranks (0 = uncompressed).
struct RankSegment {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::vector<std::int64_t> ranks;
};

/// One policy's whole-run figures, as result.json's runs[] and results.jsonl's runs[] both hold them. Optional
/// numbers are NaN when absent.
struct RunFigures {
  std::string policy;
  double iteration_time_s = 0.0;
  double comm_latency_s = 0.0;
  double training_time_s = 0.0;
  double speedup_vs_none = 0.0;
  double comm_latency_reduction_vs_none = 0.0;
  double training_time_reduction_vs_none = 0.0;
  double gpu_hours = 0.0;
  double cost_usd = 0.0;
};

/// One compared policy of a simulate result.
struct SimulatedRun : RunFigures {
  std::optional<Breakdown> breakdown;
  std::vector<RankSegment> rank_schedule;
  std::optional<std::int64_t> warmup_end_iteration;
};

/// Entropy per stage by both estimators, aligned with `iterations`; NaN where the file has null.
struct StageEntropy {
  std::int64_t stage = 0;
  std::vector<double> gaussian_nats;
  std::vector<double> histogram_nats;
};
struct EntropySeries {
  std::vector<double> iterations;
  std::vector<StageEntropy> stages;
};

struct SimulateResult {
  std::string setup;  ///< one line on cluster, layout, model and run length; empty when the file lacks them
  std::vector<SimulatedRun> runs;
  std::optional<EntropySeries> entropy;  ///< absent in results written before entropy_series existed
};

SimulateResult read_simulate_result(const std::filesystem::path& file);

// ---- sweep.json (schema edgc.sweep/1) + results.jsonl ----

/// A sweep parameter value: a number or a string, labelled as written in the file.
struct ParamValue {
  std::optional<double> number;
  std::string label;
  bool operator==(const ParamValue& o) const { return number && o.number ? *number == *o.number : label == o.label; }
};

struct SweepAxis {
  std::string key;
  std::vector<ParamValue> values;  ///< as listed in sweep.json; may be empty (e.g. random ranges)
};

/// One policy's outcome at a sweep point.
struct SweepRun : RunFigures {
  double training_time_s_ci95 = 0.0;  ///< half-width of the 95 % interval over repeats
};

struct SweepPoint {
  std::int64_t point = 0;
  std::vector<std::pair<std::string, ParamValue>> params;
  std::vector<SweepRun> runs;  ///< empty for a failed point
  std::string error;           ///< non-empty for a failed point
  const ParamValue* param(const std::string& key) const;
};

struct Sweep {
  std::string base;
  std::string mode;
  std::vector<SweepAxis> axes;
  std::int64_t planned_points = 0;  ///< "points" in sweep.json; 0 when absent
  std::int64_t repeats = 1;
  std::vector<std::string> policies;
  bool has_results = false;          ///< results.jsonl exists
  std::vector<SweepPoint> points;    ///< by point number; a point listed twice keeps its last line
  bool truncated_last_line = false;  ///< an unterminated, unparsable last line was ignored (a sweep still running)
};

/// Reads DIR/sweep.json and, when present, DIR/results.jsonl.
Sweep read_sweep(const std::filesystem::path& dir);

// ---- plan.json (schema edgc.plan/1) ----

struct PlanOption {
  std::string label;
  std::string gpu;                                ///< empty when absent
  std::string policy;                             ///< empty when absent
  std::int64_t gpus = 0, tp = 0, pp = 0, dp = 0;  ///< 0 when absent
  double training_time_s = 0.0;
  double cost_usd = 0.0;
  double speedup_vs_none = 0.0;  ///< NaN when absent
  bool pareto = false;
};

struct Plan {
  std::string target;  ///< e.g. "100k iterations"; empty when absent
  std::vector<PlanOption> options;
  std::vector<std::string> verdicts;
};

Plan read_plan(const std::filesystem::path& file);

}  // namespace edgc::report
