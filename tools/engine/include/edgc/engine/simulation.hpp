#pragma once
// One `simulate` run as a function: scenario (+ overrides) in, result.json document out. Shared by the
// `simulate` command and by every point of a `sweep` / `plan`, so all three compute figures the same way.
//
// What happens (sim/README.md, "Whole runs"): the scenario is read and validated; the entropy source is built (trace
// or synthetic curve); each compared policy's controller plans a rank schedule over the run; every distinct
// per-stage rank vector is simulated once, each in its own child process (SimGrid runs one simulation per
// process); the schedules are accumulated into whole-run totals.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "edgc/results/result_document.hpp"

namespace edgc::engine {

struct SimulateRequest {
  std::string scenario;           ///< scenario file
  std::vector<std::string> sets;  ///< "dotted.key=value" overrides, applied in order
  std::string policies;           ///< "none,static,edgc"; empty: simulate.policies, else none,static,<policy>
  int jobs = 1;                   ///< simulations run in parallel (child processes)
  bool timeline = false;          ///< also return a Chrome trace of one iteration per distinct rank vector
  /// When not empty: a directory shared between runs (a sweep's cache/) holding simulated iterations keyed by
  /// everything that determines them (the cluster, network, model, parallelism, compute and variability
  /// sections as read, and the rank vector), and measured trace entropy keyed by the trace and the sampling
  /// settings. Runs that need the same simulation read it instead of simulating again. Entries are written
  /// atomically; two runs computing the same entry at once both write identical content.
  std::string cache_dir;
  /// Also find the break-even rank per stage (a few more simulated iterations: ranks 2, 4, 8, …); result.json's
  /// "break_even". Always done when compression.r_max is "auto". Sweeps leave it off.
  bool break_even = true;
  /// Also find result.json's "bandwidth" (bandwidth.hpp): the saving against the inter-node NIC bandwidth and the
  /// bandwidth at which each policy that does not pay would, from a few more whole simulate runs. The simulate
  /// command sets it; sweeps, plans and breakeven's own runs leave it off.
  bool bandwidth_curve = false;
  /// The verdict threshold (results/verdict.hpp): a policy pays when it saves more than this share of the
  /// uncompressed training time; result.json's "verdict".
  double min_saving = 0.02;
  /// result.json's "configurations" (every simulated rank vector's iteration in detail). Sweeps, which keep only
  /// the run figures, leave it out: building it was a twelfth of a sweep point's time.
  bool configurations = true;
};

struct SimulateOutcome {
  results::ResultDocument result;   ///< the result.json document (schema edgc.result/1)
  nlohmann::ordered_json timeline;  ///< Chrome-trace JSON when requested, else null
  int simulated = 0;                ///< simulations run by this call (not read from the cache)
  /// What the run went on with but the user should know (a degenerate trace, actor stacks without guard pages),
  /// one line each naming the scenario or trace; also result.json's "warnings".
  std::vector<std::string> warnings;
};

/// Throws ConfigError/UsageError (exit 2) on bad input, naming the scenario file and key.
SimulateOutcome run_simulation(const SimulateRequest& request);

/// The top-level sections simulate reads (besides the notes of Scenario::kNoteKeys); any other top-level key, and
/// any key under one of them that no reader asked for, is a ConfigError.
const std::vector<std::string>& simulate_sections();

}  // namespace edgc::engine
