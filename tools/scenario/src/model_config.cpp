#include "edgc/scenario/model_config.hpp"

#include <algorithm>
#include <tuple>

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "edgc/core/checked_int.hpp"
#include "edgc/core/error.hpp"
#include "edgc/scenario/config.hpp"
#include "edgc/scenario/hf_config.hpp"
#include "edgc/scenario/limits.hpp"
#include "edgc/scenario/megatron_args.hpp"
#include "edgc/sim/spec_names.hpp"

namespace edgc::scenario {
namespace {

double read_fraction(Scenario& sc, const std::string& key, double fallback) {
  const double v = sc.number(key, fallback);
  if (!(v > 0.0 && v <= 1.0)) throw ConfigError(sc.where(), key, "must lie in (0, 1], got " + std::to_string(v));
  return v;
}

sim::PipelineSchedule parse_schedule(const Scenario& sc, const std::string& text) {
  if (const auto s = sim::schedule_from_name(text)) return *s;
  throw ConfigError(sc.where(), "parallelism.schedule", "expected gpipe, 1f1b or interleaved, got '" + text + "'");
}

sim::RankOrder parse_order(const Scenario& sc, const std::string& text) {
  if (const auto o = sim::rank_order_from_name(text)) return *o;
  throw ConfigError(sc.where(), "parallelism.order", "expected tp-dp-pp or tp-pp-dp, got '" + text + "'");
}

sim::Recompute read_recompute(Scenario& sc) {
  const bool legacy = sc.has("model.activation_recompute");
  const bool full = sc.boolean("model.activation_recompute", false);
  if (!sc.has("model.recompute")) return full ? sim::Recompute::kFull : sim::Recompute::kNone;
  const std::string text = sc.string("model.recompute", "none");
  const std::optional<sim::Recompute> named = sim::recompute_from_name(text);
  if (!named) throw ConfigError(sc.where(), "model.recompute", "expected none, selective or full, got '" + text + "'");
  const sim::Recompute r = *named;
  if (legacy && full != (r == sim::Recompute::kFull))
    throw ConfigError(sc.where(), "model.activation_recompute",
                      "contradicts model.recompute = " + text +
                          " (activation_recompute is the older spelling of "
                          "recompute = full: keep one)");
  return r;
}

int read_grad_reduce_bytes(Scenario& sc) {
  if (!sc.has("parallelism.grad_reduce_dtype")) return 0;
  const std::string text = sc.string("parallelism.grad_reduce_dtype", "");
  if (text == "fp32") return 4;
  if (text == "fp16" || text == "bf16") return 2;
  throw ConfigError(sc.where(), "parallelism.grad_reduce_dtype", "expected fp32, fp16 or bf16, got '" + text + "'");
}

// The Megatron-LM feature keys of `parallelism` (model_config.hpp).
template <typename Enum>
Enum read_named(Scenario& sc, const std::string& key, const char* fallback,
                std::optional<Enum> (*from_name)(std::string_view) noexcept, const char* expected) {
  const std::string text = sc.string(key, fallback);
  if (const std::optional<Enum> v = from_name(text)) return *v;
  throw ConfigError(sc.where(), key, std::string("expected ") + expected + ", got '" + text + "'");
}

// The dense architecture keys (scenarios/README.md, "Model architecture"); defaults are Megatron's GPT.
void read_architecture(Scenario& sc, const Framework& fw, sim::ModelSpec& m) {
  for (const auto& [key, field] : {std::pair{"model.kv_heads", &m.kv_heads}, std::pair{"model.head_dim", &m.head_dim},
                                   std::pair{"model.ffn_hidden", &m.ffn_hidden}}) {
    *field = sc.int32(key, 0);
    if (*field < 0 || *field > (1 << 22))
      throw ConfigError(sc.where(), key,
                        "expected a positive integer below 2^22 (or 0 for the default), got " + std::to_string(*field));
  }
  m.vocab_divisor = sc.int32("model.vocab_divisor", 128);
  if (m.vocab_divisor < 1 || m.vocab_divisor > (1 << 16))
    throw ConfigError(sc.where(), "model.vocab_divisor",
                      "expected a positive integer up to 65536 (Megatron's --make-vocab-size-divisible-by), got " +
                          std::to_string(m.vocab_divisor));
  m.mlp = read_named(sc, "model.mlp", "gelu", &sim::mlp_from_name, "gelu or swiglu");
  m.norm = read_named(sc, "model.norm", "layernorm", &sim::norm_from_name, "layernorm or rmsnorm");
  m.position = read_named(sc, "model.position", "learned", &sim::position_from_name, "learned or rope");
  m.bias = read_named(sc, "model.bias", "all", &sim::bias_from_name, "all, none or qkv");
  m.tie_embeddings = sc.boolean("model.tie_embeddings", true);
  m.dropout = sc.boolean("model.dropout", true);
  m.qk_norm = sc.boolean("model.qk_norm", false);
  m.attention = read_named(sc, "model.attention", fw.flash ? "flash" : "materialised", &sim::attention_from_name,
                           "materialised or flash");
}

// model.moe_layer_freq, Megatron-Core's --moe-layer-freq: an integer N (layer i is an MoE layer when i % N == 0)
// or one 0/1 entry per layer. Absent or 1: every layer (the empty pattern); layers not yet read: 0.
std::vector<std::uint8_t> read_moe_layer_freq(Scenario& sc, int layers) {
  const nlohmann::json* freq = sc.raw("model.moe_layer_freq");
  if (freq == nullptr) return {};
  const std::string key = "model.moe_layer_freq";
  if (freq->is_number_integer()) {
    int n = 0;
    try {
      n = json_integer<int>(*freq, 1, 1 << 16);
    } catch (const IntegerError& e) {
      throw ConfigError(sc.where(), key, std::string(e.what()) + " (an integer N or a list of 0/1)");
    }
    if (n == 1) return {};
    std::vector<std::uint8_t> pattern(static_cast<std::size_t>(std::max(layers, 0)));
    for (std::size_t i = 0; i < pattern.size(); ++i) pattern[i] = i % static_cast<std::size_t>(n) == 0 ? 1 : 0;
    return pattern;
  }
  if (!freq->is_array() || freq->empty() || freq->size() > (1U << 16))
    throw ConfigError(sc.where(), key, "expected an integer ≥ 1 or a list of 0/1, one per layer, got " + freq->dump());
  std::vector<std::uint8_t> pattern;
  for (const nlohmann::json& x : *freq) {
    try {
      pattern.push_back(json_integer<std::uint8_t>(x, 0, 1));
    } catch (const IntegerError&) {
      throw ConfigError(
          sc.where(), key,
          "entry " + std::to_string(pattern.size()) + " is " + x.dump() + ": expected 1 (MoE) or 0 (dense)");
    }
  }
  return pattern;
}

// The mixture-of-experts keys (scenarios/README.md, "Mixture of experts"); absent = a dense model.
void read_moe(Scenario& sc, sim::ModelSpec& m) {
  for (const auto& [key, field] :
       {std::pair{"model.experts", &m.experts}, std::pair{"model.top_k", &m.top_k},
        std::pair{"model.moe_ffn_hidden", &m.moe_ffn_hidden}, std::pair{"model.shared_experts", &m.shared_experts}}) {
    *field = sc.int32(key, 0);
    if (*field < 0 || *field > (1 << 20))
      throw ConfigError(sc.where(), key, "expected an integer in [0, 2^20], got " + std::to_string(*field));
  }
  m.moe_layer_pattern = read_moe_layer_freq(sc, m.layers);
  if (!m.moe_layer_pattern.empty() && m.experts == 0)
    throw ConfigError(sc.where(), "model.moe_layer_freq", "needs a mixture-of-experts model (model.experts > 0)");
  const double load = sc.number("model.moe_load_factor", 1.0);
  const double capacity = sc.number("model.moe_capacity_factor", 0.0);
  if (!(capacity == 0.0 || capacity >= 1.0) || !std::isfinite(capacity))
    throw ConfigError(
        sc.where(), "model.moe_capacity_factor",
        "expected 0 (dropless, Megatron-Core's default) or a factor ≥ 1, got " + std::to_string(capacity));
  if (!std::isfinite(load)) throw ConfigError(sc.where(), "model.moe_load_factor", "expected a finite factor ≥ 1");
  m.moe_load_factor = capacity > 0.0 ? std::min(load, capacity) : load;  // tokens beyond capacity are dropped
  if ((sc.has("model.moe_load_factor") || sc.has("model.moe_capacity_factor")) && m.experts == 0)
    throw ConfigError(sc.where(),
                      sc.has("model.moe_load_factor") ? "model.moe_load_factor" : "model.moe_capacity_factor",
                      "needs a mixture-of-experts model (model.experts > 0)");
}

// model.precision: the linear layers' GEMMs in the model's dtype (its name) or in fp8 (with bf16 weights).
void read_precision(Scenario& sc, sim::ModelSpec& m) {
  const std::string text = sc.string("model.precision", m.dtype);
  if (text == m.dtype) return;
  if (text != "fp8")
    throw ConfigError(sc.where(), "model.precision",
                      "expected fp8 or the model's dtype (" + m.dtype + "), got '" + text + "'");
  if (m.dtype != "bf16")
    throw ConfigError(sc.where(), "model.precision",
                      "fp8 training keeps bf16 weights, activations and gradients (Transformer Engine): set "
                      "model.dtype to bf16, got " +
                          m.dtype);
  m.fp8 = true;
}

// The value at dotted `key` of the scenario's document (null when absent).
nlohmann::json value_at(const Scenario& sc, const std::string& key) {
  const nlohmann::json* node = &sc.json();
  for (std::size_t begin = 0; begin <= key.size();) {
    const std::size_t end = std::min(key.find('.', begin), key.size());
    const std::string part = key.substr(begin, end - begin);
    if (!node->is_object() || !node->contains(part)) return nullptr;
    node = &(*node)[part];
    begin = end + 1;
  }
  return *node;
}

// model.megatron_args: a Megatron command line as keys. A key the scenario also gives must agree with it.
void apply_megatron_args(Scenario& sc) {
  const std::string text = sc.string("model.megatron_args", "");
  for (const KeySetting& s : read_megatron_args(split_arguments(text), sc.where())) {
    if (!sc.has(s.key)) {
      sc.set(s.key + "=" + s.value.dump());
      continue;
    }
    const nlohmann::json mine = value_at(sc, s.key);
    if (mine != s.value)
      throw ConfigError(
          sc.where(), s.key,
          "the scenario gives " + mine.dump() + " but model.megatron_args gives " + s.value.dump() + ": keep one");
  }
}

// model.from_hf: a Hugging Face config.json's fields as model keys, under the scenario's own (explicit keys win).
void apply_hf_config(Scenario& sc) {
  const std::string given = sc.string("model.from_hf", "");
  if (given.empty()) throw ConfigError(sc.where(), "model.from_hf", "expected the path of a config.json");
  for (const KeySetting& s : read_hf_config(sc.resolve(given)))
    if (!sc.has(s.key)) sc.set(s.key + "=" + s.value.dump());
}

void read_megatron_features(Scenario& sc, const Framework& fw, const sim::ModelSpec& m, sim::ParallelSpec& p) {
  p.sequence_parallel = sc.boolean("parallelism.sequence_parallel", fw.megatron_core && p.tp > 1);
  p.distributed_optimizer = sc.boolean("parallelism.distributed_optimizer", fw.megatron_core);
  p.overlap_grad_reduce = sc.boolean("parallelism.overlap_grad_reduce", fw.megatron_core);
  p.overlap_param_gather = sc.boolean("parallelism.overlap_param_gather", fw.megatron_core && p.distributed_optimizer);
  if (p.overlap_param_gather && !p.distributed_optimizer)
    throw ConfigError(sc.where(), "parallelism.overlap_param_gather",
                      "overlaps the distributed optimizer's parameter all-gather: needs "
                      "parallelism.distributed_optimizer = true");
  p.tp_comm_overlap = sc.boolean("parallelism.tp_comm_overlap", fw.megatron_core && p.sequence_parallel);
  if (p.tp_comm_overlap && !p.sequence_parallel)
    throw ConfigError(sc.where(), "parallelism.tp_comm_overlap",
                      "Transformer Engine overlaps TP communication only with sequence parallelism (Megatron refuses "
                      "--tp-comm-overlap without --sequence-parallel): set parallelism.sequence_parallel = true");
  p.embedding_allreduce = sc.boolean("parallelism.embedding_allreduce", m.tie_embeddings);
  p.fused_embedding_sync = sc.boolean("parallelism.fused_embedding_sync", false);
  if (!m.tie_embeddings) {  // nothing to synchronise between the first and last stage
    if (p.embedding_allreduce)
      throw ConfigError(sc.where(), "parallelism.embedding_allreduce",
                        "the model's embeddings are untied (model.tie_embeddings = false): there is no LM-head copy "
                        "of the word embedding to all-reduce");
    if (p.fused_embedding_sync)
      throw ConfigError(sc.where(), "parallelism.fused_embedding_sync",
                        "the model's embeddings are untied (model.tie_embeddings = false): there is no embedding "
                        "copy to synchronise");
  }
  p.scatter_gather_p2p = sc.boolean("parallelism.scatter_gather_p2p", true);
  p.grad_accumulation_fusion = sc.boolean("parallelism.grad_accumulation_fusion", fw.grad_accumulation_fusion);
  p.async_tp_allreduce = sc.boolean("parallelism.async_tp_allreduce", fw.async_tp_allreduce);
  p.grad_bucket_params = sc.number("parallelism.grad_bucket_params", 0.0);
  if (!(p.grad_bucket_params >= 0.0) || !(p.grad_bucket_params <= 1e12))
    throw ConfigError(sc.where(), "parallelism.grad_bucket_params",
                      "must be a parameter count in [1, 1e12], or 0 for Megatron-Core's max(4e7, 1e6·dp)");
  // Megatron-Core reduces bf16 gradients in fp32 (--accumulate-allreduce-grads-in-fp32 is implied by --bf16);
  // fp16 and fp32 training reduce in their own precision.
  p.grad_reduce_bytes = read_grad_reduce_bytes(sc);
  if (p.grad_reduce_bytes == 0 && m.dtype == "bf16") p.grad_reduce_bytes = 4;
}

// Flash attention and FP8 under the kernel-level model need the GPU's measured rates (cluster.gpu.attention,
// cluster.gpu.fp8_matmul_*); the efficiency model rates every FLOP alike and needs neither.
void check_measured_rates(const Scenario& sc, const ModelConfig& c, const sim::GpuSpec& gpu) {
  if (c.cost.compute_model != sim::ComputeModel::kKernels) return;
  if (c.model.attention == sim::Attention::kFlash && gpu.attention_rates.empty())
    throw ConfigError(sc.where(), "model.attention",
                      "flash attention under the kernel-level model needs the GPU's measured attention rates "
                      "(cluster.gpu.attention), which " +
                          (gpu.name.empty() ? std::string("the GPU") : gpu.name) +
                          " does not give; set compute.efficiency, or model.attention = materialised");
  if (c.model.fp8 && gpu.fp8_matmul_tflops <= 0.0)
    throw ConfigError(sc.where(), "model.precision",
                      "fp8 under the kernel-level model needs the GPU's measured FP8 GEMM rate "
                      "(cluster.gpu.fp8_matmul_tflops), which " +
                          (gpu.name.empty() ? std::string("the GPU") : gpu.name) + " does not give");
}

sim::ComputeModel read_compute_model(Scenario& sc, const sim::GpuSpec& gpu) {
  const std::string text = sc.string("compute.model", "auto");
  if (text != "auto" && text != "kernels" && text != "efficiency")
    throw ConfigError(sc.where(), "compute.model", "expected auto, kernels or efficiency, got '" + text + "'");
  if (text == "efficiency" || (text == "auto" && (sc.has("compute.efficiency") || !gpu.has_kernel_model())))
    return sim::ComputeModel::kEfficiency;
  if (!gpu.has_kernel_model())
    throw ConfigError(sc.where(), "compute.model",
                      "kernels needs the GPU's measured GEMM figures (cluster.gpu.sm_count and "
                      "cluster.gpu.matmul_tflops), which the cluster does not give");
  return sim::ComputeModel::kKernels;
}

}  // namespace

Framework read_framework(Scenario& sc) {
  const std::string name = sc.string("framework", "");
  Framework fw;
  fw.name = name;
  if (name.empty()) return fw;
  if (name == "megatron-lm-2021") {
    fw.grad_accumulation_fusion = false;
    fw.async_tp_allreduce = false;
  } else if (name == "megatron-lm-2022") {
    // The keys' own defaults: Megatron-LM v3 of 2022 (asynchronous TP all-reduce, gradient-accumulation fusion).
  } else if (name == "megatron-core-2024") {
    fw.megatron_core = true;
    fw.flash = true;
  } else {
    throw ConfigError(sc.where(), "framework",
                      "expected megatron-lm-2021, megatron-lm-2022 or megatron-core-2024, got '" + name + "'");
  }
  return fw;
}

ModelConfig read_model_config(Scenario& sc, const sim::GpuSpec& gpu) {
  ModelConfig c;
  sim::ModelSpec& m = c.model;
  if (sc.has("model.megatron_args")) apply_megatron_args(sc);
  if (sc.has("model.from_hf")) apply_hf_config(sc);
  m.name = sc.string("model.name", "");
  m.layers = sc.int32("model.layers", 0);
  m.hidden = sc.int32("model.hidden", 0);
  m.heads = sc.int32("model.heads", 0);
  m.seq_len = sc.int32("model.seq_len", 0);
  m.vocab = sc.int32("model.vocab", 0);
  m.micro_batch_size = sc.int32("model.micro_batch_size", 0);
  m.global_batch_size = sc.int32("model.global_batch_size", 0);
  // Sizes far beyond any model (the largest published dense transformers have ~100 layers, hidden 25,600,
  // sequences of a few 100k tokens): a typo such as 2e9 is named here instead of running away later.
  for (const auto& [key, value, limit] : {std::tuple{"model.layers", m.layers, 1 << 16},
                                          {"model.hidden", m.hidden, 1 << 20},
                                          {"model.heads", m.heads, 1 << 16},
                                          {"model.seq_len", m.seq_len, 1 << 24},
                                          {"model.vocab", m.vocab, 1 << 24},
                                          {"model.micro_batch_size", m.micro_batch_size, 1 << 24},
                                          {"model.global_batch_size", m.global_batch_size, 1 << 30}})
    if (value > limit)
      throw ConfigError(sc.where(), key,
                        std::to_string(value) + " is beyond the supported maximum " + std::to_string(limit) +
                            " (far past any published model: check the value)");
  c.framework = read_framework(sc);
  const Framework& fw = c.framework;
  read_architecture(sc, fw, m);
  read_moe(sc, m);
  m.dtype = sc.string("model.dtype", "fp16");
  if (m.dtype != "fp16" && m.dtype != "bf16" && m.dtype != "fp32")
    throw ConfigError(sc.where(), "model.dtype", "expected fp16, bf16 or fp32, got '" + m.dtype + "'");
  read_precision(sc, m);
  m.recompute = read_recompute(sc);

  sim::ParallelSpec& p = c.parallel;
  p.tp = sc.int32("parallelism.tp", 1);
  p.pp = sc.int32("parallelism.pp", 1);
  p.dp = sc.int32("parallelism.dp", 1);
  p.microbatches = sc.int32("parallelism.microbatches", 0);
  p.schedule = parse_schedule(sc, sc.string("parallelism.schedule", "1f1b"));
  p.virtual_stages = sc.int32("parallelism.virtual_stages", 1);
  p.order = parse_order(sc, sc.string("parallelism.order", "tp-dp-pp"));
  p.ep = sc.int32("parallelism.ep", 1);
  p.etp = sc.int32("parallelism.etp", p.tp);  // Megatron-Core: --expert-tensor-parallel-size defaults to tp
  p.moe_a2a_overlap = sc.boolean("parallelism.moe_a2a_overlap", false);
  check_parallel_sizes(sc, m, p);  // before any product of them is formed
  read_megatron_features(sc, fw, m, p);

  const sim::CostParams defaults;
  c.cost.compute_efficiency = read_fraction(sc, "compute.efficiency", defaults.compute_efficiency);
  c.cost.hbm_efficiency = read_fraction(sc, "compute.hbm_efficiency", defaults.hbm_efficiency);
  const double orth_us = sc.number("compute.orth_column_latency_us", defaults.orth_column_latency_s * 1e6);
  if (orth_us < 0.0)
    throw ConfigError(sc.where(), "compute.orth_column_latency_us", "must be ≥ 0, got " + std::to_string(orth_us));
  c.cost.orth_column_latency_s = orth_us * 1e-6;
  if (const std::string profile = sc.string("compute.kernel_profile", ""); !profile.empty()) {
    KernelProfile kp = read_kernel_profile(sc.resolve(profile));
    c.cost.kernel_profile = std::move(kp.entries);
    c.cost.copy_profile = std::move(kp.copies);
  }
  c.cost.compute_model = read_compute_model(sc, gpu);
  check_measured_rates(sc, c, gpu);
  if (sc.has("compute.optimizer_step_ms")) {
    const double ms = sc.number("compute.optimizer_step_ms", 0.0);
    if (!(ms >= 0.0) || !std::isfinite(ms))
      throw ConfigError(sc.where(), "compute.optimizer_step_ms", "must be a number of milliseconds ≥ 0");
    c.cost.optimizer_step_s = ms * 1e-3;
  }

  sc.reject_unknown({"model", "parallelism"});
  return c;
}

KernelProfile read_kernel_profile(const std::string& path) {
  const nlohmann::json j =
      Scenario::load(path, "kernel profile").json();  // unreadable or invalid JSON: ConfigError naming the file
  const auto schema = j.find("schema");  // not j.value(): a schema of another type would throw nlohmann's type_error
  if (schema == j.end() || *schema != "edgc.kernel_profile/1")
    throw ConfigError(path, "schema", "expected \"edgc.kernel_profile/1\" (edgc_bench_powersgd_cuda --out)");
  if (!j.contains("entries") || !j["entries"].is_array()) throw ConfigError(path, "entries", "expected an array");
  KernelProfile out;
  for (std::size_t i = 0; i < j["entries"].size(); ++i) {
    const nlohmann::json& e = j["entries"][i];
    const std::string at = "entries[" + std::to_string(i) + "]";
    if (!e.is_object()) throw ConfigError(path, at, "expected an object");
    if (e.contains("ok") && e["ok"] == false) continue;  // a measurement that failed its own check
    const auto positive = [&]<typename Int>(const char* key, Int max) {
      try {
        if (e.contains(key)) return json_integer<Int>(e[key], 1, max);
      } catch (const IntegerError& x) {
        if (x.kind() == IntegerError::Kind::kAbove)
          throw ConfigError(path, at + "." + key, std::string("expected a positive integer, ") + x.what());
      }
      throw ConfigError(path, at + "." + key, "expected a positive integer");
    };
    constexpr std::int64_t kMaxDim = std::int64_t{1} << 31;  // a matrix side: m·n·r stays in int64
    sim::KernelTime k;
    k.rows = positive("m", kMaxDim);
    k.cols = positive("n", kMaxDim);
    k.rank = positive("r", std::numeric_limits<int>::max());
    if (!e.contains("step_s") || !e["step_s"].is_number() || !(e["step_s"].get<double>() > 0.0) ||
        !std::isfinite(e["step_s"].get<double>()))
      throw ConfigError(path, at + ".step_s", "expected seconds > 0");
    k.step_s = e["step_s"].get<double>();
    if (e.contains("count")) k.count = positive("count", std::numeric_limits<int>::max());
    out.entries.push_back(k);
  }
  if (out.entries.empty()) throw ConfigError(path, "entries", "no usable measurement");
  if (!j.contains("copies")) return out;
  if (!j["copies"].is_array()) throw ConfigError(path, "copies", "expected an array");
  for (std::size_t i = 0; i < j["copies"].size(); ++i) {
    const nlohmann::json& e = j["copies"][i];
    const std::string at = "copies[" + std::to_string(i) + "]";
    if (!e.is_object()) throw ConfigError(path, at, "expected an object");
    const std::optional<std::int64_t> bytes =
        e.contains("bytes") ? json_integer_if<std::int64_t>(e["bytes"], 1, std::numeric_limits<std::int64_t>::max())
                            : std::nullopt;
    if (!bytes || (!out.copies.empty() && *bytes <= out.copies.back().bytes))
      throw ConfigError(path, at + ".bytes", "expected a positive integer, larger than the previous entry's");
    if (!e.contains("step_s") || !e["step_s"].is_number() || !(e["step_s"].get<double>() > 0.0) ||
        !std::isfinite(e["step_s"].get<double>()))
      throw ConfigError(path, at + ".step_s", "expected seconds > 0");
    out.copies.push_back({*bytes, e["step_s"].get<double>()});
  }
  return out;
}

}  // namespace edgc::scenario
