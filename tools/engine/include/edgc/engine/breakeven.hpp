#pragma once
// `edgc breakeven`: the inverse of simulate. Which value of one scenario key (the NIC bandwidth, the global batch)
// makes a policy's training-time saving against no compression reach a target, and where does it reach 0?
//
// Method: a bracketed root search over whole simulate runs (run_simulation, policies none and the named one, each
// simulation in its own child process). Each step simulates one value; the next value is the secant of the two
// bracket ends (in log space for positive values), kept within the middle 80 % of the bracket so that a bent curve
// still halves it at worst. It stops when a simulated saving is within `tolerance` of the sought saving (for the 0 %
// crossing 1e-4 points: savings flatten towards 0, so only the sign change locates it), when the bracket is narrower
// than `value_tolerance` (relative), or after `max_steps` simulations per sought saving.
//
// Assumption (stated in the output): the saving is monotone in the key over [lo, hi]. With that, the target lies
// between the savings at lo and hi or nowhere in the bracket; a target outside them is refused (UsageError) before
// any search. Every simulated value is kept and written as the curve; a curve that turns out not to be monotone is
// flagged ("monotone": false) and the found value is then one crossing of several.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace edgc::engine {

struct BreakevenRequest {
  std::string scenario;           ///< scenario file
  std::vector<std::string> sets;  ///< "dotted.key=value" overrides applied before the varied key
  std::string key;                ///< the varied key, e.g. cluster.inter_node.nic_bandwidth_GBps
  double target_pct = 10.0;       ///< the sought saving, % of the uncompressed training time (savings positive)
  std::string policy = "edgc";    ///< the compressing policy compared with none
  /// The bracket. Absent: the key's value in the scenario divided (lo) and multiplied (hi) by kDefaultSpan.
  std::optional<double> lo, hi;
  /// Values are multiples of this (0: continuous); a batch size needs its granule (micro_batch_size × dp).
  double step = 0.0;
  /// A simulated saving within this many percentage points of the sought one ends the search; 0: the smaller of 0.5
  /// points and 5 % of the target.
  double tolerance_pct = 0.0;
  double value_tolerance = 0.01;  ///< a bracket narrower than this share of its value ends the search
  int max_steps = 8;              ///< simulations per sought saving, beyond the two bracket ends
  int jobs = 1;                   ///< simulations of one run in parallel (child processes)
  static constexpr double kDefaultSpan = 64.0;
};

struct BreakevenPoint {
  double value = 0.0;
  double none_training_time_s = 0.0;
  double policy_training_time_s = 0.0;
  double saving_pct = 0.0;  ///< 100 × (1 − policy / none)
};

/// One sought saving: the simulated value whose saving is closest to it, and the bracket that holds the crossing.
struct BreakevenCrossing {
  double sought_pct = 0.0;
  bool found = false;       ///< the bracket [lo, hi] holds the crossing (else the fields below are unset)
  bool converged = false;   ///< the found saving is within tolerance_pct, or the bracket within value_tolerance
  double value = 0.0;       ///< the simulated value whose saving is closest to sought_pct
  double saving_pct = 0.0;  ///< its saving
  double bracket_lo = 0.0;  ///< the crossing lies between these two simulated values
  double bracket_hi = 0.0;
  int simulations = 0;  ///< simulate runs spent on this crossing (beyond the shared bracket ends)
};

struct BreakevenOutcome {
  BreakevenRequest request;              ///< with lo, hi and step resolved
  std::optional<double> scenario_value;  ///< the key's value in the scenario (after the overrides), when numeric
  BreakevenCrossing target;              ///< the saving reaches request.target_pct
  BreakevenCrossing zero;                ///< the saving reaches 0 (found false when it keeps one sign)
  std::vector<BreakevenPoint> curve;     ///< every simulated value, ascending
  bool monotone = true;                  ///< the curve's savings are monotone in the value
  double target_wall_s = 0.0;            ///< until the target's crossing was found (the bracket ends included)
  double wall_s = 0.0;
  std::vector<std::string> warnings;
};

/// Runs the search. Throws UsageError naming the flag (--vary, --lo, --hi, --target, --step, --policy) for bad
/// values and for a target outside the savings at lo and hi (naming both), ConfigError naming the scenario and key
/// for a key simulate does not read or a value a simulation rejects.
BreakevenOutcome run_breakeven(const BreakevenRequest& request);

/// breakeven.json (schema edgc.breakeven/1): the request, the assumption, both crossings and the curve.
std::string breakeven_json(const BreakevenOutcome& outcome);
/// curve.csv: value,none_training_time_s,<policy>_training_time_s,saving_pct, one row per simulated value.
std::string breakeven_csv(const BreakevenOutcome& outcome);
/// The console summary: the assumption, both crossings and the curve as a table.
std::string breakeven_text(const BreakevenOutcome& outcome);

}  // namespace edgc::engine
