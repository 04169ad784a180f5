#pragma once
// Private to sweep and plan: the scenario keys a spec sets, checked before any point runs (sweep_keys.cpp).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "edgc/scenario/sweep_spec.hpp"

namespace edgc::engine {

/// A scenario key a spec sets: the spec's field that sets it (named in errors: axes[i].key, set.KEY, --set, …) and
/// the "key=value" override that applies it.
struct SpecSetting {
  std::string field;
  std::string key;
  std::string assignment;
};

/// "key=value" as a sweep point applies `value` (strings verbatim unless they would parse as other JSON).
std::string assignment(const std::string& key, const nlohmann::json& value);

/// Checks the keys `settings` set on the scenario `base` against what `simulate` reads, on the base with all of
/// them applied: a key outside the sections simulate reads, or one its readers leave unread, is a ConfigError naming
/// `spec_path` and the setting's field; an unknown key of the base scenario itself is one naming the base and the
/// key. Without this a typo is reported by every point after all of them ran (or, outside simulate's sections,
/// never). Values are not judged: a value a point cannot use stays that point's error line.
void check_spec_keys(const std::string& spec_path, const std::string& base, const std::vector<SpecSetting>& settings);

/// check_spec_keys over everything a sweep spec sets: its "set", the --set overrides, and every axis key (each key
/// of every bundle value).
void check_sweep_keys(const scenario::SweepSpec& spec);

}  // namespace edgc::engine
