// `edgc replay`'s edges: the scenario read into typed options before any work, and the windows summarised into the
// report its writers lay out (edgc/results/replay_report.hpp).
#include <algorithm>

#include "edgc/core/error.hpp"
#include "edgc/engine/replay.hpp"
#include "edgc/scenario/compression_config.hpp"
#include "edgc/scenario/config.hpp"
#include "edgc/scenario/replay_config.hpp"

namespace edgc::engine {
namespace {

// Reads the compression and replay sections of the scenario (file + overrides) into typed options.
ReplayOptions read_options(scenario::Scenario& sc) {
  ReplayOptions o;
  const std::string w = sc.where();
  o.where = w;
  scenario::CompressionSettings c = scenario::read_compression(sc);
  o.controller = c.controller;
  o.r_max_given = c.r_max_given;
  o.gds = c.gds;
  o.warmup_floor_fraction = c.warmup_floor_fraction;
  o.warmup_ceiling_fraction = c.warmup_ceiling_fraction;
  const scenario::ReplaySettings r = scenario::read_replay_settings(
      sc, [&w](double bins, const std::string& key) { check_bins_per_sigma(bins, w, key); });
  o.world_size = r.world_size;
  o.perturbation = r.perturbation;
  o.backend = r.backend;
  o.bins_per_sigma = r.bins_per_sigma;
  o.compare_full = r.compare_full;
  o.seed = r.seed;
  o.stages = r.stages;
  return o;
}

// Adds one window's stage to the per-stage and whole-replay sums.
void add_stage(results::ReplayReport& rep, const results::ReplayWindow& w, std::size_t k) {
  const results::ReplayStageWindow& x = w.stages[k];
  results::ReplayStageSummary& s = rep.stages[k];
  rep.sampled_elements += x.sampled_elements;
  rep.full_elements += x.full_elements;
  rep.sampled_seconds += x.estimation_seconds;
  rep.full_seconds += x.full_estimation_seconds;
  rep.wire_floats += x.wire_floats;
  rep.dense_floats += x.dense_floats;
  if (x.next.binding != core::RankBinding::kWarmup)
    ++rep.bindings[std::string(core::rank_binding_name(x.next.binding))];
  if (!w.warmup && x.rank > 0) {
    s.rank_min = std::min(s.rank_min, x.rank);
    s.rank_max = std::max(s.rank_max, x.rank);
  }
  if (!w.warmup && x.relative_error) {
    s.error_sum += *x.relative_error;
    ++s.error_n;
  }
  if (!x.boundary) return;
  rep.boundary_wire_floats += x.boundary->wire_floats;
  rep.boundary_dense_floats += x.boundary->dense_floats;
  if (x.boundary->message_error && s.boundary) {
    s.boundary->error_sum[0] += *x.boundary->message_error;
    s.boundary->error_sum[1] += *x.boundary->message_error_plain;
    s.boundary->error_sum[2] += *x.boundary->accumulated_error;
    s.boundary->error_sum[3] += *x.boundary->accumulated_error_plain;
    ++s.boundary->compressed_windows;
  }
}

}  // namespace

ReplayOptions read_replay_options(const ReplayRequest& request) {
  scenario::Scenario sc;
  if (request.scenario.empty()) {
    for (const auto& s : request.sets) sc.set(s);
  } else {
    sc = scenario::load_scenario(request.scenario, request.sets);
  }
  // --backend is replay.backend given on the command line; set in the scenario, result files record it.
  if (!request.backend.empty()) sc.set("replay.backend=" + nlohmann::ordered_json(request.backend).dump());
  ReplayOptions o = read_options(sc);
  std::string trace = request.trace;
  const std::string scenario_trace = scenario::read_trace_path(sc);
  if (trace.empty()) trace = scenario_trace;
  if (trace.empty()) throw UsageError("--trace", "no trace given (use --trace DIR or trace.path in the scenario)");
  o.trace_dir = trace;
  sc.reject_unknown({"compression", "replay", "trace"});
  // A live scenario replays as it is (its live section is what replay does not read).
  sc.reject_unknown_sections({"compression", "replay", "trace", "live"});
  if (request.backend.empty()) {
    require_backend(o.backend, sc.where(), "replay.backend");
  } else {
    require_backend(o.backend, "", "--backend");
  }
  o.scenario = sc.json();
  return o;
}

results::ReplayReport replay_report(const ReplayOptions& options, ReplayResult result) {
  results::ReplayReport rep;
  rep.trace = options.trace_dir;
  rep.scenario = options.scenario;
  rep.notes = std::move(result.notes);
  rep.controller = options.controller;
  rep.gds = options.gds;
  rep.world_size = options.world_size;
  rep.backend = options.backend;
  rep.compare_full = options.compare_full;
  rep.warmup_end = result.warmup_end;
  rep.full_warmup_end = result.full_warmup_end;
  for (std::size_t k = 0; k < result.stage_shapes.size(); ++k) {
    results::ReplayStageSummary& s = rep.stages.emplace_back();
    s.cqm_matrix = result.stage_shapes[k];
    s.compressed_tensors = result.compressed_tensors_per_stage[k];
    if (const int b = result.stage_boundary[k]; b >= 0)
      s.boundary = results::ReplayBoundarySummary{result.boundary_names[static_cast<std::size_t>(b)],
                                                  result.boundary_shapes[static_cast<std::size_t>(b)]};
  }
  for (const results::ReplayWindow& w : result.windows) {
    rep.agreeing += w.agrees ? 1 : 0;
    rep.trajectory_agreeing += w.trajectory_agrees ? 1 : 0;
    for (std::size_t k = 0; k < w.stages.size(); ++k) add_stage(rep, w, k);
  }
  rep.windows = std::move(result.windows);
  return rep;
}

}  // namespace edgc::engine
