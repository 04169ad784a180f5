// The kernel-level compute model (sim/kernel_model.hpp): closed forms of the GEMM model, and the H100 parameters of
// scenarios/clusters/dgx-h100.json against measured GEMM timings they were not derived from.
#include "edgc/sim/kernel_model.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/sim/cost_model.hpp"

namespace edgc::sim {
namespace {

// A GPU with the kernel model's measured figures: the best-shape GEMM rate at m × n × k, 5.7 µs per kernel.
GpuSpec measured_gpu(const char* name, double peak_tflops, double hbm_GBps, int sms, double matmul_tflops, double m,
                     double n, double k) {
  GpuSpec g;
  g.name = name;
  g.peak_tflops = peak_tflops;
  g.hbm_GBps = hbm_GBps;
  g.sm_count = sms;
  g.matmul_tflops = matmul_tflops;
  g.matmul_m = m;
  g.matmul_n = n;
  g.matmul_k = k;
  g.kernel_overhead_us = 5.7;
  return g;
}

// scenarios/clusters/dgx-h100.json's GPU (SOURCES.md §19).
GpuSpec h100() { return measured_gpu("H100", 989.4, 3350, 132, 794.5, 2048, 2048, 13312); }

double hbm_Bps(const CostParams& p) { return 3350e9 * p.hbm_efficiency; }

// A GPU with a synthetic attention grid: head_dim 64, 128 × seq 2048, 8192 × heads 8, 32, group 1 and 4, each rate
// a product of powers (so that log-linear interpolation has a closed form).
GpuSpec attention_gpu() {
  GpuSpec g = h100();
  for (const int group : {1, 4})
    for (const int d : {64, 128})
      for (const int s : {2048, 8192})
        for (const int heads : {8, 32}) {
          const double f = 100.0 * std::sqrt(s / 2048.0) * std::pow(heads / 8.0, 0.25) * (d == 128 ? 1.5 : 1.0) *
                           (group == 4 ? 0.9 : 1.0);
          g.attention_rates.push_back({d, s, heads, group, f, 0.8 * f});
        }
  return g;
}

double rate_of(double s, double heads, double d, double group) {
  return 100.0 * std::sqrt(s / 2048.0) * std::pow(heads / 8.0, 0.25) * (d == 128 ? 1.5 : 1.0) *
         (group == 4 ? 0.9 : 1.0);
}

// Measured points are returned as measured; between them the rate is log-linear in sequence and heads (the
// geometric mean half-way in log), linear in the head dimension's log-rate; outside the grid it is held at the edge;
// the measured grouping nearest the model's is used; the time is the causal FLOPs (2·h·s²·d forward, 2.5 times that
// backward) over the rate.
TEST(KernelModel, FlashAttentionInterpolatesTheMeasuredRates) {
  const GpuSpec g = attention_gpu();
  const auto at = [&](double heads, double s, double d, double group, bool backward) {
    return attention_rate_tflops(g, AttentionShape{.heads = heads, .seq = s, .head_dim = d, .group = group}, backward);
  };
  EXPECT_NEAR(at(32, 8192, 128, 1, false), rate_of(8192, 32, 128, 1), 1e-9);
  EXPECT_NEAR(at(8, 2048, 64, 4, true), 0.8 * rate_of(2048, 8, 64, 4), 1e-9);
  EXPECT_NEAR(at(8, 4096, 64, 1, false), rate_of(4096, 8, 64, 1), 1e-9);  // √ is log-linear: exact
  EXPECT_NEAR(at(16, 2048, 64, 1, false), rate_of(2048, 16, 64, 1), 1e-9);
  EXPECT_NEAR(at(8, 2048, 96, 1, false), 100.0 * std::sqrt(1.5), 1e-9);    // half-way in d: geometric mean
  EXPECT_NEAR(at(8, 65536, 64, 1, false), rate_of(8192, 8, 64, 1), 1e-9);  // held at the longest measured
  EXPECT_NEAR(at(2, 1024, 32, 1, false), rate_of(2048, 8, 64, 1), 1e-9);   // and at the smallest
  EXPECT_NEAR(at(8, 2048, 64, 8, false), rate_of(2048, 8, 64, 4), 1e-9);   // group 8: nearest measured is 4
  EXPECT_NEAR(at(8, 2048, 64, 1.5, false), rate_of(2048, 8, 64, 1), 1e-9);
  const AttentionShape a{.heads = 16, .seq = 4096, .head_dim = 128, .group = 4};
  EXPECT_DOUBLE_EQ(attention_flops(a, false), 2.0 * 16 * 4096.0 * 4096 * 128);
  EXPECT_DOUBLE_EQ(attention_flops(a, true), 2.5 * attention_flops(a, false));
  EXPECT_NEAR(attention_s(g, a, true), attention_flops(a, true) / (at(16, 4096, 128, 4, true) * 1e12), 1e-15);
  EXPECT_THROW((void)attention_rate_tflops(h100(), a, false), InternalError);  // no rates: refused upstream
}

// FP8: the linear layers' GEMMs (not the attention core's) take the FP8 figure with 1-byte operands; the rest of
// the layer is unchanged.
TEST(KernelModel, Fp8RunsTheLinearGemmsAtTheFp8Rate) {
  GpuSpec g = attention_gpu();
  g.fp8_matmul_tflops = 1344.0;
  g.fp8_matmul_m = 16384;
  g.fp8_matmul_n = 4096;
  g.fp8_matmul_k = 8192;
  GpuSpec fp8_view = g;
  fp8_view.matmul_tflops = 1344.0;
  fp8_view.matmul_m = 16384;
  fp8_view.matmul_n = 4096;
  fp8_view.matmul_k = 8192;
  ModelSpec m;
  m.name = "gpt";
  m.layers = 2;
  m.hidden = 4096;
  m.heads = 32;
  m.seq_len = 2048;
  m.vocab = 1024;
  m.micro_batch_size = 1;
  m.global_batch_size = 1;
  m.dtype = "bf16";
  ParallelSpec par;
  const CostParams params;
  const std::vector<LayerKernel> bf16 = layer_kernels(m, par, g, params);
  m.fp8 = true;
  const std::vector<LayerKernel> fp8 = layer_kernels(m, par, g, params);
  const auto in_bf16 = [&](const std::string& name) -> const LayerKernel* {
    for (const LayerKernel& k : bf16)
      if (name == k.name) return &k;
    return nullptr;
  };
  int linear = 0;
  std::vector<std::string> casts;
  for (const LayerKernel& k : fp8) {
    const LayerKernel* same = in_bf16(k.name);
    if (same == nullptr) {  // FP8's own passes: the projection input's cast, the output gradients' cast-transposes
      casts.push_back(k.name);
      EXPECT_DOUBLE_EQ(k.bytes_per_element, std::string(k.op) == "cast" ? 3.0 : 4.0) << k.name;
    } else if (k.gemm.batch > 0 && !k.attention_core) {
      ++linear;
      EXPECT_DOUBLE_EQ(k.seconds, gemm_s(fp8_view, params, k.gemm, 1)) << k.name;
      EXPECT_LT(k.seconds, same->seconds) << k.name;
    } else {
      EXPECT_DOUBLE_EQ(k.seconds, same->seconds) << k.name;
    }
  }
  EXPECT_EQ(linear, 12);  // QKV, projection, fc1, fc2: forward, input and weight gradients
  EXPECT_EQ(casts, (std::vector<std::string>{"proj_input.cast", "fc2.grad_cast", "fc1.grad_cast", "proj.grad_cast",
                                             "qkv.grad_cast"}));
  EXPECT_EQ(fp8.size(), bf16.size() + casts.size());
}

TEST(KernelModel, TileWaveFillCountsPartialWavesAndOverhangingTiles) {
  // 12 × 11 = 132 tiles of 256 × 128: exactly one full wave.
  EXPECT_DOUBLE_EQ(tile_wave_fill({.m = 256 * 12, .n = 128 * 11, .k = 64}, 132), 1.0);
  // One row more: 256 × 128 tiles give 13 × 11 = 143 tiles in 2 waves (fill ½); 128 × 128 tiles give 25 × 11 = 275
  // in 3 waves of half-size tiles, which wastes less (fill ⅔).
  const double m = 256 * 12 + 1, n = 128 * 11;
  EXPECT_DOUBLE_EQ(tile_wave_fill({.m = m, .n = n, .k = 64}, 132), m * n / (3 * 132 * 128 * 128.0));
  // A batch multiplies the tiles.
  EXPECT_DOUBLE_EQ(tile_wave_fill({.m = 128, .n = 128, .k = 64, .batch = 264}, 132), 1.0);
  EXPECT_DOUBLE_EQ(tile_wave_fill({.m = 128, .n = 128, .k = 64, .batch = 1}, 132), 1.0 / 132);
}

TEST(KernelModel, ReproducesTheMeasuredRateAtTheMeasuredShape) {
  const GpuSpec g = h100();
  const CostParams params;
  const double flops = 2.0 * 2048 * 2048 * 13312;
  EXPECT_NEAR(gemm_s(g, params, {.m = 2048, .n = 2048, .k = 13312}, 2), flops / 794.5e12 + 5.7e-6, 1e-15);
}

TEST(KernelModel, ThinGemmsAreMemoryBoundAndTinyOnesCostTheOverhead) {
  const GpuSpec g = h100();
  const CostParams params;
  const double bytes = (8192.0 * 16 + 16.0 * 8192 + 8192.0 * 8192) * 2;
  EXPECT_NEAR(gemm_s(g, params, {.m = 8192, .n = 8192, .k = 16}, 2), bytes / hbm_Bps(params) + 5.7e-6, 1e-15);
  EXPECT_NEAR(gemm_s(g, params, {.m = 16, .n = 16, .k = 16}, 2) / 5.7e-6, 1.0, 0.02);
  EXPECT_NEAR(memory_kernel_s(g, params, 1e9), 1e9 / hbm_Bps(params) + 5.7e-6, 1e-15);
  GpuSpec none = g;
  none.sm_count = 0;
  EXPECT_THROW((void)gemm_s(none, params, {.m = 1, .n = 1, .k = 1}, 2), InternalError);
}

// Measured BF16 GEMMs on H100 (openxla/xla xla/service/gpu/model/matmul_interpolator_data.h, sm_90 entries:
// batch, m, n, k and TFLOP/s), none of which the parameters came from. Outputs of about a wave of tiles or more
// are predicted within 20 %; outputs of far fewer tiles than SMs, where cuBLAS splits K (not modelled), within a
// factor 2.
TEST(KernelModel, H100ParametersPredictPublishedGemmTimings) {
  const std::vector<std::tuple<double, double, double, double, double>> measured = {
      {1, 4096, 4096, 4096, 783.3}, {1, 2048, 2048, 2048, 632.0}, {2, 4096, 4096, 2048, 763.0},
      {1, 1024, 2048, 2048, 524.3}, {4, 1024, 2048, 2048, 712.7}, {1, 4096, 1024, 512, 343.7},
      {2, 2048, 4096, 1024, 678.7}, {1, 4096, 4096, 256, 392.2},  {4, 4096, 512, 1024, 589.0},
      {4, 4096, 256, 2048, 588.7}};
  const std::vector<std::tuple<double, double, double, double, double>> few_tiles = {
      {1, 256, 2048, 256, 41.8}, {1, 512, 256, 256, 11.46}, {1, 2048, 512, 2048, 347.7}, {1, 256, 2048, 4096, 285.9}};
  const GpuSpec g = h100();
  const CostParams params;
  const auto ratio = [&](const std::tuple<double, double, double, double, double>& e) {
    const auto [batch, m, n, k, tflops] = e;
    const double seconds = 2.0 * batch * m * n * k / (tflops * 1e12);
    return gemm_s(g, params, {.m = m, .n = n, .k = k, .batch = batch}, 2) / seconds;
  };
  for (const auto& e : measured) EXPECT_NEAR(ratio(e), 1.0, 0.2) << std::get<1>(e) << "x" << std::get<2>(e);
  for (const auto& e : few_tiles) {
    EXPECT_GT(ratio(e), 0.5) << std::get<1>(e) << "x" << std::get<2>(e);
    EXPECT_LT(ratio(e), 2.0) << std::get<1>(e) << "x" << std::get<2>(e);
  }
}

// The A100 of scenarios/validation/narayanan2021/selene-dgx-a100.json (SOURCES.md §19), against A100 GEMM
// measurements its parameters did not come from: cuBLAS through PyTorch, fp16, 8192 × 8192 × 8192 with randn
// inputs, 258 TFLOP/s (Horace He, "Strangely, Matrix Multiplications on GPUs Run Faster When Given 'Predictable'
// Data!", thonking.ai, 2022; 257 in a second run), and an earlier run of the calibration's own table at its own
// shape, 267.9 TFLOP/s (stas00/ml-engineering, CUDA 12.1). The model, calibrated to the 271.2 TFLOP/s best shape of
// a later run, matches the earlier run there and is 6 % faster than the 2022 measurement at 8192³ (both shapes fill
// whole waves of tiles): a spread between published measurements that the validation suites' READMEs report beside
// the model's error.
TEST(KernelModel, A100ParametersAgainstPublishedGemmTimings) {
  const GpuSpec g = measured_gpu("A100", 312, 2039, 108, 271.2, 1024, 10240, 5120);
  const CostParams params;
  const auto tflops = [&](double m, double n, double k) {
    return 2.0 * m * n * k / gemm_s(g, params, {.m = m, .n = n, .k = k}, 2) / 1e12;
  };
  const double square = tflops(8192, 8192, 8192);
  EXPECT_NEAR(square / 258.0, 1.062, 0.005);
  EXPECT_NEAR(tflops(1024, 10240, 5120) / 267.9, 1.0, 0.005);  // 267.4 with the 5.7 µs launch overhead
}

ModelSpec gpt() {
  ModelSpec m;
  m.layers = 8;
  m.hidden = 2048;
  m.heads = 16;
  m.seq_len = 1024;
  m.vocab = 50257;
  m.micro_batch_size = 2;
  m.global_batch_size = 64;
  return m;
}

ParallelSpec tp_layout(int tp) {
  ParallelSpec p;
  p.tp = tp;
  p.pp = 2;
  p.dp = 1;
  p.microbatches = 32;
  return p;
}

TEST(KernelModel, RecomputationAddsTheForwardOrTheAttentionCore) {
  const GpuSpec g = h100();
  const CostParams params;
  ModelSpec m = gpt();
  const ParallelSpec p = tp_layout(2);
  const PassTime none = layer_time(m, p, g, params);
  m.recompute = Recompute::kFull;
  const PassTime full = layer_time(m, p, g, params);
  EXPECT_DOUBLE_EQ(full.forward_s, none.forward_s);
  EXPECT_NEAR(full.backward_s - none.backward_s, none.forward_s, 1e-15);
  m.recompute = Recompute::kSelective;
  const PassTime selective = layer_time(m, p, g, params);
  // The attention core alone: its two batched GEMMs, the softmax and dropout passes and the context copy.
  const double b = 2, s = 1024, heads = 16 / 2.0, d = 2048 / 16.0;
  const double scores = b * heads * s * s;
  const double core = gemm_s(g, params, {.m = s, .n = s, .k = d, .batch = b * heads}, 2) +
                      gemm_s(g, params, {.m = s, .n = d, .k = s, .batch = b * heads}, 2) +
                      memory_kernel_s(g, params, 4 * scores) + memory_kernel_s(g, params, 5 * scores) +
                      memory_kernel_s(g, params, 4 * b * s * 2048 / 2.0);
  EXPECT_NEAR(selective.backward_s - none.backward_s, core, 1e-12);
  EXPECT_LT(selective.backward_s, full.backward_s);
}

TEST(KernelModel, TheLayerIsTheSumOfItsListedKernels) {
  const GpuSpec g = h100();
  const CostParams params;
  ModelSpec m = gpt();
  const ParallelSpec p = tp_layout(2);
  const std::vector<LayerKernel> kernels = layer_kernels(m, p, g, params);
  ASSERT_EQ(kernels.size(), 6U + 12U + 8U + 11U);  // GEMMs forward and backward, element-wise passes likewise
  double forward = 0.0, backward = 0.0, core = 0.0, gemm_flops = 0.0, pass_bytes = 0.0;
  std::vector<std::string> names;
  for (const LayerKernel& k : kernels) {
    EXPECT_EQ(std::find(names.begin(), names.end(), k.name), names.end()) << k.name << " twice";
    names.emplace_back(k.name);
    (k.backward ? backward : forward) += k.seconds;
    if (k.attention_core && !k.backward) core += k.seconds;
    if (std::string(k.op) == "gemm") {
      EXPECT_GT(k.gemm.batch, 0.0) << k.name;
      EXPECT_DOUBLE_EQ(k.seconds, gemm_s(g, params, k.gemm, 2)) << k.name;
      if (!k.backward) gemm_flops += k.flops;
    } else {
      EXPECT_EQ(k.gemm.batch, 0.0) << k.name;
      EXPECT_DOUBLE_EQ(k.seconds, memory_kernel_s(g, params, k.bytes)) << k.name;
      EXPECT_GT(k.row, 0.0) << k.name;
      if (!k.backward) pass_bytes += k.bytes;
    }
  }
  const PassTime t = layer_time(m, p, g, params);
  EXPECT_NEAR(t.forward_s, forward, 1e-15);
  EXPECT_NEAR(t.backward_s, backward, 1e-15);
  m.recompute = Recompute::kSelective;
  EXPECT_NEAR(layer_time(m, p, g, params).backward_s, backward + core, 1e-15);
  // Forward FLOPs: 2·b·s·h·(3h + h + 4h + 4h)/t for the linear layers and 2·2·b·s²·h/t for the attention core.
  const double b = 2, s = 1024, h = 2048, tp = 2;
  EXPECT_NEAR(gemm_flops / (2 * b * s * h * 12 * h / tp + 4 * b * s * s * h / tp), 1.0, 1e-12);
  // Forward element-wise bytes (fp16): LayerNorm 2 × 4, bias-dropout-add 2 × 7 per element of b·s·h, bias-GeLU 4
  // per element of b·s·4h/t, the context copy 4 per element of b·s·h/t, softmax 4 and dropout 5 per score.
  const double E = b * s * h, A = b * 16 / tp * s * s;
  EXPECT_NEAR(pass_bytes / (22 * E + 4 * 4 * E / tp + 4 * E / tp + 9 * A), 1.0, 1e-12);
}

TEST(KernelModel, SequenceParallelismShardsTheElementwiseWork) {
  const GpuSpec g = h100();
  const CostParams params;
  const ModelSpec m = gpt();
  ParallelSpec p = tp_layout(4);
  const PassTime plain = layer_time(m, p, g, params);
  p.sequence_parallel = true;
  const PassTime sp = layer_time(m, p, g, params);
  // Forward: LayerNorm ×2 (2e) and bias-dropout-add ×2 (3e + 1) over b·s·h, now ÷ 4.
  const double E = 2.0 * 1024 * 2048;
  const double saved = (2 * 4 + 2 * 7) * E * (1 - 0.25) / hbm_Bps(params);
  EXPECT_NEAR(plain.forward_s - sp.forward_s, saved, 1e-12);
  EXPECT_LT(sp.backward_s, plain.backward_s);
}

TEST(KernelModel, OptimizerStepIsItsHbmTrafficOrTheOverride) {
  const GpuSpec g = h100();
  CostParams params;
  const ModelSpec m = gpt();
  ParallelSpec p = tp_layout(2);
  p.dp = 4;
  const double local = static_cast<double>(stage_params(m, p, 0).per_gpu());
  EXPECT_NEAR(optimizer_step_s(m, p, g, params, 0), (12 + 42) * local / hbm_Bps(params) + 6 * 5.7e-6, 1e-15);
  p.distributed_optimizer = true;
  EXPECT_NEAR(optimizer_step_s(m, p, g, params, 0), (12 + 42.0 / 4) * local / hbm_Bps(params) + 6 * 5.7e-6, 1e-15);
  params.optimizer_step_s = 0.25;
  EXPECT_DOUBLE_EQ(optimizer_step_s(m, p, g, params, 0), 0.25);
}

TEST(KernelModel, EntropyPassesReadTheSampledShareOfTheGradientTwice) {
  const GpuSpec g = h100();
  const CostParams params;
  const ModelSpec m = gpt();
  ParallelSpec p = tp_layout(2);
  p.pp = 2;
  const double elements = static_cast<double>(stage_params(m, p, 1).per_gpu());
  const double bytes = elements * grad_bytes(m, p);
  const double kernels = 2.0 * 12 * (m.layers / 2);  // moments and histogram over a GPT layer's 12 tensors each
  for (const double beta : {0.05, 0.25, 1.0})
    EXPECT_NEAR(entropy_pass_s(m, p, g, params, 1, beta), 2 * beta * bytes / hbm_Bps(params) + kernels * 5.7e-6, 1e-15)
        << beta;
  // β outside (0, 1] reads nothing more than the whole gradient.
  EXPECT_DOUBLE_EQ(entropy_pass_s(m, p, g, params, 1, 2.0), entropy_pass_s(m, p, g, params, 1, 1.0));
}

TEST(KernelModel, UnfusedGradientAccumulationAddsOnePassOverTheChunksParameters) {
  const GpuSpec g = h100();
  CostParams params;
  params.compute_model = ComputeModel::kKernels;
  ModelSpec m = gpt();
  ParallelSpec p = tp_layout(2);
  p.schedule = PipelineSchedule::kInterleaved;
  p.virtual_stages = 2;  // 8 layers, pp 2: 2 layers per chunk
  // The chunks' parameters add up to the stage's; the embedding sits on stage 0's first chunk, the head's copy of
  // it on the last stage's last chunk.
  for (int stage = 0; stage < 2; ++stage)
    EXPECT_EQ(chunk_params(m, p, stage, 0).per_gpu() + chunk_params(m, p, stage, 1).per_gpu(),
              stage_params(m, p, stage).per_gpu());
  EXPECT_EQ(chunk_params(m, p, 0, 1).per_gpu(), chunk_params(m, p, 1, 0).per_gpu());
  const double h = 2048, word = 50432.0 / 2 * h;  // 50,257 padded to a multiple of 128·2, one TP shard
  const double layer = (12 * h * h + 7 * h) / 2 + 6 * h;
  EXPECT_DOUBLE_EQ(static_cast<double>(chunk_params(m, p, 1, 1).per_gpu()), 2 * layer + word + 2 * h);
  // fp16: read the new gradient (2 B), read and write the fp16 buffer (2 B each); one kernel per tensor.
  const double held = 2 * layer + word + 2 * h;
  EXPECT_NEAR(grad_accumulation_s(m, p, g, params, 1, 1), 6 * held / hbm_Bps(params) + (2 * 12 + 4) * 5.7e-6, 1e-15);
  EXPECT_NEAR(grad_accumulation_s(m, p, g, params, 1, 0), 6 * 2 * layer / hbm_Bps(params) + 2 * 12 * 5.7e-6, 1e-15);
  // Only the backward pass of the kernel-level model pays it, and only without the fusion.
  const ComputeCost fused = chunk_compute(m, p, g, params, 1, 1);
  p.grad_accumulation_fusion = false;
  const ComputeCost separate = chunk_compute(m, p, g, params, 1, 1);
  EXPECT_DOUBLE_EQ(separate.forward_s, fused.forward_s);
  EXPECT_NEAR(separate.backward_s - fused.backward_s, grad_accumulation_s(m, p, g, params, 1, 1), 1e-15);
  params.compute_model = ComputeModel::kEfficiency;
  EXPECT_DOUBLE_EQ(chunk_compute(m, p, g, params, 1, 1).backward_s, fused.backward_flops / (989.4e12 * 0.4));
  // bf16 training accumulating in an fp32 buffer (Megatron-Core's default for bf16): 2 + 4 + 4 bytes per parameter.
  m.dtype = "bf16";
  p.grad_reduce_bytes = 4;
  params.compute_model = ComputeModel::kKernels;
  EXPECT_NEAR(grad_accumulation_s(m, p, g, params, 1, 0), 10 * 2 * layer / hbm_Bps(params) + 2 * 12 * 5.7e-6, 1e-15);
}

// The LM head: the logits GEMM and its two backward GEMMs, the final LayerNorm (2e forward, 3e backward per element
// of b·s·h) and the vocab-parallel cross-entropy over b·s·V/t fp32 logits: 38 bytes per logit forward (cast 6,
// max 4, subtract 8, exp 8, sum 4, divide 8) and 14 backward (scale 8, cast back 6), one kernel each.
TEST(KernelModel, TheHeadIsItsGemmsTheFinalLayerNormAndTheCrossEntropysBytes) {
  const GpuSpec g = h100();
  const CostParams params;
  const ModelSpec m = gpt();
  const ParallelSpec p = tp_layout(2);
  const double bs = 2.0 * 1024;
  const double logits = bs * static_cast<double>(padded_vocab(m, 2)) / 2;
  const GemmShape fwd{.m = bs, .n = logits / bs, .k = 2048};
  const double gemm_f = gemm_s(g, params, fwd, 2);
  const double gemm_b = gemm_s(g, params, {.m = bs, .n = 2048, .k = logits / bs}, 2) +
                        gemm_s(g, params, {.m = 2048, .n = logits / bs, .k = bs}, 2);
  const PassTime head = head_time(m, p, g, params);
  const double kernel = 5.7e-6;
  EXPECT_NEAR(head.forward_s, gemm_f + (2 * 2 * bs * 2048 + 38 * logits) / hbm_Bps(params) + 2 * kernel, 1e-12);
  EXPECT_NEAR(head.backward_s, gemm_b + (3 * 2 * bs * 2048 + 14 * logits) / hbm_Bps(params) + 2 * kernel, 1e-12);
}

TEST(KernelModel, ChunkComputeUsesTheKernelModelWhenAsked) {
  const GpuSpec g = h100();
  CostParams params;
  params.compute_model = ComputeModel::kKernels;
  const ModelSpec m = gpt();
  const ParallelSpec p = tp_layout(2);
  const ComputeCost middle = chunk_compute(m, p, g, params, 0, 0);
  const PassTime layer = layer_time(m, p, g, params);
  const PassTime embedding = embedding_time(m, p, g, params);
  EXPECT_NEAR(middle.forward_s, 4 * layer.forward_s + embedding.forward_s, 1e-15);
  const ComputeCost last = chunk_compute(m, p, g, params, 1, 0);
  const PassTime head = head_time(m, p, g, params);
  EXPECT_NEAR(last.backward_s, 4 * layer.backward_s + head.backward_s, 1e-15);
  // The FLOPs stay the closed form of the efficiency model.
  params.compute_model = ComputeModel::kEfficiency;
  EXPECT_DOUBLE_EQ(chunk_compute(m, p, g, params, 1, 0).forward_flops, last.forward_flops);
}

}  // namespace
}  // namespace edgc::sim
