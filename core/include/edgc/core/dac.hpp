#pragma once
// DAC — Dynamic Alignment Compressor. In 1F1B, pipeline stage k finishes its last backward about k micro-batch
// backward times before stage 0, so stage k's data-parallel sync may take that much longer without delaying
// the iteration. With T_com(r) = η·r + c, stage 0 keeps the CQM rank r0 and stage k gets
// r_k = r0 + k·t_bwd/η, quantised down and capped at r_max; a stage whose time budget reaches the
// uncompressed sync time is sent uncompressed.
#include <vector>

#include "edgc/core/rank_rule.hpp"

namespace edgc::core {

struct DacConfig {
  bool enabled = false;
  double eta_s_per_rank = 0.0;  ///< η: extra sync seconds per unit of rank (fitted from measurement or the simulator)
  double c_s = 0.0;             ///< c: rank-independent sync seconds
  double t_bwd_s = 0.0;         ///< one micro-batch backward on one stage, seconds
  double t_uncompressed_s = 0.0;  ///< uncompressed data-parallel sync of one stage, seconds
};

/// Throws ConfigError naming `where` and the field.
void validate(const DacConfig& c, const char* where);

struct StageRank {
  int rank = 0;  ///< 0 = uncompressed
  RankBinding binding = RankBinding::kNone;
};

/// Ranks for stages 0..stages−1 from stage 0's rank `r0`. Never decreasing along the stages (uncompressed counts as
/// the largest). Requires a validated, enabled config.
std::vector<StageRank> dac_align(int r0, int stages, const DacConfig& dac, const CqmConfig& cqm);

}  // namespace edgc::core
