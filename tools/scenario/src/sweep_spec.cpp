#include "edgc/scenario/sweep_spec.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "edgc/core/error.hpp"
#include "edgc/core/json_depth.hpp"
#include "edgc/core/random.hpp"
#include "edgc/scenario/compression_config.hpp"
#include "edgc/scenario/config.hpp"

namespace edgc::scenario {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::int64_t kMaxPoints = 10'000'000;

// A value in "key=value" form: strings verbatim unless they would parse as other JSON, which keeps them strings.
std::string assignment(const std::string& key, const json& value) {
  if (value.is_string()) {
    const std::string text = value.get<std::string>();
    const json reparsed = json::parse(text, nullptr, false);
    return key + "=" + (reparsed.is_discarded() ? text : value.dump());
  }
  return key + "=" + value.dump();
}

void check_key(const std::string& where, const std::string& field, const std::string& key) {
  if (key.empty() || key.front() == '.' || key.back() == '.' || key.find("..") != std::string::npos ||
      key.find('=') != std::string::npos)
    throw ConfigError(where, field, "'" + key + "' is not a dotted scenario key");
}

double number_at(const std::string& where, const std::string& field, const json& v) {
  if (!v.is_number() || !std::isfinite(v.get<double>()))
    throw ConfigError(where, field, "expected a number, got " + v.dump());
  return v.get<double>();
}

SweepAxis read_axis(const std::string& where, const json& a, std::size_t i, bool random) {
  const std::string at = "axes[" + std::to_string(i) + "]";
  if (!a.is_object()) throw ConfigError(where, at, "expected an object with key and values (or range)");
  for (auto it = a.begin(); it != a.end(); ++it)
    if (std::set<std::string>{"key", "values", "labels", "range", "scale", "integer"}.count(it.key()) == 0U)
      throw ConfigError(where, at + "." + it.key(), "unknown key");
  SweepAxis axis;
  if (!a.contains("key") || !a["key"].is_string()) throw ConfigError(where, at + ".key", "expected a string");
  axis.key = a["key"].get<std::string>();
  check_key(where, at + ".key", axis.key);
  const bool has_values = a.contains("values");
  const bool has_range = a.contains("range");
  if (has_values == has_range) throw ConfigError(where, at, "give exactly one of values and range");
  if (has_values) {
    const json& v = a["values"];
    if (!v.is_array() || v.empty()) throw ConfigError(where, at + ".values", "expected a non-empty array");
    const bool bundle = v.front().is_object();
    for (std::size_t j = 0; j < v.size(); ++j) {
      const std::string vf = at + ".values[" + std::to_string(j) + "]";
      if (v[j].is_object() != bundle) throw ConfigError(where, vf, "mix of objects (bundles) and plain values");
      if (v[j].is_array() || v[j].is_null())
        throw ConfigError(where, vf, "expected a number, string, boolean or object");
      if (bundle) {
        if (v[j].empty()) throw ConfigError(where, vf, "a bundle needs at least one key");
        for (auto it = v[j].begin(); it != v[j].end(); ++it) {
          check_key(where, vf + "." + it.key(), it.key());
          if (it->is_array() || it->is_object() || it->is_null())
            throw ConfigError(where, vf + "." + it.key(), "expected a number, string or boolean");
        }
      }
      axis.values.push_back(v[j]);
    }
    if (a.contains("labels")) {
      const json& l = a["labels"];
      if (!l.is_array() || l.size() != v.size())
        throw ConfigError(where, at + ".labels", "expected one string per value (" + std::to_string(v.size()) + ")");
      for (std::size_t j = 0; j < l.size(); ++j) {
        if (!l[j].is_string()) throw ConfigError(where, at + ".labels[" + std::to_string(j) + "]", "expected a string");
        axis.labels.push_back(l[j].get<std::string>());
      }
    }
    if (a.contains("scale") || a.contains("integer"))
      throw ConfigError(where, at, "scale and integer go with range, not values");
    return axis;
  }
  if (!random) throw ConfigError(where, at + ".range", "grid mode needs listed values (range is for mode random)");
  const json& r = a["range"];
  if (!r.is_array() || r.size() != 2) throw ConfigError(where, at + ".range", "expected [low, high]");
  axis.ranged = true;
  axis.lo = number_at(where, at + ".range[0]", r[0]);
  axis.hi = number_at(where, at + ".range[1]", r[1]);
  if (!(axis.lo <= axis.hi)) throw ConfigError(where, at + ".range", "low must not exceed high");
  if (a.contains("scale")) {
    const json& s = a["scale"];
    if (!s.is_string() || (s != "linear" && s != "log"))
      throw ConfigError(where, at + ".scale", "expected \"linear\" or \"log\", got " + s.dump());
    axis.log_scale = s == "log";
  }
  if (axis.log_scale && !(axis.lo > 0.0)) throw ConfigError(where, at + ".range", "a log scale needs low > 0");
  if (a.contains("integer")) {
    if (!a["integer"].is_boolean()) throw ConfigError(where, at + ".integer", "expected true or false");
    axis.integer = a["integer"].get<bool>();
  }
  // An integer axis draws int64 values from doubles: its bounds stay where doubles hold every integer.
  if (axis.integer && (std::abs(axis.lo) > kJsonExactIntegerLimit || std::abs(axis.hi) > kJsonExactIntegerLimit))
    throw ConfigError(where, at + ".range", "an integer range must lie within ±2^53");
  if (axis.integer && std::ceil(axis.lo) > std::floor(axis.hi))
    throw ConfigError(where, at + ".range", "holds no integer");
  return axis;
}

// Applies axis value `v` (index j, or a drawn number) to a point.
void apply(const SweepAxis& axis, const json& v, const std::string& label, SweepPoint& p) {
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) p.sets.push_back(assignment(it.key(), *it));
    p.params[axis.key] = label.empty() ? nlohmann::ordered_json(v) : nlohmann::ordered_json(label);
  } else {
    p.sets.push_back(assignment(axis.key, v));
    p.params[axis.key] = v;
  }
}

}  // namespace

SweepSpec read_sweep_spec(const std::string& path) {
  Scenario sc = Scenario::load(path, "sweep spec");  // JSON errors name the file
  const std::string w = sc.where();
  const json& d = sc.json();
  SweepSpec spec;
  spec.path = path;
  spec.document = nlohmann::ordered_json::parse(d.dump());
  if (!d.contains("base") && (d.contains("model") || d.contains("parallelism") || d.contains("cluster")))
    throw ConfigError(
        w, "base", "missing: this file is a scenario, not a sweep spec (a sweep spec names its scenario in \"base\")");
  for (auto it = d.begin(); it != d.end(); ++it)
    if (std::set<std::string>{"description", "base", "set", "policies", "mode", "samples", "seed", "repeats", "axes",
                              "max_error"}
            .count(it.key()) == 0U)
      throw ConfigError(w, it.key(), "unknown key");
  spec.description = sc.string("description", "");
  const std::string base = sc.string("base", "");
  if (base.empty()) throw ConfigError(w, "base", "missing: the base scenario file");
  spec.base = sc.resolve(base);
  std::error_code ec;  // not the throwing overload: a name too long for the OS is an input error like any other
  if (!fs::is_regular_file(spec.base, ec))
    throw ConfigError(w, "base", "'" + spec.base + "' is not a readable file" + (ec ? " (" + ec.message() + ")" : ""));
  if (d.contains("set")) {
    if (!d["set"].is_object()) throw ConfigError(w, "set", "expected an object of key: value");
    for (auto it = d["set"].begin(); it != d["set"].end(); ++it) {
      check_key(w, "set." + it.key(), it.key());
      spec.sets.push_back(assignment(it.key(), *it));
    }
  }
  if (d.contains("policies")) {
    const json& p = d["policies"];
    if (p.is_string()) {
      spec.policies = p.get<std::string>();
    } else if (p.is_array()) {
      for (std::size_t i = 0; i < p.size(); ++i) {
        if (!p[i].is_string()) throw ConfigError(w, "policies[" + std::to_string(i) + "]", "expected a string");
        spec.policies += (i > 0 ? "," : "") + p[i].get<std::string>();
      }
    } else {
      throw ConfigError(w, "policies", "expected \"none,edgc\" or [\"none\", \"edgc\"]");
    }
    (void)policies_with_baseline(spec.policies, w, "policies");  // unknown names fail before any point runs
  }
  const std::string mode = sc.string("mode", "grid");
  if (mode != "grid" && mode != "random") throw ConfigError(w, "mode", "expected grid or random, got '" + mode + "'");
  spec.random = mode == "random";
  if (spec.random) {
    spec.samples = sc.integer("samples", 0);
    if (spec.samples < 1 || spec.samples > kMaxPoints)
      throw ConfigError(w, "samples", "mode random needs 1 <= samples <= " + std::to_string(kMaxPoints));
    spec.seed = sc.seed("seed", 0);
  } else if (d.contains("samples") || d.contains("seed")) {
    throw ConfigError(w, d.contains("samples") ? "samples" : "seed", "only for mode random");
  }
  const std::int64_t repeats = sc.integer("repeats", 1);
  if (repeats < 1 || repeats > 1000)
    throw ConfigError(w, "repeats", "must be in 1..1000, got " + std::to_string(repeats));
  spec.repeats = static_cast<int>(repeats);
  if (d.contains("max_error")) {
    spec.max_error = sc.number("max_error", 0.0);
    if (!(*spec.max_error > 0.0))
      throw ConfigError(w, "max_error", "must be > 0 (a relative error of the averaged gradient, e.g. 0.2)");
  }
  if (!d.contains("axes") || !d["axes"].is_array() || d["axes"].empty())
    throw ConfigError(w, "axes", "expected a non-empty array of axes");
  std::set<std::string> keys;
  std::int64_t grid = 1;
  for (std::size_t i = 0; i < d["axes"].size(); ++i) {
    SweepAxis a = read_axis(w, d["axes"][i], i, spec.random);
    if (!keys.insert(a.key).second)
      throw ConfigError(w, "axes[" + std::to_string(i) + "].key", "'" + a.key + "' repeats an axis");
    if (!spec.random) {
      grid *= static_cast<std::int64_t>(a.values.size());
      if (grid > kMaxPoints)
        throw ConfigError(w, "axes", "the grid has more than " + std::to_string(kMaxPoints) + " points");
    }
    spec.axes.push_back(std::move(a));
  }
  return spec;
}

std::int64_t point_count(const SweepSpec& spec) {
  if (spec.random) return spec.samples;
  std::int64_t n = 1;
  for (const SweepAxis& a : spec.axes) n *= static_cast<std::int64_t>(a.values.size());
  return n;
}

std::vector<SweepPoint> expand_points(const SweepSpec& spec) {
  std::vector<SweepPoint> out;
  const auto label_of = [](const SweepAxis& a, std::size_t j) {
    return a.labels.empty() ? std::string() : a.labels[j];
  };
  if (!spec.random) {
    const std::int64_t n = point_count(spec);
    for (std::int64_t k = 0; k < n; ++k) {
      SweepPoint p;
      p.index = k;
      p.params = nlohmann::ordered_json::object();
      p.sets = spec.sets;
      std::int64_t rest = k;
      std::vector<std::size_t> pick(spec.axes.size());
      for (std::size_t i = spec.axes.size(); i-- > 0;) {
        const auto size = static_cast<std::int64_t>(spec.axes[i].values.size());
        pick[i] = static_cast<std::size_t>(rest % size);
        rest /= size;
      }
      for (std::size_t i = 0; i < spec.axes.size(); ++i)
        apply(spec.axes[i], spec.axes[i].values[pick[i]], label_of(spec.axes[i], pick[i]), p);
      out.push_back(std::move(p));
    }
    return out;
  }
  for (std::int64_t k = 0; k < spec.samples; ++k) {
    Rng rng(spec.seed, static_cast<std::uint64_t>(k));
    SweepPoint p;
    p.index = k;
    p.params = nlohmann::ordered_json::object();
    p.sets = spec.sets;
    for (const SweepAxis& a : spec.axes) {
      if (!a.ranged) {
        const std::size_t j = static_cast<std::size_t>(rng.below(a.values.size()));
        apply(a, a.values[j], label_of(a, j), p);
        continue;
      }
      const double u = rng.uniform();
      double x =
          a.log_scale ? std::exp(std::log(a.lo) + u * (std::log(a.hi) - std::log(a.lo))) : a.lo + u * (a.hi - a.lo);
      if (a.integer) {
        x = std::clamp(std::round(x), std::ceil(a.lo), std::floor(a.hi));
        apply(a, json(static_cast<std::int64_t>(x)), "", p);
      } else {
        apply(a, json(x), "", p);
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace edgc::scenario
