#pragma once
// Megatron-style placement of tensor (TP), pipeline (PP) and data (DP) parallelism on the GPUs of a cluster.
//
// Two rank orders (ParallelSpec::order), both with TP innermost:
//  * "tp-dp-pp", Megatron-LM's default:      rank = pp_index · (dp · tp) + dp_index · tp + tp_index;
//  * "tp-pp-dp", Megatron's --use-tp-pp-dp-mapping: rank = dp_index · (pp · tp) + pp_index · tp + tp_index.
// GPU `rank` sits on node rank / gpus_per_node, local slot rank % gpus_per_node. With tp dividing
// gpus_per_node a TP group is tp consecutive ranks inside one node (its all-reduces run on NVLink, as Megatron
// intends). Under tp-dp-pp a DP group is the dp ranks of one (pp, tp) pair at stride tp, so when tp·dp ≤
// gpus_per_node the whole DP group shares a node and its gradient sync runs on NVLink; under tp-pp-dp the DP
// stride is pp·tp, so with pp·tp ≥ gpus_per_node every DP peer is on another node and the sync crosses the NICs.
#include <numeric>
#include <string>
#include <vector>

#include "edgc/sim/spec.hpp"

namespace edgc::sim {

/// Checks that `parallel` lays `model` out on `cluster` the way Megatron-LM can run it, and returns a copy of
/// `parallel` with `microbatches` filled in as global_batch / (micro_batch · dp) when it was 0.
/// Throws ConfigError whose field is the scenario key at fault ("parallelism.tp", "model.heads", ...) and whose
/// `where` is `where` (the scenario file, for the message), when:
///  * a size is not positive (model sizes, tp/pp/dp, virtual_stages, cluster nodes/gpus_per_node) or
///    microbatches is negative, or model.dtype is not fp16 | bf16 | fp32;
///  * tp·pp·dp differs from the cluster's GPU count (named "parallelism.dp");
///  * tp does not divide gpus_per_node (a TP group must stay inside one node);
///  * layers are not divisible by pp, or by pp·virtual_stages for the interleaved schedule;
///  * heads are not divisible by tp, or hidden by heads;
///  * global_batch is not divisible by micro_batch·dp, or microbatches (when given) differs from the quotient;
///  * the interleaved schedule has pp < 2 or microbatches not divisible by pp (Megatron's requirement);
///  * virtual_stages ≠ 1 for a schedule other than interleaved.
ParallelSpec validate(const ModelSpec& model, const ParallelSpec& parallel, const ClusterSpec& cluster,
                      const std::string& where = "");

/// Position of one GPU in the three parallel dimensions, each 0-based.
struct RankCoord {
  int tp = 0;
  int pp = 0;
  int dp = 0;
  friend bool operator==(const RankCoord&, const RankCoord&) = default;
};

/// Mixture of experts: the GPUs of a stage that hold the same experts, tp·dp/ep (the expert-data-parallel group's
/// size, and the number of expert-parallel groups per stage). Assumes a validated layout (ep divides tp·dp).
inline int expert_dp_size(const ParallelSpec& parallel) noexcept { return parallel.tp * parallel.dp / parallel.ep; }

/// The DP replicas simulate_iteration keeps where the replicas fold (replicas_fold(), iteration.hpp): the first
/// ep / gcd(ep, tp) of them, the fewest whose tp·R positions of a stage hold whole expert-parallel groups (they
/// divide dp for a validated layout); 1 for a dense model or ep dividing tp. Proof: sim/README.md, "Closed forms
/// and folding".
inline int folded_replicas(const ParallelSpec& parallel) noexcept {
  return parallel.expert_groups ? parallel.ep / std::gcd(parallel.ep, parallel.tp) : 1;
}

/// The rank ↔ coordinate map of a validated layout. Cheap to copy; holds no GPU list.
class Layout {
 public:
  /// `parallel` and `gpus_per_node` should come from a successful validate(); the constructor only checks that
  /// the sizes are positive (InternalError otherwise).
  Layout(const ParallelSpec& parallel, int gpus_per_node);

  int world_size() const noexcept { return tp_ * pp_ * dp_; }
  int tp() const noexcept { return tp_; }
  int pp() const noexcept { return pp_; }
  int dp() const noexcept { return dp_; }

  /// Global rank of `c`; throws InternalError when a coordinate is out of range.
  int rank_of(const RankCoord& c) const;
  /// Coordinates of `rank`; throws InternalError when rank ∉ [0, world_size).
  RankCoord coord_of(int rank) const;
  /// Node index of `rank` (rank / gpus_per_node).
  int node_of(int rank) const;

  /// The tp ranks sharing `rank`'s tensor-parallel all-reduces, ordered by tp index (contains `rank`).
  std::vector<int> tp_group(int rank) const;
  /// The dp ranks holding replicas of `rank`'s parameter shard, ordered by dp index (contains `rank`).
  std::vector<int> dp_group(int rank) const;
  /// The pp ranks of `rank`'s pipeline, stage 0 first (contains `rank`).
  std::vector<int> pipeline(int rank) const;

 private:
  int tp_;
  int pp_;
  int dp_;
  int gpus_per_node_;
  RankOrder order_;
};

/// Transformer layers held by one pipeline stage (one GPU column): layers / pp. Assumes a validated layout.
int layers_per_stage(const ModelSpec& model, const ParallelSpec& parallel);
/// Model chunks per GPU: virtual_stages for the interleaved schedule, else 1.
int model_chunks(const ParallelSpec& parallel);
/// Whether model chunk `chunk` of pipeline stage `stage` holds the word and position embeddings (the first chunk of
/// stage 0) or the LM head (the last chunk of the last stage).
bool chunk_holds_embedding(int stage, int chunk);
bool chunk_holds_head(const ParallelSpec& parallel, int stage, int chunk);
/// Transformer layers of one model chunk: layers / (pp · virtual_stages) for interleaved, else layers / pp.
int layers_per_chunk(const ModelSpec& model, const ParallelSpec& parallel);

/// Mixture of experts with dense layers among the MoE ones (ModelSpec::moe_layer_pattern): how many of a span of
/// transformer layers are MoE layers and how many dense. A dense model's layers are all dense.
struct LayerMix {
  int moe = 0;
  int dense = 0;
};
/// The layers of model chunk `chunk` of pipeline stage `stage`: virtual stage chunk·pp + stage holds layers
/// [v·n, (v + 1)·n) with n = layers_per_chunk (Megatron-Core's layer offsets). Assumes a validated layout.
LayerMix chunk_layer_mix(const ModelSpec& model, const ParallelSpec& parallel, int stage, int chunk);
/// The layers of every chunk of `stage`.
LayerMix stage_layer_mix(const ModelSpec& model, const ParallelSpec& parallel, int stage);
/// The layers of the whole model.
LayerMix model_layer_mix(const ModelSpec& model);
/// What a dense layer of `model` is: the model without experts (its dense MLP of width ffn_hidden). `model` itself
/// when it has no experts.
ModelSpec dense_layer_model(const ModelSpec& model);

/// Calls fn(layer_model, count) for each kind of layer `mix` holds: its MoE layers as `model` describes them, then
/// its dense layers as dense_layer_model(model) does (a dense model's: `model` itself). Kinds with no layer are
/// skipped, so a per-layer figure summed from zero this way equals count · figure exactly.
template <class Fn>
void for_each_layer_kind(const ModelSpec& model, const LayerMix& mix, Fn&& fn) {
  if (mix.moe > 0) fn(model, mix.moe);
  if (mix.dense > 0) {
    if (model.moe())
      fn(dense_layer_model(model), mix.dense);
    else
      fn(model, mix.dense);
  }
}

}  // namespace edgc::sim
