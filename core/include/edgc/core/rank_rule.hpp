#pragma once
// CQM rank rule. EDGC keeps the compression error constant as entropy changes: going from entropy H0 at rank r0
// to H1, pick r1 = g⁻¹(e^{k(H0−H1)} · g(r0)), with g the Marchenko–Pastur rank-error model. Falling entropy
// (H1 < H0) raises the tolerated g, so the rank falls: lower rank ⇒ more compression. Then clamp to
// [r_min, r_max], limit the change per window to ±step, and quantise.
#include <string_view>

#include "edgc/core/cqm.hpp"

namespace edgc::core {

/// Which limit decided a rank, reported so users see how often the clamps and the step limit bind.
enum class RankBinding {
  kNone,          ///< the rule's own value (after quantisation)
  kMin,           ///< clamped up to r_min
  kMax,           ///< clamped down to r_max
  kStep,          ///< change limited to ±step
  kWarmup,        ///< still warming up: uncompressed
  kUncompressed,  ///< sent uncompressed by choice (policy none, DAC budget above the full sync, stage not selected)
  kFallback,      ///< no observation for this window: previous decision kept
};
std::string_view rank_binding_name(RankBinding b) noexcept;

struct CqmConfig {
  double exponent = 1.0;  ///< k in e^{k(H0−H1)}: 1 (secondary sources) or 2 (constant absolute Frobenius error)
  int r_min = 32;         ///< lower rank bound (paper region: r_max/4 … r_max/6)
  int r_max = 128;        ///< upper rank bound; also the starting rank when compression begins (assumed)
  int step = 8;           ///< largest rank change per window (values seen: 4, 8)
  int quantum = 4;        ///< ranks are multiples of this
};

/// Throws ConfigError naming `where` and the field.
void validate(const CqmConfig& c, const char* where);

struct RankUpdate {
  double continuous = 0.0;  ///< unquantised rank carried to the next window (so small drifts accumulate)
  int rank = 0;             ///< quantised rank to use
  RankBinding binding = RankBinding::kNone;
};

/// One application of the rule. `r_continuous` and `r_previous` are the state after the previous window.
RankUpdate cqm_update(const RankErrorModel& model, double r_continuous, int r_previous, double h0, double h1,
                      const CqmConfig& c);

}  // namespace edgc::core
