// The memory model against closed forms worked by hand on the 8-layer test model (h 256, 8 heads, s 128, b 2,
// V 1024 = a multiple of 128·tp, fp16) at tp 2 × pp 2 × dp 2: 32 / (2 · 2) = 8 micro-batches.
#include "edgc/sim/memory.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/sim/layout.hpp"
#include "expect_error.hpp"
#include "model_test_util.hpp"

namespace edgc::sim {
namespace {

using test::small_model;

ClusterSpec cluster(int gpus) {
  ClusterSpec c;
  c.gpus_per_node = 4;
  c.nodes = gpus / 4;
  return c;
}

ParallelSpec valid(const ModelSpec& m, ParallelSpec p) { return validate(m, p, cluster(p.tp * p.pp * p.dp)); }

ParallelSpec tp2_pp2_dp2(PipelineSchedule schedule = PipelineSchedule::kOneFOneB, int chunks = 1) {
  ParallelSpec p = test::layout(2, 2, 2);
  p.schedule = schedule;
  p.virtual_stages = chunks;
  return valid(small_model(), p);
}

// The hand-worked numbers (bytes).
constexpr double kH = 256, kS = 128, kB = 2, kA = 8, kT = 2, kV = 1024;
constexpr double kSbh = kS * kB * kH;  // 65,536
// Korthikanti et al. Table 2 (TP, no SP): s·b·h·(10 + 24/t + 5·a·s/(h·t)) = 65,536 · (10 + 12 + 10) = 2,097,152.
constexpr double kLayer = kSbh * (10 + 24 / kT + 5 * kA * kS / (kH * kT));
constexpr double kEmbedding = kSbh * 1 + kS * kB * 8;         // dropout mask + int64 token ids: 67,584
constexpr double kOutput = kSbh * 4 + kS * kB * kV / kT * 4;  // LN + projection inputs, fp32 logits: 786,432
// Parameters of one GPU: 4 layers of (12h² + 7h)/t sharded + 6h replicated; stage 0 adds its word-embedding shard
// V/t·h and the position embedding s·h; the last stage its word-embedding copy and the final LayerNorm 2h.
constexpr double kLayersParams = 4 * ((12 * kH * kH + 7 * kH) / kT + 6 * kH);
constexpr double kStage0Params = kLayersParams + kV / kT * kH + kS * kH;  // 1,746,432
constexpr double kStage1Params = kLayersParams + kV / kT * kH + 2 * kH;   // 1,714,176

TEST(Memory, ModelStateIsSixteenBytesPerParameterInFp16) {
  const std::vector<StageMemory> m = stage_memory(small_model(), tp2_pp2_dp2());
  ASSERT_EQ(m.size(), 2U);
  EXPECT_EQ(m[0].parameters, static_cast<std::int64_t>(kStage0Params));
  EXPECT_EQ(m[1].parameters, static_cast<std::int64_t>(kStage1Params));
  EXPECT_DOUBLE_EQ(m[0].weights_bytes, 2 * kStage0Params);
  EXPECT_DOUBLE_EQ(m[0].gradients_bytes, 2 * kStage0Params);
  EXPECT_DOUBLE_EQ(m[0].optimizer_bytes, 12 * kStage0Params);
  EXPECT_DOUBLE_EQ(m[1].optimizer_bytes, 12 * kStage1Params);
}

TEST(Memory, DistributedOptimizerShardsTheOptimizerStateOverDp) {
  ParallelSpec p = tp2_pp2_dp2();
  p.distributed_optimizer = true;
  const std::vector<StageMemory> m = stage_memory(small_model(), p);
  EXPECT_DOUBLE_EQ(m[0].optimizer_bytes, 12 * kStage0Params / 2);
  EXPECT_DOUBLE_EQ(m[0].weights_bytes, 2 * kStage0Params);
}

TEST(Memory, Fp32TrainingHasNoMasterCopyAndWiderActivations) {
  ModelSpec m32 = small_model();
  m32.dtype = "fp32";
  const std::vector<StageMemory> m = stage_memory(m32, valid(m32, test::layout(2, 2, 2)));
  EXPECT_DOUBLE_EQ(m[0].weights_bytes, 4 * kStage0Params);
  EXPECT_DOUBLE_EQ(m[0].gradients_bytes, 4 * kStage0Params);
  EXPECT_DOUBLE_EQ(m[0].optimizer_bytes, 8 * kStage0Params);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m32, valid(m32, test::layout(2, 2, 2))), 2 * kLayer);
}

TEST(Memory, OneFOneBHoldsPpMinusStageMicroBatches) {
  const ModelSpec model = small_model();
  const ParallelSpec p = tp2_pp2_dp2();
  EXPECT_DOUBLE_EQ(layer_activation_bytes(model, p), 2097152.0);
  EXPECT_DOUBLE_EQ(pass_activation_bytes(model, p, 0, 0), 4 * kLayer + kEmbedding);
  EXPECT_DOUBLE_EQ(pass_activation_bytes(model, p, 1, 0), 4 * kLayer + kOutput);
  const std::vector<StageMemory> m = stage_memory(model, p);
  EXPECT_EQ(m[0].inflight_passes, 2);  // pp − 0
  EXPECT_EQ(m[1].inflight_passes, 1);  // pp − 1
  EXPECT_DOUBLE_EQ(m[0].activations_bytes, 2 * (4 * kLayer + kEmbedding));
  EXPECT_DOUBLE_EQ(m[1].activations_bytes, 4 * kLayer + kOutput);
  EXPECT_DOUBLE_EQ(m[0].recompute_bytes, 0.0);
  EXPECT_DOUBLE_EQ(m[0].total_bytes(), 16 * kStage0Params + 2 * (4 * kLayer + kEmbedding));
}

TEST(Memory, GpipeHoldsEveryMicroBatch) {
  const std::vector<StageMemory> m = stage_memory(small_model(), tp2_pp2_dp2(PipelineSchedule::kGpipe));
  EXPECT_EQ(m[0].inflight_passes, 8);
  EXPECT_EQ(m[1].inflight_passes, 8);
  EXPECT_DOUBLE_EQ(m[1].activations_bytes, 8 * (4 * kLayer + kOutput));
}

TEST(Memory, FullRecomputationKeepsLayerInputsAndOneLayerAtATime) {
  ModelSpec model = small_model();
  model.recompute = Recompute::kFull;
  const ParallelSpec p = valid(model, test::layout(2, 2, 2));
  const std::vector<StageMemory> m = stage_memory(model, p);
  const double inputs = 4 * 2 * kSbh;  // 2·s·b·h per layer, 4 layers
  EXPECT_DOUBLE_EQ(m[0].activations_bytes, 2 * (inputs + kEmbedding));
  EXPECT_DOUBLE_EQ(m[1].activations_bytes, inputs + kOutput);
  EXPECT_DOUBLE_EQ(m[0].recompute_bytes, kLayer);
  EXPECT_DOUBLE_EQ(m[1].recompute_bytes, kLayer);
}

// Interleaved, p = 2, v = 2 chunks of 2 layers, m = 8. Stage 0 warms up with (p − 1)·2 + (v − 1)·p = 4 forwards
// (chunks 0, 0, 1, 1); in the steady state forward k takes chunk (k / 2) % 2 and backward k frees chunk
// 1 − (k / 2) % 2: F4(c0) → 3·c0 + 2·c1, B0 frees c1, F5(c0) → 4·c0 + c1, the largest. Megatron's count of
// in-flight chunk passes, p·v + p − 1 = 5, holds throughout; chunk 0 carries the embedding terms, so the peak is
// the moment with the most chunk-0 passes. The last stage warms up with (v − 1)·p = 2 forwards and holds 3.
TEST(Memory, InterleavedFollowsMegatronsWarmUp) {
  const ModelSpec model = small_model();
  const ParallelSpec p = tp2_pp2_dp2(PipelineSchedule::kInterleaved, 2);
  const double c0 = 2 * kLayer + kEmbedding;
  const double c1 = 2 * kLayer;
  const std::vector<StageMemory> m = stage_memory(model, p);
  EXPECT_EQ(m[0].inflight_passes, 5);
  EXPECT_DOUBLE_EQ(m[0].activations_bytes, 4 * c0 + c1);
  EXPECT_EQ(m[1].inflight_passes, 3);
  EXPECT_DOUBLE_EQ(pass_activation_bytes(model, p, 1, 1), 2 * kLayer + kOutput);
}

TEST(Memory, CheckFitsNamesTheNeediestStageAndTheCapacity) {
  const std::vector<StageMemory> m = stage_memory(small_model(), tp2_pp2_dp2());
  const double need = to_GiB(std::max(m[0].total_bytes(), m[1].total_bytes()));
  EXPECT_NO_THROW(check_fits(m, need * 1.001, "s.json"));
  edgc::test::expect_config_error([&] { check_fits(m, need * 0.5, "s.json"); }, "s.json", "cluster.gpu.memory_GiB",
                                  {"needs 0.0 GiB per GPU on stage 0", "the GPU has "});
  EXPECT_NO_THROW(check_fits({}, 1.0, "s.json"));
  EXPECT_THROW(check_fits(m, 0.0, "s.json"), InternalError);
}

TEST(Memory, TwelveBillionOnSixteenGpusMatchesTheArithmetic) {
  // The assumed GPT2-12.1B (60 × 4096, 32 heads, s 1024, V 50257, bf16, full recomputation) at tp 4 × pp 4,
  // micro-batch 4, 1F1B: stage 0 holds 15 layers plus a 50688/4 × 4096 word-embedding shard.
  ModelSpec m;
  m.layers = 60;
  m.hidden = 4096;
  m.heads = 32;
  m.seq_len = 1024;
  m.vocab = 50257;
  m.micro_batch_size = 4;
  m.global_batch_size = 512;
  m.dtype = "bf16";
  m.recompute = Recompute::kFull;
  ClusterSpec c;
  c.nodes = 4;
  const ParallelSpec p = validate(m, test::layout(4, 4, 2), c);
  const StageMemory s0 = stage_memory(m, p).front();
  const double h = 4096;
  const double params = 15 * ((12 * h * h + 7 * h) / 4 + 6 * h) + 50688.0 / 4 * h + 1024 * h;
  EXPECT_DOUBLE_EQ(static_cast<double>(s0.parameters), params);
  const double sbh = 1024.0 * 4 * h;
  EXPECT_DOUBLE_EQ(s0.activations_bytes, 4 * (15 * 2 * sbh + sbh + 1024.0 * 4 * 8));
  EXPECT_DOUBLE_EQ(s0.recompute_bytes, sbh * (10 + 24.0 / 4 + 5 * 32 * 1024.0 / (h * 4)));
}

}  // namespace
}  // namespace edgc::sim
