#include "settings.hpp"

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "edgc/core/megatron_rule.hpp"
#include "edgc/core/policy_registry.hpp"
#include "edgc/kernels/backend.hpp"

namespace py = pybind11;

namespace edgc::torch_ext {
namespace {

// Casts kw[key] to T, or a ValueError naming the keyword.
template <class T>
T get(const py::handle& value, const std::string& key, const char* type) {
  try {
    return value.cast<T>();
  } catch (const py::cast_error&) {
    throw ConfigError("", key, std::string("must be ") + type + ", got " + std::string(py::str(py::repr(value))));
  }
}

std::int64_t integer(const py::handle& v, const std::string& key) {
  if (py::isinstance<py::bool_>(v) || !py::isinstance<py::int_>(v))
    throw ConfigError("", key, "must be an integer, got " + std::string(py::str(py::repr(v))));
  return v.cast<std::int64_t>();
}

int int32(const py::handle& v, const std::string& key) {
  const std::int64_t x = integer(v, key);
  if (x < INT32_MIN || x > INT32_MAX) throw ConfigError("", key, "is out of range: " + std::to_string(x));
  return static_cast<int>(x);
}

double number(const py::handle& v, const std::string& key) {
  if (py::isinstance<py::bool_>(v) || !(py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v)))
    throw ConfigError("", key, "must be a number, got " + std::string(py::str(py::repr(v))));
  const double x = v.cast<double>();
  if (!std::isfinite(x)) throw ConfigError("", key, "must be finite, got " + std::to_string(x));
  return x;
}

bool boolean(const py::handle& v, const std::string& key) {
  if (!py::isinstance<py::bool_>(v))
    throw ConfigError("", key, "must be True or False, got " + std::string(py::str(py::repr(v))));
  return v.cast<bool>();
}

}  // namespace

HookSettings settings_from_kwargs(const py::dict& kw) {
  HookSettings s;
  core::ControllerConfig& c = s.controller;
  std::int64_t iterations = 0;
  double floor_fraction = 0.1;
  double ceiling_fraction = 0.3;
  bool step_given = false;
  // The scenario's defaults where they differ from the structs' (compression_config.cpp).
  c.policy = "edgc";
  using Setter = std::function<void(const py::handle&, const std::string&)>;
  const std::map<std::string, Setter> setters = {
      {"policy", [&](auto v, auto k) { c.policy = get<std::string>(v, k, "a string"); }},
      {"estimator",
       [&](auto v, auto k) { c.estimator = core::parse_entropy_estimator(get<std::string>(v, k, "a string"), "", k); }},
      {"stages", [&](auto v, auto k) { c.stages = int32(v, k); }},
      {"window", [&](auto v, auto k) { s.gds.window_iters = integer(v, k); }},
      {"alpha", [&](auto v, auto k) { s.gds.alpha = number(v, k); }},
      {"beta", [&](auto v, auto k) { s.gds.beta = number(v, k); }},
      {"block_bytes", [&](auto v, auto k) { s.gds.block_bytes = integer(v, k); }},
      {"seed",
       [&](auto v, auto k) {
         const std::int64_t x = integer(v, k);
         if (x < 0) throw ConfigError("", k, "must be >= 0, got " + std::to_string(x));
         s.gds.seed = s.powersgd.seed = static_cast<std::uint64_t>(x);
       }},
      {"r_min", [&](auto v, auto k) { c.cqm.r_min = int32(v, k); }},
      {"r_max", [&](auto v, auto k) { c.cqm.r_max = int32(v, k); }},
      {"step",
       [&](auto v, auto k) {
         c.cqm.step = int32(v, k);
         step_given = true;
       }},
      {"signal",
       [&](auto v, auto k) {
         const auto name = get<std::string>(v, k, "a string");
         const std::optional<core::MegatronSignal> sig = core::megatron_signal_from_name(name);
         if (!sig) throw ConfigError("", k, "must be loss or entropy, got '" + name + "'");
         c.megatron_signal = *sig;
       }},
      {"quantum", [&](auto v, auto k) { c.cqm.quantum = int32(v, k); }},
      {"exponent", [&](auto v, auto k) { c.cqm.exponent = number(v, k); }},
      {"static_rank", [&](auto v, auto k) { c.static_rank = int32(v, k); }},
      {"selective_stages", [&](auto v, auto k) { c.selective_stages = int32(v, k); }},
      {"warmup_mode",
       [&](auto v, auto k) {
         const auto m = get<std::string>(v, k, "a string");
         if (m != "entropy" && m != "fixed") throw ConfigError("", k, "must be entropy or fixed, got '" + m + "'");
         c.warmup.mode = m == "fixed" ? core::WarmupConfig::Mode::kFixed : core::WarmupConfig::Mode::kEntropy;
       }},
      {"warmup_fixed_iters", [&](auto v, auto k) { c.warmup.fixed_iters = integer(v, k); }},
      {"warmup_threshold_nats", [&](auto v, auto k) { c.warmup.threshold_nats = number(v, k); }},
      {"warmup_stable_windows", [&](auto v, auto k) { c.warmup.stable_windows = int32(v, k); }},
      {"warmup_floor_fraction", [&](auto v, auto k) { floor_fraction = number(v, k); }},
      {"warmup_ceiling_fraction", [&](auto v, auto k) { ceiling_fraction = number(v, k); }},
      {"iterations",
       [&](auto v, auto k) {
         iterations = integer(v, k);
         if (iterations < 0) throw ConfigError("", k, "must be >= 0 (0 = unknown), got " + std::to_string(iterations));
       }},
      {"bins_per_sigma", [&](auto v, auto k) { s.bins_per_sigma = number(v, k); }},
      {"error_feedback", [&](auto v, auto k) { s.powersgd.error_feedback = boolean(v, k); }},
      {"warm_start", [&](auto v, auto k) { s.powersgd.warm_start = boolean(v, k); }},
      {"threads",
       [&](auto v, auto k) {
         s.threads = int32(v, k);
         if (s.threads < 1) throw ConfigError("", k, "must be >= 1, got " + std::to_string(s.threads));
       }},
      {"backend",
       [&](auto v, auto k) {
         if (!py::isinstance<py::str>(v))
           throw ConfigError("", k, "must be a backend name ('cpu', 'cuda'), got " + std::string(py::str(py::repr(v))));
         s.backend = v.template cast<std::string>();
         if (const std::string why = kernels::backend_unavailable_reason(s.backend); !why.empty())
           throw ConfigError("", k, "'" + s.backend + "' cannot run here: " + why);
       }},
      {"device",
       [&](auto v, auto k) {
         s.device = int32(v, k);
         if (s.device < 0) throw ConfigError("", k, "must be >= 0, got " + std::to_string(s.device));
       }},
  };
  for (const auto& [key, value] : kw) {
    const auto name = key.cast<std::string>();
    const auto it = setters.find(name);
    if (it == setters.end()) {
      std::string known;
      for (const auto& [k, _] : setters) known += (known.empty() ? "" : ", ") + k;
      throw ConfigError("", name, "unknown setting (known: " + known + ")");
    }
    if (value.is_none()) continue;  // None: the default
    it->second(value, name);
  }
  // edgc-megatron keeps the port's step for its signal (4 or 8) unless step is given, as the scenario reader does.
  c.megatron_step = step_given ? c.cqm.step : 0;
  core::policy_info(c.policy, "", "compression.policy");
  core::validate(s.gds, "");
  if (floor_fraction < 0.0 || ceiling_fraction < floor_fraction)
    throw ConfigError("", "warmup_floor_fraction", "needs 0 <= warmup_floor_fraction <= warmup_ceiling_fraction");
  if (iterations > 0) {  // as scenario::apply_warmup_bounds
    const auto n = static_cast<double>(iterations);
    c.warmup.floor_iters = static_cast<std::int64_t>(std::llround(floor_fraction * n));
    c.warmup.ceiling_iters = static_cast<std::int64_t>(std::llround(ceiling_fraction * n));
  }
  return s;
}

std::string keyword_of(const std::string& field) {
  std::string k = field;
  constexpr std::string_view prefix = "compression.";
  if (k.starts_with(prefix)) k = k.substr(prefix.size());
  for (char& ch : k)
    if (ch == '.') ch = '_';
  if (k == "warmup") k = "warmup_floor_fraction";
  return k;
}

std::string value_error_message(const InputError& e) {
  std::string msg = e.what();
  std::string prefix;
  if (!e.where().empty()) prefix += e.where() + ": ";
  if (!e.field().empty()) prefix += e.field() + ": ";
  if (msg.starts_with(prefix)) msg = msg.substr(prefix.size());
  if (e.field().empty()) return msg;
  return keyword_of(e.field()) + ": " + msg;
}

}  // namespace edgc::torch_ext
