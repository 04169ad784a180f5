#include "edgc/sim/cost_model.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "edgc/core/error.hpp"
#include "edgc/sim/layout.hpp"
#include "model_test_util.hpp"

namespace edgc::sim {
namespace {

using test::layout;
using test::small_model;

// Vocabulary already a multiple of 128·tp, so padding does not enter the closed forms.

GpuSpec gpu() { return GpuSpec{.name = "test", .peak_tflops = 100.0, .hbm_GBps = 1000.0}; }

ModelSpec gpt2_2_5b() {
  ModelSpec m;
  m.layers = 52;
  m.hidden = 1920;
  m.heads = 24;
  m.seq_len = 1024;
  m.vocab = 50257;
  m.micro_batch_size = 8;
  m.global_batch_size = 512;
  m.recompute = Recompute::kFull;
  return m;
}

TEST(CostModel, FlopsMatchTheClosedForm) {
  const ModelSpec m = small_model();
  const double b = 2, s = 128, h = 256, v = 1024, tp = 2;
  const ParallelSpec p = layout(2, 4, 2);
  const CostParams params{.compute_efficiency = 0.5};
  const double layer_fwd = 24 * b * s * h * h + 4 * b * s * s * h;
  EXPECT_DOUBLE_EQ(layer_forward_flops(m), layer_fwd);

  const ComputeCost first = stage_compute(m, p, gpu(), params, 0);
  EXPECT_DOUBLE_EQ(first.forward_flops, 2 * layer_fwd / tp);
  EXPECT_DOUBLE_EQ(first.backward_flops, 2 * 2 * layer_fwd / tp);
  EXPECT_DOUBLE_EQ(first.forward_s, first.forward_flops / (100e12 * 0.5));

  const ComputeCost last = stage_compute(m, p, gpu(), params, 3);
  EXPECT_DOUBLE_EQ(last.forward_flops, (2 * layer_fwd + 2 * b * s * h * v) / tp);
  EXPECT_DOUBLE_EQ(last.backward_flops, (4 * layer_fwd + 4 * b * s * h * v) / tp);

  // Recomputation adds one forward of the layers but not of the logits; summed over the pipeline and TP it is
  // Narayanan et al.'s 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) per iteration for B = b.
  ModelSpec r = m;
  r.recompute = Recompute::kFull;
  double total = 0;
  for (int stage = 0; stage < p.pp; ++stage) {
    const ComputeCost c = stage_compute(r, p, gpu(), params, stage);
    total += (c.forward_flops + c.backward_flops) * tp;
  }
  const double l = 8;
  EXPECT_NEAR(total / (96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h))), 1.0, 1e-12);
}

TEST(CostModel, InterleavedChunksSumToTheStage) {
  ParallelSpec p = layout(2, 2, 4);
  p.schedule = PipelineSchedule::kInterleaved;
  p.virtual_stages = 2;
  const ModelSpec m = small_model();
  const CostParams params;
  const ComputeCost head = chunk_compute(m, p, gpu(), params, 1, 1);
  const ComputeCost body = chunk_compute(m, p, gpu(), params, 1, 0);
  EXPECT_GT(head.forward_flops, body.forward_flops);  // the LM head rides on the last virtual stage
  EXPECT_DOUBLE_EQ(body.forward_flops, 2 * layer_forward_flops(m) / 2);
  const ComputeCost stage = stage_compute(m, p, gpu(), params, 1);
  EXPECT_DOUBLE_EQ(stage.forward_flops, head.forward_flops + body.forward_flops);
  EXPECT_THROW((void)chunk_compute(m, p, gpu(), params, 1, 2), InternalError);
}

TEST(CostModel, Gpt2_2_5bHasAbout2_4BillionParameters) {
  const double p = static_cast<double>(parameter_count(gpt2_2_5b()));
  EXPECT_GE(p, 2.4e9);
  EXPECT_LE(p, 2.5e9);
  EXPECT_EQ(padded_vocab(gpt2_2_5b(), 4), 50688);  // Megatron's padding to a multiple of 128·4
}

TEST(CostModel, DpBytesPerStageSumToTheParameters) {
  for (const ParallelSpec& p : {layout(4, 4, 2), layout(1, 2, 16), layout(8, 2, 2)}) {
    ModelSpec m = gpt2_2_5b();
    m.global_batch_size = 512;
    std::int64_t total = 0;
    double bytes = 0;
    for (int stage = 0; stage < p.pp; ++stage) {
      const StageParams s = stage_params(m, p, stage);
      total += s.sharded_per_shard * p.tp + s.replicated;
      bytes += dp_gradient_bytes(m, p, stage);
      std::int64_t elements = 0;
      for (const WeightMatrix& w : stage_matrices(m, p, stage)) elements += w.elements() * w.count;
      EXPECT_LT(elements, s.per_gpu());  // the rest are the 1-D parameters
    }
    ModelSpec padded = m;
    padded.vocab = static_cast<int>(padded_vocab(m, p.tp));
    // The tied LM head is a second copy of the word embedding on the last stage when pp > 1.
    const std::int64_t copy = p.pp > 1 ? padded_vocab(m, p.tp) * m.hidden : 0;
    EXPECT_EQ(total, parameter_count(padded) + copy) << "tp " << p.tp << " pp " << p.pp;
    if (p.tp == 1) {
      EXPECT_DOUBLE_EQ(bytes, 2.0 * static_cast<double>(total));  // fp16: 2 bytes per parameter
    }
    EXPECT_DOUBLE_EQ(embedding_sync_bytes(m, p), 2.0 * static_cast<double>(copy / p.tp));
  }
}

TEST(CostModel, TensorAndPipelineBytes) {
  ModelSpec m = small_model();
  const double act = 2.0 * 128 * 256 * 2;
  ParallelSpec full = layout(2, 4, 2);
  full.scatter_gather_p2p = false;
  EXPECT_DOUBLE_EQ(pp_p2p_bytes(m, full), act);  // every TP rank sends its whole copy
  EXPECT_DOUBLE_EQ(pp_gather_bytes(m, full), 0.0);
  // Megatron's scatter/gather: each TP rank sends its 1/tp slice and the receiver all-gathers the whole tensor.
  EXPECT_DOUBLE_EQ(pp_p2p_bytes(m, layout(2, 4, 2)), act / 2);
  EXPECT_DOUBLE_EQ(pp_gather_bytes(m, layout(2, 4, 2)), act);
  // Sequence parallelism: the tensor is already sharded, nothing to gather.
  ParallelSpec sp = layout(2, 4, 2);
  sp.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(pp_p2p_bytes(m, sp), act / 2);
  EXPECT_DOUBLE_EQ(pp_gather_bytes(m, sp), 0.0);
  EXPECT_DOUBLE_EQ(pp_gather_bytes(m, layout(1, 4, 4)), 0.0);
  // Megatron's f and g: two all-reduces forward, two backward beside the QKV and fc1 weight-gradient GEMMs
  // (asynchronous TP all-reduce, the default) or exposed.
  const auto units = [&](const ParallelSpec& p, bool backward) {
    return tp_comm_per_layer(m, p).exposed_units(backward);
  };
  TpLayerComm c = tp_comm_per_layer(m, layout(2, 4, 2));
  EXPECT_DOUBLE_EQ(c.tensor_bytes, act);
  ASSERT_EQ(c.collectives.size(), 4U);
  EXPECT_DOUBLE_EQ(units(layout(2, 4, 2), false), 2.0);
  EXPECT_DOUBLE_EQ(units(layout(2, 4, 2), true), 0.0);
  EXPECT_STREQ(c.collectives[2].beside, "fc1.wgrad");
  EXPECT_STREQ(c.collectives[3].beside, "qkv.wgrad");
  const double b = m.micro_batch_size, s = m.seq_len, h = m.hidden;
  EXPECT_DOUBLE_EQ(c.collectives[2].beside_flops, 2 * b * s * h * 4 * h / 2);
  EXPECT_DOUBLE_EQ(c.collectives[3].beside_flops, 2 * b * s * h * 3 * h / 2);
  ParallelSpec sync = layout(2, 4, 2);
  sync.async_tp_allreduce = false;
  EXPECT_DOUBLE_EQ(units(sync, true), 2.0);
  // Sequence parallelism: all-gather + reduce-scatter per all-reduce forward; backward two exposed all-gathers and,
  // for fc1 and QKV, the input re-gathered beside the input-gradient GEMM and the reduce-scatter beside the
  // weight-gradient GEMM, whatever async_tp_allreduce says.
  for (const bool async : {true, false}) {
    ParallelSpec seq = layout(2, 4, 2);
    seq.sequence_parallel = true;
    seq.async_tp_allreduce = async;
    EXPECT_DOUBLE_EQ(units(seq, false), 2.0);
    EXPECT_DOUBLE_EQ(units(seq, true), 1.0);
    int beside = 0;
    for (const TpCollective& k : tp_comm_per_layer(m, seq).collectives) beside += k.beside != nullptr ? 1 : 0;
    EXPECT_EQ(beside, 4);
  }
  m.recompute = Recompute::kSelective;  // the recomputed attention core has no TP collective
  EXPECT_DOUBLE_EQ(units(layout(2, 4, 2), true), 0.0);
  EXPECT_DOUBLE_EQ(units(sync, true), 2.0);
  m.recompute = Recompute::kFull;  // the forward's collectives again, exposed
  EXPECT_DOUBLE_EQ(units(layout(2, 4, 2), true), 2.0);
  EXPECT_DOUBLE_EQ(units(sync, true), 4.0);
  EXPECT_TRUE(tp_comm_per_layer(m, layout(1, 4, 4)).collectives.empty());
  EXPECT_DOUBLE_EQ(allreduce_units(TpCollectiveOp::kReduceScatter) + allreduce_units(TpCollectiveOp::kAllGather),
                   allreduce_units(TpCollectiveOp::kAllReduce));
  m.dtype = "fp32";
  EXPECT_DOUBLE_EQ(pp_p2p_bytes(m, full), 2 * act);
  EXPECT_THROW((void)bytes_per_element("int8"), ConfigError);
}

TEST(CostModel, MatricesHaveTheMegatronShardShapes) {
  const ModelSpec m = gpt2_2_5b();
  const auto mats = stage_matrices(m, layout(4, 4, 2), 1);
  ASSERT_EQ(mats.size(), 4U);
  EXPECT_EQ(mats[0].rows, 1920);
  EXPECT_EQ(mats[0].cols, 1440);  // QKV h × 3h/tp
  EXPECT_EQ(mats[1].rows, 480);   // proj h/tp × h
  EXPECT_EQ(mats[2].cols, 1920);  // fc1 h × 4h/tp
  EXPECT_EQ(mats[3].rows, 1920);  // fc2 4h/tp × h
  EXPECT_EQ(mats[3].count, 13);
  EXPECT_EQ(stage_matrices(m, layout(4, 4, 2), 0).size(), 6U);  // + word and position embeddings
  EXPECT_EQ(stage_matrices(m, layout(4, 4, 2), 3).size(), 5U);  // + the tied LM-head copy
}

TEST(PowerSgd, WireBytesNeverExceedDenseAndEqualItPastTheSkipThreshold) {
  const ModelSpec m = gpt2_2_5b();
  const ParallelSpec p = layout(4, 4, 2);
  for (int stage = 0; stage < p.pp; ++stage) {
    const double dense = dp_gradient_bytes(m, p, stage);
    double previous = 0;
    for (int r : {1, 4, 16, 32, 64, 128, 256, 512}) {
      const PowerSgdWire w = powersgd_wire(m, p, stage, r);
      EXPECT_LE(w.total_bytes(), dense) << "stage " << stage << " r " << r;
      EXPECT_GE(w.total_bytes(), previous);
      previous = w.total_bytes();
    }
    // The smallest shard dimension is h/tp = 480 (proj): beyond (m+n)·r·2 ≥ m·n for every matrix, nothing
    // is compressed.
    const PowerSgdWire off = powersgd_wire(m, p, stage, 2000);
    EXPECT_EQ(off.compressed_matrices, 0);
    EXPECT_DOUBLE_EQ(off.total_bytes(), dense);
    const PowerSgdWire on = powersgd_wire(m, p, stage, 32);
    EXPECT_EQ(on.skipped_matrices, 0);
    EXPECT_LT(on.total_bytes(), dense / 5);
  }
  // proj 480×1920: compressed at r < 480·1920 / (2·2400) = 192, skipped from there.
  EXPECT_TRUE(powersgd_compresses(480, 1920, 191));
  EXPECT_FALSE(powersgd_compresses(480, 1920, 192));
  const PowerSgdWire r32 = powersgd_wire(m, p, 1, 32);
  EXPECT_DOUBLE_EQ(r32.p_bytes, 13.0 * (1920 + 480 + 1920 + 1920) * 32 * 2);
  EXPECT_DOUBLE_EQ(r32.q_bytes, 13.0 * (1440 + 1920 + 1920 + 1920) * 32 * 2);
  EXPECT_THROW((void)powersgd_wire(m, p, 1, 0), InternalError);
}

TEST(PowerSgd, CompressTimeGrowsWithRank) {
  const ModelSpec m = gpt2_2_5b();
  const ParallelSpec p = layout(4, 4, 2);
  const GpuSpec v100{.name = "V100", .peak_tflops = 125.0, .hbm_GBps = 900.0};
  const CostParams params{.compute_efficiency = 0.32, .hbm_efficiency = 0.85, .orth_column_latency_s = 30e-6};
  double previous = 0;
  for (int r : {4, 8, 16, 32, 64, 128}) {
    const double t = powersgd_compress_s(m, p, v100, params, 1, r);
    EXPECT_GT(t, previous) << "r " << r;
    previous = t;
  }
  // Memory-bound floor at small rank: 8 passes of the stage's matrix elements over 0.85 · 900 GB/s.
  double elements = 0;
  for (const WeightMatrix& w : stage_matrices(m, p, 1)) elements += static_cast<double>(w.elements()) * w.count;
  const double floor_s = 8 * elements * 2 / (900e9 * 0.85);
  const double t4 = powersgd_compress_s(m, p, v100, CostParams{.compute_efficiency = 0.32}, 1, 4);
  EXPECT_GE(t4, floor_s);
  EXPECT_LT(t4, floor_s * 1.05);
  // Nothing to compress past the skip threshold.
  EXPECT_DOUBLE_EQ(powersgd_compress_s(m, p, v100, params, 1, 2000), 0.0);
}

}  // namespace
}  // namespace edgc::sim

namespace edgc::sim {
namespace {

// Several shapes at one rank: the steps are a fixed part plus a part per element (a line through the measurements);
// a batch pays the fixed part once. Here 1e6 elements take 1.1 ms and 3e6 take 1.3 ms: 1 ms fixed, 0.1 ns per element.
TEST(KernelProfile, ABatchPaysTheFixedPartOnce) {
  const std::vector<KernelTime> profile = {{1000, 1000, 8, 1.1e-3}, {1000, 3000, 8, 1.3e-3}, {1000, 3000, 16, 2.6e-3}};
  // An unmeasured shape: 1 ms + 4 matrices of 2e6 elements at 0.1 ns.
  EXPECT_NEAR(profiled_batch_s(profile, 2000, 1000, 8, 4), 1e-3 + 4 * 2e6 * 1e-10, 1e-12);
  // A measured shape keeps its time for one matrix, and adds only its variable part for each further one.
  EXPECT_NEAR(profiled_batch_s(profile, 1000, 1000, 8, 1), 1.1e-3, 1e-12);
  EXPECT_NEAR(profiled_batch_s(profile, 1000, 1000, 8, 3), 1e-3 + 3 * 0.1e-3, 1e-12);
  // Rank 16 has one shape: all per element (2.6 ms / 3e6), so no sharing; rank 12 lies halfway.
  EXPECT_NEAR(profiled_batch_s(profile, 1000, 1000, 16, 2), 2 * 2.6e-3 / 3, 1e-12);
  EXPECT_NEAR(profiled_batch_s(profile, 1000, 1000, 12, 2), 0.5 * (1e-3 + 2 * 0.1e-3) + 0.5 * (2 * 2.6e-3 / 3), 1e-12);
  // A line that would need a negative fixed part goes through the origin instead.
  const std::vector<KernelTime> steep = {{1000, 1000, 8, 1e-4}, {1000, 3000, 8, 1e-3}};
  const double per_element = (1e6 * 1e-4 + 3e6 * 1e-3) / (1e12 + 9e12);
  EXPECT_NEAR(profiled_batch_s(steep, 2000, 1000, 8, 2), 2 * 2e6 * per_element, 1e-12);
}

// Entries measured on batches (live measures its stages' batches): a batch counts as `count` matrices of its shape.
// Rank 4: 4 × 1e6 elements in 1.4 ms and 1 × 1e6 in 0.5 ms → 0.2 ms fixed, 0.3 ms per matrix (0.3 ns per element).
TEST(KernelProfile, BatchEntriesCountAsThatManyMatrices) {
  const std::vector<KernelTime> profile = {{1000, 1000, 4, 1.4e-3, 4}, {1000, 1000, 4, 0.5e-3, 1}};
  EXPECT_DOUBLE_EQ(profiled_batch_s(profile, 1000, 1000, 4, 4), 1.4e-3);  // this very batch
  EXPECT_DOUBLE_EQ(profiled_batch_s(profile, 1000, 1000, 4, 1), 0.5e-3);
  // Two matrices: the first entry of the shape (count 4) keeps its per-matrix part, (1.4 − 0.2) / 4 ms.
  EXPECT_NEAR(profiled_batch_s(profile, 1000, 1000, 4, 2), 0.2e-3 + 2 * 0.3e-3, 1e-15);
  // Another shape: fixed + per element.
  EXPECT_NEAR(profiled_batch_s(profile, 2000, 1000, 4, 3), 0.2e-3 + 3 * 2e6 * 0.3e-9, 1e-15);
  // One batch entry only: through the origin, so time per matrix = 1.2 ms / 4.
  const std::vector<KernelTime> one = {{64, 64, 8, 1.2e-3, 4}};
  EXPECT_NEAR(profiled_batch_s(one, 64, 64, 8, 2), 0.6e-3, 1e-15);
}

// Live's dense-buffer copies: linear between measured sizes, through the origin below, the last slope above.
TEST(CopyProfile, LinearBetweenSizesProportionalBelowExtendedAbove) {
  const std::vector<CopyTime> copies = {{4000, 2e-6}, {1000, 1e-6}};  // any order
  EXPECT_DOUBLE_EQ(profiled_copy_s(copies, 1000), 1e-6);
  EXPECT_DOUBLE_EQ(profiled_copy_s(copies, 500), 0.5e-6);
  EXPECT_NEAR(profiled_copy_s(copies, 2500), 1.5e-6, 1e-18);
  EXPECT_NEAR(profiled_copy_s(copies, 7000), 3e-6, 1e-18);
  EXPECT_DOUBLE_EQ(profiled_copy_s({{1000, 1e-6}}, 3000), 3e-6);
  EXPECT_THROW(profiled_copy_s({}, 3000), InternalError);
}

// A measured kernel profile replaces the roofline: exact shapes take their measured time, other ranks are
// interpolated linearly per element, other shapes scale by element count from the nearest measured shape.
TEST(KernelProfile, ExactShapesInterpolatedRanksAndScaledShapes) {
  const std::vector<KernelTime> profile = {{1000, 2000, 4, 2e-3}, {1000, 2000, 64, 8e-3}, {10, 10, 4, 1e-9}};
  EXPECT_DOUBLE_EQ(profiled_batch_s(profile, 1000, 2000, 4, 1), 2e-3);
  EXPECT_DOUBLE_EQ(profiled_batch_s(profile, 1000, 2000, 64, 1), 8e-3);
  EXPECT_NEAR(profiled_batch_s(profile, 1000, 2000, 34, 1), 5e-3, 1e-15);  // halfway between 4 and 64
  EXPECT_DOUBLE_EQ(profiled_batch_s(profile, 1000, 2000, 1, 1), 2e-3);     // below the lowest measured rank
  EXPECT_DOUBLE_EQ(profiled_batch_s(profile, 1000, 2000, 128, 1), 8e-3);   // above the highest
  // 2000 x 2000 is nearest to the 1000 x 2000 shape: twice the elements, twice the time.
  EXPECT_NEAR(profiled_batch_s(profile, 2000, 2000, 64, 1), 16e-3, 1e-15);
  EXPECT_DOUBLE_EQ(profiled_batch_s(profile, 1000, 2000, 4, 0), 0.0);
  // The whole stage: each compressed matrix at its measured time.
  ModelSpec m;
  m.layers = 2;
  m.hidden = 256;
  m.heads = 4;
  m.seq_len = 128;
  m.vocab = 1000;
  m.micro_batch_size = 1;
  m.global_batch_size = 8;
  ParallelSpec p;
  p.pp = 2;
  p.dp = 2;
  p.microbatches = 4;
  CostParams params;
  params.kernel_profile = {{256, 1024, 8, 1e-4}};
  double expected = 0.0;
  for (const WeightMatrix& w : stage_matrices(m, p, 1))
    if (powersgd_compresses(w.rows, w.cols, 8))
      expected += w.count * 1e-4 * static_cast<double>(w.rows * w.cols) / (256.0 * 1024.0);
  GpuSpec gpu;
  gpu.peak_tflops = 100;
  gpu.hbm_GBps = 1000;
  EXPECT_GT(expected, 0.0);
  EXPECT_NEAR(powersgd_compress_s(m, p, gpu, params, 1, 8), expected, 1e-12 * expected);
  EXPECT_NE(powersgd_compress_s(m, p, gpu, CostParams{}, 1, 8), expected) << "the roofline differs";
}

}  // namespace
}  // namespace edgc::sim
