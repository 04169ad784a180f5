#include "sweep_keys.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/engine/simulation.hpp"
#include "edgc/scenario/cluster_config.hpp"
#include "edgc/scenario/compression_config.hpp"
#include "edgc/scenario/config.hpp"
#include "edgc/scenario/model_config.hpp"

namespace edgc::engine {
namespace {

using nlohmann::json;

// The sections whose readers (edgc/scenario/simulate_config.hpp, read_trace_path) check values as they read them, so
// they cannot be asked for their keys here (bad values are left to the points): their keys. Keep in step with them (a
// key missing here makes a sweep over it fail up front with "unknown key"; tests/tools/engine/sweep_keys_test.cpp
// scans the readers' sources for them).
const std::set<std::string> kSimulateOwnKeys = {"run.iterations",
                                                "trace.path",
                                                "trace.error_path",
                                                "entropy.source",
                                                "entropy.bins_per_sigma",
                                                "entropy.backend",
                                                "entropy.synthetic.start_nats",
                                                "entropy.synthetic.end_nats",
                                                "entropy.synthetic.decay_fraction",
                                                "entropy.synthetic.stage_step_nats",
                                                "entropy.synthetic.noise_nats",
                                                "entropy.synthetic.seed",
                                                "simulate.composition",
                                                "simulate.policies",
                                                "variability.compute_jitter_cv",
                                                "variability.straggler_probability",
                                                "variability.straggler_slowdown",
                                                "variability.seed"};
const std::vector<std::string> kOwnSections = {"run", "trace", "entropy", "simulate", "variability"};

std::vector<SpecSetting> settings_of(const scenario::SweepSpec& spec) {
  std::vector<SpecSetting> out;
  for (const std::string& s : spec.sets) {
    const std::string key = s.substr(0, s.find('='));
    const bool command_line =
        std::find(spec.command_line_sets.begin(), spec.command_line_sets.end(), s) != spec.command_line_sets.end();
    out.push_back({command_line ? "--set" : "set." + key, key, s});
  }
  for (std::size_t i = 0; i < spec.axes.size(); ++i) {
    const scenario::SweepAxis& a = spec.axes[i];
    const std::string at = "axes[" + std::to_string(i) + "]";
    if (a.ranged) {
      const json lo = a.integer ? json(static_cast<std::int64_t>(std::ceil(a.lo))) : json(a.lo);
      out.push_back({at + ".key", a.key, assignment(a.key, lo)});
      continue;
    }
    if (!a.values.front().is_object()) {
      out.push_back({at + ".key", a.key, assignment(a.key, a.values.front())});
      continue;
    }
    for (std::size_t j = 0; j < a.values.size(); ++j)
      for (auto it = a.values[j].begin(); it != a.values[j].end(); ++it)
        out.push_back({at + ".values[" + std::to_string(j) + "]." + it.key(), it.key(), assignment(it.key(), *it)});
  }
  return out;
}

bool under(const std::string& leaf, const std::string& prefix) {
  return leaf == prefix || leaf.rfind(prefix + ".", 0) == 0;
}

// `leaf` is not a key simulate reads: the spec's field that set it, else the base scenario (or its includes).
[[noreturn]] void unknown(const std::string& spec_path, const std::vector<SpecSetting>& settings,
                          const std::string& where, const std::string& leaf) {
  for (const bool exact : {true, false})
    for (const SpecSetting& s : settings)
      if (exact ? leaf == s.key : under(leaf, s.key))
        throw ConfigError(spec_path, s.field,
                          "'" + leaf + "' is not a scenario key simulate reads (unknown key; no point was run)");
  throw ConfigError(where, leaf, "unknown key (found before the sweep ran any point)");
}

bool is_unknown_key(const InputError& e) {
  const std::string what = e.what();
  const std::string tail = ": unknown key";
  return !e.field().empty() && what.size() >= tail.size() &&
         what.compare(what.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::string assignment(const std::string& key, const json& value) {
  if (value.is_string()) {
    const std::string text = value.get<std::string>();
    return key + "=" + (json::parse(text, nullptr, false).is_discarded() ? text : value.dump());
  }
  return key + "=" + value.dump();
}

void check_spec_keys(const std::string& spec_path, const std::string& base, const std::vector<SpecSetting>& settings) {
  for (const SpecSetting& s : settings) {
    const std::string section = s.key.substr(0, s.key.find('.'));
    const std::vector<std::string>& sections = simulate_sections();
    if (std::find(sections.begin(), sections.end(), section) == sections.end()) {
      std::string known;
      for (const std::string& k : sections) known += (known.empty() ? "" : ", ") + k;
      throw ConfigError(spec_path, s.field,
                        "'" + s.key + "': simulate reads no section '" + section + "' (it reads " + known + ")");
    }
  }
  std::vector<std::string> sets;
  for (const SpecSetting& s : settings) sets.push_back(s.assignment);
  scenario::Scenario sc;
  try {
    sc = scenario::load_scenario(base, sets);
  } catch (const InputError&) {
    return;  // an include a value names cannot be read: the points that use it say so
  }
  sc.reject_unknown_sections(simulate_sections());  // a misspelt section of the base fails every point alike
  // Each reader marks the keys it reads; a reader that stops at a bad value leaves its keys unjudged.
  sim::GpuSpec gpu;
  const auto judge = [&](const std::vector<std::string>& prefixes, const std::function<void()>& read) {
    try {
      read();
      sc.reject_unknown(prefixes);
    } catch (const InputError& e) {
      if (is_unknown_key(e)) unknown(spec_path, settings, e.where(), e.field());
    }
  };
  judge({"cluster"}, [&] { gpu = scenario::read_cluster(sc).gpu; });
  judge({"network"}, [&] { scenario::read_network(sc); });
  judge({"model", "parallelism", "compute"}, [&] { scenario::read_model_config(sc, gpu); });
  judge({"compression"}, [&] { scenario::read_compression(sc, /*r_max_auto_allowed=*/true); });
  std::vector<std::string> leaves;
  const std::function<void(const json&, const std::string&)> collect = [&](const json& j, const std::string& at) {
    if (j.is_object() && !j.empty()) {
      for (auto it = j.begin(); it != j.end(); ++it) collect(*it, at.empty() ? it.key() : at + "." + it.key());
    } else {
      leaves.push_back(at);
    }
  };
  collect(sc.json(), "");
  for (const std::string& leaf : leaves)
    for (const std::string& section : kOwnSections)
      if (under(leaf, section) && kSimulateOwnKeys.count(leaf) == 0U) unknown(spec_path, settings, sc.where(), leaf);
}

void check_sweep_keys(const scenario::SweepSpec& spec) { check_spec_keys(spec.path, spec.base, settings_of(spec)); }

}  // namespace edgc::engine
