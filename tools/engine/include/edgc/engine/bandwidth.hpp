#pragma once
// simulate's answer to "at what network would it pay?": result.json's "bandwidth" section, the training-time saving
// of every compared policy against the inter-node NIC bandwidth (cluster.inter_node.nic_bandwidth_GBps), and for each
// policy that does not pay at the scenario's bandwidth the bandwidth at which its saving reaches the verdict's
// threshold (--min-saving). The verdict quotes that figure; the report draws the curve.
//
// Cost, kept small so that every simulate can afford it: the scenario's own run is the first point (no simulation);
// other points are whole simulate runs of none and the compared policies with fidelity.measure false (the gradient
// error does not move the saving) and without the break-even probe. For a policy that does not pay, the first
// probe is the bandwidth a linear model predicts from the run's own breakdown (the exposed data-parallel sync scales
// as 1 / bandwidth, everything else stays): typically within a few percent of the answer, so one or two simulations
// settle it; then `edgc breakeven`'s bracketed secant search (breakeven.hpp) within kBandwidthSteps simulations and
// the same tolerance (the smaller of 0.5 points and 5 % of the threshold), bracketed below by the scenario's
// bandwidth / kBandwidthSpan; each policy's answer is then read again from every simulated point (the searches of
// policies with similar curves help one another). When every policy pays, two points (the bandwidth / 4 and × 4) show
// the curve's shape.
#include <nlohmann/json.hpp>

#include "edgc/engine/simulation.hpp"
#include "edgc/results/result_document.hpp"

namespace edgc::engine {

inline constexpr const char* kBandwidthKey = "cluster.inter_node.nic_bandwidth_GBps";
/// The search looks down to the scenario's NIC bandwidth divided by this.
inline constexpr double kBandwidthSpan = 64.0;
/// Simulations per policy's search beyond the model-guided probes and the bracket end.
inline constexpr int kBandwidthSteps = 6;

/// Adds the "bandwidth" section to `result` (the run of `request`); none when there is nothing to vary: no none run,
/// no compressing policy, a single node, dp 1, or no positive NIC bandwidth in the scenario. Throws what
/// run_simulation throws (a bandwidth the scenario rejects: ConfigError naming the scenario and key).
void add_bandwidth_section(const SimulateRequest& request, results::ResultDocument& result);

}  // namespace edgc::engine
