#pragma once
// Peak memory of one GPU per pipeline stage: model state (weights, gradients, Adam's optimizer state) and the
// activations the pipeline schedule keeps for the backward pass. Pure arithmetic, no SimGrid; sim/README.md
// ("Memory") and scenarios/SOURCES.md §17 give the equations and their sources.
//
// Per GPU of stage s, with P the stage's parameters on one GPU (stage_params().per_gpu(): its TP shard plus the
// replicated LayerNorm, biases and position embedding, the word-embedding copy on the first and last stage),
// e = bytes_per_element(model.dtype), b micro-batch, s sequence, h hidden, a heads, t = tp, V the padded vocabulary:
//  * weights P·e; gradients P·g (g = grad_bytes(): the DP reduction's element size, model.dtype's by default);
//  * optimizer: Adam with fp32 master weights and two fp32 moments, P·12 bytes (P·8 for fp32 training, whose
//    weights are their own master copy); ÷ dp with a distributed optimizer (ZeRO stage 1, Megatron's
//    --use-distributed-optimizer, parallel.distributed_optimizer). Rajbhandari et al. 2020 (ZeRO, arXiv 1910.02054)
//    §3.1: 2 + 2 + 12 bytes;
//  * activations of one transformer layer and micro-batch (Korthikanti et al. 2022, arXiv 2205.05198, Table 2,
//    tensor parallelism without sequence parallelism): s·b·h·(10 + 24/t + 5·a·s/(h·t)) bytes for 16-bit training
//    (× e/2 otherwise); the 10 becomes 10/t with sequence parallelism and the 5·a·s/(h·t) term of the attention
//    core disappears with selective recomputation (the same table); with full recomputation only the layer's
//    input, 2·s·b·h (× e/2, ÷ t with sequence parallelism), is kept, and one layer's full activations are
//    rematerialised at a time during the backward pass (`recompute_bytes`);
//  * the first stage's first chunk also keeps the embedding's dropout mask s·b·h (1 byte) and its token ids
//    8·s·b (int64); the last stage's last chunk the inputs of the final LayerNorm and output projection, 4·s·b·h,
//    and the fp32 logits of the cross-entropy, 4·s·b·V/t (Korthikanti et al. §4.3, Megatron-LM's
//    megatron/training/theoretical_memory_usage.py);
//  * the activations held at once are the largest sum over the (micro-batch, chunk) passes the schedule has
//    forwarded and not yet backwarded (pass_order(), pipeline_schedule.hpp): all m for GPipe, min(pp − s, m) for
//    1F1B, Megatron's (pp − s − 1)·2 + (v − 1)·pp + 1 chunk passes for the interleaved schedule.
//  * a mixture of experts' token dispatcher (Megatron-Core's all-to-all dispatcher, megatron/core/transformer/moe/
//    token_dispatcher.py): while an MoE layer combines its experts' outputs, the experts' output rows (load · k per
//    token of the GPU's share, T = s·b, ÷ t with sequence parallelism) and the combine all-to-all's receive buffer
//    (k per token) are alive at once and neither is kept for the backward pass (the dispatch's receive buffer is:
//    it is fc1's saved input, counted in the layer's activations), and the backward pass mirrors it with their
//    gradients: (load + 1) · k · T · h · e for one MoE layer at a time (`dispatch_bytes`; 0 for a dense model or a
//    stage without MoE layers).
// Peak = weights + gradients + optimizer + activations + recompute working set + dispatch buffers: a lower bound of
// a real run's peak, which also holds the CUDA context, NCCL buffers, allocator fragmentation, other temporary
// buffers of one layer and (Megatron's fp16 optimizer) an fp32 copy of the gradients during the step. A layout
// rejected here certainly does not fit; one accepted may still not.
#include <cstdint>
#include <string>
#include <vector>

#include "edgc/sim/spec.hpp"

namespace edgc::sim {

/// Peak bytes of one GPU of one pipeline stage, by part.
struct StageMemory {
  int stage = 0;
  std::int64_t parameters = 0;     ///< on one GPU of the stage
  double weights_bytes = 0.0;      ///< parameters · e
  double gradients_bytes = 0.0;    ///< parameters · e
  double optimizer_bytes = 0.0;    ///< fp32 master weights + two moments (÷ dp when distributed)
  double activations_bytes = 0.0;  ///< kept for the backward pass, at the schedule's peak
  double recompute_bytes = 0.0;    ///< one layer's full activations during its recomputation (0 without)
  double dispatch_bytes = 0.0;     ///< one MoE layer's token-dispatcher buffers (0 without MoE layers)
  int inflight_passes = 0;         ///< (micro-batch, chunk) passes whose activations are held at that peak
  double total_bytes() const noexcept {
    return weights_bytes + gradients_bytes + optimizer_bytes + activations_bytes + recompute_bytes + dispatch_bytes;
  }
};

/// Activation bytes of one transformer layer for one micro-batch on one GPU, everything kept (no recomputation):
/// Korthikanti et al.'s s·b·h·(10 + 24/t + 5·a·s/(h·t)), scaled by e/2.
double layer_activation_bytes(const ModelSpec& model, const ParallelSpec& parallel);

/// Activation bytes one (micro-batch, chunk) pass of `stage` keeps until its backward: its layers (each the full
/// set, or only its input under full recomputation), plus the embedding terms on the first chunk of the first
/// stage and the output-layer terms on the last chunk of the last stage. Throws InternalError out of range.
double pass_activation_bytes(const ModelSpec& model, const ParallelSpec& parallel, int stage, int chunk);

/// A mixture of experts' token-dispatcher buffers of one MoE layer on one GPU (above): (load + 1) · k · T · h · e,
/// T = s·b (÷ tp with sequence parallelism); 0 for a dense model.
double dispatch_buffer_bytes(const ModelSpec& model, const ParallelSpec& parallel);

/// Peak memory of every stage, stage 0 first. `parallel` as returned by validate() (microbatches filled in).
std::vector<StageMemory> stage_memory(const ModelSpec& model, const ParallelSpec& parallel);

/// Throws ConfigError (where `where`, field "cluster.gpu.memory_GiB") when a stage needs more than
/// `capacity_GiB` per GPU, naming the stage that needs most: "needs X GiB per GPU on stage s (…parts…), the GPU
/// has Y GiB". Does nothing for an empty list. capacity_GiB must be > 0 (InternalError otherwise).
void check_fits(const std::vector<StageMemory>& stages, double capacity_GiB, const std::string& where);

/// Bytes in GiB (2³⁰).
constexpr double to_GiB(double bytes) noexcept { return bytes / (1024.0 * 1024.0 * 1024.0); }

}  // namespace edgc::sim
