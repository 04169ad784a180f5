// Dense layers among the MoE layers (model.moe_layer_pattern, Megatron-Core's --moe-layer-freq): a pattern of
// ones is the all-MoE model exactly; parameters, FLOPs, matrices, gradients and memory add each kind of layer by
// hand; chunks take their layers at Megatron-Core's layer offsets; impossible patterns are refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/sim/cost_model.hpp"
#include "edgc/sim/layout.hpp"
#include "edgc/sim/memory.hpp"
#include "model_test_util.hpp"
#include "sim_test_util.hpp"

namespace edgc::sim {
namespace {

// Mixtral-8x7B with its first `dense` layers dense (SwiGLU of width 14336, the experts' width).
ModelSpec first_dense(int dense) {
  ModelSpec m = test::mixtral_8x7b();
  m.ffn_hidden = 14336;
  m.moe_layer_pattern.assign(static_cast<std::size_t>(m.layers), 1);
  for (int i = 0; i < dense; ++i) m.moe_layer_pattern[static_cast<std::size_t>(i)] = 0;
  return m;
}

ParallelSpec ep8(int pp, int dp, int virtual_stages) {
  ParallelSpec p = test::layout(1, pp, dp);
  p.ep = 8;
  if (virtual_stages > 1) {
    p.schedule = PipelineSchedule::kInterleaved;
    p.virtual_stages = virtual_stages;
  }
  return validate(test::mixtral_8x7b(), p, test::h100_like(pp * dp / 8), "pattern.json");
}

TEST(MoeLayerPattern, APatternOfOnesIsEveryLayer) {
  const ModelSpec all = test::mixtral_8x7b();
  const ModelSpec ones = first_dense(0);
  const ParallelSpec p = ep8(4, 16, 2);
  const ClusterSpec cluster = test::h100_like(8);
  EXPECT_EQ(parameter_count(ones), parameter_count(all));
  EXPECT_EQ(active_parameter_count(ones), active_parameter_count(all));
  for (int s = 0; s < p.pp; ++s) {
    EXPECT_EQ(stage_params(ones, p, s).per_gpu(), stage_params(all, p, s).per_gpu());
    EXPECT_EQ(stage_params(ones, p, s).expert, stage_params(all, p, s).expert);
    for (int c = 0; c < model_chunks(p); ++c) {
      const ComputeCost a = chunk_compute(all, p, cluster.gpu, CostParams{}, s, c);
      const ComputeCost b = chunk_compute(ones, p, cluster.gpu, CostParams{}, s, c);
      EXPECT_EQ(a.forward_s, b.forward_s);
      EXPECT_EQ(a.backward_flops, b.backward_flops);
    }
    const std::vector<WeightMatrix> ma = stage_matrices(all, p, s), mb = stage_matrices(ones, p, s);
    ASSERT_EQ(ma.size(), mb.size());
    for (std::size_t i = 0; i < ma.size(); ++i) {
      EXPECT_EQ(ma[i].name, mb[i].name);
      EXPECT_EQ(ma[i].count, mb[i].count);
    }
  }
  const std::vector<StageMemory> a = stage_memory(all, p), b = stage_memory(ones, p);
  for (std::size_t s = 0; s < a.size(); ++s) EXPECT_EQ(a[s].activations_bytes, b[s].activations_bytes);
}

TEST(MoeLayerPattern, ParametersAddEachKindOfLayerByHand) {
  // Every other layer MoE (Megatron-Core's --moe-layer-freq 2: layers 0, 2, 4, …): 16 MoE layers (attention,
  // router, 8 experts of 3 · 4096 · 14336, two RMSNorms) and 16 dense ones (attention, one SwiGLU MLP of the same
  // width, two RMSNorms); untied embedding and head, final RMSNorm.
  ModelSpec m = first_dense(0);
  for (std::size_t i = 0; i < m.moe_layer_pattern.size(); ++i) m.moe_layer_pattern[i] = i % 2 == 0 ? 1 : 0;
  const std::int64_t attention = 4096LL * 6144 + 4096LL * 4096, router = 4096LL * 8, mlp = 3LL * 4096 * 14336;
  const std::int64_t norms = 2LL * 4096, edges = 2LL * 32000 * 4096 + 4096;
  EXPECT_EQ(parameter_count(m), 16 * (attention + router + 8 * mlp + norms) + 16 * (attention + mlp + norms) + edges);
  EXPECT_EQ(active_parameter_count(m),
            16 * (attention + router + 2 * mlp + norms) + 16 * (attention + mlp + norms) + edges);
  EXPECT_EQ(model_layer_mix(m).moe, 16);
  EXPECT_EQ(model_layer_mix(m).dense, 16);
}

TEST(MoeLayerPattern, ChunksTakeTheirLayersAtMegatronCoreOffsets) {
  // pp 4 × 2 virtual stages of 4 layers: chunk c of stage s holds layers [(c·4 + s)·4, +4).
  const ModelSpec m = first_dense(6);
  const ParallelSpec p = ep8(4, 16, 2);
  EXPECT_EQ(chunk_layer_mix(m, p, 0, 0).dense, 4);  // layers 0-3
  EXPECT_EQ(chunk_layer_mix(m, p, 1, 0).dense, 2);  // layers 4-7: 4 and 5 dense
  EXPECT_EQ(chunk_layer_mix(m, p, 1, 0).moe, 2);
  EXPECT_EQ(chunk_layer_mix(m, p, 0, 1).moe, 4);  // layers 16-19
  EXPECT_EQ(stage_layer_mix(m, p, 0).dense, 4);
  EXPECT_EQ(stage_layer_mix(m, p, 0).moe, 4);
  EXPECT_EQ(stage_layer_mix(m, p, 3).moe, 8);
  // The dense chunk computes like the dense model's, the MoE chunk like the MoE model's.
  const ClusterSpec cluster = test::h100_like(8);
  const ComputeCost dense_chunk = chunk_compute(m, p, cluster.gpu, CostParams{}, 0, 0);
  const ComputeCost dense_model = chunk_compute(dense_layer_model(m), p, cluster.gpu, CostParams{}, 0, 0);
  EXPECT_DOUBLE_EQ(dense_chunk.forward_s, dense_model.forward_s);
  const ComputeCost moe_chunk = chunk_compute(m, p, cluster.gpu, CostParams{}, 3, 0);
  EXPECT_DOUBLE_EQ(moe_chunk.forward_s,
                   chunk_compute(test::mixtral_8x7b(), p, cluster.gpu, CostParams{}, 3, 0).forward_s);
}

TEST(MoeLayerPattern, MatricesAndGradientsCountEachKind) {
  // pp 4, 1F1B: stage 0 holds layers 0-7, the first 4 dense.
  const ModelSpec m = first_dense(4);
  const ParallelSpec p = ep8(4, 16, 1);
  int qkv = 0, router = 0, expert_fc1 = 0, fc1 = 0;
  for (const WeightMatrix& w : stage_matrices(m, p, 0)) {
    if (w.name == "qkv") qkv += w.count;
    if (w.name == "router") router += w.count;
    if (w.name == "expert.fc1") expert_fc1 += w.count;
    if (w.name == "fc1") fc1 += w.count;
  }
  EXPECT_EQ(qkv, 8);  // one entry: the dense layers' QKV has the MoE layers' shape
  EXPECT_EQ(router, 4);
  EXPECT_EQ(expert_fc1, 4);  // 8 experts over ep 8: one per layer
  EXPECT_EQ(fc1, 4);
  const std::int64_t expert = 3LL * 4096 * 14336;
  EXPECT_EQ(stage_params(m, p, 0).expert, 4 * expert);
  EXPECT_DOUBLE_EQ(expert_gradient_bytes(m, p, 0), 4.0 * static_cast<double>(expert) * 2);
  // The dense layers' MLPs join the dense sync: stage 0 holds 4 more dense MLPs than an all-MoE stage 0, less
  // 4 routers.
  const std::int64_t extra = 4 * (expert - 4096LL * 8);
  EXPECT_EQ(stage_params(m, p, 0).dense(), stage_params(test::mixtral_8x7b(), p, 0).dense() + extra);
}

TEST(MoeLayerPattern, ImpossiblePatternsAreRefused) {
  const ParallelSpec p = ep8(4, 16, 1);
  const auto refused = [&](const ModelSpec& m, const std::string& text) {
    try {
      validate(m, p, test::h100_like(8), "pattern.json");
      ADD_FAILURE() << "accepted; expected a refusal saying " << text;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("model.moe_layer_freq"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  ModelSpec short_pattern = first_dense(2);
  short_pattern.moe_layer_pattern.pop_back();
  refused(short_pattern, "31 entries");
  ModelSpec two = first_dense(2);
  two.moe_layer_pattern[3] = 2;
  refused(two, "1 (MoE layer) or 0");
  refused(first_dense(32), "no layer is an MoE layer");
  ModelSpec dense = test::small_model();
  dense.moe_layer_pattern.assign(8, 1);
  EXPECT_THROW(validate(dense, test::layout(1, 1, 8), test::h100_like(1), "pattern.json"), ConfigError);
}

}  // namespace
}  // namespace edgc::sim
