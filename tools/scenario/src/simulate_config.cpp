#include "edgc/scenario/simulate_config.hpp"

#include <filesystem>

#include "edgc/core/error.hpp"

namespace edgc::scenario {

sim::ComputeVariability read_variability(Scenario& sc) {
  sim::ComputeVariability v;
  v.compute_jitter_cv = sc.number("variability.compute_jitter_cv", 0.0);
  v.straggler_probability = sc.number("variability.straggler_probability", 0.0);
  v.straggler_slowdown = sc.number("variability.straggler_slowdown", 1.0);
  v.seed = sc.seed("variability.seed", 0);
  sim::validate(v, sc.where());
  return v;
}

std::int64_t read_run_iterations(Scenario& sc) {
  const std::int64_t iterations = sc.integer("run.iterations", 100000);
  if (iterations < 1)
    throw ConfigError(sc.where(), "run.iterations", "must be >= 1, got " + std::to_string(iterations));
  return iterations;
}

SimulateSettings read_simulate_settings(Scenario& sc) {
  SimulateSettings s;
  const std::string composition = sc.string("simulate.composition", "auto");
  if (composition != "auto" && composition != "exact")
    throw ConfigError(sc.where(), "simulate.composition", "expected auto or exact, got '" + composition + "'");
  s.compose_allowed = composition == "auto";
  s.policies = sc.string("simulate.policies", "");
  return s;
}

EntropySourceSettings read_entropy_source(Scenario& sc) {
  EntropySourceSettings s;
  s.trace_path = read_trace_path(sc);
  const std::string source = sc.string("entropy.source", s.trace_path.empty() ? "synthetic" : "trace");
  s.from_trace = source == "trace";
  if (!s.from_trace && source != "synthetic")
    throw ConfigError(sc.where(), "entropy.source", "expected trace or synthetic, got '" + source + "'");
  if (s.from_trace && s.trace_path.empty())
    throw ConfigError(sc.where(), "trace.path", "entropy.source is trace but no trace.path is given");
  if (s.from_trace) {
    s.bins_per_sigma = sc.number("entropy.bins_per_sigma", s.bins_per_sigma);
    if (!(s.bins_per_sigma > 0.0)) throw ConfigError(sc.where(), "entropy.bins_per_sigma", "must be > 0");
    s.backend = sc.string("entropy.backend", s.backend);
  }
  return s;
}

sim::SyntheticEntropy read_synthetic_entropy(Scenario& sc) {
  sim::SyntheticEntropy curve;
  curve.start_nats = sc.number("entropy.synthetic.start_nats", curve.start_nats);
  curve.end_nats = sc.number("entropy.synthetic.end_nats", curve.end_nats);
  curve.decay_fraction = sc.number("entropy.synthetic.decay_fraction", curve.decay_fraction);
  curve.stage_step_nats = sc.number("entropy.synthetic.stage_step_nats", curve.stage_step_nats);
  curve.noise_nats = sc.number("entropy.synthetic.noise_nats", curve.noise_nats);
  curve.seed = sc.seed("entropy.synthetic.seed", 0);
  return curve;
}

FidelitySettings read_fidelity_settings(
    Scenario& sc, const std::function<void(const std::string& backend, const std::string& key)>& check_backend) {
  FidelitySettings s;
  s.measure = sc.boolean("fidelity.measure", true);
  s.backend = sc.string("fidelity.backend", "cpu");
  check_backend(s.backend, "fidelity.backend");
  if (sc.has("fidelity.max_error")) {
    s.max_error = sc.number("fidelity.max_error", 0.0);
    if (!(*s.max_error > 0.0))
      throw ConfigError(
          sc.where(), "fidelity.max_error",
          "must be > 0 (a relative error of the averaged gradient, e.g. 0.2), got " + std::to_string(*s.max_error));
  }
  if (const nlohmann::json* c = sc.raw("fidelity.convergence")) {
    const auto bad = [&sc](const std::string& why) { throw ConfigError(sc.where(), "fidelity.convergence", why); };
    if (!c->is_array()) bad("must be a list of convergence record files (edgc.converge/1)");
    for (const nlohmann::json& f : *c) {
      if (!f.is_string() || f.get<std::string>().empty()) bad("every entry must be a file name, got " + f.dump());
      s.convergence.push_back(sc.resolve(f.get<std::string>()));
    }
  }
  // Read like trace.path (config.cpp, read_trace_path); an empty string would silently mean "the entropy's trace".
  if (sc.has("trace.error_path")) {
    const std::string dir = sc.string("trace.error_path", "");
    if (dir.empty())
      throw ConfigError(sc.where(), "trace.error_path",
                        "must name a trace directory (leave the key out to replay on trace.path's trace)");
    s.trace_path = std::filesystem::path(sc.resolve(dir)).lexically_normal().string();
  }
  return s;
}

}  // namespace edgc::scenario
