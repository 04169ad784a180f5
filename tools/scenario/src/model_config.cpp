#include "edgc/scenario/model_config.hpp"

#include <tuple>

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "edgc/core/error.hpp"
#include "edgc/scenario/config.hpp"
#include "edgc/scenario/limits.hpp"
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
void read_megatron_features(Scenario& sc, const sim::ModelSpec& m, sim::ParallelSpec& p) {
  p.sequence_parallel = sc.boolean("parallelism.sequence_parallel", false);
  p.distributed_optimizer = sc.boolean("parallelism.distributed_optimizer", false);
  p.overlap_grad_reduce = sc.boolean("parallelism.overlap_grad_reduce", false);
  p.embedding_allreduce = sc.boolean("parallelism.embedding_allreduce", true);
  p.fused_embedding_sync = sc.boolean("parallelism.fused_embedding_sync", false);
  p.scatter_gather_p2p = sc.boolean("parallelism.scatter_gather_p2p", true);
  p.grad_accumulation_fusion = sc.boolean("parallelism.grad_accumulation_fusion", true);
  p.async_tp_allreduce = sc.boolean("parallelism.async_tp_allreduce", true);
  p.grad_bucket_params = sc.number("parallelism.grad_bucket_params", 0.0);
  if (!(p.grad_bucket_params >= 0.0) || !(p.grad_bucket_params <= 1e12))
    throw ConfigError(sc.where(), "parallelism.grad_bucket_params",
                      "must be a parameter count in [1, 1e12], or 0 for Megatron-Core's max(4e7, 1e6·dp)");
  // Megatron-Core reduces bf16 gradients in fp32 (--accumulate-allreduce-grads-in-fp32 is implied by --bf16);
  // fp16 and fp32 training reduce in their own precision.
  p.grad_reduce_bytes = read_grad_reduce_bytes(sc);
  if (p.grad_reduce_bytes == 0 && m.dtype == "bf16") p.grad_reduce_bytes = 4;
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

ModelConfig read_model_config(Scenario& sc, const sim::GpuSpec& gpu) {
  ModelConfig c;
  sim::ModelSpec& m = c.model;
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
  m.dtype = sc.string("model.dtype", "fp16");
  if (m.dtype != "fp16" && m.dtype != "bf16" && m.dtype != "fp32")
    throw ConfigError(sc.where(), "model.dtype", "expected fp16, bf16 or fp32, got '" + m.dtype + "'");
  m.recompute = read_recompute(sc);

  sim::ParallelSpec& p = c.parallel;
  p.tp = sc.int32("parallelism.tp", 1);
  p.pp = sc.int32("parallelism.pp", 1);
  p.dp = sc.int32("parallelism.dp", 1);
  p.microbatches = sc.int32("parallelism.microbatches", 0);
  p.schedule = parse_schedule(sc, sc.string("parallelism.schedule", "1f1b"));
  p.virtual_stages = sc.int32("parallelism.virtual_stages", 1);
  p.order = parse_order(sc, sc.string("parallelism.order", "tp-dp-pp"));
  check_parallel_sizes(sc, m, p);  // before any product of them is formed
  read_megatron_features(sc, m, p);

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
  const nlohmann::json j = Scenario::load(path).json();  // unreadable or invalid JSON: ConfigError naming the file
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
    const auto positive_int = [&](const char* key) {
      if (!e.contains(key) || !e[key].is_number_integer() || e[key].get<std::int64_t>() < 1)
        throw ConfigError(path, at + "." + key, "expected a positive integer");
      return e[key].get<std::int64_t>();
    };
    sim::KernelTime k;
    k.rows = positive_int("m");
    k.cols = positive_int("n");
    k.rank = static_cast<int>(positive_int("r"));
    if (!e.contains("step_s") || !e["step_s"].is_number() || !(e["step_s"].get<double>() > 0.0) ||
        !std::isfinite(e["step_s"].get<double>()))
      throw ConfigError(path, at + ".step_s", "expected seconds > 0");
    k.step_s = e["step_s"].get<double>();
    if (e.contains("count")) k.count = static_cast<int>(positive_int("count"));
    out.entries.push_back(k);
  }
  if (out.entries.empty()) throw ConfigError(path, "entries", "no usable measurement");
  if (!j.contains("copies")) return out;
  if (!j["copies"].is_array()) throw ConfigError(path, "copies", "expected an array");
  for (std::size_t i = 0; i < j["copies"].size(); ++i) {
    const nlohmann::json& e = j["copies"][i];
    const std::string at = "copies[" + std::to_string(i) + "]";
    if (!e.is_object()) throw ConfigError(path, at, "expected an object");
    if (!e.contains("bytes") || !e["bytes"].is_number_integer() || e["bytes"].get<std::int64_t>() < 1 ||
        (!out.copies.empty() && e["bytes"].get<std::int64_t>() <= out.copies.back().bytes))
      throw ConfigError(path, at + ".bytes", "expected a positive integer, larger than the previous entry's");
    if (!e.contains("step_s") || !e["step_s"].is_number() || !(e["step_s"].get<double>() > 0.0) ||
        !std::isfinite(e["step_s"].get<double>()))
      throw ConfigError(path, at + ".step_s", "expected seconds > 0");
    out.copies.push_back({e["bytes"].get<std::int64_t>(), e["step_s"].get<double>()});
  }
  return out;
}

}  // namespace edgc::scenario
