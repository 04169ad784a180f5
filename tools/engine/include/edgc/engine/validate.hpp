#pragma once
// The parts of `edgc validate` (engine::run_validation, validation.hpp, puts them together): the run `edgc live`
// measured, replayed on the simulated cluster, and the prediction error.
//
// A live step is fully described, for the simulator, by what every pipeline stage synchronised: its collectives
// in order (kind, bytes) and the matrices it compressed. Steps with the same description (a step pattern) have the
// same prediction, so every distinct pattern is simulated once, all in ONE SimGrid run by sim::replay_steps
// (sim/step_replay.hpp: the order in which a stage's compute and all-reduces run).
//
// Errors are absolute percentage errors against the measurement, |predicted − measured| / measured · 100, averaged
// (MAPE) over the measured values > 0; a measured 0 is counted but has no percentage.
#include <cstdint>
#include <map>
#include <simgrid/s4u.hpp>
#include <string>
#include <utility>
#include <vector>

#include "edgc/results/measurements.hpp"
#include "edgc/results/validate_report.hpp"
#include "edgc/sim/cost_model.hpp"
#include "edgc/sim/platform.hpp"
#include "edgc/sim/spec.hpp"

namespace edgc::engine::validate {

namespace sg4 = simgrid::s4u;

/// One all-reduce of a pattern.
struct CollectiveShape {
  std::string kind;  ///< "P" | "Q" | "dense"
  std::int64_t bytes = 0;
  friend auto operator<=>(const CollectiveShape&, const CollectiveShape&) = default;
};

/// Compressed matrices of one shape and rank (results::MatrixGroup, comparable).
struct MatrixBatch {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  int rank = 0;
  int count = 0;
  friend auto operator<=>(const MatrixBatch&, const MatrixBatch&) = default;
};

/// What one stage synchronised in a step.
struct StagePattern {
  std::vector<CollectiveShape> collectives;  ///< in the order the stage issued them
  std::vector<MatrixBatch> matrices;
  friend auto operator<=>(const StagePattern&, const StagePattern&) = default;
};

/// What every stage synchronised in a step, stage 0 first.
struct StepPattern {
  std::vector<StagePattern> stages;
  friend auto operator<=>(const StepPattern&, const StepPattern&) = default;
};

struct Patterns {
  std::vector<StepPattern> distinct;              ///< in order of first appearance
  std::vector<std::vector<std::size_t>> of_step;  ///< [run][step] → index into `distinct`
};

/// The distinct step patterns of all runs.
Patterns extract_patterns(const results::Measurements& m);

/// The global ranks of every stage's DP group, in ring order (by replica): [stage][replica] → rank.
std::vector<std::vector<int>> stage_groups(const results::Measurements& m);

/// Platform GPU of every global rank: node · gpus_per_node + local (live's cluster file lists the hosts in the
/// order of `node`). Throws ConfigError naming `cluster_where` when `cluster` has fewer GPUs than world_size or a
/// rank's node or local index does not exist on it.
std::vector<int> platform_gpus(const results::Measurements& m, const sim::ClusterSpec& cluster,
                               const std::string& cluster_where);

/// Modelled compute of one stage in a step, seconds: the pack + unpack of live's fused dense buffer around the dense
/// all-reduce, and PowerSGD's kernels over the compressed matrices.
struct StageCompute {
  double copy_s = 0.0;   ///< params.copy_profile at the dense all-reduce's bytes (sim::profiled_copy_s), else two
                         ///< copies (read + write each) at gpu.hbm_GBps · hbm_efficiency; 0 without a dense all-reduce
  double batch_s = 0.0;  ///< Σ sim::powersgd_batch_s over the compressed batches (the kernel profile, else roofline)
  double total_s() const { return copy_s + batch_s; }
};
StageCompute modelled_compute(const StagePattern& stage, int element_bytes, const sim::GpuSpec& gpu,
                              const sim::CostParams& params);

/// Simulated figures of one pattern, seconds.
struct Prediction {
  std::vector<std::vector<double>> collective_s;  ///< [stage][i]: shortest duration over the group's members
  std::vector<double> sync_s;                     ///< [stage]: common start → the stage's last member done
  std::vector<double> compute_s;                  ///< [stage]: modelled compute, copies and kernels (slept)
  double iteration_s = 0.0;                       ///< max over stages of sync_s
};

struct Simulated {
  std::vector<Prediction> patterns;   ///< one per Patterns::distinct
  std::vector<double> calibration_s;  ///< one per Calibration row (empty when calibration.ranks < 2)
};

/// Simulates every pattern, then every calibration row (a dense all-reduce over the first calibration.ranks
/// members of stage 0's group), in one run of `engine` (sim::replay_steps; call once per process, after
/// Platform::build).
/// `compute[p][s]` is the modelled compute of stage s in pattern p; `gpus` comes from platform_gpus().
Simulated simulate(sg4::Engine& engine, const sim::Platform& platform, const results::Measurements& m,
                   const Patterns& patterns, const std::vector<std::vector<StageCompute>>& compute,
                   const std::vector<int>& gpus);

/// Machine drift between two live runs: the median ratio of `m`'s calibration times to `other`'s at the sizes both
/// timed, isolated rows with isolated rows and in-step rows with in-step rows; NaN when they share no size.
double calibration_drift(const results::Measurements& m, const results::Measurements& other);

/// How far a run's speed moved while it ran: per policy and step pattern with ≥ 30 steps, the median step of its
/// first and last third; the pattern with the largest ratio (max(early/late, late/early)); ratio 1 when none.
struct SpeedShift {
  double ratio = 1.0;
  std::string policy;
  double early_s = 0.0;
  double late_s = 0.0;
};
SpeedShift speed_shift(const results::Measurements& m, const Patterns& patterns);

/// Error statistics of (measured, predicted) pairs, in groups of pairs that share one prediction (one pattern's
/// steps): per-step figures (MAPE, max APE), and the error of the typical step, |predicted − median measured| /
/// median measured per group, averaged over the groups weighted by their pairs. A measured time is a sample of a
/// noisy machine; the model predicts the typical step, so error_pct() is what validate's verdict uses, and the
/// spread (p10–p90) is shown beside it.
struct ErrorStats {
  std::int64_t count = 0;
  std::int64_t ape_count = 0;  ///< pairs with measured > 0 (those with a percentage error)
  double sum_measured = 0.0;
  double sum_predicted = 0.0;
  double sum_ape_pct = 0.0;
  double max_ape_pct = 0.0;
  std::map<std::int64_t, std::pair<std::vector<double>, double>> groups;  ///< group → (measured, predicted)

  /// `group` < 0: a group of its own.
  void add(double measured, double predicted, std::int64_t group = -1);
  double mean_measured() const;              ///< NaN when empty
  double mean_predicted() const;             ///< NaN when empty
  double mape_pct() const;                   ///< per step; NaN when no pair has a percentage
  double quantile_measured(double q) const;  ///< q in [0, 1], linear between order statistics; NaN when empty
  double error_pct() const;                  ///< of the groups' medians; NaN when no median is > 0
};

/// The targets validate's verdict checks the overall rows against, percent error of the typical step.
inline constexpr double kIterationTargetPct = 10.0;  ///< iteration and stage sync
inline constexpr double kPartTargetPct = 15.0;       ///< each collective and compute

/// One line: whether the overall rows are within their targets ("predictions hold within x % here …"), else the
/// rows that are not and what dominates them.
std::string verdict(const std::vector<results::ValidateRow>& overall);

/// Compares every measured step with its pattern's prediction: the report's rows, overall rows, calibration, T_com
/// points, patterns and verdict (its provenance is left to the caller).
results::ValidateReport compare(const results::Measurements& m, const Patterns& patterns, const Simulated& simulated);

}  // namespace edgc::engine::validate
