#pragma once
// Running a sweep (sweep_spec.hpp) into a directory, resumably, on local worker processes and, under mpirun,
// on every rank's workers (one JSON line per finished point, resume from what is there).
//
// DIR/sweep.json      the spec and its expanded axes (schema edgc.sweep/1); a resume must match it
// DIR/results.jsonl   one JSON object per finished point, appended with one write() each: {"point", "params",
//                     "gpus", "gpu", "repeats", "simulations", "runs": [{policy, iteration_time_s, …, *_ci95}]}
//                     or {"point", "params", "error"} for a point whose scenario is invalid
// DIR/summary.csv     the same, one row per point (rewritten at the end of every run)
// DIR/cache/          simulated iterations, trace entropy and gradient-fidelity replays shared by all points
//                     (simulation.hpp, fidelity.hpp)
//
// Crash safety: a point is recorded only once it finished; a SIGKILL at any moment leaves at most one
// partial last line, which the next --resume cuts off before appending, so points are neither lost nor
// duplicated. Workers die with their parent.
#include <cstdint>
#include <optional>
#include <string>

#include "edgc/results/sweep_document.hpp"
#include "edgc/scenario/sweep_spec.hpp"

namespace edgc::engine {

class MpiSession;

struct SweepOptions {
  std::string out;      ///< DIR
  int jobs = 1;         ///< worker processes on this rank
  bool resume = false;  ///< continue a sweep in DIR (else DIR must be new or empty)
  bool quiet = false;   ///< no progress, no tables: only the paths
  std::string best_by;  ///< summary ranking: a run field, default training_time_s
  /// The gradient-error budget (--max-error), overriding the spec's max_error.
  std::optional<double> max_error;
  /// The verdict threshold (--min-saving): a policy pays when it saves more than this share of the uncompressed
  /// training time (results/verdict.hpp).
  double min_saving = 0.02;
  /// A spec with more points is refused before anything runs (a typo in a grid can make millions).
  std::int64_t max_points = 100'000;
};

struct SweepOutcome {
  std::int64_t points = 0;        ///< in the spec
  std::int64_t already_done = 0;  ///< found in results.jsonl at the start
  std::int64_t ran = 0;           ///< finished in this run (all ranks)
  std::int64_t failed = 0;        ///< points recorded with an error (whole sweep)
  double wall_s = 0.0;
  std::vector<results::SweepRecord> results;  ///< rank 0: every line of results.jsonl at the end, by point
  std::vector<std::string> warnings;          ///< rank 0: results::sweep_warnings over them (thin evidence)
};

/// Throws UsageError (option --out) unless DIR can take a sweep: absent, empty, holding a sweep (sweep.json;
/// then only with `resume`), or holding only what a run killed before sweep.json leaves (temporary files, an
/// empty cache/) and `own_file` (a file name the caller writes into DIR first, such as a generated spec).
void check_sweep_out(const std::string& out, bool resume, const std::string& own_file = "");

/// Runs the points not yet in DIR/results.jsonl. With `mpi` (size ≥ 2), rank 0 owns DIR and hands points to
/// every rank on request; other ranks run points and send their lines back, and return once rank 0 is done.
/// Throws ConfigError for a DIR that holds another sweep or a corrupt results.jsonl (naming file and line).
SweepOutcome run_sweep(const scenario::SweepSpec& spec, const SweepOptions& options, MpiSession* mpi);

/// Point `index` of `spec` run in this process (all its repeats): its results.jsonl line without the newline;
/// a point whose scenario is rejected gives a line with "error".
std::string sweep_point_line(const scenario::SweepSpec& spec, std::int64_t index, const std::string& cache_dir);

/// The long-lived worker of MPI sweeps (`edgc sweep-worker`, core::WorkerPool): answers point indices read from
/// stdin with their results.jsonl lines (as sweep_point_line) on stdout, until stdin ends; what it keeps in memory
/// (scenario files, trace data, memoised replays and iterations) serves the next point.
void serve_sweep_worker(const scenario::SweepSpec& spec, const std::string& cache_dir);

/// Reads DIR/results.jsonl: the complete lines, keyed by point. A last line without its newline (a killed
/// writer) is ignored; any other line that is not a JSON object with an integer "point" is a ConfigError.
std::vector<results::SweepRecord> read_results(const std::string& dir);

}  // namespace edgc::engine
