#include "edgc/core/rank_rule.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "edgc/core/error.hpp"

namespace edgc::core {

std::string_view rank_binding_name(RankBinding b) noexcept {
  switch (b) {
    case RankBinding::kNone:
      return "none";
    case RankBinding::kMin:
      return "r_min";
    case RankBinding::kMax:
      return "r_max";
    case RankBinding::kStep:
      return "step";
    case RankBinding::kWarmup:
      return "warmup";
    case RankBinding::kUncompressed:
      return "uncompressed";
    case RankBinding::kFallback:
      return "fallback";
  }
  return "?";
}

void validate(const CqmConfig& c, const char* where) {
  if (!(c.exponent > 0.0)) throw ConfigError(where, "compression.exponent", "must be > 0");
  if (c.quantum < 1) throw ConfigError(where, "compression.quantum", "must be >= 1");
  if (c.r_min < 1 || c.r_min % c.quantum != 0)
    throw ConfigError(
        where, "compression.r_min",
        std::to_string(c.r_min) + " must be >= 1 and a multiple of compression.quantum = " + std::to_string(c.quantum));
  if (c.r_max < c.r_min || c.r_max % c.quantum != 0)
    throw ConfigError(where, "compression.r_max",
                      std::to_string(c.r_max) +
                          " must be >= r_min and a multiple of compression.quantum = " + std::to_string(c.quantum));
  if (c.step < c.quantum || c.step % c.quantum != 0)
    throw ConfigError(
        where, "compression.step",
        std::to_string(c.step) + " must be a positive multiple of compression.quantum = " + std::to_string(c.quantum));
}

RankUpdate cqm_update(const RankErrorModel& model, double r_continuous, int r_previous, double h0, double h1,
                      const CqmConfig& c) {
  RankUpdate u;
  const double factor = std::exp(c.exponent * (h0 - h1));
  const double e1 = std::clamp(factor * model.g(r_continuous), 0.0, 1.0);
  double target = model.inverse(e1);
  if (!std::isfinite(target)) target = r_continuous;
  // Bounds first, then the per-window step around the rank in use.
  if (target < c.r_min) {
    target = c.r_min;
    u.binding = RankBinding::kMin;
  } else if (target > c.r_max) {
    target = c.r_max;
    u.binding = RankBinding::kMax;
  }
  const double lo = std::max<double>(c.r_min, r_previous - c.step);
  const double hi = std::min<double>(c.r_max, r_previous + c.step);
  if (target < lo || target > hi) {
    target = std::clamp(target, lo, hi);
    u.binding = RankBinding::kStep;
  }
  u.continuous = target;
  const int q = static_cast<int>(std::lround(target / c.quantum)) * c.quantum;
  u.rank = std::clamp(q, std::max(c.r_min, r_previous - c.step), std::min(c.r_max, r_previous + c.step));
  return u;
}

}  // namespace edgc::core
