// simulate's bandwidth curve and the bandwidth at which each policy would pay (bandwidth.hpp).
#include "edgc/engine/bandwidth.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "breakeven_search.hpp"
#include "edgc/core/policy_registry.hpp"
#include "edgc/scenario/cluster_config.hpp"
#include "edgc/scenario/config.hpp"

namespace edgc::engine {
namespace {

using nlohmann::ordered_json;

constexpr const char* kMethod =
    "whole simulate runs of none and every compared policy at other NIC bandwidths (fidelity not measured, no "
    "break-even probe); per policy that does not pay, probes at the bandwidth a linear model of the run's breakdown "
    "predicts (exposed data-parallel sync proportional to 1 / bandwidth, the rest fixed), then edgc breakeven's "
    "bracketed secant search; the saving is assumed monotone in the bandwidth";
// Model-guided probes per policy before the bracket end is simulated.
constexpr int kModelProbes = 2;

// The point of the scenario's own run: no simulation.
SearchPoint own_point(double value, const results::ResultDocument& result) {
  SearchPoint p;
  p.value = value;
  for (const results::ResultRun& r : result.runs)
    p.runs[r.policy] = {r.training_time_s, r.iteration_time_s, r.breakdown ? r.breakdown->exposed_dp_comm_s : 0.0};
  return p;
}

// The bandwidth at which `policy` saves `saving` (a fraction) by the linear model anchored at `p`: at bandwidth
// p.value / x, none's and the policy's exposed DP sync take x times as long and the rest of each iteration stays.
// NaN when the model has no such bandwidth below p.value.
double model_guess(const SearchPoint& p, const std::string& policy, double saving) {
  const SearchRun& n = p.runs.at("none");
  const SearchRun& q = p.runs.at(policy);
  const double a = n.exposed_dp_comm_s;
  const double b = q.exposed_dp_comm_s;
  const double x = ((n.iteration_time_s - a) * (1.0 - saving) - (q.iteration_time_s - b)) / (b - a * (1.0 - saving));
  return std::isfinite(x) && x > 1.0 ? p.value / x : std::numeric_limits<double>::quiet_NaN();
}

// The linear model's saving (%) of `policy` at bandwidth p.value / x.
double model_saving_pct(const SearchPoint& p, const std::string& policy, double x) {
  const SearchRun& n = p.runs.at("none");
  const SearchRun& q = p.runs.at(policy);
  const double none = n.iteration_time_s + (x - 1.0) * n.exposed_dp_comm_s;
  return 100.0 * (1.0 - (q.iteration_time_s + (x - 1.0) * q.exposed_dp_comm_s) / none);
}
constexpr int kModelCurvePoints = 24;

struct PolicySearch {
  BreakevenCrossing crossing;
  double lowest_saving_pct = std::numeric_limits<double>::quiet_NaN();  ///< at the bracket's low end, when simulated
};

// The bandwidth below the scenario's at which `policy` (not paying there) saves `target` %.
PolicySearch search_policy(BreakevenSearch& s, const BreakevenRequest& r, const std::string& policy, double target,
                           SearchPoint anchor) {
  PolicySearch out;
  BreakevenPoint below = BreakevenSearch::point(anchor, policy);
  std::optional<BreakevenPoint> above;
  // Points simulated for other policies first: the closest one within tolerance settles it, and the tightest pair
  // around the target is the bracket (policies with similar curves then cost nothing more).
  std::optional<BreakevenPoint> near;
  for (const SearchPoint& sp : s.points()) {
    const BreakevenPoint p = BreakevenSearch::point(sp, policy);
    if (std::abs(p.saving_pct - target) <= r.tolerance_pct &&
        (!near || std::abs(p.saving_pct - target) < std::abs(near->saving_pct - target)))
      near = p;
    if (p.saving_pct < target && p.saving_pct > below.saving_pct) {
      below = p;
      anchor = sp;
    }
    if (p.saving_pct >= target && (!above || p.saving_pct < above->saving_pct)) above = p;
  }
  if (near) {
    out.crossing = {target, true, true, near->value, near->saving_pct, near->value, near->value, 0};
    return out;
  }
  int probes = 0;
  for (int k = 0; k < kModelProbes && !above; ++k) {
    const double g = model_guess(anchor, policy, target / 100.0);
    if (!(g > *r.lo && g < anchor.value)) break;
    anchor = s.at(g);
    ++probes;
    const BreakevenPoint p = BreakevenSearch::point(anchor, policy);
    if (p.saving_pct >= target) {
      above = p;
    } else {
      below = p;
      if (target - p.saving_pct <= r.tolerance_pct) {  // close enough from below: no bracket needed
        out.crossing = {target, true, true, p.value, p.saving_pct, p.value, p.value, probes};
        return out;
      }
    }
  }
  if (!above) {
    const BreakevenPoint low = BreakevenSearch::point(s.at(*r.lo), policy);
    ++probes;
    out.lowest_saving_pct = low.saving_pct;
    if (low.saving_pct < target) {
      out.crossing.sought_pct = target;
      out.crossing.simulations = probes;
      return out;
    }
    above = low;
  }
  out.crossing = s.crossing(policy, target, r.tolerance_pct, below, *above);
  out.crossing.simulations += probes;
  return out;
}

// The crossing read again from every simulated point (other policies' searches may have landed closer): the point
// closest to the target and the tightest pair around it.
void settle(BreakevenCrossing& c, const BreakevenSearch& s, const BreakevenRequest& r, const std::string& policy) {
  if (!c.found) return;
  std::optional<BreakevenPoint> below, above;
  for (const BreakevenPoint& p : s.curve(policy)) {
    if (p.saving_pct < c.sought_pct && (!below || p.saving_pct > below->saving_pct)) below = p;
    if (p.saving_pct >= c.sought_pct && (!above || p.saving_pct < above->saving_pct)) above = p;
    if (std::abs(p.saving_pct - c.sought_pct) < std::abs(c.saving_pct - c.sought_pct)) {
      c.value = p.value;
      c.saving_pct = p.saving_pct;
    }
  }
  if (below && above) {
    c.bracket_lo = std::min(below->value, above->value);
    c.bracket_hi = std::max(below->value, above->value);
  }
  c.converged = c.converged || std::abs(c.saving_pct - c.sought_pct) <= r.tolerance_pct ||
                (below && above && c.bracket_hi - c.bracket_lo <= r.value_tolerance * c.bracket_hi);
}

ordered_json crossing_json(const std::string& policy, bool pays, const PolicySearch& p) {
  ordered_json j = {{"policy", policy}, {"pays_at_scenario_value", pays}};
  if (pays) return j;
  const BreakevenCrossing& c = p.crossing;
  j["found"] = c.found;
  j["value"] = c.found ? ordered_json(c.value) : ordered_json();
  j["saving_pct"] = c.found ? ordered_json(c.saving_pct) : ordered_json();
  j["converged"] = c.converged;
  j["bracket"] = c.found ? ordered_json{c.bracket_lo, c.bracket_hi} : ordered_json();
  j["simulations"] = c.simulations;
  j["saving_pct_at_lo"] = std::isfinite(p.lowest_saving_pct) ? ordered_json(p.lowest_saving_pct) : ordered_json();
  return j;
}

}  // namespace

void add_bandwidth_section(const SimulateRequest& request, results::ResultDocument& result) {
  if (!result.cluster || result.cluster->nodes < 2 || !result.parallelism || result.parallelism->dp < 2) return;
  std::vector<std::string> policies;
  bool has_none = false;
  for (const results::ResultRun& r : result.runs) {
    if (core::is_baseline_policy(r.policy))
      has_none = true;
    else
      policies.push_back(r.policy);
  }
  if (!has_none || policies.empty()) return;
  scenario::Scenario sc = scenario::load_scenario(request.scenario, request.sets);
  const sim::ClusterSpec cluster = scenario::read_cluster(sc);
  const double v0 = cluster.nic_bandwidth_GBps;
  if (!(v0 > 0.0) || cluster.nics_per_node < 1) return;

  BreakevenRequest r;
  r.scenario = request.scenario;
  r.sets = request.sets;
  r.key = kBandwidthKey;
  r.target_pct = 100.0 * request.min_saving;
  r.lo = v0 / kBandwidthSpan;
  r.hi = v0;
  r.tolerance_pct = std::min(0.5, 0.05 * r.target_pct);
  r.max_steps = kBandwidthSteps;
  r.jobs = request.jobs;
  BreakevenSearch search(r, policies, {"fidelity.measure=false"});
  const SearchPoint own = own_point(v0, result);
  search.add(own);

  std::vector<PolicySearch> searches(policies.size());
  std::vector<bool> pays(policies.size());
  bool searched = false;
  for (std::size_t i = 0; i < policies.size(); ++i) {
    pays[i] = BreakevenSearch::point(own, policies[i]).saving_pct > r.target_pct;
    if (pays[i]) continue;
    searches[i] = search_policy(search, r, policies[i], r.target_pct, own);
    searched = true;
  }
  ordered_json found = ordered_json::array();
  for (std::size_t i = 0; i < policies.size(); ++i) {
    settle(searches[i].crossing, search, r, policies[i]);
    found.push_back(crossing_json(policies[i], pays[i], searches[i]));
  }
  if (!searched) {  // every policy pays: the curve's shape around the scenario's bandwidth
    search.at(v0 / 4.0);
    search.at(v0 * 4.0);
  }
  // The linear model's curve from the scenario's own run, log-spaced from lo to 4x the scenario's bandwidth: the shape
  // between the few simulated points (a guide, not a prediction the verdict uses).
  ordered_json model = ordered_json::array();
  for (int k = 0; k <= kModelCurvePoints; ++k) {
    const double v = *r.lo * std::pow(4.0 * kBandwidthSpan, static_cast<double>(k) / kModelCurvePoints);
    ordered_json savings = ordered_json::object();
    for (const std::string& p : policies) savings[p] = model_saving_pct(own, p, v0 / v);
    model.push_back({{"value", v}, {"saving_pct", savings}});
  }
  ordered_json curve = ordered_json::array();
  for (const SearchPoint& pt : search.points()) {
    ordered_json savings = ordered_json::object();
    for (const std::string& p : policies) savings[p] = BreakevenSearch::point(pt, p).saving_pct;
    curve.push_back({{"value", pt.value}, {"saving_pct", savings}});
  }
  result.sections["bandwidth"] = {{"key", kBandwidthKey},
                                  {"unit", "GB/s per NIC, per direction"},
                                  {"scenario_value", v0},
                                  {"gpus_per_nic", static_cast<double>(cluster.gpus_per_node) / cluster.nics_per_node},
                                  {"target_saving_pct", r.target_pct},
                                  {"tolerance_pct", r.tolerance_pct},
                                  {"lo", *r.lo},
                                  {"method", kMethod},
                                  {"simulations", static_cast<std::int64_t>(search.points().size()) - 1},
                                  {"policies", found},
                                  {"curve", curve},
                                  {"model_curve", model}};
}

}  // namespace edgc::engine
