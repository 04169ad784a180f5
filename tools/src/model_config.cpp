#include "model_config.hpp"

#include <climits>
#include <cstdint>
#include <filesystem>
#include <string>

#include "edgc/core/error.hpp"

namespace edgc::cli {
namespace {

namespace fs = std::filesystem;

int read_int(Scenario& sc, const std::string& key, int fallback) {
  const std::int64_t v = sc.integer(key, fallback);
  if (v < INT_MIN || v > INT_MAX) throw ConfigError(sc.where(), key, std::to_string(v) + " is out of range");
  return static_cast<int>(v);
}

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

nlohmann::json load_model_file(const Scenario& sc, const std::string& relative) {
  fs::path path(relative);
  // An empty scenario (defaults only) has no file to be relative to; its `where` is not a path.
  if (path.is_relative() && sc.where() != Scenario().where()) path = fs::path(sc.where()).parent_path() / path;
  const Scenario file = Scenario::load(path.string());
  const auto section = file.json().find("model");
  if (section == file.json().end() || !section->is_object())
    throw ConfigError(file.where(), "model", "a model file must hold a \"model\" object");
  return *section;
}

}  // namespace

void splice_model_include(Scenario& scenario) {
  if (!scenario.has("model")) return;
  const nlohmann::json& section = scenario.json().at("model");
  nlohmann::json merged;
  if (section.is_string()) {
    merged = load_model_file(scenario, section.get<std::string>());
  } else if (section.is_object() && section.contains("include")) {
    if (!section.at("include").is_string())
      throw ConfigError(scenario.where(), "model.include", "expected a file path, got " + section.at("include").dump());
    merged = load_model_file(scenario, section.at("include").get<std::string>());
    nlohmann::json local = section;
    local.erase("include");
    merged.merge_patch(local);
  } else if (section.is_object()) {
    return;
  } else {
    throw ConfigError(scenario.where(), "model", "expected an object or a model file path, got " + section.dump());
  }
  scenario.set("model=" + merged.dump());
}

ModelConfig read_model_config(Scenario& sc) {
  ModelConfig c;
  sim::ModelSpec& m = c.model;
  m.name = sc.string("model.name", "");
  m.layers = read_int(sc, "model.layers", 0);
  m.hidden = read_int(sc, "model.hidden", 0);
  m.heads = read_int(sc, "model.heads", 0);
  m.seq_len = read_int(sc, "model.seq_len", 0);
  m.vocab = read_int(sc, "model.vocab", 0);
  m.micro_batch_size = read_int(sc, "model.micro_batch_size", 0);
  m.global_batch_size = read_int(sc, "model.global_batch_size", 0);
  m.dtype = sc.string("model.dtype", "fp16");
  if (m.dtype != "fp16" && m.dtype != "bf16" && m.dtype != "fp32")
    throw ConfigError(sc.where(), "model.dtype", "expected fp16, bf16 or fp32, got '" + m.dtype + "'");
  m.activation_recompute = sc.boolean("model.activation_recompute", false);

  sim::ParallelSpec& p = c.parallel;
  p.tp = read_int(sc, "parallelism.tp", 1);
  p.pp = read_int(sc, "parallelism.pp", 1);
  p.dp = read_int(sc, "parallelism.dp", 1);
  p.microbatches = read_int(sc, "parallelism.microbatches", 0);
  p.schedule = parse_schedule(sc, sc.string("parallelism.schedule", "1f1b"));
  p.virtual_stages = read_int(sc, "parallelism.virtual_stages", 1);

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
