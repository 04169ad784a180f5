#pragma once
// One transformer layer, described once: what it holds (its weights, with their tensor-parallel sharding), what it
// does on one GPU for one micro-batch (its GEMMs and element-wise passes, forward and backward, in execution order)
// and what it keeps for the backward pass. Every per-layer cost of the simulator derives from this description:
// parameter counts (cost_model.hpp stage_params, parameter_count), FLOPs (layer_forward_flops), the matrices
// PowerSGD compresses (stage_matrices), the kernel list the kernel-level model times (kernel_model.hpp
// layer_kernels), the activations memory.hpp keeps and the FLOPs beside which TP collectives run
// (tp_comm_per_layer). To add an architecture feature (a parallel attention + MLP block, a new MLP or attention
// variant), edit describe_layer in sim/src/layer.cpp; nothing else needs to know the layer's shape.
//
// Shapes, micro-batch b, sequence s, hidden h, heads a, kv heads g, head dimension d, MLP width f, tensor-parallel
// size t (GPT: g = a, d = h/a, f = 4h):
//  * QKV: column-parallel, h × (a + 2g)·d; projection: row-parallel, a·d × h; fc1: column-parallel, h × f (GeLU) or
//    h × 2f (SwiGLU: gate and up in one matrix, as Megatron-Core stores linear_fc1); fc2: row-parallel, f × h.
//    A matrix is stored as input rows × output columns; column-parallel splits the columns, row-parallel the rows.
//  * biases (model.bias): a column-parallel layer's bias is split with its columns, a row-parallel one's is
//    replicated; norms (two per layer) are replicated: LayerNorm weight and bias, RMSNorm weight only.
//  * attention core: scores (b·a/t batches of s × s × d), softmax, dropout when model.dropout, softmax·V; with
//    grouped-query attention every query head reads its group's key and value, so the core's FLOPs follow a, not g.
//    With model.attention = flash the core is one fused kernel forward and one backward (AttentionShape), and the
//    context layer needs no copy back to [s, b, h/t].
#include <cstdint>
#include <vector>

#include "edgc/sim/spec.hpp"

namespace edgc::sim {

/// How a weight is split over the tensor-parallel group.
enum class Sharding { kColumn, kRow, kReplicated };

/// One parameter tensor of the layer, whole (before tensor-parallel sharding). A 2-D weight (`matrix`) is what
/// PowerSGD compresses; a bias or norm vector has rows = 1.
struct LayerWeight {
  const char* name = "";
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  Sharding sharding = Sharding::kReplicated;
  bool matrix = false;
  /// A routed expert's weight (mixture of experts): `count` same-shape copies, one per expert, split over the
  /// expert-parallel group (experts / ep on each GPU) and synchronised over the expert-data-parallel group.
  bool expert = false;
  std::int64_t count = 1;

  std::int64_t elements() const { return rows * cols; }  ///< of one copy
  /// Rows and columns on one tensor-parallel rank.
  std::int64_t shard_rows(int tp) const { return sharding == Sharding::kRow ? rows / tp : rows; }
  std::int64_t shard_cols(int tp) const { return sharding == Sharding::kColumn ? cols / tp : cols; }
};

/// One (batched) GEMM: `batch` products of an m × k and a k × n matrix.
struct GemmShape {
  double m = 0.0;
  double n = 0.0;
  double k = 0.0;
  double batch = 1.0;
};

/// A fused causal attention kernel's problem on one GPU: `heads` query heads (micro-batch × query heads per TP rank),
/// each over `seq` tokens of `head_dim` channels, `group` query heads sharing one key/value head.
struct AttentionShape {
  double heads = 0.0;
  double seq = 0.0;
  double head_dim = 0.0;
  double group = 1.0;
};

/// One kernel of the layer on one GPU for one micro-batch: a GEMM (`gemm.batch` > 0), a fused attention kernel
/// (`attention.heads` > 0; op flash_attention or flash_attention_backward) or a memory-bound pass over `elements`
/// elements (`row` per row) moving `bytes_per_element` bytes per element. `op` names what it computes,
/// for a benchmark to run the same kernel (kernel_model.hpp LayerKernel lists the ops).
struct LayerOp {
  const char* name = "";
  const char* op = "";
  bool backward = false;
  bool attention_core = false;  ///< re-run by selective recomputation
  GemmShape gemm{.batch = 0.0};
  AttentionShape attention{};
  double elements = 0.0;
  double row = 0.0;
  double bytes_per_element = 0.0;
};

/// Activations one layer keeps for its backward pass, per element of s·b·h and per 16-bit element size
/// (Korthikanti et al. 2022, §4): `replicated` on every TP rank (÷ t with sequence parallelism), `sharded` ÷ t, and
/// the attention core's s × s tensors `score_factor` · a·s/(h·t) (5 for softmax output, dropout mask and dropout
/// output; 2 without dropout), which selective recomputation drops. Flash attention keeps no s × s tensor
/// (score_factor 0) but its softmax statistics, one fp32 log-sum-exp per query head and token: `head_stats` · a/(h·t)
/// (2, in 16-bit units).
struct SavedActivations {
  double replicated = 0.0;
  double sharded = 0.0;
  double score_factor = 0.0;  ///< 5 with dropout, 2 without, 0 for flash attention: multiplies a·s/(h·t)
  double head_stats = 0.0;    ///< flash attention only: multiplies a/(h·t)
};

/// The layer's TP-parallel linear layers whose input-gradient and weight-gradient GEMMs TP collectives can run
/// beside: the FLOPs of one of those GEMMs on one GPU.
struct BesideFlops {
  double qkv = 0.0;
  double fc1 = 0.0;
  double proj = 0.0;  ///< the row-parallel layers, whose forward GEMMs a reduce-scatter follows (tp_comm_overlap)
  double fc2 = 0.0;
};

struct LayerDescription {
  std::vector<LayerWeight> weights;  ///< qkv, proj, fc1, fc2 matrices first, then biases and norm vectors
  std::vector<LayerOp> ops;          ///< forward then backward, in execution order
  SavedActivations saved;
  BesideFlops beside;
  int tensors = 0;  ///< parameter tensors (one gradient hook and one optimizer tensor each)
};

/// The description of one layer of `model` on one GPU of `parallel` (tp and sequence parallelism matter), for one
/// micro-batch. The model must have passed check_layout (shapes that divide evenly).
LayerDescription describe_layer(const ModelSpec& model, const ParallelSpec& parallel);

/// Parameters of one layer split over TP (per rank) and replicated, from the description; routed experts' weights
/// are in neither (layer_expert_params).
std::int64_t layer_sharded_per_rank(const LayerDescription& layer, int tp);
std::int64_t layer_replicated_params(const LayerDescription& layer);
/// Elements of the layer's 2-D weights other than the routed experts', whole (sum of rows · cols).
std::int64_t layer_matrix_elements(const LayerDescription& layer);
/// Parameters of `experts` routed experts of the layer (experts / ep: one GPU's; top_k: what a token passes
/// through; the model's experts: the whole layer's). 0 for a dense layer.
std::int64_t layer_expert_params(const LayerDescription& layer, int experts);
/// Parameters of the final norm (after the last layer): 2h for LayerNorm, h for RMSNorm.
std::int64_t final_norm_params(const ModelSpec& model);

}  // namespace edgc::sim
