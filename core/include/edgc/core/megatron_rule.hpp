#pragma once
// The rank rule of the EDGC port for Megatron-Core by the paper's first author (repository HYGON-AI/Megatron-LM-das,
// hcu_megatron/training/edgc_utils.py, Utils.map_loss_change_to_rank; policy edgc-megatron). It decides from the
// trend of a training signal, not from the CQM:
//
//   r_min = r_max / 4
//   Δ     = |mean signal of the window just ended − mean of the window before|
//   Δ_ref = |mean of the run's first window − mean of its second|
//   r     = r_min + (r_max − r_min) · Δ / Δ_ref, rounded to nearest, clamped to [r_min, r_max], rounded down to even
//   then moved at most `step` from the previous window's rank; the first decision at most one step below r_max.
//
// Falling change (a flattening loss) ⇒ lower rank ⇒ more compression. scenarios/README.md tables where this differs
// from the paper's CQM rule (policy edgc).
#include <optional>
#include <string_view>

#include <vector>

#include "edgc/core/dac.hpp"
#include "edgc/core/rank_rule.hpp"

namespace edgc::core {

/// What the rule watches: the training loss (the port's current code) or the mean gradient entropy over stages
/// (its 2025 version).
enum class MegatronSignal { kLoss, kEntropy };

/// "loss" or "entropy" (compression.signal).
const char* megatron_signal_name(MegatronSignal s) noexcept;
/// The signal named `name`; nullopt for any other name.
std::optional<MegatronSignal> megatron_signal_from_name(std::string_view name) noexcept;
/// The port's largest rank change per window for the signal: 4 (loss: rank_adjust_step), 8 (entropy).
int megatron_default_step(MegatronSignal s) noexcept;

/// r_max / 4, as the port passes min_rank (a fraction when r_max is not a multiple of 4).
double megatron_r_min(int r_max) noexcept;

/// The mapped rank before the step limit, and which bound decided it (kNone, kMin, kMax).
struct MegatronMapped {
  int rank = 0;
  RankBinding binding = RankBinding::kNone;
};

/// r_min + (r_max − r_min)·change/reference rounded to nearest (ties to even, as Python's round), clamped to
/// [r_min, r_max], rounded down to even. A reference of 0 (the first two windows had equal means; the port divides by
/// zero there) or below maps to r_max.
MegatronMapped megatron_map_rank(double change, double reference, int r_max) noexcept;

/// `mapped` moved at most `step` from `previous`; without a previous decision, at most one step below r_max.
RankUpdate megatron_limit_step(const MegatronMapped& mapped, std::optional<int> previous, int r_max, int step) noexcept;

/// The port's stage alignment (Utils.use_time_predict_rank): stage 0 keeps `r0`; stage k ≥ 1 gets the time budget
/// t = T_com(r0) + k·t_bwd with T_com(r) = η·r + c (dac: eta_s_per_rank, c_s, t_bwd_s, t_uncompressed_s), the rank
/// where T_com reaches t rounded up as the port does, (⌊r/4⌋ + 1)·4 (one quantum higher on an exact multiple), and is
/// sent uncompressed (rank 0) when t exceeds the uncompressed sync or the rank exceeds r_max. No pipeline-message
/// term: the port has none. Requires η > 0.
std::vector<StageRank> megatron_align(int r0, int stages, const DacConfig& dac, int r_max);

}  // namespace edgc::core
