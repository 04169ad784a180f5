// Mixture of experts, arithmetic: parameter counts (total and active) against hand-computed values and the
// published figures, FLOPs, the all-to-all's bytes, the expert-data-parallel split of the gradients and of PowerSGD's
// wire, TP collectives of an MoE layer, the expert groups, and the layouts Megatron-Core (or edgc) refuses.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/sim/cost_model.hpp"
#include "edgc/sim/layer.hpp"
#include "edgc/sim/layout.hpp"
#include "edgc/sim/memory.hpp"
#include "edgc/sim/whole_run.hpp"
#include "impl/traffic.hpp"
#include "model_test_util.hpp"
#include "sim_test_util.hpp"

namespace edgc::sim {
namespace {

ModelSpec mixtral() { return test::mixtral_8x7b(); }

// Qwen/Qwen3-30B-A3B's config.json (scenarios/models/hf/qwen3-30b-a3b-config.json): 128 experts of width 768.
ModelSpec qwen3_30b() {
  ModelSpec m = mixtral();
  m.name = "Qwen3-30B-A3B";
  m.layers = 48;
  m.hidden = 2048;
  m.heads = 32;
  m.kv_heads = 4;
  m.head_dim = 128;
  m.vocab = 151936;
  m.qk_norm = true;
  m.experts = 128;
  m.top_k = 8;
  m.moe_ffn_hidden = 768;
  return m;
}

TEST(Moe, MixtralParametersByHand) {
  // Per layer: QKV 4096 x (32 + 2·8)·128, projection 4096², router 4096 x 8, an expert 3 · 4096 · 14336, two RMSNorms;
  // untied word embedding and LM head 2 · 32000 · 4096, final RMSNorm 4096.
  const std::int64_t attention = 4096LL * 6144 + 4096LL * 4096, router = 4096LL * 8, expert = 3LL * 4096 * 14336;
  const std::int64_t edges = 2LL * 32000 * 4096 + 4096;
  EXPECT_EQ(parameter_count(mixtral()), 32 * (attention + router + 8 * expert + 2LL * 4096) + edges);
  EXPECT_EQ(active_parameter_count(mixtral()), 32 * (attention + router + 2 * expert + 2LL * 4096) + edges);
  EXPECT_EQ(parameter_count(mixtral()), 46'702'792'704);
  EXPECT_EQ(active_parameter_count(mixtral()), 12'879'925'248);
}

TEST(Moe, PublishedCountsWithinHalfAPercent) {
  // Mistral AI, "Mixtral of experts" (2023-12-11): 46.7 B parameters, 12.9 B used per token.
  EXPECT_NEAR(static_cast<double>(parameter_count(mixtral())) / 46.7e9, 1.0, 0.005);
  EXPECT_NEAR(static_cast<double>(active_parameter_count(mixtral())) / 12.9e9, 1.0, 0.005);
  // Qwen3 technical report: Qwen3-30B-A3B has 30.5 B parameters (3.3 B activated, given to two digits).
  EXPECT_NEAR(static_cast<double>(parameter_count(qwen3_30b())) / 30.5e9, 1.0, 0.005);
  EXPECT_NEAR(static_cast<double>(active_parameter_count(qwen3_30b())) / 3.3e9, 1.0, 0.02);
}

TEST(Moe, Qwen3ParametersByHand) {
  // QKV 2048 x (32 + 8)·128, projection 4096 x 2048, q/k norms 2·128, router 2048 x 128, experts 3 · 2048 · 768.
  const std::int64_t dense = 2048LL * 5120 + 4096LL * 2048 + 2LL * 128 + 2048LL * 128 + 2LL * 2048;
  const std::int64_t expert = 3LL * 2048 * 768, edges = 2LL * 151936 * 2048 + 2048;
  EXPECT_EQ(parameter_count(qwen3_30b()), 48 * (dense + 128 * expert) + edges);
  EXPECT_EQ(active_parameter_count(qwen3_30b()), 48 * (dense + 8 * expert) + edges);
}

TEST(Moe, ForwardFlopsCountTopKExperts) {
  const ModelSpec m = mixtral();
  const double tokens = 1.0 * 4096;
  const double matrices = 4096.0 * 6144 + 4096.0 * 4096 + 4096.0 * 8 + 2 * 3 * 4096.0 * 14336;
  EXPECT_DOUBLE_EQ(layer_forward_flops(m), 2 * tokens * matrices + 4 * tokens * 4096.0 * 32 * 128);
}

TEST(Moe, AllToAllBytes) {
  ParallelSpec p = test::layout(1, 4, 16);
  p.ep = 8;
  // b·s·k tokens of h bf16 elements, 7/8 of them leaving the GPU.
  EXPECT_DOUBLE_EQ(moe_all_to_all_bytes(mixtral(), p), 4096.0 * 2 * 4096 * 2 * 7 / 8);
  p.ep = 1;
  EXPECT_EQ(moe_all_to_all_bytes(mixtral(), p), 0.0);
  EXPECT_EQ(moe_all_to_alls(mixtral(), false), 2);
  EXPECT_EQ(moe_all_to_alls(mixtral(), true), 2);
  ModelSpec full = mixtral();
  full.recompute = Recompute::kFull;
  EXPECT_EQ(moe_all_to_alls(full, true), 4);
  EXPECT_EQ(moe_all_to_alls(test::small_model(), false), 0);
}

TEST(Moe, ExpertGradientsLeaveTheDenseSync) {
  ParallelSpec p = test::layout(1, 4, 16);
  p.ep = 8;
  const ModelSpec m = mixtral();
  const StageParams s = stage_params(m, p, 1);  // a middle stage: 8 layers, no embedding
  const std::int64_t expert = 3LL * 4096 * 14336;
  EXPECT_EQ(s.expert, 8LL * expert);  // one expert of each of its 8 layers
  EXPECT_EQ(s.dense(), 8 * (4096LL * 6144 + 4096LL * 4096 + 4096LL * 8 + 2LL * 4096));
  EXPECT_DOUBLE_EQ(dp_gradient_bytes(m, p, 1), static_cast<double>(s.dense()) * 2);
  EXPECT_DOUBLE_EQ(expert_gradient_bytes(m, p, 1), static_cast<double>(s.expert) * 2);
  // PowerSGD: the expert matrices (h x 2f and f x h, 8 of each) go to the expert group, the rest to the dense one.
  const PowerSgdWire e = powersgd_wire(m, p, 1, 16, SyncGroup::kExpert);
  EXPECT_EQ(e.compressed_matrices, 16);
  EXPECT_DOUBLE_EQ(e.p_bytes, 8.0 * (4096 + 14336) * 16 * 2);
  EXPECT_DOUBLE_EQ(e.q_bytes, 8.0 * (28672 + 4096) * 16 * 2);
  EXPECT_EQ(e.uncompressed_bytes, 0.0);
  const PowerSgdWire d = powersgd_wire(m, p, 1, 16);
  EXPECT_EQ(d.compressed_matrices, 16);  // QKV and projection of 8 layers; the 4096 x 8 router is skipped
  EXPECT_EQ(d.skipped_matrices, 8);
}

TEST(Moe, LayerWithoutSharedExpertsKeepsOnlyAttentionTpCollectives) {
  ModelSpec m = mixtral();
  ParallelSpec p = test::layout(2, 1, 8);
  p.ep = 8;
  p.sequence_parallel = true;
  const TpLayerComm c = tp_comm_per_layer(m, p);
  // Forward: all-gather before QKV, reduce-scatter after the projection; backward: the projection's output-gradient
  // all-gather and QKV's all-gather and reduce-scatter.
  EXPECT_EQ(c.collectives.size(), 5U);
  m.shared_experts = 2;
  EXPECT_EQ(tp_comm_per_layer(m, p).collectives.size(), 10U);
}

TEST(Moe, ExpertGroupsFollowMegatronCoreOrder) {
  ParallelSpec p = test::layout(2, 1, 8);
  p.ep = 4;
  p.expert_groups = true;
  const Layout layout(p, 8);
  const std::vector<impl::RankGroup> ep = impl::ep_rank_groups(layout, p);
  const std::vector<impl::RankGroup> edp = impl::edp_rank_groups(layout, p);
  ASSERT_EQ(ep.size(), 4U);   // 16 GPUs of the stage in groups of 4 consecutive positions dp·tp + tp_index
  ASSERT_EQ(edp.size(), 4U);  // ep groups of 16 / 4 = 4
  EXPECT_EQ(ep[1].ranks, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(edp[1].ranks, (std::vector<int>{1, 5, 9, 13}));
}

TEST(Moe, RestrictCompressionMovesTheRankToOneSync) {
  RunSchedule s;
  s.append(0, 10, uncompressed_plan(2));
  s.append(10, 20, powersgd_plan(2, 16, 4));
  const RunSchedule all = restrict_compression(s, CompressedGradients::kAll);
  EXPECT_EQ(all.segments()[1].plan[0].expert_rank_or_default(), 16);
  const RunSchedule dense = restrict_compression(s, CompressedGradients::kDense);
  EXPECT_EQ(dense.segments()[1].plan[1].powersgd_rank, 16);
  EXPECT_EQ(dense.segments()[1].plan[1].expert_rank_or_default(), 0);
  const RunSchedule experts = restrict_compression(s, CompressedGradients::kExperts);
  EXPECT_EQ(experts.segments()[1].plan[0].powersgd_rank, 0);
  EXPECT_EQ(experts.segments()[1].plan[0].expert_rank, 16);
  EXPECT_EQ(experts.segments()[1].plan[0].pp_rank, 4);  // the pipeline side untouched
  EXPECT_TRUE(dp_compressed(experts.segments()[1].plan));
  EXPECT_FALSE(dp_compressed(experts.segments()[0].plan));
  EXPECT_EQ(compressed_gradients_from_name("experts"), CompressedGradients::kExperts);
  EXPECT_FALSE(compressed_gradients_from_name("expert"));
}

void expect_refused(const ModelSpec& m, const ParallelSpec& p, int nodes, const std::string& field) {
  try {
    validate(m, p, test::h100_like(nodes), "moe.json");
    ADD_FAILURE() << "accepted; expected a refusal naming " << field;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  }
}

TEST(Moe, ImpossibleLayoutsAreRefused) {
  ParallelSpec p = test::layout(1, 4, 16);
  p.ep = 8;
  EXPECT_NO_THROW(validate(mixtral(), p, test::h100_like(8), "moe.json"));
  ParallelSpec bad = p;
  bad.ep = 16;  // 8 experts over 16 GPUs
  expect_refused(mixtral(), bad, 8, "parallelism.ep");
  bad = test::layout(1, 4, 2);
  bad.ep = 4;
  ModelSpec small_batch = mixtral();
  small_batch.global_batch_size = 16;
  bad.ep = 8;  // 8 does not divide tp·dp = 2
  expect_refused(small_batch, bad, 1, "parallelism.ep");
  bad = p;
  bad.etp = 2;
  expect_refused(mixtral(), bad, 8, "parallelism.etp");
  ParallelSpec tp2 = test::layout(2, 4, 8);
  tp2.ep = 8;
  expect_refused(mixtral(), tp2, 8, "parallelism.sequence_parallel");
  ModelSpec k = mixtral();
  k.top_k = 9;
  expect_refused(k, p, 8, "model.top_k");
  ModelSpec load = mixtral();
  load.moe_load_factor = 0.5;
  expect_refused(load, p, 8, "model.moe_load_factor");
  ParallelSpec dense_ep = test::layout(1, 1, 8);
  dense_ep.ep = 2;
  ModelSpec dense = test::small_model();
  dense.global_batch_size = 16;
  expect_refused(dense, dense_ep, 1, "parallelism.ep");
}

TEST(Moe, CombinedOneFOneBHoldsOneMoreMicroBatchWithoutPipelining) {
  ModelSpec m = mixtral();
  m.global_batch_size = 32;  // 4 micro-batches over dp 8: F0 B0 F1 B1 … run as F0, (B0 F1), (B1 F2), (B2 F3), B3
  ParallelSpec p = test::layout(1, 1, 8);
  p.ep = 8;
  p = validate(m, p, test::h100_like(1), "moe.json");
  const StageMemory plain = stage_memory(m, p)[0];
  p.moe_a2a_overlap = true;
  const StageMemory combined = stage_memory(m, p)[0];
  EXPECT_EQ(plain.inflight_passes, 1);
  EXPECT_EQ(combined.inflight_passes, 2);
  EXPECT_DOUBLE_EQ(combined.activations_bytes, 2 * plain.activations_bytes);
}

// The token dispatcher's buffers of one MoE layer: the experts' output rows (load · k per token) beside the combine
// all-to-all's receive buffer (k per token), by hand: Mixtral's 4096-token micro-batch, k 2, h 4096, bf16, load
// 1.25 → (1.25 + 1) · 2 · 4096 · 4096 · 2 bytes; ÷ tp with sequence parallelism; in the stage's peak; none for a
// dense model or a stage of dense layers only.
TEST(Moe, DispatchBuffersByHand) {
  ModelSpec m = mixtral();
  m.global_batch_size = 32;
  m.moe_load_factor = 1.25;
  ParallelSpec p = test::layout(1, 1, 8);
  p.ep = 8;
  p = validate(m, p, test::h100_like(1), "moe.json");
  const double by_hand = 2.25 * 2 * 4096.0 * 4096 * 2;
  EXPECT_DOUBLE_EQ(dispatch_buffer_bytes(m, p), by_hand);
  const StageMemory s = stage_memory(m, p)[0];
  EXPECT_DOUBLE_EQ(s.dispatch_bytes, by_hand);
  EXPECT_DOUBLE_EQ(s.total_bytes(), s.weights_bytes + s.gradients_bytes + s.optimizer_bytes + s.activations_bytes +
                                        s.recompute_bytes + by_hand);
  ParallelSpec sp = test::layout(2, 1, 4);
  sp.ep = 8;
  sp.sequence_parallel = true;
  sp = validate(m, sp, test::h100_like(1), "moe.json");
  EXPECT_DOUBLE_EQ(dispatch_buffer_bytes(m, sp), by_hand / 2);

  ModelSpec dense = m;
  dense.experts = 0;
  dense.top_k = 0;
  EXPECT_DOUBLE_EQ(dispatch_buffer_bytes(dense, test::layout(1, 1, 8)), 0.0);

  ModelSpec half = m;  // the first 16 layers dense: pp 2's stage 0 holds no MoE layer
  half.ffn_hidden = 14336;
  half.moe_layer_pattern.assign(32, 1);
  for (int i = 0; i < 16; ++i) half.moe_layer_pattern[static_cast<std::size_t>(i)] = 0;
  ParallelSpec pp2 = test::layout(1, 2, 8);
  pp2.ep = 8;
  pp2 = validate(half, pp2, test::h100_like(2), "moe.json");
  const std::vector<StageMemory> stages = stage_memory(half, pp2);
  EXPECT_DOUBLE_EQ(stages[0].dispatch_bytes, 0.0);
  EXPECT_DOUBLE_EQ(stages[1].dispatch_bytes, by_hand);
}

TEST(Moe, CombinedOneFOneBOnlyWhereMegatronCoreRunsIt) {
  // Without pipelining (combined_1f1b.py's interleaved variant is not modelled); ep > 1; no full recomputation; an
  // MoE model.
  ParallelSpec flat = test::layout(1, 1, 64);
  flat.ep = 8;
  flat.moe_a2a_overlap = true;
  EXPECT_NO_THROW(validate(mixtral(), flat, test::h100_like(8), "moe.json"));
  ParallelSpec interleaved = test::layout(1, 4, 16);
  interleaved.ep = 8;
  interleaved.schedule = PipelineSchedule::kInterleaved;
  interleaved.virtual_stages = 2;
  interleaved.moe_a2a_overlap = true;
  expect_refused(mixtral(), interleaved, 8, "parallelism.moe_a2a_overlap");
  ParallelSpec no_ep = flat;
  no_ep.ep = 1;
  expect_refused(mixtral(), no_ep, 8, "parallelism.moe_a2a_overlap");
  ModelSpec full = mixtral();
  full.recompute = Recompute::kFull;
  expect_refused(full, flat, 8, "parallelism.moe_a2a_overlap");
  ParallelSpec dense_overlap = test::layout(1, 1, 8);
  dense_overlap.moe_a2a_overlap = true;
  ModelSpec dense = test::small_model();
  dense.global_batch_size = 16;
  expect_refused(dense, dense_overlap, 1, "parallelism.moe_a2a_overlap");
}

}  // namespace
}  // namespace edgc::sim
