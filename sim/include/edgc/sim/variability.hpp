#pragma once
// Seeded run-to-run variability of the compute passes of one simulated iteration: per-pass jitter and GPUs that
// straggle for the whole iteration. Every draw is a pure function of (seed, global rank, micro-batch, model chunk,
// forward/backward), never of the order in which SimGrid runs the actors, so one seed gives one result, and the
// same pass gets the same draw under every schedule. Header-only: a handful of arithmetic lines.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "edgc/core/error.hpp"
#include "edgc/core/random.hpp"

namespace edgc::sim {

/// The variability model. The defaults mean none: the simulation is then bit-identical to one without it.
struct ComputeVariability {
  /// Coefficient of variation of each forward or backward pass of each GPU: the pass takes its nominal time ×
  /// a lognormal factor exp(σZ − σ²/2), σ² = ln(1 + cv²), Z standard normal, whose mean is exactly 1 and whose
  /// standard deviation is cv. Lognormal rather than a truncated normal: always positive, and its mean is not
  /// shifted by truncation at large cv. Dimensionless, ≥ 0; 0 = no jitter.
  double compute_jitter_cv = 0.0;
  /// Probability that a GPU is a straggler for the whole iteration, drawn independently per GPU. In [0, 1].
  double straggler_probability = 0.0;
  /// A straggler's passes take straggler_slowdown × their (jittered) time. ≥ 1; 1 = no slowdown.
  double straggler_slowdown = 1.0;
  /// Seed of all draws (edgc::Rng streams derived with mix64).
  std::uint64_t seed = 0;

  friend bool operator==(const ComputeVariability&, const ComputeVariability&) = default;
};

/// Throws ConfigError naming `where` and the field: "variability.compute_jitter_cv" (negative or not finite),
/// "variability.straggler_probability" (outside [0, 1]), "variability.straggler_slowdown" (< 1 or not finite).
void validate(const ComputeVariability& v, const std::string& where = "iteration");

/// Whether GPU `rank` straggles this iteration: a uniform draw of stream (seed, rank) below the probability.
/// Never with probability 0, always with probability 1.
bool is_straggler(const ComputeVariability& v, int rank);

/// The lognormal jitter factor of one pass of GPU `rank`; exactly 1 when compute_jitter_cv is 0.
double jitter_factor(const ComputeVariability& v, int rank, int microbatch, int chunk, bool backward);

// ---- implementation ----

namespace detail {

// Stream id of one draw: a chain of mix64 over (purpose, rank, micro-batch, chunk, direction).
inline std::uint64_t draw_stream(std::uint64_t purpose, int rank, int microbatch = 0, int chunk = 0, int backward = 0) {
  std::uint64_t h = mix64(purpose);
  for (const int x : {rank, microbatch, chunk, backward})
    h = mix64(h ^ static_cast<std::uint64_t>(static_cast<std::uint32_t>(x)));
  return h;
}
constexpr std::uint64_t kJitterDraw = 1;
constexpr std::uint64_t kStragglerDraw = 2;

inline std::string number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

}  // namespace detail

inline void validate(const ComputeVariability& v, const std::string& where) {
  if (!(v.compute_jitter_cv >= 0.0 && std::isfinite(v.compute_jitter_cv)))
    throw ConfigError(where, "variability.compute_jitter_cv",
                      "must be a finite number >= 0 (0 = no jitter), got " + detail::number(v.compute_jitter_cv));
  if (!(v.straggler_probability >= 0.0 && v.straggler_probability <= 1.0))
    throw ConfigError(where, "variability.straggler_probability",
                      "must lie in [0, 1], got " + detail::number(v.straggler_probability));
  if (!(v.straggler_slowdown >= 1.0 && std::isfinite(v.straggler_slowdown)))
    throw ConfigError(where, "variability.straggler_slowdown",
                      "must be a finite number >= 1 (1 = no slowdown), got " + detail::number(v.straggler_slowdown));
}

inline bool is_straggler(const ComputeVariability& v, int rank) {
  if (v.straggler_probability <= 0.0) return false;
  return Rng(v.seed, detail::draw_stream(detail::kStragglerDraw, rank)).uniform() < v.straggler_probability;
}

inline double jitter_factor(const ComputeVariability& v, int rank, int microbatch, int chunk, bool backward) {
  if (v.compute_jitter_cv <= 0.0) return 1.0;
  const double var_log = std::log1p(v.compute_jitter_cv * v.compute_jitter_cv);
  Rng rng(v.seed, detail::draw_stream(detail::kJitterDraw, rank, microbatch, chunk, backward ? 1 : 0));
  return std::exp(std::sqrt(var_log) * rng.normal() - var_log / 2);
}

}  // namespace edgc::sim
