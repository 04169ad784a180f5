// The one layer description (sim/layer.hpp): every quantity derived from it against an independent closed form —
// GPT (Narayanan et al. 2021, Korthikanti et al. 2022), Llama-3 8B and Qwen2.5-7B (their published parameter totals,
// counted here by hand from their config.json), and a grouped-query shape — and the refusals of shapes Megatron-Core
// refuses.
#include "edgc/sim/layer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/sim/cost_model.hpp"
#include "edgc/sim/kernel_model.hpp"
#include "edgc/sim/layout.hpp"
#include "edgc/sim/memory.hpp"
#include "model_test_util.hpp"

namespace edgc::sim {
namespace {

using test::layout;
using test::small_model;

using test::llama3_8b;

// Qwen2.5-7B (Qwen/Qwen2.5-7B config.json): 28 layers, hidden 3584, 28 heads, 4 kv heads, intermediate 18944,
// vocabulary 152064, QKV bias only, untied.
ModelSpec qwen25_7b() {
  ModelSpec m = llama3_8b();
  m.name = "qwen2.5-7b";
  m.layers = 28;
  m.hidden = 3584;
  m.heads = 28;
  m.kv_heads = 4;
  m.ffn_hidden = 18944;
  m.vocab = 152064;
  m.bias = LinearBias::kQkv;
  return m;
}

std::int64_t gpt_closed_form_params(const ModelSpec& m) {
  const std::int64_t h = m.hidden;
  return m.layers * (12 * h * h + 13 * h) + static_cast<std::int64_t>(m.vocab) * h +
         static_cast<std::int64_t>(m.seq_len) * h + 2 * h;
}

TEST(Layer, GptMatchesNarayananAndKorthikanti) {
  const ModelSpec m = small_model();
  for (const int tp : {1, 2, 4, 8}) {
    ParallelSpec p = layout(tp, 1, 1);
    const LayerDescription d = describe_layer(m, p);
    const std::int64_t h = m.hidden;
    EXPECT_EQ(d.tensors, 12);
    EXPECT_EQ(layer_sharded_per_rank(d, tp), (12 * h * h + 7 * h) / tp);
    EXPECT_EQ(layer_replicated_params(d), 6 * h);
    const double b = m.micro_batch_size, s = m.seq_len, hd = m.hidden, a = m.heads;
    EXPECT_EQ(d.beside.qkv, 2.0 * b * s * hd * 3.0 * hd / tp);
    EXPECT_EQ(d.beside.fc1, 2.0 * b * s * hd * 4.0 * hd / tp);
    for (const bool sp : {false, true}) {
      p.sequence_parallel = sp;
      const double replicated = sp ? 10.0 / tp : 10.0;
      EXPECT_EQ(layer_activation_bytes(m, p), s * b * hd * (replicated + 24.0 / tp + 5.0 * a * s / (hd * tp)) * 1.0);
    }
  }
  EXPECT_EQ(parameter_count(m), gpt_closed_form_params(m));
  const double b = m.micro_batch_size, s = m.seq_len, h = m.hidden;
  EXPECT_EQ(layer_forward_flops(m), 24.0 * b * s * h * h + 4.0 * b * s * s * h);
}

TEST(Layer, GptStageMatricesAreMegatronsShards) {
  const ModelSpec m = small_model();
  const ParallelSpec p = layout(4, 2, 1);
  const std::int64_t h = m.hidden;
  const std::vector<WeightMatrix> first = stage_matrices(m, p, 0);
  ASSERT_EQ(first.size(), 6u);
  const std::vector<std::tuple<std::string, std::int64_t, std::int64_t>> want = {
      {"qkv", h, 3 * h / 4}, {"proj", h / 4, h}, {"fc1", h, 4 * h / 4}, {"fc2", 4 * h / 4, h}};
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(first[i].name, std::get<0>(want[i]));
    EXPECT_EQ(first[i].rows, std::get<1>(want[i]));
    EXPECT_EQ(first[i].cols, std::get<2>(want[i]));
    EXPECT_EQ(first[i].count, m.layers / 2);
  }
  EXPECT_EQ(first[4].name, "word_embedding");
  EXPECT_EQ(first[5].name, "position_embedding");
  const std::vector<WeightMatrix> last = stage_matrices(m, p, 1);
  EXPECT_EQ(last.back().name, "word_embedding");  // the tied LM head's copy
  EXPECT_GT(embedding_sync_bytes(m, p), 0.0);
}

TEST(Layer, Llama3_8bHasItsPublishedParameterCount) {
  const ModelSpec m = llama3_8b();
  // By hand: per layer q 4096², k and v 4096·1024 each, o 4096², SwiGLU 3·4096·14336, two RMSNorm weights;
  // the word embedding and the untied output layer 128256·4096 each; the final norm 4096.
  const std::int64_t per_layer = 4096LL * 4096 + 2 * 4096LL * 1024 + 4096LL * 4096 + 3 * 4096LL * 14336 + 2 * 4096;
  EXPECT_EQ(per_layer, 218112000);
  EXPECT_EQ(parameter_count(m), 32 * per_layer + 2 * 128256LL * 4096 + 4096);
  EXPECT_EQ(parameter_count(m), 8030261248);  // "8.03B" (meta-llama/Meta-Llama-3-8B model card)
  const LayerDescription d = describe_layer(m, layout(1, 1, 1));
  EXPECT_EQ(d.tensors, 6);  // four matrices, two norm weights
  EXPECT_EQ(layer_forward_flops(m), 2.0 * 8192 * (per_layer - 2 * 4096) + 4.0 * 8192.0 * 8192.0 * 4096);
}

TEST(Layer, Qwen25_7bHasItsPublishedParameterCount) {
  const ModelSpec m = qwen25_7b();
  const std::int64_t qkv = 3584LL * (3584 + 2 * 512) + (3584 + 2 * 512);  // weights and their bias
  const std::int64_t per_layer = qkv + 3584LL * 3584 + 3 * 3584LL * 18944 + 2 * 3584;
  EXPECT_EQ(parameter_count(m), 28 * per_layer + 2 * 152064LL * 3584 + 3584);
  EXPECT_EQ(parameter_count(m), 7615616512);  // "7.61B" (Qwen/Qwen2.5-7B model card)
}

TEST(Layer, GroupedQueryAttentionShrinksKeysAndValuesOnly) {
  ModelSpec mha = llama3_8b();
  mha.kv_heads = 0;  // one key/value head per query head
  const ModelSpec gqa = llama3_8b();
  for (const int tp : {1, 8}) {
    const ParallelSpec p = layout(tp, 1, 1);
    const LayerDescription a = describe_layer(mha, p), g = describe_layer(gqa, p);
    // QKV: h × (32 + 2·32)·128 against h × (32 + 2·8)·128; the rest identical.
    EXPECT_EQ(a.weights[0].cols, 4096 * 3);
    EXPECT_EQ(g.weights[0].cols, (32 + 16) * 128);
    EXPECT_EQ(layer_sharded_per_rank(a, tp) - layer_sharded_per_rank(g, tp), 4096LL * (2 * 4096 - 2 * 1024) / tp);
    // Saved activations per s·b·h: Q 2 + K 2·g·d/h + V 2·g·d/h + projection input 2 + SwiGLU 2·2f/h + 2·f/h; no
    // dropout masks, 8 on every rank, softmax output 2·a·s/h.
    const double f = 14336.0 / 4096.0;
    EXPECT_DOUBLE_EQ(g.saved.sharded, 2 + 0.5 + 0.5 + 2 + 4 * f + 2 * f);
    EXPECT_DOUBLE_EQ(a.saved.sharded, 2 + 2 + 2 + 2 + 4 * f + 2 * f);
    EXPECT_EQ(g.saved.replicated, 8.0);
    EXPECT_EQ(g.saved.score_factor, 2.0);
    // The attention core follows the query heads: the same scores GEMM either way.
    const auto scores = [](const LayerDescription& d) {
      return *std::find_if(d.ops.begin(), d.ops.end(),
                           [](const LayerOp& o) { return std::string(o.name) == "scores"; });
    };
    EXPECT_EQ(scores(a).gemm.batch, scores(g).gemm.batch);
    EXPECT_EQ(scores(g).gemm.batch, 32.0 / tp);
  }
}

TEST(Layer, LlamaKernelListHasItsOwnPassesAndNoDropout) {
  const ModelSpec m = llama3_8b();
  const LayerDescription d = describe_layer(m, layout(2, 1, 1));
  std::set<std::string> ops;
  double gemm_flops = 0.0;
  for (const LayerOp& o : d.ops) {
    ops.insert(o.op);
    if (o.gemm.batch > 0 && !o.backward && !o.attention_core)
      gemm_flops += 2.0 * o.gemm.batch * o.gemm.m * o.gemm.n * o.gemm.k;
  }
  for (const char* want : {"rmsnorm", "rmsnorm_backward", "swiglu", "swiglu_backward", "rope", "add", "cat"})
    EXPECT_TRUE(ops.count(want)) << want;
  for (const char* absent : {"dropout", "bias_dropout_add", "bias_gelu", "layernorm", "bias_grads"})
    EXPECT_FALSE(ops.count(absent)) << absent;
  // The forward linear GEMMs on one of 2 TP ranks: 2·b·s·(matrix parameters)/2.
  EXPECT_DOUBLE_EQ(gemm_flops, 2.0 * 8192 * static_cast<double>(layer_matrix_elements(d)) / 2);
}

// Flash attention: the attention core is one fused kernel each way (no s × s scores, softmax, dropout or context
// copy), whose activations are the softmax statistics, 2·a/(h·t) per element of s·b·h (one fp32 per query head and
// token), instead of Korthikanti's score term; the FLOPs the model counts do not change.
TEST(Layer, FlashAttentionIsOneFusedKernelEachWayAndKeepsNoScores) {
  ModelSpec m = llama3_8b();
  m.attention = Attention::kFlash;
  const ParallelSpec par = layout(2, 1, 1);
  const LayerDescription d = describe_layer(m, par);
  std::vector<std::string> fused;
  for (const LayerOp& o : d.ops) {
    for (const char* absent : {"scores", "softmax", "context", "context_copy", "attention_dropout"})
      EXPECT_NE(std::string(o.name), absent);
    if (o.attention.heads > 0) {
      fused.push_back(o.op);
      EXPECT_TRUE(o.attention_core);
      EXPECT_DOUBLE_EQ(o.attention.heads, 32.0 / 2);  // micro-batch 1 · 32 query heads on one of 2 TP ranks
      EXPECT_DOUBLE_EQ(o.attention.seq, 8192);
      EXPECT_DOUBLE_EQ(o.attention.head_dim, 128);
      EXPECT_DOUBLE_EQ(o.attention.group, 4);  // 32 query heads over 8 kv heads
      EXPECT_DOUBLE_EQ(o.gemm.batch, 0.0);
    }
  }
  EXPECT_EQ(fused, (std::vector<std::string>{"flash_attention", "flash_attention_backward"}));
  EXPECT_DOUBLE_EQ(d.saved.score_factor, 0.0);
  EXPECT_DOUBLE_EQ(d.saved.head_stats, 2.0);
  const double sbh = 8192.0 * 1 * 4096;
  const double t = 2, a = 32, h = 4096;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, par),
                   sbh * (d.saved.replicated + d.saved.sharded / t + 2.0 * a / (h * t)));  // bf16: scale 1
  ModelSpec materialised = m;
  materialised.attention = Attention::kMaterialised;
  EXPECT_DOUBLE_EQ(layer_forward_flops(m), layer_forward_flops(materialised));
  EXPECT_LT(layer_activation_bytes(m, par), layer_activation_bytes(materialised, par));
}

TEST(Layer, UntiedEmbeddingsHaveTheirOwnOutputLayer) {
  const ModelSpec m = llama3_8b();
  ParallelSpec p = layout(1, 4, 1);
  p.embedding_allreduce = false;
  EXPECT_EQ(embedding_sync_bytes(m, p), 0.0);
  const auto names = [&](int stage) {
    std::vector<std::string> out;
    for (const WeightMatrix& w : stage_matrices(m, p, stage)) out.push_back(w.name);
    return out;
  };
  EXPECT_EQ(names(0), (std::vector<std::string>{"qkv", "proj", "fc1", "fc2", "word_embedding"}));
  EXPECT_EQ(names(3), (std::vector<std::string>{"qkv", "proj", "fc1", "fc2", "output_layer"}));
  std::int64_t total = 0;
  for (int s = 0; s < 4; ++s) total += stage_params(m, p, s).per_gpu();
  // Padded vocabulary 128256 (already a multiple of 128): the stages hold exactly the model.
  EXPECT_EQ(total, parameter_count(m));
}

TEST(Layer, ShapesMegatronRefusesAreRefusedByKey) {
  ClusterSpec cluster;
  cluster.nodes = 1;
  cluster.gpus_per_node = 8;
  const auto refused_key = [&](ModelSpec m, ParallelSpec p) -> std::string {
    try {
      validate(m, p, cluster, "x.json");
    } catch (const ConfigError& e) {
      return e.field();
    }
    return "";
  };
  ModelSpec m = llama3_8b();
  m.global_batch_size = 8;
  EXPECT_EQ(refused_key(m, layout(8, 1, 1)), "");
  ModelSpec bad = m;
  bad.kv_heads = 5;  // 32 % 5
  EXPECT_EQ(refused_key(bad, layout(1, 1, 8)), "model.kv_heads");
  bad.kv_heads = 4;  // 4 kv heads over tp 8
  EXPECT_EQ(refused_key(bad, layout(8, 1, 1)), "model.kv_heads");
  bad = m;
  bad.ffn_hidden = 14337;
  EXPECT_EQ(refused_key(bad, layout(8, 1, 1)), "model.ffn_hidden");
  bad = m;
  bad.seq_len = 1001;
  ParallelSpec sp = layout(8, 1, 1);
  sp.sequence_parallel = true;
  EXPECT_EQ(refused_key(bad, sp), "model.seq_len");
  EXPECT_EQ(refused_key(bad, layout(8, 1, 1)), "");  // without sequence parallelism nothing splits the sequence
}

}  // namespace
}  // namespace edgc::sim
