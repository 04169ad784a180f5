#pragma once
// The traffic of one simulated iteration, declared once: which GPU sends to which, in which phase of its iteration,
// and over which groups the worker's collectives run. GpuWorker takes its pipeline peers and its groups from here,
// and the closed-form and folding arguments (closed_forms.cpp) take the pairs they bound from here, so a new kind of
// transfer added to the worker is one the proofs see (the worker's test checks that every pair it uses is declared:
// tests/sim/traffic_test.cpp). The arguments: sim/README.md, "Closed forms and folding".
#include <optional>
#include <string>
#include <vector>

#include "edgc/sim/collectives.hpp"
#include "edgc/sim/layout.hpp"
#include "edgc/sim/platform.hpp"
#include "edgc/sim/spec.hpp"

namespace edgc::sim::impl {

// The phases of one GPU's iteration, in order; a GPU is in one phase at a time (sim/README.md, "Fabric links that
// never bind"). The values are part of fabric_never_binds' keys.
enum class Phase { kPipeline = 0, kDpSync = 1, kEmbedding = 2 };
constexpr int kPhases = 3;

// What a transfer is part of.
enum class Traffic {
  kPipelineP2p,     // activations and gradients between pipeline neighbours (the interleaved schedule's wrap too)
  kTensorParallel,  // the TP group's collectives (any member to any other: rings inside a node may be several)
  kDataParallel,    // the DP sync's ring, successor by dp index
  kEmbedding,  // the word-embedding all-reduce: stage 0 ↔ stage pp − 1, or the fused ring over their 2·dp GPUs
  kExpertParallel,      // an MoE layer's token all-to-all: any member of the expert-parallel group to any other
  kExpertDataParallel,  // the routed experts' gradient sync: ring successor in the expert-data-parallel group
};

// One ordered pair of GPUs that may exchange data: `src` sends to `dst` during `phase`.
struct Exchange {
  int src = 0;
  int dst = 0;
  Phase phase = Phase::kPipeline;
  Traffic traffic = Traffic::kPipelineP2p;
};

// Everything `rank` of `layout` (made from `parallel`) may send in one iteration, in this order: its pipeline
// successor and predecessor (stage ± 1 around the pipeline, pp > 1), its embedding partner (first and last stage,
// pp > 1) and with the fused embedding sync its successor in the fused ring, its DP ring successor (dp > 1), every
// other member of its TP group. A superset of what a given schedule
// sends (e.g. the wrap without the interleaved schedule, an embedding partner without embedding bytes), never a
// pair to itself.
std::vector<Exchange> sent_by(const Layout& layout, const ParallelSpec& parallel, int rank);

// A model chunk of a pipeline stage: the receiver of a pipeline message.
struct ChunkAt {
  int stage = 0;
  int chunk = 0;
};
// Where the forward pass of (stage, chunk) sends its activations (chunk c of stage p is virtual stage c·pp + p):
// the next stage, or stage 0 of the next chunk from the last stage; none after the model's last chunk.
std::optional<ChunkAt> activation_receiver(const ParallelSpec& parallel, int stage, int chunk);
// Where the backward pass of (stage, chunk) sends its input gradient: the same path backwards; none from stage 0's
// first chunk.
std::optional<ChunkAt> gradient_receiver(const ParallelSpec& parallel, int stage, int chunk);

// The members of one group as global ranks, in member (ring) order, and the group's mailbox tag.
struct RankGroup {
  std::vector<int> ranks;
  std::string tag;
};
// TP groups, index stage · dp + dp_index, members by tp index.
std::vector<RankGroup> tp_rank_groups(const Layout& layout);
// DP groups, index stage · tp + tp_index, members by dp index.
std::vector<RankGroup> dp_rank_groups(const Layout& layout);
// Mixture of experts (expert tensor parallelism 1, Megatron-Core's expert rank order: ep fastest, then expert DP):
// a stage's tp·dp GPUs, at position j = dp_index · tp + tp_index, form expert-parallel groups of parallel.ep
// consecutive positions (index stage · (tp·dp/ep) + j / ep, member j % ep) and ep expert-data-parallel groups
// (index stage · ep + j % ep, member j / ep). None for a dense model (ParallelSpec::expert_groups), no
// expert-parallel groups when ep = 1.
std::vector<RankGroup> ep_rank_groups(const Layout& layout, const ParallelSpec& parallel);
std::vector<RankGroup> edp_rank_groups(const Layout& layout, const ParallelSpec& parallel);
// A GPU's position j in its stage (above).
inline int stage_position(const RankCoord& c, int tp) { return c.dp * tp + c.tp; }

// Embedding all-reduce groups (pp > 1): {stage 0, stage pp − 1} per (dp_index, tp_index), index dp_index · tp +
// tp_index; `fused`: per tp_index one group of stage 0's dp GPUs, then stage pp − 1's.
std::vector<RankGroup> embedding_rank_groups(const Layout& layout, bool fused);
// The groups on `platform`'s hosts.
std::vector<Group> on_platform(const Platform& platform, const std::vector<RankGroup>& groups);

}  // namespace edgc::sim::impl
