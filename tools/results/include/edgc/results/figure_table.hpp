#pragma once
// The run figures: a compared policy's whole-run numbers (times, speedup, reductions, cost, gradient errors), the
// structs that hold them and the one table (kRunFigures) that every reader and reporter goes through — the JSON of
// runs[] entries in result.json and results.jsonl (writing, strict reading, the known keys), the mean and 95 %
// interval over a sweep point's repeats, summary.csv's columns, the sweep's best-points console table and the
// direction `sweep --best-by` ranks in. A new figure is a member of RunFigures and a row of kRunFigures (see
// tools/README.md, "How to add a run figure").
#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "edgc/results/json_reader.hpp"

namespace edgc::results {

/// One policy's whole-run figures, as result.json's runs[] and results.jsonl's runs[] both hold them. The
/// optional ones are NaN when absent and written only when finite.
struct RunFigures {
  static constexpr double kAbsent = std::numeric_limits<double>::quiet_NaN();
  std::string policy;
  double iteration_time_s = 0.0;
  double comm_latency_s = 0.0;
  double training_time_s = 0.0;
  double speedup_vs_none = 0.0;
  double comm_latency_reduction_vs_none = kAbsent;
  double training_time_reduction_vs_none = kAbsent;
  double gpu_hours = kAbsent;
  double cost_usd = kAbsent;
  /// The accuracy side (engine/fidelity.hpp): relative error ‖Ĝ − G‖/‖G‖ of the averaged gradient, measured by
  /// replaying the rank schedule through PowerSGD on the trace (mean over compressed iterations, stages weighted by
  /// parameters; 0 for a run without compression), and the CQM's prediction for the simulated shapes.
  double gradient_error = kAbsent;
  double cqm_error = kAbsent;
};

/// One policy's figures at a sweep point: the mean over the point's repeats, with the half-width of the 95 %
/// Student-t interval of the figures that have one (kRunFigures' ci95) when it ran more than once (NaN otherwise,
/// and not written).
struct SweepRun : RunFigures {
  std::optional<std::int64_t> warmup_end_iteration;   ///< of the first repeat
  std::optional<std::int64_t> compressed_iterations;  ///< of the first repeat
  double iteration_time_s_ci95 = kAbsent;
  double comm_latency_s_ci95 = kAbsent;
  double training_time_s_ci95 = kAbsent;
  double speedup_vs_none_ci95 = kAbsent;
  double cost_usd_ci95 = kAbsent;
  /// How often each limit decided a stage's rank (result.json's rank_bindings, of the first repeat); empty when the
  /// line has none.
  std::map<std::string, std::int64_t> rank_bindings;
};

/// Which way a figure is better: what `sweep --best-by` ranks by (lowest or highest first). Stated per figure,
/// never guessed from its name; kNone (no better side: half-widths, iteration counts) ranks highest first.
enum class Better { kLower, kHigher, kNone };

/// Whether a runs[] entry must have a figure, and when it is written.
enum class Presence {
  kRequired,          ///< always written; every reader requires it
  kRequiredInResult,  ///< always written; result.json requires it, a results.jsonl line may lack it (then NaN)
  kOptional,          ///< written only when finite; NaN when absent
};

/// A column of the sweep's best-points console table: the cell is fmt_f(figure × times / per, decimals), "-" when
/// the figure is not finite (a percentage: times 100; hours from seconds: per 3600). No header: not shown.
struct ConsoleColumn {
  const char* header = nullptr;
  int position = 0;  ///< the columns shown are ordered by position (after the point and its axis values)
  double times = 1.0;
  double per = 1.0;
  int decimals = 0;
};

/// One run figure.
struct RunFigureSpec {
  const char* key;             ///< the runs[] member in result.json and results.jsonl; summary.csv's `<policy>.<key>`
  double RunFigures::*member;  ///< where the typed documents hold it
  const char* unit;            ///< "s", "x" (a ratio), "fraction", "GPU-h" or "USD"
  Better better;
  Presence presence;
  /// Every figure is the mean over a sweep point's repeats; those with a member here also get the 95 % half-width,
  /// written as `<key>_ci95` (and a summary.csv column of that name when the sweep repeats).
  double SweepRun::*ci95;
  bool csv;  ///< a summary.csv column
  ConsoleColumn console;
};

/// Every run figure, in the order result.json, results.jsonl and summary.csv write them.
inline constexpr RunFigureSpec kRunFigures[] = {
    {.key = "iteration_time_s",
     .member = &RunFigures::iteration_time_s,
     .unit = "s",
     .better = Better::kLower,
     .presence = Presence::kRequiredInResult,
     .ci95 = &SweepRun::iteration_time_s_ci95,
     .csv = true,
     .console = {.header = "iter s", .position = 1, .decimals = 4}},
    {.key = "comm_latency_s",
     .member = &RunFigures::comm_latency_s,
     .unit = "s",
     .better = Better::kLower,
     .presence = Presence::kRequiredInResult,
     .ci95 = &SweepRun::comm_latency_s_ci95,
     .csv = true,
     .console = {}},
    {.key = "training_time_s",
     .member = &RunFigures::training_time_s,
     .unit = "s",
     .better = Better::kLower,
     .presence = Presence::kRequired,
     .ci95 = &SweepRun::training_time_s_ci95,
     .csv = true,
     .console = {.header = "train h", .position = 3, .per = 3600.0, .decimals = 2}},
    {.key = "speedup_vs_none",
     .member = &RunFigures::speedup_vs_none,
     .unit = "x",
     .better = Better::kHigher,
     .presence = Presence::kRequired,
     .ci95 = &SweepRun::speedup_vs_none_ci95,
     .csv = true,
     .console = {.header = "speedup", .position = 4, .decimals = 4}},
    {.key = "comm_latency_reduction_vs_none",
     .member = &RunFigures::comm_latency_reduction_vs_none,
     .unit = "fraction",
     .better = Better::kHigher,
     .presence = Presence::kOptional,
     .ci95 = nullptr,
     .csv = true,
     .console = {.header = "comm -%", .position = 2, .times = 100.0, .decimals = 2}},
    {.key = "training_time_reduction_vs_none",
     .member = &RunFigures::training_time_reduction_vs_none,
     .unit = "fraction",
     .better = Better::kHigher,
     .presence = Presence::kOptional,
     .ci95 = nullptr,
     .csv = true,
     .console = {}},
    {.key = "gpu_hours",
     .member = &RunFigures::gpu_hours,
     .unit = "GPU-h",
     .better = Better::kLower,
     .presence = Presence::kOptional,
     .ci95 = nullptr,
     .csv = true,
     .console = {}},
    {.key = "cost_usd",
     .member = &RunFigures::cost_usd,
     .unit = "USD",
     .better = Better::kLower,
     .presence = Presence::kOptional,
     .ci95 = &SweepRun::cost_usd_ci95,
     .csv = true,
     .console = {.header = "cost $", .position = 5, .decimals = 0}},
    {.key = "gradient_error",
     .member = &RunFigures::gradient_error,
     .unit = "fraction",
     .better = Better::kLower,
     .presence = Presence::kOptional,
     .ci95 = nullptr,
     .csv = true,
     .console = {.header = "grad err %", .position = 6, .times = 100.0, .decimals = 1}},
    {.key = "cqm_error",
     .member = &RunFigures::cqm_error,
     .unit = "fraction",
     .better = Better::kLower,
     .presence = Presence::kOptional,
     .ci95 = nullptr,
     .csv = true,
     .console = {.header = "CQM err %", .position = 7, .times = 100.0, .decimals = 1}},
};

/// The iteration counts a results.jsonl run carries beside its figures (of the first repeat, not averaged):
/// `--best-by` accepts them, summary.csv leaves them out.
struct RunCountSpec {
  const char* key;
  std::optional<std::int64_t> SweepRun::*member;
  Better better;
};
inline constexpr RunCountSpec kRunCounts[] = {
    {"warmup_end_iteration", &SweepRun::warmup_end_iteration, Better::kNone},
    {"compressed_iterations", &SweepRun::compressed_iterations, Better::kNone}};

/// The figure of that key; nullptr for any other name (a `_ci95` name included).
const RunFigureSpec* find_run_figure(std::string_view key);
/// `<key>_ci95`: the name of a figure's 95 % half-width.
std::string ci95_key(const RunFigureSpec& figure);
/// Whether `key` is "policy" or a figure's key: the members of a runs[] entry that RunFigures holds.
bool is_figure_key(std::string_view key);

/// The figures of a runs[] entry (result.json and results.jsonl), after its policy, in kRunFigures' order.
void write_figures(const RunFigures& f, nlohmann::ordered_json& out);
/// The figures of a runs[] entry; kRequiredInResult ones are required when `times_required`. Throws ConfigError
/// naming the member.
void read_figures(const JsonNode& r, bool times_required, RunFigures& f);
/// The finite half-widths, as `<key>_ci95` members in kRunFigures' order.
void write_ci95(const SweepRun& run, nlohmann::ordered_json& out);
/// The half-widths present (NaN where absent).
void read_ci95(const JsonNode& r, SweepRun& run);

/// Sets every figure of `out` to its mean over `repeats` (one policy's figures, one per repeat, at least one) and,
/// with more than one, every half-width to the 95 % Student-t one.
void average_figures(const std::vector<const RunFigures*>& repeats, SweepRun& out);

/// The names run_figure() knows, in column order: the figures, their *_ci95 half-widths (`with_ci`), then the
/// iteration counts (kRunCounts).
std::vector<std::string> run_figure_names(bool with_ci);
/// A run figure by its results.jsonl name ("training_time_s", "cost_usd_ci95", …); nullopt for an unknown name or
/// an absent iteration count.
std::optional<double> run_figure(const SweepRun& run, const std::string& name);
/// Which way `name` (one of run_figure_names(true)) is better: the figure's own direction, kNone for a half-width
/// or an iteration count. Throws InternalError for an unknown name.
Better better_of(const std::string& name);

/// summary.csv's columns per policy, in order: the figures with `csv`, then (`with_ci`) their half-widths.
std::vector<std::string> csv_figure_columns(bool with_ci);

/// The figures the sweep's best-points table shows, by their console position.
std::vector<const RunFigureSpec*> console_figures();
/// The figure's best-points cell (ConsoleColumn).
std::string console_cell(const RunFigureSpec& figure, const RunFigures& run);

}  // namespace edgc::results
