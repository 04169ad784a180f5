#include "edgc/sim/kernel_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/sim/cost_model.hpp"
#include "edgc/sim/layer.hpp"
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

// The GPU as its FP8 GEMMs see it: the measured FP8 rate and its shape in place of the 16-bit ones.
GpuSpec fp8_gemms(const GpuSpec& gpu) {
  if (gpu.fp8_matmul_tflops <= 0.0) throw InternalError("layer_kernels: FP8 GEMMs on a GPU without an FP8 figure");
  GpuSpec g = gpu;
  g.matmul_tflops = gpu.fp8_matmul_tflops;
  g.matmul_m = gpu.fp8_matmul_m;
  g.matmul_n = gpu.fp8_matmul_n;
  g.matmul_k = gpu.fp8_matmul_k;
  return g;
}

// Where `x` lies between the sorted `grid` values: the two neighbours and the weight of the upper one, in `x`'s
// transform (log or linear), clamped to the grid's ends.
struct Bracket {
  std::size_t lo = 0, hi = 0;
  double w = 0.0;
};
Bracket bracket(const std::vector<double>& grid, double x, bool log_scale) {
  if (x <= grid.front()) return {0, 0, 0.0};
  if (x >= grid.back()) return {grid.size() - 1, grid.size() - 1, 0.0};
  std::size_t hi = 1;
  while (grid[hi] < x) ++hi;
  const auto f = [&](double v) { return log_scale ? std::log(v) : v; };
  return {hi - 1, hi, (f(x) - f(grid[hi - 1])) / (f(grid[hi]) - f(grid[hi - 1]))};
}

std::vector<double> sorted_unique(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// Trilinear interpolation on the full grid axes[0] × axes[1] × axes[2] (sorted, unique) at x, each axis in log or
// linear scale and held at its edges: Σ over the corners of their weights times value(corner).
template <class Value>
double trilinear(const std::array<std::vector<double>, 3>& axes, const std::array<double, 3>& x,
                 const std::array<bool, 3>& log_scale, const Value& value) {
  const Bracket b0 = bracket(axes[0], x[0], log_scale[0]), b1 = bracket(axes[1], x[1], log_scale[1]),
                b2 = bracket(axes[2], x[2], log_scale[2]);
  double sum = 0.0;
  for (const auto& [i0, w0] : {std::pair{b0.lo, 1.0 - b0.w}, std::pair{b0.hi, b0.w}})
    for (const auto& [i1, w1] : {std::pair{b1.lo, 1.0 - b1.w}, std::pair{b1.hi, b1.w}})
      for (const auto& [i2, w2] : {std::pair{b2.lo, 1.0 - b2.w}, std::pair{b2.hi, b2.w}})
        if (w0 * w1 * w2 > 0.0) sum += w0 * w1 * w2 * value(axes[0][i0], axes[1][i1], axes[2][i2]);
  return sum;
}

}  // namespace

double attention_rate_tflops(const GpuSpec& gpu, const AttentionShape& a, bool backward) {
  if (gpu.attention_rates.empty()) throw InternalError("attention_rate_tflops: the GPU has no measured attention");
  // The measured group nearest the model's (in ratio), then that group's grid.
  double group = 0.0;
  for (const AttentionRate& r : gpu.attention_rates)
    if (group == 0.0 || std::abs(std::log(r.group / a.group)) < std::abs(std::log(group / a.group))) group = r.group;
  std::vector<double> dims, seqs, heads;
  for (const AttentionRate& r : gpu.attention_rates)
    if (r.group == group) {
      dims.push_back(r.head_dim);
      seqs.push_back(r.seq);
      heads.push_back(r.heads);
    }
  dims = sorted_unique(dims);
  seqs = sorted_unique(seqs);
  heads = sorted_unique(heads);
  const auto log_rate = [&](double d, double s, double h) {
    for (const AttentionRate& r : gpu.attention_rates)
      if (r.group == group && r.head_dim == d && r.seq == s && r.heads == h)
        return std::log(backward ? r.backward_tflops : r.forward_tflops);
    throw InternalError("attention_rate_tflops: the measured rates are not a full grid");
  };
  return std::exp(trilinear({dims, seqs, heads}, {a.head_dim, a.seq, a.heads}, {false, true, true}, log_rate));
}

double attention_flops(const AttentionShape& a, bool backward) {
  const double forward = 4.0 * a.heads * a.seq * a.seq * a.head_dim * 0.5;  // causal: half the scores
  return backward ? 2.5 * forward : forward;
}

double attention_s(const GpuSpec& gpu, const AttentionShape& a, bool backward) {
  if (!(a.heads > 0 && a.seq > 0 && a.head_dim > 0)) return 0.0;
  return attention_flops(a, backward) / (attention_rate_tflops(gpu, a, backward) * 1e12);
}

double tile_wave_fill(const GemmShape& g, int sm_count) {
  if (sm_count < 1 || !(g.m > 0 && g.n > 0 && g.batch > 0)) return 1.0;
  return std::max({fill_for(g, sm_count, kTileLong, kTileShort), fill_for(g, sm_count, kTileShort, kTileLong),
                   fill_for(g, sm_count, kTileShort, kTileShort)});
}

namespace {

// The tile/wave model's time of one GEMM (gemm_s without the grid's correction).
double tile_model_s(const GpuSpec& gpu, const CostParams& params, const GemmShape& g, int element_bytes) {
  const double reference = gpu.matmul_m > 0 && gpu.matmul_n > 0
                               ? tile_wave_fill({.m = gpu.matmul_m, .n = gpu.matmul_n, .k = gpu.matmul_k}, gpu.sm_count)
                               : 1.0;
  const double full_wave_rate = gpu.matmul_tflops * 1e12 / reference;
  const double compute = 2.0 * g.batch * g.m * g.n * g.k / (full_wave_rate * tile_wave_fill(g, gpu.sm_count));
  const double memory = gemm_bytes(g, element_bytes) / hbm_Bps(gpu, params);
  return std::max(compute, memory) + overhead_s(gpu);
}

// log(measured time / tile-model time) at a measured grid point.
double log_ratio(const GpuSpec& gpu, const CostParams& params, const GemmRate& r, int element_bytes) {
  const GemmShape g{.m = r.m, .n = r.n, .k = r.k};
  const double measured = 2.0 * r.m * r.n * r.k / (r.tflops * 1e12);
  return std::log(measured / tile_model_s(gpu, params, g, element_bytes));
}

// The measured-to-modelled time ratio at `g`, interpolated over the grid of `fp8` rows (log-linear in m, n and k,
// held at the grid's edges); 1 when the GPU has no such grid.
double grid_correction(const GpuSpec& gpu, const CostParams& params, const GemmShape& g, bool fp8, int element_bytes) {
  std::vector<double> ms, ns, ks;
  for (const GemmRate& r : gpu.gemm_rates)
    if (r.fp8 == fp8) {
      ms.push_back(r.m);
      ns.push_back(r.n);
      ks.push_back(r.k);
    }
  if (ms.empty()) return 1.0;
  ms = sorted_unique(ms);
  ns = sorted_unique(ns);
  ks = sorted_unique(ks);
  const auto corner = [&](double m, double n, double k) {
    for (const GemmRate& r : gpu.gemm_rates)
      if (r.fp8 == fp8 && r.m == m && r.n == n && r.k == k) return log_ratio(gpu, params, r, element_bytes);
    throw InternalError("gemm_s: the measured GEMM rates are not a full grid");
  };
  return std::exp(trilinear({ms, ns, ks}, {g.m, g.n, g.k}, {true, true, true}, corner));
}

}  // namespace

double gemm_s(const GpuSpec& gpu, const CostParams& params, const GemmShape& g, int element_bytes) {
  if (!gpu.has_kernel_model()) throw InternalError("gemm_s: the GPU has no measured GEMM figures");
  if (!(g.m > 0 && g.n > 0 && g.k > 0 && g.batch > 0)) return 0.0;
  const double t = tile_model_s(gpu, params, g, element_bytes);
  // Single GEMMs of 16-bit or FP8 operands take the measured grid's correction; batched ones (the materialised
  // attention core) and fp32 keep the tile model.
  if (g.batch != 1.0 || (element_bytes != 1 && element_bytes != 2)) return t;
  return t * grid_correction(gpu, params, g, element_bytes == 1, element_bytes);
}

double memory_kernel_s(const GpuSpec& gpu, const CostParams& params, double bytes) {
  return bytes / hbm_Bps(gpu, params) + overhead_s(gpu);
}

std::vector<LayerKernel> layer_kernels(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                                       const CostParams& params) {
  const int e_bytes = bytes_per_element(model.dtype);
  const double e = e_bytes;
  std::vector<LayerKernel> out;
  const GpuSpec fp8 = model.fp8 ? fp8_gemms(gpu) : GpuSpec{};
  for (const LayerOp& op : describe_layer(model, parallel).ops) {
    LayerKernel k;
    static_cast<LayerOp&>(k) = op;
    if (op.gemm.batch > 0.0) {
      const GemmShape& g = op.gemm;
      k.flops = 2.0 * g.batch * g.m * g.n * g.k;
      // The linear layers' GEMMs (not the attention core's) run in FP8 when the model trains in it.
      const bool in_fp8 = model.fp8 && !op.attention_core;
      k.bytes = gemm_bytes(g, in_fp8 ? 1.0 : e);
      k.seconds = in_fp8 ? gemm_s(fp8, params, g, 1) : gemm_s(gpu, params, g, e_bytes);
    } else if (op.attention.heads > 0.0) {
      const AttentionShape& a = op.attention;
      k.flops = attention_flops(a, op.backward);
      // Forward reads Q, K, V and writes O; backward reads Q, K, V, O, dO and writes dQ, dK, dV.
      const double tensors = op.backward ? 4.0 : 2.0;
      k.bytes = tensors * (a.heads + a.heads / a.group) * a.seq * a.head_dim * e;
      k.seconds = attention_s(gpu, a, op.backward);  // measured kernel times: their overhead is in them
    } else {
      k.bytes = op.bytes_per_element * op.elements;
      k.seconds = memory_kernel_s(gpu, params, k.bytes);
    }
    out.push_back(k);
  }
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
  if (model.position == Position::kLearned && model.dropout)
    return {.forward_s = memory_kernel_s(gpu, params, (7 * e + 1) * E),
            .backward_s = memory_kernel_s(gpu, params, (5 * e + 1) * E)};
  // Lookup (read and write e), the position add (3e) and dropout (2e + 1) each where the model has them; backward:
  // the embedding's gradient (2e), the position embedding's (e) and dropout's (2e + 1).
  const bool learned = model.position == Position::kLearned;
  const double forward = 2 * e + (learned ? 3 * e : 0.0) + (model.dropout ? 2 * e + 1 : 0.0);
  const double backward = 2 * e + (learned ? e : 0.0) + (model.dropout ? 2 * e + 1 : 0.0);
  return {.forward_s = memory_kernel_s(gpu, params, forward * E),
          .backward_s = memory_kernel_s(gpu, params, backward * E)};
}

double optimizer_step_s(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                        const CostParams& params, int stage) {
  if (params.optimizer_step_s >= 0.0) return params.optimizer_step_s;
  const StageParams held = stage_params(model, parallel, stage);
  const double local = static_cast<double>(held.per_gpu());
  // The distributed optimizer shards the dense parameters over DP and the routed experts' over expert DP.
  const double expert_dp = expert_dp_size(parallel);
  const double shard = parallel.distributed_optimizer ? static_cast<double>(held.dense()) / parallel.dp +
                                                            static_cast<double>(held.expert) / expert_dp
                                                      : local;
  const double bytes = kOptimizerLocalBytes * local + (kOptimizerShardBytes + bytes_per_element(model.dtype)) * shard;
  return bytes / hbm_Bps(gpu, params) + kOptimizerKernels * overhead_s(gpu);
}

namespace {

// The parameter tensors of `mix`'s layers (one gradient hook and one optimizer tensor each).
double layer_tensors(const ModelSpec& model, const ParallelSpec& parallel, const LayerMix& mix) {
  double tensors = 0.0;
  for_each_layer_kind(model, mix, [&](const ModelSpec& m, int count) {
    tensors += static_cast<double>(describe_layer(m, parallel).tensors) * count;
  });
  return tensors;
}

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
      layer_tensors(model, parallel, chunk_layer_mix(model, parallel, stage, chunk)) + (edge ? kEdgeTensors : 0.0);
  return accumulation_s(model, parallel, gpu, params, chunk_params(model, parallel, stage, chunk), tensors);
}

double layer_grad_accumulation_s(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                                 const CostParams& params) {
  return accumulation_s(model, parallel, gpu, params, layer_params(model, parallel),
                        describe_layer(model, parallel).tensors);
}

double entropy_pass_s(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                      const CostParams& params, int stage, double beta) {
  constexpr double kPasses = 2.0;  // moments, then the histogram
  const double bytes = std::clamp(beta, 0.0, 1.0) *
                       static_cast<double>(stage_params(model, parallel, stage).per_gpu()) *
                       grad_bytes(model, parallel);
  const double tensors = layer_tensors(model, parallel, stage_layer_mix(model, parallel, stage));
  return kPasses * (bytes / hbm_Bps(gpu, params) + std::max(1.0, tensors) * overhead_s(gpu));
}

}  // namespace edgc::sim
