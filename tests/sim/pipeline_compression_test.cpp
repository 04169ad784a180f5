// EDGC's pipeline side in one simulated iteration, against closed forms: compressed backward messages (the sender
// compresses after its backward pass, the wire carries the fp32 factors, the receiver reconstructs before its own
// backward pass) and Optimus-CC's fused embedding sync (the word-embedding copies leave the first and last stages'
// DP syncs and are all-reduced once over their 2·dp GPUs). Each TEST is one simulation in its own process.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/sim/collectives.hpp"
#include "edgc/sim/cost_model.hpp"
#include "edgc/sim/iteration.hpp"
#include "edgc/sim/platform.hpp"
#include "expect_error.hpp"
#include "iteration_test_util.hpp"
#include "sim_test_util.hpp"

namespace edgc::sim {
namespace {

using test::engine;

// Two GPUs in one node joined by a slow switch (1 GB/s, 5 µs), so pipeline transfers show.
ClusterSpec two_slow_gpus() {
  ClusterSpec s = test::h100_like(1);
  s.gpus_per_node = 2;
  s.nics_per_node = 1;
  s.intra_bandwidth_GBps = 1;
  s.intra_latency_us = 5;
  return s;
}

// 8 layers of h = 1024, sequence 128, micro-batch 1: the boundary tensor is 128 × 1024.
ModelSpec small_model(int microbatches) { return test::small_gpt(1024, 128, 512, microbatches); }

ParallelSpec two_stages() {
  ParallelSpec p;
  p.pp = 2;
  p.schedule = PipelineSchedule::kGpipe;
  p.microbatches = 1;
  p.embedding_allreduce = false;
  return p;
}

CostParams no_optimizer() {
  CostParams c;
  c.optimizer_step_s = 0.0;
  return c;
}

// One micro-batch through two stages: F0, activations over, F1, B1, [compress], gradients back, [decompress], B0.
void expect_two_stage_closed_form(int pp_rank) {
  const Platform platform = Platform::build(engine(), two_slow_gpus(), NetworkProfile{});
  const ModelSpec model = small_model(1);
  const ParallelSpec par = two_stages();
  const CostParams params = no_optimizer();
  DpSyncPlan plan = uncompressed_plan(2);
  plan[1].pp_rank = pp_rank;
  const IterationResult r = simulate_iteration(engine(), platform, model, par, params, plan);
  const GpuSpec& gpu = platform.spec().gpu;
  const ComputeCost c0 = stage_compute(model, par, gpu, params, 0);
  const ComputeCost c1 = stage_compute(model, par, gpu, params, 1);
  const double act = pp_p2p_bytes(model, par);
  const double grad = pp_compressed_bytes(model, par, pp_rank);
  const double t_act = platform.lone_transfer_s(platform.gpu(0), platform.gpu(1), act);
  const double t_grad = platform.lone_transfer_s(platform.gpu(1), platform.gpu(0), grad);
  const double codec =
      pp_compress_s(model, par, gpu, params, pp_rank) + pp_decompress_s(model, par, gpu, params, pp_rank);
  const double expected = c0.forward_s + t_act + c1.forward_s + c1.backward_s + t_grad + codec + c0.backward_s;
  EXPECT_NEAR(r.iteration_s, expected, 1e-9 * expected);
  ASSERT_EQ(r.stages.size(), 2U);
  EXPECT_EQ(r.stages[1].pp_rank, pp_rank);
  EXPECT_DOUBLE_EQ(r.stages[0].pp_send_bytes, act);
  EXPECT_DOUBLE_EQ(r.stages[1].pp_send_bytes, std::ceil(grad));
  EXPECT_NEAR(r.stages[0].pp_comm_s, t_act, 1e-9 * t_act);
  EXPECT_NEAR(r.stages[1].pp_comm_s, t_grad, 1e-9 * t_grad);
  EXPECT_NEAR(r.stages[1].pp_compression_s, pp_compress_s(model, par, gpu, params, pp_rank), 1e-12);
  EXPECT_NEAR(r.stages[0].pp_compression_s, pp_decompress_s(model, par, gpu, params, pp_rank), 1e-12);
}

TEST(PipelineCompression, UncompressedBackwardMessageMatchesClosedForm) { expect_two_stage_closed_form(0); }

TEST(PipelineCompression, CompressedBackwardMessageMatchesClosedForm) {
  // Rank 8 of a 128 × 1024 boundary: (128 + 1024)·8 fp32 factors = 36,864 B instead of 128·1024·2 = 262,144 B.
  const ModelSpec model = small_model(1);
  ASSERT_TRUE(pp_compresses(model, two_stages(), 8));
  EXPECT_DOUBLE_EQ(pp_compressed_bytes(model, two_stages(), 8), (128.0 + 1024.0) * 8 * 4);
  EXPECT_DOUBLE_EQ(pp_compressed_bytes(model, two_stages(), 0), 128.0 * 1024 * 2);
  expect_two_stage_closed_form(8);
}

// Eight micro-batches under 1F1B over the slow link, simulated with and without rank-8 backward messages (each in a
// child process): where a message's transfer saving exceeds its codec, the iteration gets shorter (by less than one
// message's saving: stage 1 also pays the compression of every message on its own timeline), and every backward
// message is the compressed size.
TEST(PipelineCompression, CompressionShortensASlowLinkPipeline) {
  const ModelSpec model = small_model(8);
  ParallelSpec par = two_stages();
  par.schedule = PipelineSchedule::kOneFOneB;
  par.microbatches = 8;
  const CostParams params = no_optimizer();
  const auto run = [&](int pp_rank) {
    return test::simulate_in_child([&, pp_rank] {
      const Platform platform = Platform::build(engine(), two_slow_gpus(), NetworkProfile{});
      const IterationResult r =
          simulate_iteration(engine(), platform, model, par, params, powersgd_plan(2, 0, pp_rank));
      const GpuSpec& gpu = platform.spec().gpu;
      const double saved =
          platform.lone_transfer_s(platform.gpu(1), platform.gpu(0), pp_p2p_bytes(model, par)) -
          platform.lone_transfer_s(platform.gpu(1), platform.gpu(0), pp_compressed_bytes(model, par, 8)) -
          pp_compress_s(model, par, gpu, params, 8) - pp_decompress_s(model, par, gpu, params, 8);
      return test::to_text(r, {saved, pp_compress_s(model, par, gpu, params, 8)});
    });
  };
  const test::ChildResult plain = run(0);
  const test::ChildResult compressed = run(8);
  ASSERT_EQ(compressed.extra.size(), 2U);
  ASSERT_EQ(compressed.result.stages.size(), 2U);
  const double saved = compressed.extra[0];
  ASSERT_GT(saved, 0.0);
  EXPECT_LT(compressed.result.iteration_s, plain.result.iteration_s);
  EXPECT_EQ(compressed.result.stages[1].pp_rank, 8);
  EXPECT_DOUBLE_EQ(compressed.result.stages[1].pp_send_bytes, 8 * std::ceil(pp_compressed_bytes(model, par, 8)));
  EXPECT_DOUBLE_EQ(plain.result.stages[1].pp_send_bytes, 8 * pp_p2p_bytes(model, par));
  EXPECT_NEAR(compressed.result.stages[1].pp_compression_s, 8 * compressed.extra[1], 1e-12);
  EXPECT_EQ(plain.result.stages[1].pp_compression_s, 0.0);
  EXPECT_LT(compressed.result.stages[1].pp_comm_s, plain.result.stages[1].pp_comm_s);
}

TEST(PipelineCompression, NegativePipelineRankIsRefused) {
  const Platform platform = Platform::build(engine(), two_slow_gpus(), NetworkProfile{});
  DpSyncPlan plan = uncompressed_plan(2);
  plan[1].pp_rank = -1;
  edgc::test::expect_config_error(
      [&] { simulate_iteration(engine(), platform, small_model(1), two_stages(), no_optimizer(), plan); }, std::nullopt,
      std::nullopt, {"dp_sync.pp_rank"});
}

// Four GPUs, pp 2 × dp 2, fast NVSwitch: the fused embedding all-reduce is one contention-free ring of the four GPUs
// holding a copy, and the two stages' DP syncs carry everything but the copy.
TEST(FusedEmbeddingSync, IsOneRingOverBothStagesAndLeavesTheDpSyncs) {
  ClusterSpec spec = test::h100_like(1);
  spec.gpus_per_node = 4;
  spec.nics_per_node = 1;
  const Platform platform = Platform::build(engine(), spec, NetworkProfile{});
  ModelSpec model = small_model(2);
  model.vocab = 50257;
  ParallelSpec par = two_stages();
  par.dp = 2;
  par.embedding_allreduce = true;
  par.fused_embedding_sync = true;
  ASSERT_TRUE(fused_embedding_sync_applies(par));
  ParallelSpec unfused = par;
  unfused.fused_embedding_sync = false;
  // The copy (V_padded · h elements, 2 bytes each) leaves the DP sync of both stages.
  const double copy = static_cast<double>(padded_vocab(model, 1)) * model.hidden * 2;
  EXPECT_DOUBLE_EQ(dp_gradient_bytes(model, unfused, 0) - dp_gradient_bytes(model, par, 0), copy);
  EXPECT_DOUBLE_EQ(dp_gradient_bytes(model, unfused, 1) - dp_gradient_bytes(model, par, 1), copy);
  EXPECT_DOUBLE_EQ(embedding_sync_bytes(model, par), copy);
  for (const WeightMatrix& m : stage_matrices(model, par, 0)) EXPECT_NE(m.name, "word_embedding");
  const PowerSgdWire fused_wire = powersgd_wire(model, par, 1, 4);
  const PowerSgdWire unfused_wire = powersgd_wire(model, unfused, 1, 4);
  EXPECT_DOUBLE_EQ(
      unfused_wire.total_bytes() - fused_wire.total_bytes(),
      static_cast<double>(padded_vocab(model, 1) + model.hidden) * 4.0 * 2);  // the copy's P and Q at rank 4
  EXPECT_FALSE(replicas_fold(spec, par, ComputeVariability{}));

  const IterationResult r = simulate_iteration(engine(), platform, model, par, no_optimizer(), uncompressed_plan(2));
  const auto ring = [&](int members, double bytes) {
    const std::uint64_t chunk =
        ring_chunk_bytes(CollectiveOp::kAllReduce, members, static_cast<std::uint64_t>(std::ceil(bytes)));
    return ring_steps(CollectiveOp::kAllReduce, members) *
           platform.lone_transfer_s(platform.gpu(0), platform.gpu(1), static_cast<double>(chunk));
  };
  for (int s = 0; s < 2; ++s) {
    EXPECT_NEAR(r.stages[static_cast<std::size_t>(s)].embedding_sync_s, ring(4, copy), 1e-9 * ring(4, copy));
    const double dp = ring(2, dp_gradient_bytes(model, par, s));
    EXPECT_NEAR(r.stages[static_cast<std::size_t>(s)].dp_comm_s, dp, 1e-9 * dp);
  }
}

}  // namespace
}  // namespace edgc::sim
