#include "edgc/sim/layout.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/sim/spec_names.hpp"

namespace edgc::sim {
namespace {

void require_positive(const std::string& where, const std::string& key, long long value) {
  if (value <= 0) throw ConfigError(where, key, "must be a positive integer, got " + std::to_string(value));
}

// The shapes Megatron-Core refuses (its arguments.py and TransformerConfig checks): grouped-query heads that do not
// group the query heads evenly or do not split over TP, an MLP or a sequence that does not split over TP.
void check_layer_shape(const ModelSpec& model, const ParallelSpec& parallel, const std::string& where) {
  if (model.kv_heads < 0) throw ConfigError(where, "model.kv_heads", "must be ≥ 1 (or 0 for heads)");
  if (model.head_dim < 0) throw ConfigError(where, "model.head_dim", "must be ≥ 1 (or 0 for hidden / heads)");
  if (model.ffn_hidden < 0) throw ConfigError(where, "model.ffn_hidden", "must be ≥ 1 (or 0 for 4·hidden)");
  if (model.vocab_divisor < 1) throw ConfigError(where, "model.vocab_divisor", "must be a positive integer");
  const int g = model.kv_heads_or_default();
  if (model.heads % g != 0)
    throw ConfigError(where, "model.kv_heads",
                      std::to_string(model.heads) + " query heads do not split into " + std::to_string(g) +
                          " key/value groups (heads must be a multiple of kv_heads)");
  if (g % parallel.tp != 0)
    throw ConfigError(where, "model.kv_heads",
                      std::to_string(g) + " key/value heads do not split over tp = " + std::to_string(parallel.tp) +
                          " (Megatron-Core needs kv_heads to be a multiple of tp)");
  if (model.ffn_or_default() % parallel.tp != 0)
    throw ConfigError(
        where, "model.ffn_hidden",
        std::to_string(model.ffn_or_default()) + " does not split over tp = " + std::to_string(parallel.tp));
  if (parallel.sequence_parallel && parallel.tp > 1 && model.seq_len % parallel.tp != 0)
    throw ConfigError(where, "model.seq_len",
                      std::to_string(model.seq_len) + " tokens do not split over tp = " + std::to_string(parallel.tp) +
                          " with sequence parallelism");
}

// model.moe_layer_pattern: one 0/1 entry per layer (Megatron-Core asserts the pattern's length), at least one MoE
// layer (a model of dense layers only is experts = 0).
void check_moe_pattern(const ModelSpec& model, const std::string& where) {
  const auto& pattern = model.moe_layer_pattern;
  if (pattern.empty()) return;
  if (pattern.size() != static_cast<std::size_t>(model.layers))
    throw ConfigError(where, "model.moe_layer_freq",
                      "the pattern has " + std::to_string(pattern.size()) + " entries, the model " +
                          std::to_string(model.layers) + " layers (model.layers)");
  if (std::any_of(pattern.begin(), pattern.end(), [](std::uint8_t x) { return x > 1; }))
    throw ConfigError(where, "model.moe_layer_freq", "pattern entries must be 1 (MoE layer) or 0 (dense layer)");
  if (std::none_of(pattern.begin(), pattern.end(), [](std::uint8_t x) { return x == 1; }))
    throw ConfigError(where, "model.moe_layer_freq", "no layer is an MoE layer: a dense model has model.experts = 0");
}

// Mixture of experts as Megatron-Core accepts it (its MoE argument checks), within what is modelled: experts that
// split over the expert-parallel group, expert-parallel groups inside a stage's tp·dp GPUs, sequence parallelism
// with TP, whole experts (expert tensor parallelism 1).
void check_moe(const ModelSpec& model, const ParallelSpec& parallel, const std::string& where) {
  if (!model.moe()) {
    if (parallel.moe_a2a_overlap)
      throw ConfigError(where, "parallelism.moe_a2a_overlap",
                        "overlaps a mixture of experts' token all-to-alls: needs model.experts > 0");
    if (parallel.ep != 1)
      throw ConfigError(where, "parallelism.ep",
                        "expert parallelism needs a mixture-of-experts model (model.experts > 0), got ep = " +
                            std::to_string(parallel.ep));
    if (model.top_k != 0 || model.moe_ffn_hidden != 0 || model.shared_experts != 0 || !model.moe_layer_pattern.empty())
      throw ConfigError(where, "model.experts",
                        "top_k, moe_ffn_hidden, shared_experts and moe_layer_freq need model.experts > 0");
    return;
  }
  if (model.experts < 2) throw ConfigError(where, "model.experts", "a mixture of experts needs at least 2 experts");
  if (model.top_k < 1 || model.top_k > model.experts)
    throw ConfigError(
        where, "model.top_k",
        "must lie in [1, experts = " + std::to_string(model.experts) + "], got " + std::to_string(model.top_k));
  if (model.moe_ffn_hidden < 0) throw ConfigError(where, "model.moe_ffn_hidden", "must be ≥ 1 (or 0 for ffn_hidden)");
  if (model.shared_experts < 0) throw ConfigError(where, "model.shared_experts", "must be ≥ 0");
  if (!(model.moe_load_factor >= 1.0) || model.moe_load_factor > static_cast<double>(model.experts) / model.top_k)
    throw ConfigError(where, "model.moe_load_factor",
                      "the busiest expert's tokens over the mean must lie in [1, experts / top_k], got " +
                          std::to_string(model.moe_load_factor));
  require_positive(where, "parallelism.ep", parallel.ep);
  if (model.experts % parallel.ep != 0)
    throw ConfigError(where, "parallelism.ep",
                      std::to_string(model.experts) + " experts do not split over ep = " + std::to_string(parallel.ep));
  const long long stage_gpus = static_cast<long long>(parallel.tp) * parallel.dp;
  if (stage_gpus % parallel.ep != 0)
    throw ConfigError(where, "parallelism.ep",
                      "ep = " + std::to_string(parallel.ep) +
                          " does not divide the tp·dp = " + std::to_string(stage_gpus) +
                          " GPUs of a pipeline stage (Megatron-Core forms expert-parallel groups inside them)");
  if (parallel.moe_a2a_overlap) {  // combined_1f1b.py: without pipelining, or the interleaved pipeline
    if (parallel.ep < 2)
      throw ConfigError(where, "parallelism.moe_a2a_overlap",
                        "hides the token all-to-alls of ep > 1: set parallelism.ep");
    if (parallel.pp > 1)
      throw ConfigError(where, "parallelism.moe_a2a_overlap",
                        "edgc models Megatron-Core's combined 1F1B without pipelining (pp = 1) only: its "
                        "interleaved-pipeline variant, which also moves the pipeline transfers, is not modelled");
    if (model.recompute == Recompute::kFull)
      throw ConfigError(where, "parallelism.moe_a2a_overlap",
                        "Megatron-Core's combined 1F1B does not support full activation recomputation");
  }
  if (parallel.etp != 1)
    throw ConfigError(where, "parallelism.etp",
                      "only expert tensor parallelism 1 (whole experts, Megatron-Core's recommended setting with "
                      "expert parallelism) is modelled, got " +
                          std::to_string(parallel.etp));
  if (parallel.tp > 1 && !parallel.sequence_parallel)
    throw ConfigError(where, "parallelism.sequence_parallel",
                      "Megatron-Core needs sequence parallelism for a mixture of experts with tp > 1");
  check_moe_pattern(model, where);
  const std::int64_t fe = model.moe_ffn_or_default();
  if (model.shared_experts > 0 && (static_cast<std::int64_t>(model.shared_experts) * fe) % parallel.tp != 0)
    throw ConfigError(where, "model.shared_experts",
                      "the shared experts' width does not split over tp = " + std::to_string(parallel.tp));
}

}  // namespace

ParallelSpec validate(const ModelSpec& model, const ParallelSpec& parallel, const ClusterSpec& cluster,
                      const std::string& where) {
  require_positive(where, "model.layers", model.layers);
  require_positive(where, "model.hidden", model.hidden);
  require_positive(where, "model.heads", model.heads);
  require_positive(where, "model.seq_len", model.seq_len);
  require_positive(where, "model.vocab", model.vocab);
  require_positive(where, "model.micro_batch_size", model.micro_batch_size);
  require_positive(where, "model.global_batch_size", model.global_batch_size);
  if (model.dtype != "fp16" && model.dtype != "bf16" && model.dtype != "fp32")
    throw ConfigError(where, "model.dtype", "expected fp16, bf16 or fp32, got '" + model.dtype + "'");
  require_positive(where, "parallelism.tp", parallel.tp);
  require_positive(where, "parallelism.pp", parallel.pp);
  require_positive(where, "parallelism.dp", parallel.dp);
  require_positive(where, "parallelism.virtual_stages", parallel.virtual_stages);
  if (parallel.microbatches < 0)
    throw ConfigError(where, "parallelism.microbatches",
                      "must be positive (or 0 to derive it), got " + std::to_string(parallel.microbatches));
  require_positive(where, "cluster.nodes", cluster.nodes);
  require_positive(where, "cluster.gpus_per_node", cluster.gpus_per_node);

  // Products in 64 bits: a typo such as tp = 100000 must produce this message, not an overflow.
  const long long gpus = static_cast<long long>(parallel.tp) * parallel.pp * parallel.dp;
  if (gpus != cluster.total_gpus())
    throw ConfigError(where, "parallelism.dp",
                      "tp·pp·dp = " + std::to_string(parallel.tp) + "·" + std::to_string(parallel.pp) + "·" +
                          std::to_string(parallel.dp) + " = " + std::to_string(gpus) + " GPUs, but the cluster has " +
                          std::to_string(cluster.total_gpus()) + " (" + std::to_string(cluster.nodes) + " nodes × " +
                          std::to_string(cluster.gpus_per_node) + ")");
  // Megatron's TP all-reduces sit on the critical path of every layer; they only make sense on NVLink.
  if (cluster.gpus_per_node % parallel.tp != 0)
    throw ConfigError(where, "parallelism.tp",
                      std::to_string(parallel.tp) + " does not divide the " + std::to_string(cluster.gpus_per_node) +
                          " GPUs of a node: a tensor-parallel group must stay inside one node");

  const bool interleaved = parallel.schedule == PipelineSchedule::kInterleaved;
  if (!interleaved && parallel.virtual_stages != 1)
    throw ConfigError(where, "parallelism.virtual_stages",
                      "model chunks per GPU need the interleaved schedule, but the schedule is " +
                          std::string(schedule_name(parallel.schedule)));
  if (interleaved && parallel.pp < 2)
    throw ConfigError(where, "parallelism.pp", "the interleaved schedule needs at least 2 pipeline stages");
  const long long layer_split = static_cast<long long>(parallel.pp) * parallel.virtual_stages;
  if (model.layers % layer_split != 0)
    throw ConfigError(where, "model.layers",
                      std::to_string(model.layers) + " layers do not split evenly over " +
                          (interleaved ? "pp·virtual_stages = " + std::to_string(layer_split) + " model chunks"
                                       : std::to_string(parallel.pp) + " pipeline stages"));
  if (model.heads % parallel.tp != 0)
    throw ConfigError(
        where, "model.heads",
        std::to_string(model.heads) + " attention heads do not split over tp = " + std::to_string(parallel.tp));
  if (model.head_dim == 0 && model.hidden % model.heads != 0)
    throw ConfigError(
        where, "model.hidden",
        std::to_string(model.hidden) + " is not a multiple of the " + std::to_string(model.heads) + " heads");
  check_layer_shape(model, parallel, where);
  check_moe(model, parallel, where);

  const long long per_step = static_cast<long long>(model.micro_batch_size) * parallel.dp;
  if (model.global_batch_size % per_step != 0)
    throw ConfigError(where, "model.global_batch_size",
                      std::to_string(model.global_batch_size) +
                          " sequences are not a multiple of micro_batch·dp = " + std::to_string(per_step));
  ParallelSpec out = parallel;
  out.expert_groups = model.moe();
  const long long derived = model.global_batch_size / per_step;
  if (out.microbatches == 0) {
    out.microbatches = static_cast<int>(derived);
  } else if (out.microbatches != derived) {
    throw ConfigError(where, "parallelism.microbatches",
                      std::to_string(out.microbatches) + " differs from global_batch / (micro_batch·dp) = " +
                          std::to_string(derived) + " (set it to 0 to derive it)");
  }
  if (interleaved && out.microbatches % out.pp != 0)
    throw ConfigError(where, "parallelism.microbatches",
                      "the interleaved schedule needs a multiple of pp = " + std::to_string(out.pp) + ", got " +
                          std::to_string(out.microbatches));
  return out;
}

Layout::Layout(const ParallelSpec& parallel, int gpus_per_node)
    : tp_(parallel.tp), pp_(parallel.pp), dp_(parallel.dp), gpus_per_node_(gpus_per_node), order_(parallel.order) {
  if (tp_ <= 0 || pp_ <= 0 || dp_ <= 0 || gpus_per_node_ <= 0)
    throw InternalError("Layout: sizes must be positive (validate the layout first)");
}

int Layout::rank_of(const RankCoord& c) const {
  if (c.tp < 0 || c.tp >= tp_ || c.pp < 0 || c.pp >= pp_ || c.dp < 0 || c.dp >= dp_)
    throw InternalError("Layout::rank_of: coordinate (tp " + std::to_string(c.tp) + ", pp " + std::to_string(c.pp) +
                        ", dp " + std::to_string(c.dp) + ") out of range");
  return order_ == RankOrder::kTpDpPp ? (c.pp * dp_ + c.dp) * tp_ + c.tp : (c.dp * pp_ + c.pp) * tp_ + c.tp;
}

RankCoord Layout::coord_of(int rank) const {
  if (rank < 0 || rank >= world_size())
    throw InternalError("Layout::coord_of: rank " + std::to_string(rank) + " out of range");
  if (order_ == RankOrder::kTpDpPp)
    return RankCoord{.tp = rank % tp_, .pp = rank / (tp_ * dp_), .dp = (rank / tp_) % dp_};
  return RankCoord{.tp = rank % tp_, .pp = (rank / tp_) % pp_, .dp = rank / (tp_ * pp_)};
}

int Layout::node_of(int rank) const {
  (void)coord_of(rank);  // range check
  return rank / gpus_per_node_;
}

std::vector<int> Layout::tp_group(int rank) const {
  RankCoord c = coord_of(rank);
  std::vector<int> group;
  group.reserve(tp_);
  for (c.tp = 0; c.tp < tp_; ++c.tp) group.push_back(rank_of(c));
  return group;
}

std::vector<int> Layout::dp_group(int rank) const {
  RankCoord c = coord_of(rank);
  std::vector<int> group;
  group.reserve(dp_);
  for (c.dp = 0; c.dp < dp_; ++c.dp) group.push_back(rank_of(c));
  return group;
}

std::vector<int> Layout::pipeline(int rank) const {
  RankCoord c = coord_of(rank);
  std::vector<int> group;
  group.reserve(pp_);
  for (c.pp = 0; c.pp < pp_; ++c.pp) group.push_back(rank_of(c));
  return group;
}

int layers_per_stage(const ModelSpec& model, const ParallelSpec& parallel) { return model.layers / parallel.pp; }

int model_chunks(const ParallelSpec& parallel) {
  return parallel.schedule == PipelineSchedule::kInterleaved ? parallel.virtual_stages : 1;
}

bool chunk_holds_embedding(int stage, int chunk) { return stage == 0 && chunk == 0; }

bool chunk_holds_head(const ParallelSpec& parallel, int stage, int chunk) {
  return stage == parallel.pp - 1 && chunk == model_chunks(parallel) - 1;
}

int layers_per_chunk(const ModelSpec& model, const ParallelSpec& parallel) {
  return model.layers / (parallel.pp * model_chunks(parallel));
}

namespace {

LayerMix mix_of(const ModelSpec& model, int first, int count) {
  LayerMix mix;
  for (int layer = first; layer < first + count; ++layer) ++(model.moe_layer(layer) ? mix.moe : mix.dense);
  return mix;
}

}  // namespace

LayerMix chunk_layer_mix(const ModelSpec& model, const ParallelSpec& parallel, int stage, int chunk) {
  const int n = layers_per_chunk(model, parallel);
  return mix_of(model, (chunk * parallel.pp + stage) * n, n);
}

LayerMix stage_layer_mix(const ModelSpec& model, const ParallelSpec& parallel, int stage) {
  LayerMix mix;
  for (int chunk = 0; chunk < model_chunks(parallel); ++chunk) {
    const LayerMix c = chunk_layer_mix(model, parallel, stage, chunk);
    mix.moe += c.moe;
    mix.dense += c.dense;
  }
  return mix;
}

LayerMix model_layer_mix(const ModelSpec& model) { return mix_of(model, 0, model.layers); }

ModelSpec dense_layer_model(const ModelSpec& model) {
  ModelSpec dense = model;
  dense.experts = 0;
  dense.top_k = 0;
  dense.moe_ffn_hidden = 0;
  dense.shared_experts = 0;
  dense.moe_load_factor = 1.0;
  dense.moe_layer_pattern.clear();
  return dense;
}

}  // namespace edgc::sim
