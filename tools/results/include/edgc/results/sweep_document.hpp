#pragma once
// A sweep's documents: sweep.json (schema edgc.sweep/1, the spec and its expanded axes) and the lines of
// results.jsonl (one per finished point), typed, with one writer (to_json) and one strict reader each; plus the
// sweep's CSV reporter (summary.csv).
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "edgc/results/figure_table.hpp"
#include "edgc/results/json_reader.hpp"
#include "edgc/results/result_document.hpp"

namespace edgc::results {

inline constexpr const char* kSweepSchema = "edgc.sweep/1";

/// One line of results.jsonl: a finished point, or (non-empty `error`) a point whose scenario was rejected.
struct SweepRecord {
  std::int64_t point = 0;
  nlohmann::ordered_json params = nlohmann::ordered_json::object();  ///< axis key → value, as the spec gave it
  std::string error;
  std::int64_t gpus = 0;  ///< 0 when absent
  std::string gpu;
  std::string compute;  ///< the compute model the point ran with ("kernels", "efficiency"); empty when absent
  std::int64_t repeats = 1;
  std::int64_t simulations = 0;
  std::vector<SweepRun> runs;  ///< empty for a failed point
  double wall_s = RunFigures::kAbsent;
  /// result.json's memory: the peak per GPU over the stages and the GPU's capacity (GiB; NaN when absent, the
  /// capacity also when the cluster gives none). The same for every policy of the point.
  double peak_memory_GiB = RunFigures::kAbsent;
  double memory_capacity_GiB = RunFigures::kAbsent;
  /// Per policy, the validation-loss change against none that matching convergence records measured (result.json's
  /// runs[].measured_loss.change of the first repeat, results/convergence.hpp); empty when no record matched.
  std::map<std::string, double> measured_val_loss_change;
  /// The simulated model's parameters over those of the model whose trace measured the gradient error
  /// (results::trace_smaller_by of the first repeat); NaN when unknown. Above kTraceScaleLimit the point's verdict
  /// does not quote the measured error.
  double trace_smaller_by = RunFigures::kAbsent;

  bool failed() const { return !error.empty(); }
  const SweepRun* find_run(const std::string& policy) const;
};

/// The line, without its newline.
nlohmann::ordered_json to_json(const SweepRecord& record);
/// One line: an integer point, an object of params, then an error or runs (each with a policy, a training
/// time and a speedup; the other figures optional).
SweepRecord parse_sweep_record(const JsonNode& line);

/// Every complete line of `file` (results.jsonl) through read_sweep_lines and parse_sweep_record, by point; a
/// missing file is empty. `truncated` (when given) says whether an unterminated last line was left out.
std::vector<SweepRecord> read_sweep_records(const std::filesystem::path& file, bool* truncated = nullptr);

/// The averaged runs of one point over its repeats (each a result document of the same policies): the mean of
/// every figure and, with several repeats, the 95 % half-widths.
std::vector<SweepRun> average_runs(const std::vector<ResultDocument>& repeats);

/// sweep.json.
struct SweepDocument {
  struct Axis {
    std::string key;
    nlohmann::ordered_json values = nlohmann::ordered_json::array();  ///< the values points take, as written
    std::optional<std::pair<double, double>> range;                   ///< random sweeps: the drawn range
  };
  std::string spec_file;
  std::string base;
  std::string description;
  std::string mode = "grid";  ///< "grid" or "random"
  std::vector<Axis> axes;
  std::int64_t points = 0;
  std::int64_t repeats = 1;
  std::vector<std::string> policies;
  nlohmann::ordered_json spec;  ///< the spec as read (what --resume compares)
  /// The gradient-error budget of the sweep's last run (`--max-error`, else the spec's max_error); absent: none.
  /// `report` leaves out the points over it, as the sweep's own table and summary.csv do.
  std::optional<double> max_error;
  /// The verdict threshold of the sweep's last run (`--min-saving`), a share of the uncompressed training time.
  double min_saving = 0.02;
};

nlohmann::ordered_json to_json(const SweepDocument& doc);
/// Needs the schema and the axes (each with a key); the rest is optional.
SweepDocument parse_sweep_document(const JsonNode& root);
SweepDocument read_sweep_document(const std::filesystem::path& file);

/// summary.csv: one row per record, the axes (in `axis_keys` order), GPUs and GPU, then every figure per
/// policy (policies in first-seen order; the *_ci95 columns when `with_ci`; with a gradient-error budget a
/// `<policy>.error_budget` column: ok, or why the point is infeasible), then the error.
std::string summary_csv(const std::vector<std::string>& axis_keys, const std::vector<SweepRecord>& records,
                        bool with_ci, std::optional<double> max_error = std::nullopt);

/// The gradient error a budget judges: the measured one, else the CQM's prediction; NaN when the run has neither.
double judged_error(const RunFigures& run);
/// Empty when the run is within the budget, else why not ("gradient error 55.5 % > budget 20.0 %", or that no
/// error figure is known).
std::string over_budget(const RunFigures& run, double max_error);

/// The kernel-level compute model's error bar (kernel_model_caveat), one line per GPU whose finished points ran
/// with it (SweepRecord::compute == "kernels"), with their count; empty when none did.
std::vector<std::string> kernel_model_warnings(const std::vector<SweepRecord>& records);

/// Where a sweep's answer rests on thin evidence, one line each:
/// * an axis `compression.r_min` (or `r_max`) whose bound decided no rank of a policy at any finished point (by
///   the runs' rank_bindings; only policies whose runs carry them, and not `static`, whose rank is fixed): the
///   axis changes nothing for that policy;
/// * a policy's fastest point by training time (within `max_error`, when given) on the smallest or largest value
///   of a numeric axis of at least kEdgeAxisValues values: the optimum may lie beyond the grid;
/// * kernel_model_warnings(records).
std::vector<std::string> sweep_warnings(const SweepDocument& doc, const std::vector<SweepRecord>& records,
                                        std::optional<double> max_error);
/// Numeric axes with fewer values have every value on an edge: the best-point warning skips them.
inline constexpr std::size_t kEdgeAxisValues = 3;

}  // namespace edgc::results
