#include "edgc/core/megatron_rule.hpp"

#include <algorithm>
#include <cmath>

namespace edgc::core {

const char* megatron_signal_name(MegatronSignal s) noexcept {
  return s == MegatronSignal::kEntropy ? "entropy" : "loss";
}

std::optional<MegatronSignal> megatron_signal_from_name(std::string_view name) noexcept {
  for (const MegatronSignal s : {MegatronSignal::kLoss, MegatronSignal::kEntropy})
    if (name == megatron_signal_name(s)) return s;
  return std::nullopt;
}

int megatron_default_step(MegatronSignal s) noexcept { return s == MegatronSignal::kEntropy ? 8 : 4; }

double megatron_r_min(int r_max) noexcept { return r_max / 4.0; }

MegatronMapped megatron_map_rank(double change, double reference, int r_max) noexcept {
  const double lo = megatron_r_min(r_max);
  const double hi = r_max;
  if (!(reference > 0.0) || !std::isfinite(change)) return {r_max, RankBinding::kMax};
  // Python's round() rounds half to even; so does nearbyint in the default rounding mode.
  const double ideal = std::nearbyint(lo + (hi - lo) * (change / reference));
  MegatronMapped out;
  double r = ideal;
  if (ideal < lo) {
    r = lo;
    out.binding = RankBinding::kMin;
  } else if (ideal > hi) {
    r = hi;
    out.binding = RankBinding::kMax;
  }
  out.rank = static_cast<int>(std::floor(r / 2.0)) * 2;  // the port's (rank // 2) * 2
  return out;
}

RankUpdate megatron_limit_step(const MegatronMapped& mapped, std::optional<int> previous, int r_max,
                               int step) noexcept {
  RankUpdate u{static_cast<double>(mapped.rank), mapped.rank, mapped.binding};
  if (!previous) {
    if (r_max - mapped.rank > step) u = {static_cast<double>(r_max - step), r_max - step, RankBinding::kStep};
    return u;
  }
  const int delta = mapped.rank - *previous;
  if (std::abs(delta) > step) {
    u.rank = *previous + (delta > 0 ? step : -step);
    u.continuous = u.rank;
    u.binding = RankBinding::kStep;
  }
  return u;
}

std::vector<StageRank> megatron_align(int r0, int stages, const DacConfig& dac, int r_max) {
  std::vector<StageRank> out{{r0, RankBinding::kNone}};
  const double t0 = dac.eta_s_per_rank * r0 + dac.c_s;
  for (int k = 1; k < stages; ++k) {
    const double budget = t0 + k * dac.t_bwd_s;
    if (budget > dac.t_uncompressed_s) {
      out.push_back({0, RankBinding::kUncompressed});
      continue;
    }
    const double r = (budget - dac.c_s) / dac.eta_s_per_rank;
    const int rank = (static_cast<int>(std::floor(r / 4.0)) + 1) * 4;
    out.push_back(rank > r_max ? StageRank{0, RankBinding::kUncompressed} : StageRank{rank, RankBinding::kNone});
  }
  return out;
}

}  // namespace edgc::core
