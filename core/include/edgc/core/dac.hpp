#pragma once
// DAC — Dynamic Alignment Compressor. In 1F1B, pipeline stage k finishes its last backward about k micro-batch
// backward times before stage 0, so stage k's data-parallel sync may take that much longer without delaying
// the iteration. With T_com(r) = η·r + c, stage 0 keeps the CQM rank r0 and stage k gets
// r_k = r0 + k·t_bwd/η, quantised down and capped at r_max; a stage whose time budget reaches the
// uncompressed sync time is sent uncompressed.
//
// The stagger is one backward pass AND one backward pipeline message per stage: stage k's last backward gradient
// travels k hops to stage 0, each followed by that stage's last backward. So the time per hop is t_bwd plus the
// message's time on that path, t_p2p (transfer) uncompressed, or, when the pipeline's backward messages are
// compressed (edgc-pp), t_p2p_compressed (compress + compressed transfer + decompress). Compressed sends shorten
// the critical path and so the slack DAC spends: crediting them keeps stage k's rank from assuming slack that is no
// longer there. Both p2p times default to 0, the original rule.
#include <vector>

#include "edgc/core/rank_rule.hpp"

namespace edgc::core {

struct DacConfig {
  bool enabled = false;
  double eta_s_per_rank = 0.0;  ///< η: extra sync seconds per unit of rank (fitted from measurement or the simulator)
  double c_s = 0.0;             ///< c: rank-independent sync seconds
  double t_bwd_s = 0.0;         ///< one micro-batch backward on one stage, seconds
  double t_uncompressed_s = 0.0;  ///< uncompressed data-parallel sync of one stage, seconds
  double t_p2p_s = 0.0;           ///< one backward pipeline message between adjacent stages, uncompressed, seconds
  /// The same message compressed, codec included, seconds; < 0: as t_p2p_s (the messages are not compressed).
  double t_p2p_compressed_s = -1.0;
};

/// Seconds per stage of stagger: t_bwd + t_p2p, or t_bwd + t_p2p_compressed when `pipeline_compressed` (and it is
/// given).
double dac_hop_s(const DacConfig& dac, bool pipeline_compressed);

/// Throws ConfigError naming `where` and the field.
void validate(const DacConfig& c, const char* where);

struct StageRank {
  int rank = 0;  ///< 0 = uncompressed
  RankBinding binding = RankBinding::kNone;
};

/// Ranks for stages 0..stages−1 from stage 0's rank `r0`. Never decreasing along the stages (uncompressed counts as
/// the largest). Requires a validated, enabled config.
/// `pipeline_compressed`: the pipeline's backward messages are compressed in the window these ranks apply to.
std::vector<StageRank> dac_align(int r0, int stages, const DacConfig& dac, const CqmConfig& cqm,
                                 bool pipeline_compressed = false);

}  // namespace edgc::core
