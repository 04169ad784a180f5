#include "edgc/core/dac.hpp"

#include <cmath>
#include <string>

#include "edgc/core/error.hpp"

namespace edgc::core {

void validate(const DacConfig& c, const char* where) {
  if (!c.enabled) return;
  if (!(c.eta_s_per_rank > 0.0)) throw ConfigError(where, "compression.dac.eta_s_per_rank", "must be > 0");
  if (!(c.c_s >= 0.0)) throw ConfigError(where, "compression.dac.c_s", "must be >= 0");
  if (!(c.t_bwd_s >= 0.0)) throw ConfigError(where, "compression.dac.t_bwd_s", "must be >= 0");
  if (!(c.t_uncompressed_s > 0.0)) throw ConfigError(where, "compression.dac.t_uncompressed_s", "must be > 0");
  if (!(c.t_p2p_s >= 0.0)) throw ConfigError(where, "compression.dac.t_p2p_s", "must be >= 0");
  if (std::isnan(c.t_p2p_compressed_s))
    throw ConfigError(where, "compression.dac.t_p2p_compressed_s", "must be a number");
}

double dac_hop_s(const DacConfig& dac, bool pipeline_compressed) {
  const double p2p = pipeline_compressed && dac.t_p2p_compressed_s >= 0.0 ? dac.t_p2p_compressed_s : dac.t_p2p_s;
  return dac.t_bwd_s + p2p;
}

std::vector<StageRank> dac_align(int r0, int stages, const DacConfig& dac, const CqmConfig& cqm,
                                 bool pipeline_compressed) {
  std::vector<StageRank> out(static_cast<std::size_t>(stages));
  const double t0 = dac.eta_s_per_rank * r0 + dac.c_s;
  const double hop = dac_hop_s(dac, pipeline_compressed);
  for (int k = 0; k < stages; ++k) {
    StageRank& s = out[static_cast<std::size_t>(k)];
    const double budget = t0 + k * hop;
    if (budget >= dac.t_uncompressed_s) {
      s.binding = RankBinding::kUncompressed;  // rank 0: the full sync fits in the slack
      continue;
    }
    const double ideal = r0 + k * hop / dac.eta_s_per_rank;
    int r = static_cast<int>(std::floor(ideal / cqm.quantum)) * cqm.quantum;
    if (r < r0) r = r0;  // quantising down never takes a stage below stage 0's rank
    if (r > cqm.r_max) {
      r = cqm.r_max;
      s.binding = RankBinding::kMax;
    }
    s.rank = r;
  }
  return out;
}

}  // namespace edgc::core
