// A Megatron-LM command line as scenario keys (tools/scenario/megatron_args.hpp): each argument's key and value,
// the ones ignored, and every refusal naming the argument.
#include "edgc/scenario/megatron_args.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"

namespace edgc::scenario {
namespace {

std::map<std::string, nlohmann::json> keys(const std::string& text) {
  std::map<std::string, nlohmann::json> out;
  for (const KeySetting& s : read_megatron_args(split_arguments(text), "s.json")) out[s.key] = s.value;
  return out;
}

// The message of the ConfigError that reading `text` throws ("" if none); its field is always model.megatron_args.
std::string refusal(const std::string& text) {
  try {
    (void)read_megatron_args(split_arguments(text), "s.json");
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.where(), "s.json");
    EXPECT_EQ(e.field(), "model.megatron_args");
    return e.what();
  }
  return "";
}

TEST(MegatronArgs, Llama3RecipeBecomesItsKeys) {
  const auto k = keys(
      "--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 "
      "--group-query-attention --num-query-groups 8 --swiglu --normalization RMSNorm --position-embedding-type rope "
      "--disable-bias-linear --untie-embeddings-and-output-weights --attention-dropout 0.0 --hidden-dropout 0.0 "
      "--seq-length 8192 --micro-batch-size 1 --global-batch-size 128 --tensor-model-parallel-size 2 "
      "--pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 2 --sequence-parallel "
      "--use-distributed-optimizer --overlap-grad-reduce --bf16 --recompute-granularity selective "
      "--lr 3e-4 --use-mcore-models --data-path x --seed 1234");
  EXPECT_EQ(k.at("model.layers"), 32);
  EXPECT_EQ(k.at("model.hidden"), 4096);
  EXPECT_EQ(k.at("model.ffn_hidden"), 14336);
  EXPECT_EQ(k.at("model.kv_heads"), 8);
  EXPECT_EQ(k.at("model.mlp"), "swiglu");
  EXPECT_EQ(k.at("model.norm"), "rmsnorm");
  EXPECT_EQ(k.at("model.position"), "rope");
  EXPECT_EQ(k.at("model.bias"), "none");
  EXPECT_EQ(k.at("model.tie_embeddings"), false);
  EXPECT_EQ(k.at("model.dropout"), false);
  EXPECT_EQ(k.at("model.dtype"), "bf16");
  EXPECT_EQ(k.at("model.recompute"), "selective");
  EXPECT_EQ(k.at("parallelism.tp"), 2);
  EXPECT_EQ(k.at("parallelism.pp"), 4);
  EXPECT_EQ(k.at("parallelism.schedule"), "interleaved");
  EXPECT_EQ(k.at("parallelism.virtual_stages"), 4);  // 32 layers / (4 stages · 2 layers per chunk)
  EXPECT_EQ(k.at("parallelism.sequence_parallel"), true);
  EXPECT_EQ(k.at("parallelism.distributed_optimizer"), true);
  EXPECT_EQ(k.at("parallelism.overlap_grad_reduce"), true);
  EXPECT_EQ(k.count("model.vocab"), 0U);  // not given: the scenario's
}

TEST(MegatronArgs, MegatronDefaultsKeepDropoutAndQkvBiasNeedsNoBias) {
  EXPECT_EQ(keys("--num-layers 2").at("model.dropout"), true);  // Megatron's 0.1 / 0.1
  EXPECT_EQ(keys("--hidden-dropout 0 --attention-dropout 0.1").at("model.dropout"), true);
  EXPECT_EQ(keys("--disable-bias-linear --add-qkv-bias").at("model.bias"), "qkv");
}

TEST(MegatronArgs, MegatronCoreStackArgumentsBecomeTheirKeys) {
  const auto k =
      keys("--use-flash-attn --overlap-param-gather --tp-comm-overlap --fp8-format hybrid --use-distributed-optimizer");
  EXPECT_EQ(k.at("model.attention"), "flash");
  EXPECT_EQ(k.at("parallelism.overlap_param_gather"), true);
  EXPECT_EQ(k.at("parallelism.tp_comm_overlap"), true);
  EXPECT_EQ(k.at("model.precision"), "fp8");
  EXPECT_EQ(keys("--attention-backend fused").at("model.attention"), "flash");  // cuDNN's fused kernel
  EXPECT_EQ(keys("--attention-backend unfused").at("model.attention"), "materialised");
}

// A Qwen3-30B-A3B-style and a GLM-4.5-style MoE recipe (Megatron-Core's MoE arguments).
TEST(MegatronArgs, MixtureOfExpertsArgumentsBecomeTheirKeys) {
  const auto k = keys(
      "--num-layers 48 --num-experts 128 --moe-router-topk 8 --moe-ffn-hidden-size 768 --moe-grouped-gemm "
      "--moe-token-dispatcher-type alltoall --moe-router-load-balancing-type aux_loss --moe-aux-loss-coeff 1e-3 "
      "--expert-model-parallel-size 8 --expert-tensor-parallel-size 1 --overlap-moe-expert-parallel-comm "
      "--moe-shared-expert-intermediate-size 1536 --moe-expert-capacity-factor 1.25 --moe-layer-freq '([1]*48)'");
  EXPECT_EQ(k.at("model.experts"), 128);
  EXPECT_EQ(k.at("model.top_k"), 8);
  EXPECT_EQ(k.at("model.moe_ffn_hidden"), 768);
  EXPECT_EQ(k.at("model.shared_experts"), 2);
  EXPECT_EQ(k.at("model.moe_capacity_factor"), 1.25);
  EXPECT_EQ(k.at("parallelism.ep"), 8);
  EXPECT_EQ(k.at("parallelism.etp"), 1);
  EXPECT_EQ(k.at("parallelism.moe_a2a_overlap"), true);
  EXPECT_EQ(k.at("model.moe_layer_freq"), nlohmann::json(std::vector<int>(48, 1)));
  EXPECT_EQ(keys("--moe-layer-freq [0]*3+[1]*2").at("model.moe_layer_freq"), nlohmann::json({0, 0, 0, 1, 1}));
  EXPECT_EQ(keys("--moe-layer-freq \"([1,1,0])*2\"").at("model.moe_layer_freq"), nlohmann::json({1, 1, 0, 1, 1, 0}));
  EXPECT_EQ(keys("--moe-layer-freq 2").at("model.moe_layer_freq"), 2);
}

TEST(MegatronArgs, RefusalsNameTheArgument) {
  EXPECT_NE(refusal("--foo 3").find("unknown argument --foo"), std::string::npos);
  EXPECT_NE(refusal("32").find("'32' is not an argument"), std::string::npos);
  EXPECT_NE(refusal("--num-layers").find("--num-layers needs a value"), std::string::npos);
  EXPECT_NE(refusal("--num-layers x").find("--num-layers x: expected a positive integer"), std::string::npos);
  EXPECT_NE(refusal("--num-layers 0").find("expected a positive integer"), std::string::npos);
  EXPECT_NE(refusal("--num-layers 2 --num-layers 4").find("--num-layers is given twice"), std::string::npos);
  EXPECT_NE(refusal("--fp8-format e5m2").find("--fp8-format e5m2: expected e4m3 or hybrid"), std::string::npos);
  EXPECT_NE(refusal("--attention-backend magic").find("expected flash, fused"), std::string::npos);
  EXPECT_NE(refusal("--context-parallel-size 2").find("context parallelism"), std::string::npos);
  EXPECT_NE(refusal("--moe-token-dispatcher-type flex").find("only the all-to-all dispatcher"), std::string::npos);
  EXPECT_NE(refusal("--moe-shared-expert-overlap").find("not modelled"), std::string::npos);
  EXPECT_NE(refusal("--moe-expert-capacity-factor 0.5").find("expected a factor ≥ 1"), std::string::npos);
  EXPECT_NE(refusal("--moe-shared-expert-intermediate-size 100 --moe-ffn-hidden-size 64").find("whole number"),
            std::string::npos);
  for (const char* freq : {"[2]*4", "[1,0", "([1]*4", "[10]", "[1]*x", "[1]+", "1.5", "[1]*99999"})
    EXPECT_NE(refusal(std::string("--moe-layer-freq ") + freq).find("--moe-layer-freq"), std::string::npos) << freq;
  EXPECT_NE(refusal("--normalization BatchNorm").find("expected LayerNorm or RMSNorm"), std::string::npos);
  EXPECT_NE(refusal("--hidden-dropout 2").find("expected a number in [0, 1]"), std::string::npos);
  EXPECT_NE(refusal("--num-query-groups 8").find("needs --group-query-attention"), std::string::npos);
  EXPECT_NE(refusal("--group-query-attention").find("needs --num-query-groups"), std::string::npos);
  EXPECT_NE(refusal("--add-qkv-bias").find("needs --disable-bias-linear"), std::string::npos);
  EXPECT_NE(refusal("--recompute-granularity full --recompute-method block --recompute-num-layers 4")
                .find("only full recomputation of every layer"),
            std::string::npos);
  EXPECT_NE(refusal("--num-layers 30 --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 2")
                .find("layers a multiple of pp times it"),
            std::string::npos);
  EXPECT_EQ(refusal("--recompute-granularity full --recompute-method uniform --recompute-num-layers 1"), "");
}

}  // namespace
}  // namespace edgc::scenario
