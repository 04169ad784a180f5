#include "model_config.hpp"

#include <cstdint>
#include <string>

#include "edgc/core/error.hpp"

namespace edgc::cli {
namespace {

double read_fraction(Scenario& sc, const std::string& key, double fallback) {
  const double v = sc.number(key, fallback);
  if (!(v > 0.0 && v <= 1.0)) throw ConfigError(sc.where(), key, "must lie in (0, 1], got " + std::to_string(v));
  return v;
}

sim::PipelineSchedule parse_schedule(const Scenario& sc, const std::string& text) {
  if (text == "gpipe") return sim::PipelineSchedule::kGpipe;
  if (text == "1f1b") return sim::PipelineSchedule::kOneFOneB;
  if (text == "interleaved") return sim::PipelineSchedule::kInterleaved;
  throw ConfigError(sc.where(), "parallelism.schedule", "expected gpipe, 1f1b or interleaved, got '" + text + "'");
}

sim::RankOrder parse_order(const Scenario& sc, const std::string& text) {
  if (text == "tp-dp-pp") return sim::RankOrder::kTpDpPp;
  if (text == "tp-pp-dp") return sim::RankOrder::kTpPpDp;
  throw ConfigError(sc.where(), "parallelism.order", "expected tp-dp-pp or tp-pp-dp, got '" + text + "'");
}

}  // namespace

ModelConfig read_model_config(Scenario& sc) {
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
  m.dtype = sc.string("model.dtype", "fp16");
  if (m.dtype != "fp16" && m.dtype != "bf16" && m.dtype != "fp32")
    throw ConfigError(sc.where(), "model.dtype", "expected fp16, bf16 or fp32, got '" + m.dtype + "'");
  m.activation_recompute = sc.boolean("model.activation_recompute", false);

  sim::ParallelSpec& p = c.parallel;
  p.tp = sc.int32("parallelism.tp", 1);
  p.pp = sc.int32("parallelism.pp", 1);
  p.dp = sc.int32("parallelism.dp", 1);
  p.microbatches = sc.int32("parallelism.microbatches", 0);
  p.schedule = parse_schedule(sc, sc.string("parallelism.schedule", "1f1b"));
  p.virtual_stages = sc.int32("parallelism.virtual_stages", 1);
  p.order = parse_order(sc, sc.string("parallelism.order", "tp-dp-pp"));

  const sim::CostParams defaults;
  c.cost.compute_efficiency = read_fraction(sc, "compute.efficiency", defaults.compute_efficiency);
  c.cost.hbm_efficiency = read_fraction(sc, "compute.hbm_efficiency", defaults.hbm_efficiency);
  const double orth_us = sc.number("compute.orth_column_latency_us", defaults.orth_column_latency_s * 1e6);
  if (orth_us < 0.0)
    throw ConfigError(sc.where(), "compute.orth_column_latency_us", "must be ≥ 0, got " + std::to_string(orth_us));
  c.cost.orth_column_latency_s = orth_us * 1e-6;

  sc.reject_unknown({"model", "parallelism"});
  return c;
}

}  // namespace edgc::cli
