#pragma once
// The break-even rank per pipeline stage: the PowerSGD rank at which a stage's compressed DP sync, its compression
// compute included, takes as long as the uncompressed sync. Below it compression shortens the sync; above it, it
// does not. Found as the authors' Megatron-Core port finds its r_max (timed syncs at ranks 2, 4, 8, … against the
// uncompressed one, the crossing by linear interpolation), here on simulated syncs.
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "edgc/core/rank_rule.hpp"
#include "edgc/sim/iteration.hpp"

namespace edgc::engine {

/// The probe ranks: 2, 4, 8, … up to and including the largest power of two ≤ `cap` (cap ≥ 2; empty below).
std::vector<int> break_even_probe_ranks(int cap);

/// One stage's break-even.
struct StageBreakEven {
  enum class Kind {
    kCrossed,     ///< rank: interpolated between the last probe below the uncompressed time and the first at or above
    kBelowFirst,  ///< the sync at the first probe rank is already no faster than uncompressed: no rank pays
    kAboveLast,   ///< faster than uncompressed at every probe: the break-even is above the last probe (rank = it)
    kSkipped,     ///< faster at every probe that compresses; at `rank` (a probe) the sync equals the uncompressed one
               ///< because PowerSGD's skip rule ((m+n)·r·2 ≥ m·n) sends every matrix uncompressed: the break-even
               ///< is at most `rank`
  };
  Kind kind = Kind::kCrossed;
  double rank = 0.0;
};

/// The first probe rank whose sync time `times[i]` is ≥ `uncompressed_s`, interpolated linearly with the probe before
/// it: r = r₀ + (t_full − t₀)·(r₁ − r₀)/(t₁ − t₀); a time equal to the uncompressed one (within 1e-9 relative) is
/// kSkipped at that probe. `ranks` and `times` have the same, non-zero length.
StageBreakEven stage_break_even(const std::vector<int>& ranks, const std::vector<double>& times, double uncompressed_s);

/// The largest multiple of `quantum` ≤ r (0 when r < quantum).
int floor_to_multiple(double r, int quantum);

/// Every stage's break-even from simulated iterations: `simulate` returns one IterationResult per plan given (the
/// uncompressed plan first, then every stage at each probe rank up to `cap`).
struct BreakEven {
  std::vector<int> ranks;                   ///< the probe ranks
  std::vector<double> uncompressed_sync_s;  ///< per stage
  std::vector<std::vector<double>> sync_s;  ///< per stage, per probe rank
  std::vector<StageBreakEven> stages;
  /// The smallest break-even over stages floored to a multiple of `quantum` (compression.r_max "auto"); nullopt
  /// when some stage's is below the first probe.
  std::optional<int> r_max(int quantum) const;
};
BreakEven find_break_even(
    int pp, int cap,
    const std::function<std::vector<sim::IterationResult>(const std::vector<sim::DpSyncPlan>&)>& simulate);

/// compression.r_max "auto": BreakEven::r_max. Throws ConfigError naming `where` and compression.r_max when a stage's
/// sync is no faster at the first probe rank (no rank pays) or the result is below cqm.r_min.
int auto_r_max(const BreakEven& b, const core::CqmConfig& cqm, const std::string& where);

/// result.json's "break_even" section: {"probe_ranks", "stages": [{"stage", "rank", "kind", "uncompressed_sync_s",
/// "sync_s"}], "r_max_auto"}; rank null where no rank pays.
nlohmann::ordered_json break_even_json(const BreakEven& b, int quantum);

}  // namespace edgc::engine
