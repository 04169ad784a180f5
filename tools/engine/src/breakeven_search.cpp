// The search over whole simulate runs shared by `edgc breakeven` and simulate's bandwidth curve
// (breakeven_search.hpp).
#include "breakeven_search.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "edgc/core/error.hpp"
#include "edgc/engine/simulation.hpp"
#include "edgc/results/result_document.hpp"

namespace edgc::engine {

std::string format_search_value(double x, double step) {
  if (step > 0.0 && std::floor(step) == step && std::abs(x) < 9e15) return std::to_string(std::llround(x));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

BreakevenSearch::BreakevenSearch(const BreakevenRequest& request, std::vector<std::string> policies,
                                 std::vector<std::string> extra_sets)
    : r_(request), policies_(std::move(policies)), extra_sets_(std::move(extra_sets)) {}

const SearchPoint& BreakevenSearch::at(double x) {
  const auto it = points_.find(x);
  if (it != points_.end()) return it->second;
  SimulateRequest s;
  s.scenario = r_.scenario;
  s.sets = r_.sets;
  s.sets.insert(s.sets.end(), extra_sets_.begin(), extra_sets_.end());
  const std::string value = format_search_value(x, r_.step);
  s.sets.push_back(r_.key + "=" + value);
  s.policies = "none";
  for (const std::string& p : policies_) s.policies += "," + p;
  s.jobs = r_.jobs;
  s.break_even = false;  // the per-stage break-even rank is not part of the saving (r_max "auto" still finds it)
  SimulateOutcome o;
  try {
    o = run_simulation(s);
  } catch (const InputError& e) {
    throw ConfigError(r_.scenario, r_.key,
                      "at " + value + " (a value breakeven tried in [" + format_search_value(*r_.lo, r_.step) + ", " +
                          format_search_value(*r_.hi, r_.step) + "]): " + e.what() +
                          (r_.step > 0.0 ? "" : "; a key that takes integers or multiples needs --step"));
  }
  for (const std::string& w : o.warnings)
    if (std::find(warnings_.begin(), warnings_.end(), w) == warnings_.end()) warnings_.push_back(w);
  SearchPoint p;
  p.value = x;
  std::vector<std::string> wanted = policies_;
  wanted.insert(wanted.begin(), "none");
  for (const std::string& policy : wanted) {
    const results::ResultRun* run = nullptr;
    for (const results::ResultRun& r : o.result.runs)
      if (r.policy == policy) run = &r;
    if (run == nullptr || !(run->training_time_s > 0.0))
      throw Error("breakeven: the simulation at " + r_.key + "=" + value + " gave no training time for " + policy);
    p.runs[policy] = {run->training_time_s, run->iteration_time_s,
                      run->breakdown ? run->breakdown->exposed_dp_comm_s : 0.0};
  }
  return points_.emplace(x, std::move(p)).first->second;
}

BreakevenPoint BreakevenSearch::point(const SearchPoint& p, const std::string& policy) {
  BreakevenPoint b;
  b.value = p.value;
  b.none_training_time_s = p.runs.at("none").training_time_s;
  b.policy_training_time_s = p.runs.at(policy).training_time_s;
  b.saving_pct = 100.0 * (1.0 - b.policy_training_time_s / b.none_training_time_s);
  return b;
}

BreakevenCrossing BreakevenSearch::crossing(const std::string& policy, double sought, double tolerance,
                                            BreakevenPoint a, BreakevenPoint b) {
  BreakevenCrossing c;
  c.sought_pct = sought;
  if ((a.saving_pct - sought) * (b.saving_pct - sought) > 0.0) return c;
  c.found = true;
  const bool log_space = std::min(a.value, b.value) > 0.0;
  const auto u = [&](double x) { return log_space ? std::log(x) : x; };
  int last_end = -1;
  int same_end = 0;
  const auto closest = [&] { return std::abs(a.saving_pct - sought) <= std::abs(b.saving_pct - sought) ? a : b; };
  for (;;) {
    const BreakevenPoint& best = closest();
    if (std::abs(best.saving_pct - sought) <= tolerance ||
        std::abs(b.value - a.value) <= r_.value_tolerance * std::max(std::abs(a.value), std::abs(b.value))) {
      c.converged = true;
      break;
    }
    if (c.simulations >= r_.max_steps) break;
    // Secant in (log value, saving), kept in the middle 80 % of the bracket; after two steps that moved the same
    // end (a bent curve that the secant keeps undershooting), the midpoint.
    double t = (sought - a.saving_pct) / (b.saving_pct - a.saving_pct);
    t = same_end >= 2 ? 0.5 : std::clamp(std::isfinite(t) ? t : 0.5, 0.1, 0.9);
    const double ux = u(a.value) + t * (u(b.value) - u(a.value));
    double x = log_space ? std::exp(ux) : ux;
    if (r_.step > 0.0) x = std::round(x / r_.step) * r_.step;
    if (x == a.value || x == b.value) {  // the bracket is one granule wide: no value between its ends
      c.converged = true;
      break;
    }
    const BreakevenPoint p = point(at(x), policy);
    ++c.simulations;
    const int end = (p.saving_pct - sought) * (a.saving_pct - sought) > 0.0 ? 0 : 1;
    same_end = end == last_end ? same_end + 1 : 1;
    last_end = end;
    (end == 0 ? a : b) = p;
  }
  const BreakevenPoint& best = closest();
  c.value = best.value;
  c.saving_pct = best.saving_pct;
  c.bracket_lo = std::min(a.value, b.value);
  c.bracket_hi = std::max(a.value, b.value);
  return c;
}

std::vector<SearchPoint> BreakevenSearch::points() const {
  std::vector<SearchPoint> out;
  for (const auto& [x, p] : points_) out.push_back(p);
  return out;
}

std::vector<BreakevenPoint> BreakevenSearch::curve(const std::string& policy) const {
  std::vector<BreakevenPoint> out;
  for (const auto& [x, p] : points_) out.push_back(point(p, policy));
  return out;
}

}  // namespace edgc::engine
