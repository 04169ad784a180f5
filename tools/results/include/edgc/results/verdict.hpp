#pragma once
// The one verdict rule: does a compressing policy pay against no compression? simulate (console, result.json),
// report, sweep and plan all judge through judge() here, so one threshold and one sign convention hold everywhere:
// a saving is the share of the uncompressed training time a policy saves, positive when it is faster.
//
//   pays          saving > min_saving (default 2 % of training time, `--min-saving`)
//   marginal      0 < saving ≤ min_saving: real but below what a planner should act on
//   does not pay  saving ≤ 0 (or unknown)
//
// The reason is given in numbers: the share of the uncompressed iteration the data-parallel sync takes (the time
// DP compression works on), and the static-rank comparison at equal time (which policy is better and its gradient
// error). Figures are printed to 3 significant digits.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "edgc/results/figure_table.hpp"

namespace edgc::results {

struct ResultDocument;

/// `--min-saving`'s default: 2 % of the uncompressed training time (assumed: below this, run-to-run noise of a real
/// cluster and the compression's own risk outweigh the gain).
inline constexpr double kDefaultMinSaving = 0.02;
/// Two policies run "at equal time" when their savings differ by less than this share of the uncompressed
/// training time (0.1 %); then the one with less gradient error is the better.
inline constexpr double kEqualTimeTolerance = 0.001;

enum class Payoff { kPays, kMarginal, kDoesNotPay };

/// "pays", "marginal" or "does not pay".
const char* payoff_name(Payoff p) noexcept;

/// The rule itself: kPays when saving > min_saving, kMarginal when 0 < saving ≤ min_saving, else kDoesNotPay
/// (NaN included). `saving` and `min_saving` are fractions of the uncompressed training time.
Payoff judge_saving(double saving, double min_saving) noexcept;

/// x to 3 significant digits, never in exponent form ("0.281", "48.5", "8350", "0").
std::string fmt_sig3(double x);

/// One policy's figures as the verdict reads them.
struct VerdictRun {
  std::string policy;
  double saving = RunFigures::kAbsent;       ///< 1 − training time / uncompressed training time
  double hours_saved = RunFigures::kAbsent;  ///< uncompressed − this training time, hours
  double usd_saved = RunFigures::kAbsent;    ///< NaN when no price is known
  double error = RunFigures::kAbsent;        ///< relative gradient error: measured on the trace, else the CQM's
  bool error_measured = false;               ///< error was measured on the trace (not only predicted by the CQM)
  double cqm_error = RunFigures::kAbsent;    ///< the CQM's prediction, quoted beside a measured error
  /// The simulated model's parameters over the traced model's (result_verdicts, from result.json); above
  /// kTraceScaleLimit the measured error is not evidence. NaN when unknown.
  double trace_smaller_by = RunFigures::kAbsent;
};

/// A trace of a model more than this many times smaller than the simulated one gives no evidence of the gradient
/// error (assumed: gradient structure, and so PowerSGD's error at a rank, changes with the model's size class).
inline constexpr double kTraceScaleLimit = 100.0;

/// A compressing run against the uncompressed baseline `none` of the same comparison (policy, saving, hours, cost
/// and error; the error measured when gradient_error is finite, else cqm_error).
VerdictRun verdict_run(const RunFigures& run, const RunFigures& none);

struct VerdictInput {
  VerdictRun run;
  /// Slowest stage's data-parallel sync over the iteration, both of the uncompressed run; NaN when unknown.
  double dp_sync_share = RunFigures::kAbsent;
  /// The static-rank run of the same comparison, for a run that is not itself static-rank.
  std::optional<VerdictRun> static_run;
};

struct Verdict {
  std::string policy;
  Payoff payoff = Payoff::kDoesNotPay;
  double saving = RunFigures::kAbsent;
  double min_saving = kDefaultMinSaving;
  double dp_sync_share = RunFigures::kAbsent;
  /// Against static rank: "static" or the policy's own name, whichever is better (less error at equal time, or
  /// faster and no less accurate); empty when there is no static run or neither dominates.
  std::string better_than_static;
  /// Peak memory per GPU with compression (result_verdicts only): the simulated peak plus the error-feedback buffer
  /// (memory_with_error_feedback); NaN when the result has no memory section.
  double peak_memory_GiB = RunFigures::kAbsent;
  /// The gradient error as `text` words it: " at 48.5 % gradient error (measured on the trace; CQM 89.7 %)", or
  /// "; its gradient error is not known (…)" when the only figure is the CQM's or the trace is of a model over
  /// kTraceScaleLimit times smaller; empty when no error is known. For callers that word their own sentence (plan).
  std::string error_clause;
  std::string text;  ///< one sentence: verdict, saving, error, reason in numbers (and memory, from result_verdicts)
};

/// Judges `in` at threshold `min_saving` (a fraction) and words it.
Verdict judge(const VerdictInput& in, double min_saving);

/// Every compressing policy of `runs` against the run of the baseline policy none in it (empty without one); the
/// static comparison uses the run of policy static when there is one.
/// `trace_smaller_by`: VerdictRun::trace_smaller_by of every run.
std::vector<Verdict> judge_runs(const std::vector<const RunFigures*>& runs, double min_saving,
                                double trace_smaller_by = RunFigures::kAbsent);

/// Bytes per parameter of PowerSGD's error-feedback buffer: fp32, one value per compressed gradient element (assumed:
/// edgc's engine keeps it in fp32; the authors' port in bf16, half this).
inline constexpr double kErrorFeedbackBytesPerParameter = 4.0;

/// Memory with compression from result.json's "memory" section: per stage, its simulated peak plus its parameters ×
/// kErrorFeedbackBytesPerParameter (the memory model has no error-feedback buffer); the largest over stages, and a
/// sentence with it, the GPU's capacity and the headroom. Peak NaN and "" without the section.
struct MemoryWithCompression {
  double peak_GiB = RunFigures::kAbsent;
  std::string text;
};
MemoryWithCompression memory_with_error_feedback(const ResultDocument& doc);

/// Where verdict `v` does not pay: the NIC bandwidth at which it would, from simulate's "bandwidth" section ("It would
/// pay (save 2.00 %) at a NIC bandwidth of 1.83 GB/s per NIC (0.915 GB/s = 7.32 Gb/s per GPU), against this
/// cluster's …"), or that none down to the searched low end does; without the section (or the policy in it), the
/// `edgc breakeven` command that finds it. Empty when `v` pays or the run has no data-parallel sync across nodes.
std::string bandwidth_clause(const ResultDocument& doc, const Verdict& v);

/// The simulated model's parameters over the traced model's whose gradients measured the error (result.json's
/// model.parameters over fidelity.trace_parameters): VerdictRun::trace_smaller_by. NaN when either is unknown.
double trace_smaller_by(const ResultDocument& doc);

/// judge_runs over a result document's runs, each text ending in memory_with_error_feedback's sentence.
std::vector<Verdict> result_verdicts(const ResultDocument& doc, double min_saving);

/// result.json's "verdict" section: {"min_saving", "runs": [{"policy", "verdict", "saving", "dp_sync_share",
/// "better_than_static", "text"}]}.
nlohmann::ordered_json verdict_section(const std::vector<Verdict>& verdicts, double min_saving);

/// result.json's "break_even" section in one line: "break-even rank per stage (compressed DP sync, compression
/// included, as slow as uncompressed): 96.3, 101; r_max 128 from compression.r_max (auto: 96)"; empty without one.
std::string break_even_line(const ResultDocument& doc);

/// The threshold a result was judged at: its "verdict" section's min_saving, else kDefaultMinSaving.
double result_min_saving(const ResultDocument& doc);

}  // namespace edgc::results
