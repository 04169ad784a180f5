#include "edgc/scenario/compression_config.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>
#include <string>

#include "edgc/core/error.hpp"

namespace edgc::scenario {

namespace {

// Whether compression.r_max is given as a string (the one string it may be is "auto").
bool r_max_is_string(const Scenario& sc) {
  const nlohmann::json& j = sc.json();
  const auto c = j.find("compression");
  if (c == j.end() || !c->is_object()) return false;
  const auto r = c->find("r_max");
  return r != c->end() && r->is_string();
}

}  // namespace

CompressionSettings read_compression(Scenario& sc, bool r_max_auto_allowed) {
  CompressionSettings o;
  const std::string w = sc.where();
  auto& c = o.controller;
  c.policy = sc.string("compression.policy", "edgc");
  core::policy_info(c.policy, w, "compression.policy");  // throws on an unknown name
  c.estimator =
      core::parse_entropy_estimator(sc.string("compression.estimator", "gaussian"), w, "compression.estimator");
  o.gds.window_iters = sc.integer("compression.window", 1000);
  o.gds.alpha = sc.number("compression.alpha", 0.1);
  o.gds.beta = sc.number("compression.beta", 0.25);
  o.gds.block_bytes = sc.integer("compression.block_bytes", 4096);
  o.gds.seed = sc.seed("compression.seed", 0);
  core::validate(o.gds, w.c_str());
  c.cqm.r_min = sc.int32("compression.r_min", 32);
  o.r_max_given = sc.has("compression.r_max");
  if (r_max_is_string(sc)) {
    const std::string r_max = sc.string("compression.r_max", "");
    if (r_max != "auto") throw ConfigError(w, "compression.r_max", "must be a rank or \"auto\", got \"" + r_max + "\"");
    if (!r_max_auto_allowed)
      throw ConfigError(w, "compression.r_max",
                        "\"auto\" (the simulated break-even rank) is for simulate, sweep and plan only: give a rank");
    o.r_max_auto = true;
    c.cqm.r_max = c.cqm.r_min;  // a stand-in until simulate has the break-even rank
  } else {
    c.cqm.r_max = sc.int32("compression.r_max", 128);
  }
  c.cqm.step = sc.int32("compression.step", 8);
  c.cqm.quantum = sc.int32("compression.quantum", 4);
  c.cqm.exponent = sc.number("compression.exponent", 1.0);
  c.static_rank = sc.int32("compression.static_rank", 0);
  c.selective_stages = sc.int32("compression.selective_stages", 1);
  c.pipeline_rank = sc.int32("compression.pp_rank", 16);
  const std::string pp_mode = sc.string("compression.pp_rank_mode", "static");
  const std::optional<core::PipelineRankMode> pp = core::pipeline_rank_mode_from_name(pp_mode);
  if (!pp) throw ConfigError(w, "compression.pp_rank_mode", "must be static or entropy, got '" + pp_mode + "'");
  c.pipeline_rank_mode = *pp;
  c.pipeline_r_min = sc.int32("compression.pp_r_min", 4);
  const std::string signal = sc.string("compression.signal", "loss");
  const std::optional<core::MegatronSignal> sig = core::megatron_signal_from_name(signal);
  if (!sig) throw ConfigError(w, "compression.signal", "must be loss or entropy, got '" + signal + "'");
  c.megatron_signal = *sig;
  // edgc-megatron keeps the port's step for its signal (4 or 8) unless compression.step is given.
  c.megatron_step = sc.has("compression.step") ? c.cqm.step : 0;
  const std::string mode = sc.string("compression.warmup.mode", "entropy");
  if (mode != "entropy" && mode != "fixed")
    throw ConfigError(w, "compression.warmup.mode", "must be entropy or fixed, got '" + mode + "'");
  c.warmup.mode = mode == "fixed" ? core::WarmupConfig::Mode::kFixed : core::WarmupConfig::Mode::kEntropy;
  c.warmup.fixed_iters = sc.integer("compression.warmup.fixed_iters", 0);
  c.warmup.threshold_nats = sc.number("compression.warmup.threshold_nats", 0.05);
  c.warmup.stable_windows = sc.int32("compression.warmup.stable_windows", 3);
  o.warmup_floor_fraction = sc.number("compression.warmup.floor_fraction", 0.1);
  o.warmup_ceiling_fraction = sc.number("compression.warmup.ceiling_fraction", 0.3);
  c.dac.enabled = sc.boolean("compression.dac.enabled", false);
  c.dac.eta_s_per_rank = sc.number("compression.dac.eta_s_per_rank", 0.0);
  c.dac.c_s = sc.number("compression.dac.c_s", 0.0);
  c.dac.t_bwd_s = sc.number("compression.dac.t_bwd_s", 0.0);
  c.dac.t_uncompressed_s = sc.number("compression.dac.t_uncompressed_s", 0.0);
  c.dac.t_p2p_s = sc.number("compression.dac.t_p2p_s", 0.0);
  c.dac.t_p2p_compressed_s = sc.number("compression.dac.t_p2p_compressed_s", -1.0);
  if (const std::string measured = sc.string("compression.dac.measured", ""); !measured.empty())
    o.dac_measured = sc.resolve(measured);
  const std::string apply_to = sc.string("compression.apply_to", "all");
  const std::optional<sim::CompressedGradients> target = sim::compressed_gradients_from_name(apply_to);
  if (!target) throw ConfigError(w, "compression.apply_to", "must be all, dense or experts, got '" + apply_to + "'");
  o.apply_to = *target;
  return o;
}

void apply_warmup_bounds(core::WarmupConfig& warmup, double floor_fraction, double ceiling_fraction,
                         std::int64_t run_iterations, const std::string& where, std::vector<std::string>* warnings,
                         std::int64_t window_iters) {
  if (floor_fraction < 0.0 || ceiling_fraction < floor_fraction)
    throw ConfigError(where, "compression.warmup", "needs 0 <= floor_fraction <= ceiling_fraction");
  if (warnings != nullptr && window_iters > run_iterations)
    warnings->push_back(where + ": compression.window: " + std::to_string(window_iters) +
                        " iterations is longer than the run's " + std::to_string(run_iterations) +
                        " (run.iterations): the whole run is one partial warm-up window, so no policy compresses "
                        "anything and every saving reads 0 %");
  const auto n = static_cast<double>(run_iterations);
  warmup.floor_iters = static_cast<std::int64_t>(std::llround(floor_fraction * n));
  warmup.ceiling_iters = static_cast<std::int64_t>(std::llround(ceiling_fraction * n));
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<std::string> policies_with_baseline(const std::string& list, const std::string& where,
                                                const std::string& key) {
  if (list.empty()) throw ConfigError(where, key, "is empty: name at least one policy (" + core::policy_list() + ")");
  std::vector<std::string> out{std::string(core::baseline_policy().name)};
  std::stringstream ss(list + ",");  // the trailing comma makes "a," end in an empty name
  for (std::string p; std::getline(ss, p, ',');) {
    if (p.empty()) throw ConfigError(where, key, "'" + list + "' has an empty policy name");
    core::policy_info(p, where, key);  // throws on an unknown name
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  }
  return out;
}

}  // namespace edgc::scenario
