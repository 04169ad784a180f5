#pragma once
// Kernel-level compute time of a Megatron GPT on one GPU (CostParams::compute_model == kKernels): every GEMM of a
// transformer layer timed by a size-dependent GEMM model, every element-wise pass as memory traffic at HBM
// bandwidth, each kernel paying a fixed overhead. Used instead of "FLOPs / (peak · compute.efficiency)" when the
// cluster's GPU carries measured GEMM figures (GpuSpec::has_kernel_model()) and the scenario does not set
// compute.efficiency. scenarios/SOURCES.md §19 gives every parameter's source; sim/README.md ("Compute") the
// derivation.
//
// GEMM (gemm_s): an output of m × n (batch of them) is cut into 256 × 128, 128 × 256 or 128 × 128 tiles (whichever
// fills the SMs best; split-K is not modelled), the tiles run in waves over the GPU's SMs, each SM at matmul_rate /
// sm_count; a wave that is not full still takes a whole wave (wave quantisation), a tile that overhangs the matrix
// still costs a whole tile (tile quantisation). The full-wave rate is the measured maximum achievable GEMM rate
// (GpuSpec::matmul_tflops) divided by the model's own tile/wave fill at the shape it was measured at, so the model
// reproduces that measurement. The time is the larger of that and the memory floor (reading both operands and writing
// the output once at HBM bandwidth · compute.hbm_efficiency), plus one kernel overhead.
//
// One layer, micro-batch b, sequence s, hidden h, heads a, tensor parallel t, element size e (per GPU):
//  * GEMMs forward: QKV (b·s × 3h/t × h), attention scores (b·a/t batches of s × s × h/a), softmax·V (b·a/t
//    batches of s × h/a × s), projection (b·s × h × h/t), fc1 (b·s × 4h/t × h), fc2 (b·s × h × 4h/t); backward:
//    for each, the input gradient (m × k × n) and the weight (or second operand) gradient (k × n × m);
//  * element-wise forward (bytes moved): LayerNorm ×2 (2e per element of b·s·h), fused scale-mask-softmax (2e per
//    score), attention dropout (2e + 1 mask byte per score), the context layer's permute-and-copy back to
//    [s, b, h/t] (2e per element of b·s·h/t; `context_layer.permute(2, 0, 1, 3).contiguous()` in Megatron's
//    attention), bias-dropout-add ×2 (3e + 1), bias-GeLU (2e per element of b·s·4h/t); backward: LayerNorm ×2
//    (3e), softmax (3e), dropout (2e + 1), bias-dropout-add ×2 (2e + 1), the residual gradient sums ×2 (3e), GeLU
//    (3e per element of b·s·4h/t), the query, key and value gradients joined into the QKV output's gradient (the
//    backward of splitting that output: a concatenation, 2e per element of b·s·3h/t), bias gradients (e per
//    element of the four GEMM outputs). Scores are materialised (Megatron v2/v3 attention) unless
//    model.attention = flash. LayerNorm, dropout and residual work is on the full b·s·h on every TP rank, ÷ t
//    with sequence parallelism;
//  * flash attention (model.attention = flash): the attention core is one fused causal kernel forward and one
//    backward, timed by attention_s from the GPU's measured rates (GpuSpec::attention_rates), with no scores
//    materialised and no context copy;
//  * FP8 (model.precision = fp8): the linear layers' GEMMs (not the attention core's, not the LM head's) are timed
//    with the measured FP8 rate and shape (GpuSpec::fp8_matmul_*) and 1-byte operands;
//  * recomputation: full adds the whole forward to the backward pass, selective the attention core (scores GEMM,
//    softmax, dropout, softmax·V GEMM, the context copy; or the fused kernel's forward).
// The LM head (last stage): logits GEMM (b·s × V/t × h) and its two backward GEMMs, the final LayerNorm, and
// Megatron's vocab-parallel cross-entropy in fp32 over b·s·V/t logits, counted as 38 bytes per logit forward
// (16-bit → fp32 copy 6, max 4, subtracting the max in place 8, exp in place 8, sum 4, dividing by the sum in place
// 8: megatron/mpu/cross_entropy.py of 2021, megatron/core/tensor_parallel/cross_entropy.py today) and 14 backward
// (the softmax times the loss gradient in place 8, cast back 6). The embedding (first stage):
// lookup, position add and dropout, (7e + 1) bytes per element of b·s·h forward, (5e + 1) backward.
// The optimizer step (after the DP sync): Adam over the stage's parameters in fp32, 12 bytes per parameter for
// unscaling, the overflow check and the gradient norm, and 40 + e per parameter of the optimizer's shard (÷ dp
// with the distributed optimizer) for clipping, Adam (read p, g, m, v, write p, m, v) and the copy back to the
// e-byte model weights, at HBM bandwidth.
#include <vector>

#include "edgc/sim/cost_model.hpp"
#include "edgc/sim/layer.hpp"
#include "edgc/sim/spec.hpp"

namespace edgc::sim {

/// How the kernel-level model did against published measurements, per GPU and training stack: the rows of the
/// validation suites counted in their mean, error = (predicted − published) / published iteration time.
/// `simulate` states the band of the scenario's GPU with every kernel-level prediction (results::
/// kernel_model_caveat); the test Validation.KernelModelBandIsCurrent fails when edgc_bench_validation measures
/// anything else.
struct ValidatedBand {
  const char* gpu;      ///< the GPU the published runs used (GpuSpec::name begins with it)
  const char* stack;    ///< the training stack they ran ("Megatron-LM 2021-22", "Megatron-Core 2024")
  const char* suites;   ///< their folders under scenarios/validation/
  int rows;             ///< published runs compared
  double lowest_error;  ///< the most negative error
  double highest_error;
  double mean_error;  ///< signed: < 0 under-predicts on average
  double mean_abs_error;
};
/// A100: narayanan2021 and korthikanti2022 (Megatron-LM, 8 to 3,072 A100 80 GB); H100: megatron-core-2024
/// (Megatron-Core r0.8.0 and NeMo 24.07, 8 to 6,144 H100, bf16 and FP8; the Nemotron rows left out of the mean).
inline constexpr ValidatedBand kKernelModelValidation[] = {
    {"A100", "Megatron-LM 2021-22", "narayanan2021, korthikanti2022", 18, -0.1825, -0.0645, -0.1320, 0.1320},
    {"H100", "Megatron-Core 2024", "megatron-core-2024", 16, -0.1288, 0.2027, 0.0176, 0.0813},
};

/// Fraction of the tiles' work that is useful for `g` on `sm_count` SMs: output area / (waves · SMs · tile area),
/// the best of the 256 × 128, 128 × 256 and 128 × 128 tilings. In (0, 1].
double tile_wave_fill(const GemmShape& g, int sm_count);

/// Seconds of one GEMM with `element_bytes`-byte operands on `gpu` (has_kernel_model() required; InternalError
/// otherwise): max(compute, memory floor) + kernel overhead, as above. Where the GPU carries a measured shape grid
/// (GpuSpec::gemm_rates, 16-bit for 2-byte operands, FP8 for 1-byte ones), a single GEMM's time is that times the
/// measured-to-modelled ratio at its shape: the ratio at each grid point, interpolated log-linearly in m, n and k and
/// held at the grid's edges outside it — so the model reproduces every measured point and keeps its own tile and wave
/// quantisation between them. Batched GEMMs (the materialised attention core) keep the tile model.
double gemm_s(const GpuSpec& gpu, const CostParams& params, const GemmShape& g, int element_bytes);

/// The fused causal attention kernel (model.attention = flash) on `gpu` (attention_rates not empty; InternalError
/// otherwise): the measured rate, TFLOP/s, interpolated over the measured grid — log-linear in sequence length and in
/// heads per GPU, linear in head dimension, held at the grid's edge outside it — for the measured head grouping
/// nearest the model's. attention_flops counts as the measurements do: 2·heads·seq²·head_dim forward (4·…, halved
/// by the causal mask), 2.5 times that backward. attention_s is their quotient (the measured times include each
/// kernel's launch and tail, so no kernel overhead is added).
double attention_rate_tflops(const GpuSpec& gpu, const AttentionShape& a, bool backward);
double attention_flops(const AttentionShape& a, bool backward);
double attention_s(const GpuSpec& gpu, const AttentionShape& a, bool backward);

/// Seconds of one memory-bound kernel moving `bytes` through HBM: bytes / (hbm_GBps · hbm_efficiency) + overhead.
double memory_kernel_s(const GpuSpec& gpu, const CostParams& params, double bytes);

/// Seconds of one micro-batch's forward and backward pass (recomputation included in backward_s).
struct PassTime {
  double forward_s = 0.0;
  double backward_s = 0.0;
};

/// One kernel of a transformer layer's forward or backward pass on one GPU, as the model times it (recomputation
/// not listed: layer_time adds it). A GEMM carries its shape (`gemm.batch` > 0), a memory-bound pass its
/// `elements` (the tensor it streams, `row` elements per row: the LayerNorm's h, the softmax's s, ...) and the
/// bytes it moves; `op` names what it computes for a benchmark to run the same kernel (tools/bench/
/// layer_kernels_torch.py): gemm, layernorm, layernorm_backward, softmax, softmax_backward, dropout,
/// dropout_backward, bias_dropout_add, bias_dropout_add_backward, bias_gelu, gelu_backward, cast and cast_transpose
/// (FP8), add (a residual gradient sum), copy (a strided tensor made contiguous), cat (three `row`/3-wide tensors
/// joined along rows) or bias_grads (column sums of `row`-wide GEMM outputs). The LayerOp of the layer description
/// (names unique within a layer, e.g. "fc1", "fc1.dgrad", "layernorm1.backward") with what the model makes of it.
struct LayerKernel : LayerOp {
  double bytes = 0.0;
  double flops = 0.0;
  double seconds = 0.0;
};

/// Every kernel of one transformer layer's forward and backward pass on one GPU (one micro-batch), in execution
/// order, each timed by gemm_s or memory_kernel_s; layer_time is their sum plus recomputation.
std::vector<LayerKernel> layer_kernels(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                                       const CostParams& params);

/// One transformer layer on one GPU: the sum of layer_kernels, with full recomputation adding the forward pass
/// and selective recomputation its attention-core kernels to the backward pass.
PassTime layer_time(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu, const CostParams& params);
/// The LM head of the last stage: final LayerNorm, logits GEMM, vocab-parallel cross-entropy.
PassTime head_time(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu, const CostParams& params);
/// The embedding of the first stage: lookup, position embedding, dropout.
PassTime embedding_time(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                        const CostParams& params);

/// Seconds of the GDS's entropy measurement on one GPU of `stage` at one sampled iteration: a moments pass and a
/// histogram pass (kernels/stage_entropy.hpp) over the β-sampled share of the GPU's gradient (grad_bytes() per
/// element; block sampling reads about β of the bytes), each pass one kernel per parameter tensor
/// (LayerDescription::tensors per layer of the stage). HBM-bound at hbm_efficiency plus gpu.kernel_overhead_us per
/// kernel.
double entropy_pass_s(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                      const CostParams& params, int stage, double beta);

/// Seconds of one micro-batch's gradient accumulation on one GPU of model chunk `chunk` of `stage` when the
/// weight-gradient GEMMs do not accumulate in place (ParallelSpec::grad_accumulation_fusion off, as in Megatron-LM
/// before its gradient-accumulation fusion: each parameter's hook adds the fresh model-dtype gradient to the
/// gradient buffer): per parameter of chunk_params() the new gradient is read (model dtype) and the buffer read and
/// written (grad_bytes() each), one kernel per parameter tensor (LayerDescription::tensors per layer, 4 more for the
/// embeddings or the head), HBM-bound at hbm_efficiency.
double grad_accumulation_s(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                           const CostParams& params, int stage, int chunk);
/// One transformer layer's share of grad_accumulation_s: layer_params() and LayerDescription::tensors kernels.
double layer_grad_accumulation_s(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                                 const CostParams& params);

/// Seconds of the optimizer step on one GPU of `stage`: params.optimizer_step_s when ≥ 0, else the HBM model above.
double optimizer_step_s(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                        const CostParams& params, int stage);

}  // namespace edgc::sim
