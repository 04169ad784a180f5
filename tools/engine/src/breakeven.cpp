// `edgc breakeven` (breakeven.hpp): a bracketed secant search over whole simulate runs.
#include "edgc/engine/breakeven.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "breakeven_search.hpp"
#include "edgc/core/error.hpp"
#include "edgc/engine/simulation.hpp"
#include "edgc/results/result_document.hpp"
#include "edgc/results/verdict.hpp"
#include "edgc/scenario/config.hpp"
#include "sweep_keys.hpp"

namespace edgc::engine {
namespace {

constexpr const char* kAssumption =
    "the saving is monotone in the varied key over [lo, hi]: the target is sought only between the savings at lo and "
    "hi, and each crossing is bracketed by two simulated values";

std::string format_value(double x, double step) { return format_search_value(x, step); }

// A saving this close to 0 (percentage points) counts as 0: well below any figure printed at 3 significant digits.
constexpr double kZeroTolerancePct = 1e-4;

// The key's numeric value in the scenario after the overrides, when it has one.
std::optional<double> scenario_value(const BreakevenRequest& r) {
  const scenario::Scenario sc = scenario::load_scenario(r.scenario, r.sets);
  const nlohmann::json* v = &sc.json();
  std::string rest = r.key;
  while (v != nullptr) {
    const std::size_t dot = rest.find('.');
    const std::string part = rest.substr(0, dot);
    v = v->is_object() && v->contains(part) ? &(*v)[part] : nullptr;
    if (dot == std::string::npos) break;
    rest = rest.substr(dot + 1);
  }
  if (v != nullptr && v->is_number()) return v->get<double>();
  return std::nullopt;
}

}  // namespace

BreakevenOutcome run_breakeven(const BreakevenRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  BreakevenOutcome out;
  out.request = request;
  BreakevenRequest& r = out.request;
  if (r.key.empty())
    throw UsageError("--vary", "is empty: name a scenario key, e.g. cluster.inter_node.nic_bandwidth_GBps");
  if (r.policy.empty() || r.policy == "none")
    throw UsageError("--policy",
                     "must name a compressing policy (edgc, edgc-megatron, static, …), got '" + r.policy + "'");
  if (!std::isfinite(r.target_pct) || r.target_pct <= 0.0 || r.target_pct >= 100.0)
    throw UsageError("--target",
                     "must be a saving in % of training time, 0 < P < 100, got " + std::to_string(r.target_pct));
  if (!(r.step >= 0.0) || !std::isfinite(r.step)) throw UsageError("--step", "must be >= 0");
  if (!(r.tolerance_pct >= 0.0)) throw UsageError("--tolerance", "must be >= 0 percentage points (0: the default)");
  if (r.tolerance_pct == 0.0) r.tolerance_pct = std::min(0.5, 0.05 * r.target_pct);
  if (r.max_steps < 1) throw UsageError("--max-steps", "must be >= 1");
  check_spec_keys(r.scenario, r.scenario, {{"--vary", r.key, r.key + "=0"}});
  out.scenario_value = scenario_value(r);
  if (!r.lo || !r.hi) {
    if (!out.scenario_value || !(*out.scenario_value > 0.0))
      throw UsageError(r.lo ? "--hi" : "--lo", "is needed: " + r.key + " has no positive number in " + r.scenario +
                                                   " to put a default bracket around");
    if (!r.lo) r.lo = *out.scenario_value / BreakevenRequest::kDefaultSpan;
    if (!r.hi) r.hi = *out.scenario_value * BreakevenRequest::kDefaultSpan;
  }
  if (r.step > 0.0) {
    r.lo = std::max(r.step, std::round(*r.lo / r.step) * r.step);
    r.hi = std::round(*r.hi / r.step) * r.step;
  }
  if (!std::isfinite(*r.lo) || !std::isfinite(*r.hi) || !(*r.lo < *r.hi))
    throw UsageError("--lo", "must be below --hi, got [" + format_value(*r.lo, r.step) + ", " +
                                 format_value(*r.hi, r.step) + "]" + (r.step > 0.0 ? " after rounding to --step" : ""));

  BreakevenSearch search(r, {r.policy});
  const BreakevenPoint lo = BreakevenSearch::point(search.at(*r.lo), r.policy);
  const BreakevenPoint hi = BreakevenSearch::point(search.at(*r.hi), r.policy);
  if ((lo.saving_pct - r.target_pct) * (hi.saving_pct - r.target_pct) > 0.0)
    throw UsageError("--target",
                     "the bracket does not contain a " + results::fmt_sig3(r.target_pct) + " % saving: " + r.policy +
                         " saves " + results::fmt_sig3(lo.saving_pct) + " % at " + r.key + "=" +
                         format_value(*r.lo, r.step) + " and " + results::fmt_sig3(hi.saving_pct) + " % at " +
                         format_value(*r.hi, r.step) +
                         " (assuming the saving is monotone in the key, widen --lo/--hi or lower --target)");
  out.target = search.crossing(r.policy, r.target_pct, r.tolerance_pct, lo, hi);
  out.target_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Savings flatten towards 0 on the far side (a fast network leaves little to save or lose), so a saving near 0 says
  // little about where it crosses: the zero is bracketed on sign down to value_tolerance (or max_steps).
  out.zero = search.crossing(r.policy, 0.0, kZeroTolerancePct, lo, hi);
  out.curve = search.curve(r.policy);
  int sign = 0;
  for (std::size_t i = 1; i < out.curve.size(); ++i) {
    const double d = out.curve[i].saving_pct - out.curve[i - 1].saving_pct;
    const int s = d > 0.0 ? 1 : (d < 0.0 ? -1 : 0);
    if (s != 0 && sign != 0 && s != sign) out.monotone = false;
    if (s != 0) sign = s;
  }
  out.warnings = search.warnings();
  if (!out.monotone)
    out.warnings.push_back("the simulated savings are not monotone in " + r.key +
                           ": the found values are one crossing each, others may exist in the bracket");
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

namespace {

nlohmann::ordered_json crossing_json(const BreakevenCrossing& c) {
  nlohmann::ordered_json j;
  j["saving_pct_sought"] = c.sought_pct;
  if (!c.found) {
    j["value"] = nullptr;
    return j;
  }
  j["value"] = c.value;
  j["saving_pct"] = c.saving_pct;
  j["converged"] = c.converged;
  j["bracket"] = {c.bracket_lo, c.bracket_hi};
  j["simulations"] = c.simulations;
  return j;
}

}  // namespace

std::string breakeven_json(const BreakevenOutcome& o) {
  const BreakevenRequest& r = o.request;
  nlohmann::ordered_json j;
  j["schema"] = "edgc.breakeven/1";
  j["scenario"] = r.scenario;
  j["sets"] = r.sets;
  j["key"] = r.key;
  j["policy"] = r.policy;
  j["baseline"] = "none";
  j["saving"] = "100 x (1 - training time of policy / training time of none), % (positive: the policy is faster)";
  j["assumption"] = kAssumption;
  j["scenario_value"] = o.scenario_value ? nlohmann::ordered_json(*o.scenario_value) : nlohmann::ordered_json();
  j["lo"] = *r.lo;
  j["hi"] = *r.hi;
  j["step"] = r.step;
  j["tolerance_pct"] = r.tolerance_pct;
  j["zero_tolerance_pct"] = kZeroTolerancePct;
  j["value_tolerance"] = r.value_tolerance;
  j["max_steps"] = r.max_steps;
  j["target"] = crossing_json(o.target);
  j["zero"] = crossing_json(o.zero);
  j["monotone"] = o.monotone;
  j["simulations"] = o.curve.size();
  j["target_wall_s"] = o.target_wall_s;
  j["wall_s"] = o.wall_s;
  nlohmann::ordered_json curve = nlohmann::ordered_json::array();
  for (const BreakevenPoint& p : o.curve)
    curve.push_back({{"value", p.value},
                     {"none_training_time_s", p.none_training_time_s},
                     {"policy_training_time_s", p.policy_training_time_s},
                     {"saving_pct", p.saving_pct}});
  j["curve"] = curve;
  j["warnings"] = o.warnings;
  return j.dump(2) + "\n";
}

std::string breakeven_csv(const BreakevenOutcome& o) {
  std::ostringstream s;
  s.precision(10);
  s << "value,none_training_time_s," << o.request.policy << "_training_time_s,saving_pct\n";
  for (const BreakevenPoint& p : o.curve)
    s << p.value << "," << p.none_training_time_s << "," << p.policy_training_time_s << "," << p.saving_pct << "\n";
  return s.str();
}

std::string breakeven_text(const BreakevenOutcome& o) {
  const BreakevenRequest& r = o.request;
  std::ostringstream s;
  const auto line = [&](const BreakevenCrossing& c, const std::string& what) {
    s << what << ": ";
    if (!c.found) {
      s << "not in [" << format_value(*r.lo, r.step) << ", " << format_value(*r.hi, r.step) << "]\n";
      return;
    }
    s << r.key << " ≈ " << results::fmt_sig3(c.value) << " (saves " << results::fmt_sig3(c.saving_pct) << " %; between "
      << results::fmt_sig3(c.bracket_lo) << " and " << results::fmt_sig3(c.bracket_hi)
      << (c.converged ? "" : "; not converged, raise --max-steps") << ")\n";
  };
  s << r.policy << " vs none, varying " << r.key << " over [" << format_value(*r.lo, r.step) << ", "
    << format_value(*r.hi, r.step) << "]";
  if (o.scenario_value) s << " (scenario: " << results::fmt_sig3(*o.scenario_value) << ")";
  s << "\nassumption: " << kAssumption << "\n";
  line(o.target, "saves " + results::fmt_sig3(r.target_pct) + " %");
  line(o.zero, "saves 0 %");
  s << "\n" << r.key << "  saving %\n";
  for (const BreakevenPoint& p : o.curve)
    s << "  " << results::fmt_sig3(p.value) << "  " << results::fmt_sig3(p.saving_pct) << "\n";
  s << "\n"
    << o.curve.size() << " simulate runs in " << results::fmt_sig3(o.wall_s) << " s (the target's in "
    << results::fmt_sig3(o.target_wall_s) << " s)";
  if (!o.monotone) s << "; the savings are NOT monotone in the key";
  s << "\n";
  return s.str();
}

}  // namespace edgc::engine
