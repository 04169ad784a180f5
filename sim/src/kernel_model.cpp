#include "edgc/sim/kernel_model.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/sim/cost_model.hpp"
#include "edgc/sim/layout.hpp"

namespace edgc::sim {
namespace {

// Thread-block tiles of 16-bit GEMMs on Volta to Hopper: 256 × 128 (either way) for large outputs, 128 × 128 when
// that fills the SMs better (NVIDIA, "Matrix Multiplication Background User's Guide", tile and wave quantisation
// sections; scenarios/SOURCES.md §19). All are taken to run at the same per-SM rate.
constexpr double kTileLong = 256.0;
constexpr double kTileShort = 128.0;
// Cross-entropy bytes per fp32 logit (forward / backward), see kernel_model.hpp.
constexpr double kCrossEntropyForwardBytes = 38.0;
constexpr double kCrossEntropyBackwardBytes = 14.0;
// Optimizer step bytes per parameter: unscale + overflow check + gradient norm over every local parameter (fp32),
// and clipping + Adam + the copy to the model's weights over the optimizer's shard (kernel_model.hpp).
constexpr double kOptimizerLocalBytes = 12.0;
constexpr double kOptimizerShardBytes = 40.0;
// Kernels of one optimizer step (multi-tensor apply launches: unscale, norm, clip, Adam, copy, zero grads).
constexpr int kOptimizerKernels = 6;

double fill_for(const GemmShape& g, int sms, double tile_m, double tile_n) {
  const double tiles = g.batch * std::ceil(g.m / tile_m) * std::ceil(g.n / tile_n);
  const double waves = std::ceil(tiles / sms);
  return g.batch * g.m * g.n / (waves * sms * tile_m * tile_n);
}

// Bytes a GEMM cannot do without: both operands read and the output written once.
double gemm_bytes(const GemmShape& g, double element_bytes) {
  return g.batch * (g.m * g.k + g.k * g.n + g.m * g.n) * element_bytes;
}

double overhead_s(const GpuSpec& gpu) { return gpu.kernel_overhead_us * 1e-6; }

double hbm_Bps(const GpuSpec& gpu, const CostParams& params) { return gpu.hbm_GBps * 1e9 * params.hbm_efficiency; }

// The forward GEMMs of one layer on one GPU; attention core (scores, softmax·V) first.
std::vector<GemmShape> layer_gemms(const ModelSpec& model, const ParallelSpec& parallel) {
  const double b = model.micro_batch_size, s = model.seq_len, h = model.hidden, t = parallel.tp;
  const double heads = static_cast<double>(model.heads) / t * b;
  const double d = h / model.heads;
  return {{.m = s, .n = s, .k = d, .batch = heads}, {.m = s, .n = d, .k = s, .batch = heads},
          {.m = b * s, .n = 3 * h / t, .k = h},     {.m = b * s, .n = h, .k = h / t},
          {.m = b * s, .n = 4 * h / t, .k = h},     {.m = b * s, .n = h, .k = 4 * h / t}};
}

// Forward time and backward time (input and weight gradients) of `gemms`.
PassTime gemm_pass(const GpuSpec& gpu, const CostParams& params, const std::vector<GemmShape>& gemms, int e) {
  PassTime p;
  for (const GemmShape& g : gemms) {
    p.forward_s += gemm_s(gpu, params, g, e);
    p.backward_s += gemm_s(gpu, params, {.m = g.m, .n = g.k, .k = g.n, .batch = g.batch}, e) +
                    gemm_s(gpu, params, {.m = g.k, .n = g.n, .k = g.m, .batch = g.batch}, e);
  }
  return p;
}

double sum_kernels(const GpuSpec& gpu, const CostParams& params, const std::vector<double>& bytes) {
  double s = 0.0;
  for (const double b : bytes) s += memory_kernel_s(gpu, params, b);
  return s;
}

}  // namespace

double tile_wave_fill(const GemmShape& g, int sm_count) {
  if (sm_count < 1 || !(g.m > 0 && g.n > 0 && g.batch > 0)) return 1.0;
  return std::max({fill_for(g, sm_count, kTileLong, kTileShort), fill_for(g, sm_count, kTileShort, kTileLong),
                   fill_for(g, sm_count, kTileShort, kTileShort)});
}

double gemm_s(const GpuSpec& gpu, const CostParams& params, const GemmShape& g, int element_bytes) {
  if (!gpu.has_kernel_model()) throw InternalError("gemm_s: the GPU has no measured GEMM figures");
  if (!(g.m > 0 && g.n > 0 && g.k > 0 && g.batch > 0)) return 0.0;
  const double reference = gpu.matmul_m > 0 && gpu.matmul_n > 0
                               ? tile_wave_fill({.m = gpu.matmul_m, .n = gpu.matmul_n, .k = gpu.matmul_k}, gpu.sm_count)
                               : 1.0;
  const double full_wave_rate = gpu.matmul_tflops * 1e12 / reference;
  const double compute = 2.0 * g.batch * g.m * g.n * g.k / (full_wave_rate * tile_wave_fill(g, gpu.sm_count));
  const double memory = gemm_bytes(g, element_bytes) / hbm_Bps(gpu, params);
  return std::max(compute, memory) + overhead_s(gpu);
}

double memory_kernel_s(const GpuSpec& gpu, const CostParams& params, double bytes) {
  return bytes / hbm_Bps(gpu, params) + overhead_s(gpu);
}

std::vector<LayerKernel> layer_kernels(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                                       const CostParams& params) {
  const int e_bytes = bytes_per_element(model.dtype);
  const double e = e_bytes, t = parallel.tp;
  const double b = model.micro_batch_size, s = model.seq_len, h = model.hidden;
  const double E = b * s * h;
  const double A = b * model.heads / t * s * s;
  const double Er = parallel.sequence_parallel ? E / t : E;  // LayerNorm, dropout and residual work
  const double mlp = 4.0 * E / t;

  std::vector<LayerKernel> out;
  const auto gemm = [&](const char* name, const GemmShape& g, bool backward, bool core) {
    LayerKernel k{.name = name, .op = "gemm", .backward = backward, .attention_core = core, .gemm = g};
    k.flops = 2.0 * g.batch * g.m * g.n * g.k;
    k.bytes = gemm_bytes(g, e);
    k.seconds = gemm_s(gpu, params, g, e_bytes);
    out.push_back(k);
  };
  const auto pass = [&](const char* name, const char* op, double elements, double row, double bytes_per_element,
                        bool backward, bool core) {
    LayerKernel k{.name = name, .op = op, .backward = backward, .attention_core = core};
    k.elements = elements;
    k.row = row;
    k.bytes = bytes_per_element * elements;
    k.seconds = memory_kernel_s(gpu, params, k.bytes);
    out.push_back(k);
  };
  // The forward GEMMs (layer_gemms' order: scores, softmax·V, QKV, projection, fc1, fc2) with their backward pairs.
  const std::vector<GemmShape> g = layer_gemms(model, parallel);
  const char* const names[6][3] = {
      {"scores", "scores.dgrad", "scores.wgrad"}, {"context", "context.dgrad", "context.wgrad"},
      {"qkv", "qkv.dgrad", "qkv.wgrad"},          {"proj", "proj.dgrad", "proj.wgrad"},
      {"fc1", "fc1.dgrad", "fc1.wgrad"},          {"fc2", "fc2.dgrad", "fc2.wgrad"}};
  const auto backward_gemms = [&](std::size_t i, bool core) {
    gemm(names[i][1], {.m = g[i].m, .n = g[i].k, .k = g[i].n, .batch = g[i].batch}, true, core);
    gemm(names[i][2], {.m = g[i].k, .n = g[i].n, .k = g[i].m, .batch = g[i].batch}, true, core);
  };
  // Forward, in execution order.
  pass("layernorm1", "layernorm", Er, h, 2 * e, false, false);
  gemm(names[2][0], g[2], false, false);
  gemm(names[0][0], g[0], false, true);
  pass("softmax", "softmax", A, s, 2 * e, false, true);
  pass("attention_dropout", "dropout", A, s, 2 * e + 1, false, true);
  gemm(names[1][0], g[1], false, true);
  pass("context_copy", "copy", E / t, h / t, 2 * e, false, true);  // [b, np, s, hn] -> [s, b, np·hn]
  gemm(names[3][0], g[3], false, false);
  pass("bias_dropout_add1", "bias_dropout_add", Er, h, 3 * e + 1, false, false);
  pass("layernorm2", "layernorm", Er, h, 2 * e, false, false);
  gemm(names[4][0], g[4], false, false);
  pass("bias_gelu", "bias_gelu", mlp, 4 * h / t, 2 * e, false, false);
  gemm(names[5][0], g[5], false, false);
  pass("bias_dropout_add2", "bias_dropout_add", Er, h, 3 * e + 1, false, false);
  // Backward, in reverse.
  pass("bias_dropout_add2.backward", "bias_dropout_add_backward", Er, h, 2 * e + 1, true, false);
  pass("residual_sum2", "add", Er, h, 3 * e, true, false);
  backward_gemms(5, false);
  pass("gelu.backward", "gelu_backward", mlp, 4 * h / t, 3 * e, true, false);
  backward_gemms(4, false);
  pass("layernorm2.backward", "layernorm_backward", Er, h, 3 * e, true, false);
  pass("bias_dropout_add1.backward", "bias_dropout_add_backward", Er, h, 2 * e + 1, true, false);
  pass("residual_sum1", "add", Er, h, 3 * e, true, false);
  backward_gemms(3, false);
  backward_gemms(1, true);
  pass("attention_dropout.backward", "dropout_backward", A, s, 2 * e + 1, true, true);
  pass("softmax.backward", "softmax_backward", A, s, 3 * e, true, true);
  backward_gemms(0, true);
  pass("qkv_split.backward", "cat", 3 * E / t, 3 * h / t, 2 * e, true, false);  // Q, K, V gradients joined
  backward_gemms(2, false);
  pass("layernorm1.backward", "layernorm_backward", Er, h, 3 * e, true, false);
  // Bias gradients: column sums of the four GEMM outputs' gradients (QKV 3h/t, projection h, fc1 4h/t, fc2 h
  // wide; the projection's and fc2's over the sequence-parallel shard), one pass over all of them.
  pass("bias_grads", "bias_grads", 2 * Er + 7 * E / t, h, e, true, false);
  return out;
}

PassTime layer_time(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                    const CostParams& params) {
  PassTime p;
  double core_forward_s = 0.0;
  for (const LayerKernel& k : layer_kernels(model, parallel, gpu, params)) {
    (k.backward ? p.backward_s : p.forward_s) += k.seconds;
    if (k.attention_core && !k.backward) core_forward_s += k.seconds;
  }
  if (model.recompute == Recompute::kFull) p.backward_s += p.forward_s;
  if (model.recompute == Recompute::kSelective) p.backward_s += core_forward_s;
  return p;
}

PassTime head_time(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu, const CostParams& params) {
  const int e_bytes = bytes_per_element(model.dtype);
  const double e = e_bytes, t = parallel.tp;
  const double bs = static_cast<double>(model.micro_batch_size) * model.seq_len;
  const double E = bs * model.hidden;
  const double Er = parallel.sequence_parallel ? E / t : E;
  const double logits = bs * static_cast<double>(padded_vocab(model, parallel.tp)) / t;
  const PassTime gemm =
      gemm_pass(gpu, params, {{.m = bs, .n = logits / bs, .k = static_cast<double>(model.hidden)}}, e_bytes);
  PassTime p;
  p.forward_s = gemm.forward_s + sum_kernels(gpu, params, {2 * e * Er, kCrossEntropyForwardBytes * logits});
  p.backward_s = gemm.backward_s + sum_kernels(gpu, params, {3 * e * Er, kCrossEntropyBackwardBytes * logits});
  return p;
}

PassTime embedding_time(const ModelSpec& model, const ParallelSpec& /*parallel*/, const GpuSpec& gpu,
                        const CostParams& params) {
  const double e = bytes_per_element(model.dtype);
  const double E = static_cast<double>(model.micro_batch_size) * model.seq_len * model.hidden;
  return {.forward_s = memory_kernel_s(gpu, params, (7 * e + 1) * E),
          .backward_s = memory_kernel_s(gpu, params, (5 * e + 1) * E)};
}

double optimizer_step_s(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                        const CostParams& params, int stage) {
  if (params.optimizer_step_s >= 0.0) return params.optimizer_step_s;
  const double local = static_cast<double>(stage_params(model, parallel, stage).per_gpu());
  const double shard = parallel.distributed_optimizer ? local / parallel.dp : local;
  const double bytes = kOptimizerLocalBytes * local + (kOptimizerShardBytes + bytes_per_element(model.dtype)) * shard;
  return bytes / hbm_Bps(gpu, params) + kOptimizerKernels * overhead_s(gpu);
}

namespace {

// Adding one micro-batch's fresh gradients of `held` parameters to the gradient buffer, one kernel per tensor.
double accumulation_s(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                      const CostParams& params, const StageParams& held, double tensors) {
  const double bytes =
      static_cast<double>(held.per_gpu()) * (bytes_per_element(model.dtype) + 2.0 * grad_bytes(model, parallel));
  return bytes / hbm_Bps(gpu, params) + tensors * overhead_s(gpu);
}

}  // namespace

double grad_accumulation_s(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                           const CostParams& params, int stage, int chunk) {
  constexpr double kEdgeTensors = 4.0;  // word + position embedding, or the head's word-embedding copy + final LN
  const bool edge = chunk_holds_embedding(stage, chunk) || chunk_holds_head(parallel, stage, chunk);
  const double tensors =
      static_cast<double>(kTensorsPerLayer) * layers_per_chunk(model, parallel) + (edge ? kEdgeTensors : 0.0);
  return accumulation_s(model, parallel, gpu, params, chunk_params(model, parallel, stage, chunk), tensors);
}

double layer_grad_accumulation_s(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                                 const CostParams& params) {
  return accumulation_s(model, parallel, gpu, params, layer_params(model, parallel), kTensorsPerLayer);
}

double entropy_pass_s(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                      const CostParams& params, int stage, double beta) {
  constexpr double kPasses = 2.0;  // moments, then the histogram
  const double bytes = std::clamp(beta, 0.0, 1.0) *
                       static_cast<double>(stage_params(model, parallel, stage).per_gpu()) *
                       grad_bytes(model, parallel);
  const int stage_layers = model.layers / std::max(1, parallel.pp);
  const double tensors = static_cast<double>(kTensorsPerLayer) * stage_layers;
  return kPasses * (bytes / hbm_Bps(gpu, params) + std::max(1.0, tensors) * overhead_s(gpu));
}

}  // namespace edgc::sim
