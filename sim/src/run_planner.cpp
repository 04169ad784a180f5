#include "edgc/sim/run_planner.hpp"

#include <algorithm>
#include <cmath>

#include "edgc/core/error.hpp"
#include "edgc/core/window_accumulator.hpp"

namespace edgc::sim {

namespace {

// The bounds of what planning visits, checked before any window is.
void check_plannable(int stages, const core::GdsConfig& gds, std::int64_t iterations, const std::string& where) {
  const core::GradientDataSampler sampler(gds);
  const std::int64_t windows = (iterations + gds.window_iters - 1) / gds.window_iters;
  if (windows > kMaxPlannedWindows)
    throw ConfigError(where, "run.iterations",
                      std::to_string(iterations) + " iterations in windows of " + std::to_string(gds.window_iters) +
                          " make " + std::to_string(windows) + " controller windows, more than " +
                          std::to_string(kMaxPlannedWindows) + ": shorten the run or lengthen compression.window");
  const std::int64_t samples = iterations / std::max<std::int64_t>(1, sampler.period()) * std::max(1, stages);
  if (samples > kMaxPlannedSamples)
    throw ConfigError(where, "run.iterations",
                      std::to_string(iterations) + " iterations sampled every " + std::to_string(sampler.period()) +
                          " over " + std::to_string(stages) + " stages make " + std::to_string(samples) +
                          " entropy samples, more than " + std::to_string(kMaxPlannedSamples) +
                          ": shorten the run or lower compression.alpha");
}

// The controller over the observed windows: each decision holds for the next window.
PolicyRun decide_windows(core::Controller& controller, const core::ControllerConfig& cc,
                         const std::vector<core::WindowObservation>& observed) {
  PolicyRun run;
  run.policy = cc.policy;
  const auto stages = static_cast<std::size_t>(cc.stages);
  core::WindowDecision in_force;  // before any decision: everything uncompressed
  for (const core::WindowObservation& obs : observed) {
    DpSyncPlan plan(stages);
    if (!in_force.warmup) {
      for (std::size_t s = 0; s < stages && s < in_force.stages.size(); ++s)
        plan[s].powersgd_rank = in_force.stages[s].rank;
      // Stage 0 sends no backward message, so its pp_rank has no effect: it takes stage 1's, which keeps a plan
      // whose boundaries share one rank uniform (and so composable from uniform plans, whole_run.hpp).
      for (std::size_t s = 0; s < stages; ++s) plan[s].pp_rank = in_force.pipeline_rank(s == 0 && stages > 1 ? 1 : s);
    }
    const bool compressed =
        std::any_of(plan.begin(), plan.end(), [](const StageSync& x) { return x.powersgd_rank > 0 || x.pp_rank > 0; });
    if (compressed && !run.warmup_end) run.warmup_end = obs.first_iteration;
    run.schedule.append(obs.first_iteration, obs.end_iteration, plan);
    run.sampled_iterations += obs.sampled_iterations;
    if (dp_compressed(plan)) run.sampled_compressed_iterations += obs.sampled_iterations;
    in_force = controller.decide(obs);
    ++run.windows;
    if (!in_force.warmup)
      for (const auto& d : in_force.stages) ++run.bindings[std::string(core::rank_binding_name(d.binding))];
  }
  return run;
}

}  // namespace

std::vector<core::WindowObservation> observe_windows(const core::GdsConfig& gds, int stage_count,
                                                     std::int64_t iterations, const EntropyCurve& source,
                                                     const std::string& where) {
  if (iterations < 1) throw ConfigError(where, "run.iterations", "must be >= 1");
  check_plannable(stage_count, gds, iterations, where);
  const core::GradientDataSampler sampler(gds);
  const auto stages = static_cast<std::size_t>(stage_count);
  std::vector<core::WindowObservation> out;
  core::WindowAccumulator window(stage_count);
  core::WindowAccumulator boundary_window(stage_count);
  const bool boundaries = source.has_boundaries();
  const std::int64_t w_iters = gds.window_iters;
  const auto n = static_cast<double>(iterations);
  for (std::int64_t first = 0, w = 0; first < iterations; first += w_iters, ++w) {
    const std::int64_t end = std::min(iterations, first + w_iters);
    core::WindowObservation obs;
    obs.window = w;
    obs.first_iteration = first;
    obs.end_iteration = end;
    double loss_sum = 0.0;
    int loss_n = 0;
    const std::int64_t period = sampler.period();
    for (std::int64_t it = (first + period - 1) / period * period; it < end; it += period) {
      const double f = static_cast<double>(it) / n;
      ++obs.sampled_iterations;
      for (std::size_t s = 0; s < stages; ++s) window.add(s, source.at(static_cast<int>(s), f));
      for (std::size_t s = 1; boundaries && s < stages; ++s)
        if (const auto b = source.boundary(static_cast<int>(s), f)) boundary_window.add(s, *b);
      if (const auto l = source.loss(f)) {
        loss_sum += *l;
        ++loss_n;
      }
    }
    obs.stages = window.means();
    window.reset();
    if (boundaries) {
      obs.boundaries = boundary_window.means();
      boundary_window.reset();
    }
    if (loss_n > 0) obs.mean_loss = loss_sum / loss_n;
    out.push_back(std::move(obs));
  }
  return out;
}

PolicyRun plan_policy(const core::ControllerConfig& cc, const core::GdsConfig& gds, std::int64_t iterations,
                      const EntropyCurve& source, const std::string& where) {
  if (iterations < 1) throw ConfigError(where, "run.iterations", "must be >= 1");
  const auto controller = core::make_controller(cc, where.c_str());
  return decide_windows(*controller, cc, observe_windows(gds, cc.stages, iterations, source, where));
}

PolicyRun plan_policy(const core::ControllerConfig& cc, const std::vector<core::WindowObservation>& observed,
                      const std::string& where) {
  const auto controller = core::make_controller(cc, where.c_str());
  return decide_windows(*controller, cc, observed);
}

std::vector<int> map_stages(const std::vector<std::int64_t>& trace_elements,
                            const std::vector<double>& stage_parameters) {
  double trace_total = 0.0;
  for (auto e : trace_elements) trace_total += static_cast<double>(e);
  double sim_total = 0.0;
  for (double p : stage_parameters) sim_total += p;
  if (trace_elements.empty() || !(trace_total > 0.0) || !(sim_total > 0.0))
    throw InternalError("map_stages: empty trace or model");
  std::vector<int> map;
  double before = 0.0;
  for (double p : stage_parameters) {
    const double middle = (before + p / 2.0) / sim_total;  // share of the model before the stage's middle
    before += p;
    double acc = 0.0;
    int ts = 0;
    for (; ts + 1 < static_cast<int>(trace_elements.size()); ++ts) {
      acc += static_cast<double>(trace_elements[static_cast<std::size_t>(ts)]) / trace_total;
      if (middle < acc) break;
    }
    map.push_back(ts);
  }
  return map;
}

}  // namespace edgc::sim
