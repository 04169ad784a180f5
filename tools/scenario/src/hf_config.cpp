#include "edgc/scenario/hf_config.hpp"

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "edgc/core/checked_int.hpp"
#include "edgc/core/error.hpp"
#include "edgc/scenario/config.hpp"

namespace edgc::scenario {
namespace {

using Json = nlohmann::json;

// One Hugging Face config.json, read field by field; every error names the file and the field.
class HfFields {
 public:
  HfFields(Json j, std::string path) : j_(std::move(j)), path_(std::move(path)) {}

  const std::string& path() const { return path_; }
  bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
  const Json& raw(const char* key) const { return j_[key]; }

  std::int64_t integer(const char* key) const {
    if (!has(key)) fail(key, "missing: a dense model's config.json gives it");
    return positive(key);
  }
  std::optional<std::int64_t> optional_integer(const char* key) const {
    if (!has(key)) return std::nullopt;
    return positive(key);
  }
  double number(const char* key, double fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_number()) fail(key, "expected a number, got " + j_[key].dump());
    return j_[key].get<double>();
  }
  bool boolean(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_boolean()) fail(key, "expected true or false, got " + j_[key].dump());
    return j_[key].get<bool>();
  }
  std::string string(const char* key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_string()) fail(key, "expected a string, got " + j_[key].dump());
    return j_[key].get<std::string>();
  }
  [[noreturn]] void fail(const std::string& key, const std::string& detail) const {
    throw ConfigError(path_, key, detail);
  }

 private:
  std::int64_t positive(const char* key) const {
    const Json& v = j_[key];
    try {  // 2^30 bounds every width, count and vocabulary of a real model, and keeps their products in int64
      return json_integer<std::int64_t>(v, 1, std::int64_t{1} << 30);
    } catch (const IntegerError&) {
      fail(key, "expected a positive integer, got " + v.dump());
    }
  }

  Json j_;
  std::string path_;
};

bool is_moe_type(const std::string& type) { return type == "mixtral" || type == "qwen2_moe" || type == "qwen3_moe"; }

// Fields that change what a step costs and that edgc does not model: refused by name rather than dropped.
void refuse_unmodelled(const HfFields& hf) {
  if (!is_moe_type(hf.string("model_type", "")))
    for (const char* moe : {"num_local_experts", "num_experts", "n_routed_experts", "moe_intermediate_size"})
      if (hf.has(moe) && !(hf.raw(moe).is_number() && hf.raw(moe).get<double>() == 0.0))
        hf.fail(moe, "expert layers in a model_type edgc reads as dense: use mixtral, qwen2_moe or qwen3_moe");
  const bool sliding = hf.has("sliding_window") && hf.boolean("use_sliding_window", true);
  if (sliding)
    hf.fail("sliding_window",
            hf.raw("sliding_window").dump() +
                ": sliding-window attention is not modelled (the attention core would cost less than edgc computes); "
                "set it to null in a copy of config.json to model full attention");
  if (hf.boolean("use_parallel_residual", hf.string("model_type", "") == "gpt_neox"))
    hf.fail("use_parallel_residual", "true: the parallel attention + MLP block is not modelled");
}

void add(std::vector<KeySetting>& out, const char* key, Json value) { out.push_back({key, std::move(value)}); }

// Qwen2-MoE and Qwen3-MoE: layer i is an MoE layer unless mlp_only_layers lists it, and only when
// (i + 1) % decoder_sparse_step == 0 (transformers' Qwen2MoeDecoderLayer and Qwen3MoeDecoderLayer); the others have a
// dense MLP of width intermediate_size. Released checkpoints make every layer an MoE layer (step 1, no list).
void qwen_moe_layers(const HfFields& hf, std::vector<KeySetting>& out) {
  const std::int64_t layers = hf.integer("num_hidden_layers");
  if (layers < 1 || layers > (1 << 16))
    hf.fail("num_hidden_layers", "expected an integer in [1, 2^16], got " + std::to_string(layers));
  const std::int64_t step = hf.optional_integer("decoder_sparse_step").value_or(1);
  if (step < 1 || step > layers)
    hf.fail("decoder_sparse_step", "expected an integer in [1, num_hidden_layers], got " + std::to_string(step));
  std::vector<int> pattern(static_cast<std::size_t>(layers));
  for (std::int64_t i = 0; i < layers; ++i) pattern[static_cast<std::size_t>(i)] = (i + 1) % step == 0 ? 1 : 0;
  if (hf.has("mlp_only_layers")) {
    const Json& dense = hf.raw("mlp_only_layers");
    if (!dense.is_array()) hf.fail("mlp_only_layers", "expected a list of layer indices, got " + dense.dump());
    for (const Json& i : dense) {
      try {
        pattern[json_integer<std::size_t>(i, 0, static_cast<std::size_t>(layers - 1))] = 0;
      } catch (const IntegerError&) {
        hf.fail("mlp_only_layers", i.dump() + " is not a layer index in [0, num_hidden_layers)");
      }
    }
  }
  if (std::all_of(pattern.begin(), pattern.end(), [](int x) { return x == 1; })) return;
  if (std::none_of(pattern.begin(), pattern.end(), [](int x) { return x == 1; }))
    hf.fail("mlp_only_layers", "no layer is left a mixture-of-experts layer");
  add(out, "model.moe_layer_freq", pattern);
  add(out, "model.ffn_hidden", hf.integer("intermediate_size"));
}

// Mixtral, Qwen2-MoE and Qwen3-MoE: every (Qwen: every MoE) layer's MLP a set of routed SwiGLU experts (Qwen2-MoE: plus
// a shared expert, whose width is a whole number of routed experts' widths; its one-output sigmoid gate, h parameters
// per layer, is not counted).
void moe_fields(const HfFields& hf, const std::string& type, std::vector<KeySetting>& out) {
  const bool mixtral = type == "mixtral";
  const std::int64_t width = mixtral ? hf.integer("intermediate_size") : hf.integer("moe_intermediate_size");
  add(out, "model.experts", hf.integer(mixtral ? "num_local_experts" : "num_experts"));
  add(out, "model.top_k", hf.integer("num_experts_per_tok"));
  add(out, "model.moe_ffn_hidden", width);
  if (mixtral) {
    if (const auto step = hf.optional_integer("decoder_sparse_step"); step && *step != 1)
      hf.fail("decoder_sparse_step", std::to_string(*step) + ": every Mixtral layer is a mixture-of-experts layer");
  } else {
    qwen_moe_layers(hf, out);
  }
  if (const auto shared = hf.optional_integer("shared_expert_intermediate_size")) {
    if (*shared % width != 0)
      hf.fail("shared_expert_intermediate_size",
              std::to_string(*shared) + " is not a whole number of experts of width " + std::to_string(width));
    add(out, "model.shared_experts", *shared / width);
  }
}

// Llama, Mistral, Qwen2 and Qwen3: pre-RMSNorm, SwiGLU, RoPE, grouped-query attention.
void llama_family(const HfFields& hf, const std::string& type, std::vector<KeySetting>& out) {
  const std::int64_t heads = hf.integer("num_attention_heads");
  add(out, "model.hidden", hf.integer("hidden_size"));
  add(out, "model.layers", hf.integer("num_hidden_layers"));
  add(out, "model.heads", heads);
  add(out, "model.kv_heads", hf.optional_integer("num_key_value_heads").value_or(heads));
  if (const auto d = hf.optional_integer("head_dim")) add(out, "model.head_dim", *d);
  if (is_moe_type(type))
    moe_fields(hf, type, out);
  else
    add(out, "model.ffn_hidden", hf.integer("intermediate_size"));
  add(out, "model.vocab", hf.integer("vocab_size"));
  const std::string act = hf.string("hidden_act", "silu");
  if (act != "silu" && act != "swish")
    hf.fail("hidden_act", "'" + act + "': edgc models this family's gated MLP with SiLU (SwiGLU) only");
  add(out, "model.mlp", "swiglu");
  add(out, "model.norm", "rmsnorm");
  add(out, "model.position", "rope");
  add(out, "model.tie_embeddings", hf.boolean("tie_word_embeddings", false));
  add(out, "model.dropout", hf.number("attention_dropout", 0.0) > 0.0);
  if (type == "qwen2" || type == "qwen2_moe") {
    add(out, "model.bias", "qkv");  // Qwen2's q, k and v projections carry biases, o_proj none
  } else {
    const bool attention = hf.boolean("attention_bias", false), mlp = hf.boolean("mlp_bias", false);
    if (attention != mlp)
      hf.fail(attention ? "attention_bias" : "mlp_bias",
              "biases on the attention or the MLP alone are not modelled (model.bias is all, none or qkv)");
    add(out, "model.bias", attention ? "all" : "none");
  }
  if (type == "qwen3" || type == "qwen3_moe") add(out, "model.qk_norm", true);  // RMSNorm of every query and key head
}

// GPT-2: LayerNorm, GeLU MLP, learned positions, biases, tied embeddings.
void gpt2(const HfFields& hf, std::vector<KeySetting>& out) {
  const std::int64_t hidden = hf.integer("n_embd");
  add(out, "model.hidden", hidden);
  add(out, "model.layers", hf.integer("n_layer"));
  add(out, "model.heads", hf.integer("n_head"));
  add(out, "model.ffn_hidden", hf.optional_integer("n_inner").value_or(4 * hidden));
  add(out, "model.vocab", hf.integer("vocab_size"));
  const std::string act = hf.string("activation_function", "gelu_new");
  if (act.rfind("gelu", 0) != 0) hf.fail("activation_function", "'" + act + "': only GeLU is modelled for GPT-2");
  add(out, "model.tie_embeddings", hf.boolean("tie_word_embeddings", true));
  add(out, "model.dropout", hf.number("resid_pdrop", 0.1) > 0.0 || hf.number("attn_pdrop", 0.1) > 0.0);
}

// GPT-NeoX (Pythia): LayerNorm, GeLU MLP, rotary embeddings, biases.
void gpt_neox(const HfFields& hf, std::vector<KeySetting>& out) {
  add(out, "model.hidden", hf.integer("hidden_size"));
  add(out, "model.layers", hf.integer("num_hidden_layers"));
  add(out, "model.heads", hf.integer("num_attention_heads"));
  add(out, "model.ffn_hidden", hf.integer("intermediate_size"));
  add(out, "model.vocab", hf.integer("vocab_size"));
  const std::string act = hf.string("hidden_act", "gelu");
  if (act.rfind("gelu", 0) != 0) hf.fail("hidden_act", "'" + act + "': only GeLU is modelled for GPT-NeoX");
  add(out, "model.position", "rope");
  add(out, "model.tie_embeddings", hf.boolean("tie_word_embeddings", false));
  add(out, "model.dropout", hf.number("hidden_dropout", 0.0) > 0.0 || hf.number("attention_dropout", 0.0) > 0.0);
}

}  // namespace

std::vector<KeySetting> read_hf_config(const std::string& path) {
  // Scenario::load's checks (missing, unreadable, invalid, nested too deep, not an object), each naming the file.
  const HfFields hf(Scenario::load(path, "Hugging Face config.json").json(), path);
  const std::string type = hf.string("model_type", "");
  std::vector<KeySetting> out;
  if (type == "deepseek_v2" || type == "deepseek_v3")
    hf.fail("model_type", "'" + type +
                              "': multi-head latent attention (kv_lora_rank, q_lora_rank) is not modelled; "
                              "DeepSeek-style mixtures of experts are refused rather than priced with the wrong "
                              "attention");
  if (type == "llama" || type == "mistral" || type == "qwen2" || type == "qwen3" || is_moe_type(type)) {
    refuse_unmodelled(hf);
    llama_family(hf, type, out);
  } else if (type == "gpt2") {
    refuse_unmodelled(hf);
    gpt2(hf, out);
  } else if (type == "gpt_neox") {
    refuse_unmodelled(hf);
    gpt_neox(hf, out);
  } else {
    hf.fail("model_type", "'" + type +
                              "' is not a supported architecture (llama, mistral, qwen2, qwen3, gpt2, gpt_neox; "
                              "mixtures of experts: mixtral, qwen2_moe, qwen3_moe)");
  }
  return out;
}

}  // namespace edgc::scenario
