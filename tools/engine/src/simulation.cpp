// One `simulate` run as a function (simulation.hpp): read the scenario, plan each policy's rank schedule,
// simulate each distinct rank vector once (or read it from a shared cache), and build result.json.
#include "edgc/engine/simulation.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>

#include "break_even.hpp"
#include "cache_entry.hpp"
#include "edgc/core/atomic_file.hpp"
#include "edgc/core/controller.hpp"
#include "edgc/core/error.hpp"
#include "edgc/core/gds.hpp"
#include "edgc/core/memo.hpp"
#include "edgc/engine/bandwidth.hpp"
#include "edgc/engine/fidelity.hpp"
#include "edgc/engine/replay.hpp"
#include "edgc/engine/trace_health.hpp"
#include "edgc/engine/whole_run_plan.hpp"
#include "edgc/results/caveats.hpp"
#include "edgc/results/measurements.hpp"
#include "edgc/results/table.hpp"
#include "edgc/results/verdict.hpp"
#include "edgc/scenario/cluster_config.hpp"
#include "edgc/scenario/compression_config.hpp"
#include "edgc/scenario/config.hpp"
#include "edgc/scenario/model_config.hpp"
#include "edgc/scenario/simulate_config.hpp"
#include "edgc/sim/cost_model.hpp"
#include "edgc/sim/engine_info.hpp"
#include "edgc/sim/iteration.hpp"
#include "edgc/sim/kernel_model.hpp"
#include "edgc/sim/layout.hpp"
#include "edgc/sim/memory.hpp"
#include "edgc/sim/run_planner.hpp"
#include "edgc/sim/whole_run.hpp"
#include "plan_cache.hpp"
#include "simulation_result.hpp"
#include "trace_entropy_cache.hpp"

namespace edgc::engine {
namespace {

using nlohmann::ordered_json;
namespace fs = std::filesystem;

// The CQM's matrix per stage: the largest per-layer weight gradient of one GPU (fc1, h × 4h/tp). Embeddings are
// left out so that every stage reasons about the same kind of matrix.
std::vector<std::pair<std::int64_t, std::int64_t>> cqm_shapes(const sim::ModelSpec& m, const sim::ParallelSpec& p) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (int s = 0; s < p.pp; ++s) {
    std::pair<std::int64_t, std::int64_t> best{0, 0};
    for (const sim::WeightMatrix& w : sim::stage_matrices(m, p, s)) {
      if (w.name == "word_embedding" || w.name == "position_embedding") continue;
      if (w.elements() > best.first * best.second) best = {w.rows, w.cols};
    }
    out.push_back(best);
  }
  return out;
}

// result.json's "memory": the peak per GPU of every stage (sim/memory.hpp) and, when the cluster gives its
// capacity, the check: a layout that does not fit is a ConfigError naming the scenario (exit 2; sweep and plan
// record the point as infeasible with the message).
ordered_json memory_section(const SimulationSetup& st, const std::optional<double>& capacity_GiB) {
  const std::vector<sim::StageMemory> stages = sim::stage_memory(st.model, st.parallel);
  if (capacity_GiB) sim::check_fits(stages, *capacity_GiB, st.where);
  ordered_json out = {{"capacity_GiB", capacity_GiB ? ordered_json(*capacity_GiB) : ordered_json(nullptr)},
                      {"checked", capacity_GiB.has_value()}};
  if (!capacity_GiB) out["note"] = "cluster.gpu.memory_GiB is not given: memory was not checked";
  out["optimizer"] = st.parallel.distributed_optimizer && st.parallel.dp > 1
                         ? "Adam, fp32 master weights and two moments, sharded over the " +
                               std::to_string(st.parallel.dp) + " data-parallel ranks (distributed optimizer)"
                         : std::string("Adam, fp32 master weights and two moments, not sharded") +
                               (st.parallel.distributed_optimizer ? " (distributed optimizer with dp = 1)"
                                                                  : " (no distributed optimizer)");
  ordered_json list = ordered_json::array();
  std::size_t peak = 0;
  for (const sim::StageMemory& m : stages) {
    if (m.total_bytes() > stages[peak].total_bytes()) peak = static_cast<std::size_t>(m.stage);
    list.push_back({{"stage", m.stage},
                    {"parameters", m.parameters},
                    {"peak_GiB", sim::to_GiB(m.total_bytes())},
                    {"weights_GiB", sim::to_GiB(m.weights_bytes)},
                    {"gradients_GiB", sim::to_GiB(m.gradients_bytes)},
                    {"optimizer_GiB", sim::to_GiB(m.optimizer_bytes)},
                    {"activations_GiB", sim::to_GiB(m.activations_bytes)},
                    {"recompute_GiB", sim::to_GiB(m.recompute_bytes)},
                    {"inflight_passes", m.inflight_passes}});
    if (st.model.moe()) list.back()["dispatch_GiB"] = sim::to_GiB(m.dispatch_bytes);
  }
  out["peak_GiB"] = sim::to_GiB(stages[peak].total_bytes());
  out["peak_stage"] = stages[peak].stage;
  out["stages"] = list;
  return out;
}

struct Inputs {
  std::string scenario_path;
  SimulationSetup setup;
  scenario::CompressionSettings compression;
  std::int64_t iterations = 0;
  std::vector<std::string> policies;
  std::unique_ptr<sim::EntropyCurve> source;
  ordered_json source_description;    ///< result.json's "entropy": how the curve was made
  ordered_json memory;                ///< result.json's "memory"
  std::string setup_key;              ///< the sections that determine one iteration's simulation, as read (cache key)
  bool compose = false;               ///< simulate.composition allows it and the layout is stage-separable
  FidelitySetup fidelity;             ///< how the rank schedules' gradient error is measured (trace_dir empty: CQM)
  bool measure_fidelity = true;       ///< fidelity.measure
  std::string error_trace;            ///< trace.error_path, resolved; "" = trace.path's trace serves the error side
  std::optional<double> max_error;    ///< fidelity.max_error: the gradient-error budget, when given
  std::vector<std::string> warnings;  ///< found while reading: what the run goes on with but the user should know
  std::optional<results::TcomFit> dac_measured;  ///< compression.dac.measured's stage-0 fit, read up front
  std::string source_key;                        ///< everything `source` depends on (the memo of observed windows)
};

// Before anything is simulated: the actors of one simulation fit this machine's vm.max_map_count (ActorStacks).
// Returns whether their stacks keep guard pages; adds a warning when they cannot. A timeline shows every GPU, so
// replicas do not fold then (IterationOptions::record_timeline).
bool actor_stacks_fit(const sim::ClusterSpec& cluster, const sim::ParallelSpec& par,
                      const sim::ComputeVariability& variability, sim::CollectiveAlgorithm algorithm, bool timeline,
                      const std::string& w, std::vector<std::string>& warnings) {
  sim::IterationOptions options;
  options.record_timeline = timeline;
  options.variability = variability;
  const sim::ActorStacks s =
      sim::plan_actor_stacks(sim::planned_actors(cluster, par, algorithm, options), sim::vm_max_map_count());
  const std::string gpus = "tp " + std::to_string(par.tp) + " x pp " + std::to_string(par.pp) + " x dp " +
                           std::to_string(par.dp) + " = " + std::to_string(par.tp * par.pp * par.dp) + " GPUs";
  const std::string sysctl = "sudo sysctl -w vm.max_map_count=" + std::to_string(s.maps_guarded);
  if (!s.fits)
    throw ConfigError(w, "parallelism.dp",
                      gpus + " are simulated by " + std::to_string(s.actors) + " actors whose stacks need " +
                          std::to_string(s.maps_unguarded) + " memory mappings, more than this machine's " +
                          "vm.max_map_count " + std::to_string(s.map_limit) + " allows: raise it ('" + sysctl +
                          "') or simulate fewer GPUs");
  if (!s.guard_pages)
    warnings.push_back(w + ": " + gpus + " need " + std::to_string(s.maps_guarded) +
                       " memory mappings for actor stacks with guard pages, more than vm.max_map_count " +
                       std::to_string(s.map_limit) + ": simulating without guard pages ('" + sysctl + "' keeps them)");
  return s.guard_pages;
}

// The simulated cluster, model and layout (SimulationSetup) and the run's length.
void read_setup(scenario::Scenario& sc, bool timeline, Inputs& in) {
  const std::string w = sc.where();
  SimulationSetup& st = in.setup;
  st.where = w;
  if (!sc.has("model"))  // say what the file is rather than which model key defaulted to 0
    throw ConfigError(w, "model",
                      sc.has("cluster") && !sc.has("parallelism")
                          ? "missing: this file holds a cluster, not a scenario (name it in a scenario's \"cluster\")"
                          : "missing: a scenario needs a model section (or \"model\": \"models/….json\")");
  st.cluster = scenario::read_cluster(sc);
  st.network = scenario::read_network(sc);
  const scenario::ModelConfig mc = scenario::read_model_config(sc, st.cluster.gpu);
  st.model = mc.model;
  st.cost = mc.cost;
  st.framework = mc.framework.name;
  st.parallel = sim::validate(mc.model, mc.parallel, st.cluster, w);
  if (st.model.moe() && st.model.moe_load_factor == 1.0)
    in.warnings.push_back(w +
                          ": model.moe_load_factor 1: routing taken as perfectly balanced, so the expert GEMMs and "
                          "the all-to-alls after them are a lower bound (the MoE model's check against published "
                          "runs, scenarios/validation/moe-2024, covers two force-balanced runs)");
  st.variability = scenario::read_variability(sc);
  st.guard_pages =
      actor_stacks_fit(st.cluster, st.parallel, st.variability, st.network.algorithm, timeline, w, in.warnings);
  in.iterations = scenario::read_run_iterations(sc);
}

// The compression section (DAC's measured T_com fit read up front) and the controller's per-stage shapes.
void read_controller(scenario::Scenario& sc, Inputs& in) {
  const std::string w = sc.where();
  const SimulationSetup& st = in.setup;
  in.compression = scenario::read_compression(sc, /*r_max_auto_allowed=*/true);
  if (const std::string& measured = in.compression.dac_measured; !measured.empty()) {
    if (in.compression.controller.dac.eta_s_per_rank > 0.0)
      throw ConfigError(w, "compression.dac.measured", "give dac.eta_s_per_rank or dac.measured, not both");
    const results::Measurements lm = results::read_measurements(measured);  // ConfigError naming file and field
    for (const results::TcomFit& f : lm.tcom_fit)
      if (f.stage == 0) in.dac_measured = f;
    if (!in.dac_measured) throw ConfigError(measured, "tcom_fit", "no T_com fit of stage 0 (was the probe run?)");
  }
  if (in.compression.apply_to != sim::CompressedGradients::kAll && !st.model.moe())
    throw ConfigError(w, "compression.apply_to", "dense or experts needs a mixture of experts (model.experts > 0)");
  core::ControllerConfig& cc = in.compression.controller;
  cc.stages = st.parallel.pp;
  cc.stage_shapes = cqm_shapes(st.model, st.parallel);
  // edgc-pp's entropy mode: every stage but the first sends the same boundary matrix.
  const sim::PpBoundary boundary = sim::pp_boundary(st.model, st.parallel);
  cc.pipeline_shapes.assign(static_cast<std::size_t>(st.parallel.pp), {boundary.rows, boundary.cols});
  if (!cc.pipeline_shapes.empty()) cc.pipeline_shapes.front() = {0, 0};
  scenario::apply_warmup_bounds(cc.warmup, in.compression.warmup_floor_fraction, in.compression.warmup_ceiling_fraction,
                                in.iterations, w, &in.warnings, in.compression.gds.window_iters);
}

// The fidelity section and what the meter needs of the run (its length, shapes, seed and each stage's weight).
void read_fidelity(scenario::Scenario& sc, const std::string& cache_dir, Inputs& in) {
  const scenario::FidelitySettings settings = scenario::read_fidelity_settings(
      sc, [w = sc.where()](const std::string& backend, const std::string& key) { require_backend(backend, w, key); });
  in.measure_fidelity = settings.measure;
  in.error_trace = settings.trace_path;
  in.fidelity.backend = settings.backend;
  in.max_error = settings.max_error;
  in.fidelity.run_iterations = in.iterations;
  in.fidelity.shapes = in.compression.controller.stage_shapes;
  in.fidelity.seed = in.compression.gds.seed;
  in.fidelity.cache_dir = cache_dir;
  in.fidelity.where = sc.where();
  for (const auto& f : settings.convergence) in.fidelity.convergence.push_back(results::read_convergence_record(f));
  const SimulationSetup& st = in.setup;
  for (int s = 0; s < st.parallel.pp; ++s) {
    const sim::StageParams sp = sim::stage_params(st.model, st.parallel, s);
    in.fidelity.stage_parameters.push_back(static_cast<double>(sp.sharded_per_shard) * st.parallel.tp +
                                           static_cast<double>(sp.replicated));
  }
}

// Every policy's controller built once with the run's settings: rank bounds (r_max) and policy settings fail here,
// before any work.
void check_policies(const Inputs& in) {
  for (const std::string& p : in.policies) {
    core::ControllerConfig probe = in.compression.controller;
    probe.policy = p;
    if (probe.dac.enabled && probe.dac.eta_s_per_rank <= 0.0) {
      // DAC's fitted figures (fit_dac: η, c, t_bwd, t_uncompressed, p2p hops) get stand-ins: the rest is checked now.
      probe.dac.eta_s_per_rank = 1.0;
      probe.dac.t_uncompressed_s = 1.0;
    }
    core::make_controller(probe, in.setup.where.c_str());
  }
}

// Cache key of simulated iterations: the sections that set one, and the iteration model's version (no stale reads).
std::string setup_key(const scenario::Scenario& sc) {
  nlohmann::json key = {{"iteration_model", 2}};
  for (const char* section : {"framework", "cluster", "network", "model", "parallelism", "compute", "variability"})
    if (sc.json().contains(section)) key[section] = sc.json()[section];
  return key.dump();
}

// traces::read_manifest, parsed once per process for a trace that has not changed since (trace_identity: its path and
// its manifest's size and time) where memos are on: a sweep worker's points all read the same trace.
traces::Manifest read_manifest_once(const std::string& dir) {
  if (!core::memo_enabled()) return traces::read_manifest(dir);
  static ProcessTable<traces::Manifest> kept(16);
  return *kept.get(trace_identity(dir), [&] { return traces::read_manifest(dir); });
}

// The trace in `dir` (trace.path): a warning when it was recorded from another model; when fidelity is measured on
// it (no trace.error_path) its manifest is kept for the meter (and, with a synthetic entropy source, its stage map).
void read_trace(const std::string& dir, bool from_trace, Inputs& in) {
  const SimulationSetup& st = in.setup;
  // The trace's own model: one recorded from another family or size class stands in thinly for this one.
  traces::Manifest manifest = read_manifest_once(dir);
  const std::string mismatch =
      in.error_trace.empty()
          ? trace_model_mismatch(manifest, dir, st.model.name, static_cast<double>(sim::parameter_count(st.model)))
          : trace_model_mismatch(manifest, dir, st.model.name, static_cast<double>(sim::parameter_count(st.model)),
                                 "entropy trend stands");
  if (!mismatch.empty()) in.warnings.push_back(st.where + ": " + mismatch);
  if (!in.error_trace.empty()) return;  // the error side has a trace of its own (read_error_trace)
  if (!from_trace && in.measure_fidelity) {
    // A synthetic entropy curve decides the ranks; the trace's real gradients still measure what they cost.
    in.fidelity.trace_dir = dir;
    in.fidelity.stage_map = sim::map_stages(traces::stage_elements(manifest), in.fidelity.stage_parameters);
  }
  if (in.measure_fidelity) in.fidelity.manifest = std::move(manifest);  // read once: the meter takes it
}

// The trace of trace.error_path, read up front whether or not fidelity is measured (a bad one is refused naming the
// key, before any output), warned about like trace.path's when recorded from another model, and given to the meter.
// Its stages map onto the simulated ones by its own tensors' elements (sim::map_stages), as a trace.path trace does
// under a synthetic entropy curve.
void read_error_trace(Inputs& in) {
  const SimulationSetup& st = in.setup;
  const std::string& dir = in.error_trace;
  traces::Manifest manifest;
  try {
    manifest = read_manifest_once(dir);
  } catch (const TraceFormatError& e) {
    throw ConfigError(st.where, "trace.error_path", e.what());
  }
  const std::string mismatch = trace_model_mismatch(
      manifest, dir, st.model.name, static_cast<double>(sim::parameter_count(st.model)), "gradient spectra stand");
  if (!mismatch.empty()) in.warnings.push_back(st.where + ": trace.error_path " + mismatch);
  if (!in.measure_fidelity) return;
  in.fidelity.trace_dir = dir;
  in.fidelity.stage_map = sim::map_stages(traces::stage_elements(manifest), in.fidelity.stage_parameters);
  in.fidelity.manifest = std::move(manifest);
}

void set_synthetic_source(const SyntheticEntropy& curve, Inputs& in) {
  in.source = std::make_unique<SyntheticCurve>(curve, in.setup.where);
  std::ostringstream key;
  key.precision(17);
  key << "synthetic|" << curve.start_nats << '|' << curve.end_nats << '|' << curve.decay_fraction << '|'
      << curve.stage_step_nats << '|' << curve.noise_nats << '|' << curve.seed;
  in.source_key = key.str();
  in.source_description = {{"source", "synthetic"},
                           {"start_nats", curve.start_nats},
                           {"end_nats", curve.end_nats},
                           {"decay_fraction", curve.decay_fraction},
                           {"stage_step_nats", curve.stage_step_nats},
                           {"noise_nats", curve.noise_nats},
                           {"seed", curve.seed}};
}

// The entropy measured on the trace in `dir` (or read from the cache); edgc-pp's entropy mode needs its
// stage-boundary gradients.
void set_trace_source(const std::string& dir, const scenario::EntropySourceSettings& entropy, bool pp_entropy,
                      const std::string& cache_dir, Inputs& in) {
  auto trace = std::make_unique<TraceCurve>(
      cached_trace_entropy(dir, in.compression.gds, entropy.bins_per_sigma, entropy.backend, cache_dir),
      in.fidelity.stage_parameters);
  if (pp_entropy && !trace->has_boundaries())
    throw ConfigError(in.setup.where, "compression.pp_rank_mode",
                      "entropy needs the trace's stage-boundary gradients (format 1.1), and " + dir +
                          " records none: use static, or a trace captured with boundaries");
  if (in.measure_fidelity && in.error_trace.empty()) {
    in.fidelity.trace_dir = dir;
    in.fidelity.stage_map = trace->stage_map();
  }
  std::ostringstream key;  // the entropy cache's key, and the stage map
  key.precision(17);
  key << "trace|" << trace_identity(dir) << '|' << in.compression.gds.beta << '|' << in.compression.gds.block_bytes
      << '|' << in.compression.gds.seed << '|' << entropy.bins_per_sigma << '|' << entropy.backend << '|';
  for (const int s : trace->stage_map()) key << s << ',';
  in.source_key = key.str();
  in.source_description = {{"source", "trace"},
                           {"path", trace->trace().path},
                           {"trace_iterations", trace->trace().steps},
                           {"captured_iterations", trace->trace().points.size()},
                           {"stage_map", trace->stage_map()}};
  in.source = std::move(trace);
}

// The scenario read and checked in full, in the order its errors are reported, before anything is simulated.
Inputs read_inputs(const std::string& path, const std::vector<std::string>& sets, const std::string& policies_arg,
                   const std::string& cache_dir, bool timeline) {
  Inputs in;
  in.scenario_path = path;
  scenario::Scenario sc = scenario::load_scenario(path, sets);
  const std::string w = sc.where();
  read_setup(sc, timeline, in);
  read_controller(sc, in);
  const SimulationSetup& st = in.setup;
  const core::ControllerConfig& cc = in.compression.controller;

  // simulate.policies is read even when --policies overrides it, so that it is a known key either way.
  const scenario::SimulateSettings simulate = scenario::read_simulate_settings(sc);
  in.compose = simulate.compose_allowed && sim::stages_separable(st.cluster, st.parallel);
  std::string list = policies_arg;
  if (list.empty()) list = !simulate.policies.empty() ? simulate.policies : "none,static," + cc.policy;
  in.policies = policies_arg.empty() ? scenario::policies_with_baseline(list, w, "simulate.policies")
                                     : scenario::policies_with_baseline(list, "--policies", "");

  const scenario::EntropySourceSettings entropy = scenario::read_entropy_source(sc);
  const bool from_trace = entropy.from_trace;
  const SyntheticEntropy curve = from_trace ? SyntheticEntropy{} : scenario::read_synthetic_entropy(sc);
  const bool pp_entropy =
      cc.pipeline_rank_mode == core::PipelineRankMode::kEntropy && core::any_compresses_pipeline(in.policies);
  if (pp_entropy && !from_trace)
    throw ConfigError(w, "compression.pp_rank_mode",
                      "entropy needs a trace with stage-boundary gradients (entropy.source trace, format 1.1); the "
                      "synthetic entropy curve has none: use static");
  read_fidelity(sc, cache_dir, in);
  // Every key is read by now: a misspelt one fails before the trace is read or anything is simulated.
  sc.reject_unknown(simulate_sections());
  sc.reject_unknown_sections(simulate_sections());
  check_policies(in);
  in.memory = memory_section(st, scenario::read_gpu_memory_GiB(sc));  // a layout that does not fit fails here
  if (st.cost.compute_model == sim::ComputeModel::kKernels)
    in.warnings.push_back(w + ": " + results::kernel_model_caveat(st.cluster.gpu.name));
  in.setup_key = setup_key(sc);
  const std::string& dir = entropy.trace_path;
  if (!dir.empty()) read_trace(dir, from_trace, in);
  if (!in.error_trace.empty()) read_error_trace(in);
  if (!from_trace) {
    set_synthetic_source(curve, in);
    return in;
  }
  set_trace_source(dir, entropy, pp_entropy, cache_dir, in);
  return in;
}

// The largest rank the break-even probe tries: the smallest side of any stage's CQM matrix (no rank above it exists).
int break_even_cap(const Inputs& in) {
  std::int64_t cap = std::numeric_limits<int>::max();
  for (const auto& [m, n] : in.compression.controller.stage_shapes) cap = std::min({cap, m, n});
  return static_cast<int>(cap);
}

// The break-even rank per stage (break_even.hpp), simulated on a cache of its own so the run's configurations and
// their count stay those its policies use; compression.r_max "auto" takes the smallest over stages, floored to a
// multiple of the quantum, and every policy is checked again with it.
// `probe` keeps the probe's simulations, for the run to take those it needs too (PlanCache::earlier).
std::optional<BreakEven> break_even(Inputs& in, const PlanCache& cache, PlanCache& probe,
                                    const SimulateRequest& request) {
  const bool automatic = in.compression.r_max_auto;
  if (!request.break_even && !automatic) return std::nullopt;
  probe.dir = cache.dir;
  probe.setup_key = cache.setup_key;
  probe.compose = cache.compose;
  const int pp = in.setup.parallel.pp;
  BreakEven even = find_break_even(pp, break_even_cap(in), [&](const std::vector<sim::DpSyncPlan>& plans) {
    probe.simulate(in.setup, plans, false, request.jobs);
    std::vector<sim::IterationResult> out;
    for (const sim::DpSyncPlan& p : plans) out.push_back(probe.at(p));
    return out;
  });
  if (!automatic) return even;
  core::CqmConfig& cqm = in.compression.controller.cqm;
  cqm.r_max = auto_r_max(even, cqm, in.setup.where);
  check_policies(in);
  return even;
}

// DAC's T_com(r) = η·r + c from stage 0's simulated sync at r_min and r_max, its backward time from the cost
// model, and the uncompressed sync time, unless the scenario gives η.
ordered_json fit_dac(Inputs& in, PlanCache& cache, bool timeline, int jobs) {
  core::DacConfig& dac = in.compression.controller.dac;
  if (!dac.enabled) return nullptr;
  const int pp = in.setup.parallel.pp;
  const auto& cqm = in.compression.controller.cqm;
  const bool fitted = dac.eta_s_per_rank <= 0.0;
  // A measured fit replaces the simulated η and c only where its slope stands above its noise.
  const bool measured = fitted && in.dac_measured && in.dac_measured->significant;
  std::string eta_source = fitted ? "simulated" : "scenario";
  if (in.dac_measured) {
    const results::TcomFit& f = *in.dac_measured;
    const std::string fit = "eta " + results::fmt_g(f.eta_s * 1e6, 3) + " +- " +
                            results::fmt_g(f.eta_stderr_s * 1e6, 3) + " us/rank, c " + results::fmt_g(f.c_s * 1e6, 4) +
                            " us, " + std::to_string(f.points) + " points, from " + in.compression.dac_measured;
    eta_source =
        measured ? "measured: " + fit : "simulated: the measured fit is noise (" + fit + "), not resolved at 95 %";
  }
  if (fitted) {
    const sim::DpSyncPlan lo = sim::powersgd_plan(pp, cqm.r_min);
    const sim::DpSyncPlan hi = sim::powersgd_plan(pp, cqm.r_max);
    const sim::DpSyncPlan full = sim::uncompressed_plan(pp);
    cache.simulate(in.setup, {full, lo, hi}, timeline, jobs);
    const double t_lo = cache.at(lo).stages[0].dp_sync_s;
    const double t_hi = cache.at(hi).stages[0].dp_sync_s;
    dac.eta_s_per_rank = cqm.r_max > cqm.r_min ? (t_hi - t_lo) / (cqm.r_max - cqm.r_min) : 0.0;
    if (!(dac.eta_s_per_rank > 0.0)) dac.eta_s_per_rank = 1e-9;  // flat T_com: any budget buys full rank
    // The skip rule makes T_com(r) only piecewise linear; a negative intercept of the chord is clamped.
    dac.c_s = std::max(0.0, t_lo - dac.eta_s_per_rank * cqm.r_min);
    if (measured) {
      dac.eta_s_per_rank = in.dac_measured->eta_s;
      dac.c_s = std::max(0.0, in.dac_measured->c_s);
    }
    dac.t_uncompressed_s = cache.at(full).stages[0].dp_sync_s;
    const sim::ComputeCost c0 =
        sim::stage_compute(in.setup.model, in.setup.parallel, in.setup.cluster.gpu, in.setup.cost, 0);
    dac.t_bwd_s = c0.backward_s;
    // The backward pipeline message per hop (dac.hpp): the last stage sends only backward messages, one per
    // micro-batch, so its summed transfer time over the micro-batches is that hop's; compressed (edgc-pp), plus the
    // sender's compression and the receiver's decompression (stage 0 only decompresses). Interleaved schedules
    // send several chunks per stage both ways: not credited there.
    const sim::ParallelSpec& par = in.setup.parallel;
    if (pp > 1 && par.virtual_stages == 1) {
      const auto m = static_cast<double>(par.microbatches);
      const auto last = static_cast<std::size_t>(pp - 1);
      dac.t_p2p_s = cache.at(full).stages[last].pp_comm_s / m;
      if (core::any_compresses_pipeline(in.policies)) {
        const sim::DpSyncPlan compressed = sim::powersgd_plan(pp, 0, in.compression.controller.pipeline_rank);
        cache.simulate(in.setup, {compressed}, timeline, jobs);
        const sim::IterationResult& r = cache.at(compressed);
        dac.t_p2p_compressed_s =
            (r.stages[last].pp_comm_s + r.stages[last].pp_compression_s + r.stages[0].pp_compression_s) / m;
      }
    }
  }
  return {{"fitted_from_simulation", fitted},
          {"eta_source", eta_source},
          {"eta_s_per_rank", dac.eta_s_per_rank},
          {"c_s", dac.c_s},
          {"t_bwd_s", dac.t_bwd_s},
          {"t_uncompressed_s", dac.t_uncompressed_s},
          {"t_p2p_s", dac.t_p2p_s},
          {"t_p2p_compressed_s", dac.t_p2p_compressed_s >= 0.0 ? ordered_json(dac.t_p2p_compressed_s) : nullptr}};
}

// Both estimators per simulated stage at `points` evenly spaced iterations of the run, for charts.
results::EntropySeries entropy_series(const sim::EntropyCurve& source, int stages, std::int64_t iterations,
                                      int points = 200) {
  constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  results::EntropySeries out;
  for (int s = 0; s < stages; ++s) out.stages.push_back({s, {}, {}});
  const int n = static_cast<int>(std::min<std::int64_t>(points, iterations));
  for (int k = 0; k < n; ++k) {
    const std::int64_t it = n > 1 ? (iterations - 1) * k / (n - 1) : 0;
    out.iterations.push_back(it);
    const double f = iterations > 1 ? static_cast<double>(it) / static_cast<double>(iterations - 1) : 0.0;
    for (results::StageEntropy& st : out.stages) {
      const core::StageObservation o = source.at(static_cast<int>(st.stage), f);
      st.gaussian_nats.push_back(o.entropy_gaussian.value_or(kNone));
      st.histogram_nats.push_back(o.entropy_histogram.value_or(kNone));
    }
  }
  return out;
}

// Warning thresholds of the accuracy side: a trace stretched over more than this many times its own steps, a trace
// shorter than this many windows (compression.window, in its own steps).
constexpr double kMaxStretch = 10.0;
constexpr std::int64_t kMinTraceWindows = 3;
// Without a budget, a gradient error above this is worth a warning: more than half the averaged gradient's norm is
// deferred to later steps by error feedback (a threshold of this project's choosing, not a published bound).
constexpr double kHighError = 0.5;

// Thin evidence: a trace stretched far beyond its own length (`steps` its last captured step + 1; `sides` what it
// stands for), or, for the entropy's trace, too short for a few of its windows.
void thin_trace_warnings(const Inputs& in, const std::string& whose, std::int64_t steps, const std::string& sides,
                         bool entropy_side, std::vector<std::string>& warnings) {
  if (steps <= 0) return;
  const double stretch = static_cast<double>(in.iterations) / static_cast<double>(steps);
  if (stretch > kMaxStretch)
    warnings.push_back(in.setup.where + ": " + whose + " " + std::to_string(steps) + " steps are stretched " +
                       results::fmt_f(stretch, 1) + "x over " + std::to_string(in.iterations) +
                       " iterations (more than " + results::fmt_f(kMaxStretch, 0) + "x): its " + sides +
                       " for a much longer run than was recorded");
  const std::int64_t window = in.compression.gds.window_iters;
  if (entropy_side && steps < kMinTraceWindows * window)
    warnings.push_back(in.setup.where + ": " + whose + " " + std::to_string(steps) + " steps span fewer than " +
                       std::to_string(kMinTraceWindows) + " windows of " + std::to_string(window) +
                       " iterations: the entropy trend EDGC decides from is thin");
}

// The accuracy side of every run (fidelity.hpp): the measured and predicted gradient error as run figures, the
// per-stage detail in runs[].fidelity, how it was obtained in "fidelity", and warnings where it rests on little.
void set_fidelity(results::ResultDocument& result, const Inputs& in,
                  const std::vector<const sim::RunSchedule*>& schedules, std::vector<std::string>& warnings) {
  FidelityMeter meter(in.fidelity);
  const bool from_trace = in.source_description.value("source", "") == "trace";
  // One trace serves both sides unless trace.error_path gives the error side its own.
  const bool own_error_trace = !in.error_trace.empty();
  const std::vector<Fidelity> fid = meter.measure(schedules);
  const bool measured = meter.trace_points() > 0;
  ordered_json section = {{"source", measured ? "trace" : "cqm"}};
  if (from_trace && own_error_trace)
    thin_trace_warnings(in, "trace.path's", in.source_description.value("trace_iterations", std::int64_t{0}),
                        "entropy trend stands", true, warnings);
  if (measured) {
    section["trace"] = in.fidelity.trace_dir;
    if (own_error_trace) {  // which key named it, and how its stages map (the entropy's map is in "entropy")
      section["trace_key"] = "trace.error_path";
      section["stage_map"] = in.fidelity.stage_map;
    }
    section["trace_steps"] = meter.trace_steps();
    section["trace_parameters"] = meter.trace_parameters();  // the verdict's test of the trace's size class
    section["captured_iterations"] = meter.trace_points();
    section["stretch"] = static_cast<double>(in.iterations) / static_cast<double>(meter.trace_steps());
    section["rank_mapping"] =
        "equal CQM captured energy: a simulated stage's rank r maps onto each matrix of its trace stage at r' with "
        "g(r'; trace shape) = g(r; simulated shape), figures interpolated between the replays at floor(r') and "
        "ceil(r'), rank 1 below it";
    section["entropy_source"] = in.source_description.value("source", "");
    section["backend"] = in.fidelity.backend;
    section["replays_run"] = meter.replays();
    const bool both = from_trace && !own_error_trace;
    thin_trace_warnings(in, own_error_trace ? "trace.error_path's" : "the trace's", meter.trace_steps(),
                        both ? "entropy trend and gradient error stand" : "gradient error stands", both, warnings);
  } else {
    section["note"] = in.fidelity.trace_dir.empty() && in.measure_fidelity
                          ? "no trace.path to replay the ranks on: CQM prediction only"
                      : in.fidelity.trace_dir.empty()
                          ? "fidelity.measure is false: CQM prediction only"
                          : "the trace holds no fully captured matrix in some stage the run reads: CQM prediction only";
  }
  section["stage_weights"] = in.fidelity.stage_parameters;
  section["max_error"] = in.max_error ? ordered_json(*in.max_error) : ordered_json(nullptr);
  for (std::size_t i = 0; i < fid.size(); ++i) {
    results::ResultRun& run = result.runs[i];
    const Fidelity& f = fid[i];
    if (f.relative_error) run.gradient_error = *f.relative_error;
    if (!f.relative_error && f.unmeasured_points > 0)
      warnings.push_back(in.setup.where + ": policy " + run.policy + ": the gradient error was not measured: at all " +
                         std::to_string(f.unmeasured_points) +
                         " compressed points the trace's gradients are NaN/Inf or zero (shown as '-'; the CQM "
                         "prediction stands alone)");
    if (f.cqm_relative_error) run.cqm_error = *f.cqm_relative_error;
    run.detail["fidelity"] = to_json(f);
    const double judged = f.relative_error.value_or(f.cqm_relative_error.value_or(0.0));
    if (in.max_error) {
      run.detail["within_error_budget"] = judged <= *in.max_error;
      if (judged > *in.max_error)
        warnings.push_back(in.setup.where + ": policy " + run.policy + ": gradient error " +
                           results::fmt_f(100.0 * judged, 1) + " % exceeds fidelity.max_error " +
                           results::fmt_f(100.0 * *in.max_error, 1) + " %");
    } else if (judged > kHighError) {
      warnings.push_back(in.setup.where + ": policy " + run.policy + ": gradient error " +
                         results::fmt_f(100.0 * judged, 1) + " % (" + (f.relative_error ? "measured" : "CQM") +
                         ") is above " + results::fmt_f(100.0 * kHighError, 0) +
                         " %: error feedback defers most of the averaged gradient to later steps, which may cost "
                         "accuracy; set fidelity.max_error to plan under a budget");
    }
    std::int64_t below = 0;
    for (const StageFidelity& s : f.stages) below += s.below_rank_one;
    if (below > 0)
      warnings.push_back(
          in.setup.where + ": policy " + run.policy + ": at " + std::to_string(below) +
          " stage-iterations the rank maps below rank 1 on the trace's matrices; rank 1 was replayed, "
          "so the measured gradient error is understated there (a trace of larger matrices resolves it)");
  }
  result.sections["fidelity"] = section;
  results::add_convergence(in.fidelity.convergence, result);  // the measured loss where a record matches
}

// What the controllers observe of the run's entropy source (sim::observe_windows), shared by the run's policies and,
// within a process, by every run with the same source, length, window and sampling rate (a sweep's points).
std::shared_ptr<const std::vector<core::WindowObservation>> observed_windows(const Inputs& in) {
  const core::GdsConfig& gds = in.compression.gds;
  const int stages = in.compression.controller.stages;
  if (!core::memo_enabled() || in.source_key.empty())
    return std::make_shared<const std::vector<core::WindowObservation>>(
        sim::observe_windows(gds, stages, in.iterations, *in.source, in.scenario_path));
  static ProcessTable<std::vector<core::WindowObservation>> kept(256);  // a few hundred kB each at most
  std::ostringstream key;
  key.precision(17);
  key << in.source_key << '|' << in.iterations << '|' << gds.window_iters << '|' << gds.alpha << '|'
      << core::GradientDataSampler(gds).period() << '|' << stages;
  return kept.get(key.str(),
                  [&] { return sim::observe_windows(gds, stages, in.iterations, *in.source, in.scenario_path); });
}

}  // namespace

const std::vector<std::string>& simulate_sections() {
  static const std::vector<std::string> sections = {"cluster",     "network",  "model",    "parallelism", "compute",
                                                    "compression", "run",      "trace",    "entropy",     "simulate",
                                                    "variability", "fidelity", "framework"};
  return sections;
}

SimulateOutcome run_simulation(const SimulateRequest& request) {
  if (request.jobs < 1) throw UsageError("--jobs", "must be >= 1, got " + std::to_string(request.jobs));
  if (!request.cache_dir.empty()) fs::create_directories(request.cache_dir);
  Inputs in = read_inputs(request.scenario, request.sets, request.policies, request.cache_dir, request.timeline);
  PlanCache cache;
  cache.dir = request.cache_dir;
  cache.setup_key = in.setup_key;
  cache.compose = in.compose && !request.timeline;
  PlanCache probe;
  const std::optional<BreakEven> even = break_even(in, cache, probe, request);
  cache.earlier = &probe;
  std::vector<std::string> out_warnings;
  const ordered_json dac = fit_dac(in, cache, request.timeline, request.jobs);

  std::vector<PolicyRun> runs;
  const std::shared_ptr<const std::vector<core::WindowObservation>> observed = observed_windows(in);
  for (const std::string& p : in.policies) {
    core::ControllerConfig cc = in.compression.controller;
    cc.policy = p;
    runs.push_back(sim::plan_policy(cc, *observed, in.scenario_path));
    runs.back().schedule = sim::restrict_compression(runs.back().schedule, in.compression.apply_to);  // MoE
    const core::PolicyInfo* info = core::find_policy(p);
    if (info != nullptr && info->reads_signal && cc.megatron_signal == core::MegatronSignal::kLoss &&
        !in.source->loss(0.5))
      out_warnings.push_back(in.setup.where + ": policy " + p +
                             " follows the training loss, and the entropy source has none (a synthetic curve): its "
                             "rank stays at r_max; set compression.signal to entropy or use a trace");
  }
  std::vector<const sim::RunSchedule*> schedules;
  for (const PolicyRun& r : runs) schedules.push_back(&r.schedule);
  cache.simulate(in.setup, sim::distinct_plans(schedules), request.timeline, request.jobs);

  const sim::ClusterSpec& cl = in.setup.cluster;
  const int gpus = cl.total_gpus();
  std::vector<sim::RunTotals> totals;
  for (const PolicyRun& r : runs) totals.push_back(sim::accumulate(r.schedule, cache.plans, cache.results));
  // An entropy-reading policy pays the GDS's passes at every sampled iteration, on its slowest stage.
  double entropy_pass_s = 0.0;
  for (int s = 0; s < in.setup.parallel.pp; ++s)
    entropy_pass_s = std::max(entropy_pass_s, sim::entropy_pass_s(in.setup.model, in.setup.parallel, cl.gpu,
                                                                  in.setup.cost, s, in.compression.gds.beta));
  for (std::size_t i = 0; i < runs.size(); ++i)
    if (core::reads_entropy(runs[i].policy, in.compression.controller))
      sim::add_entropy_passes(totals[i], runs[i].sampled_iterations, runs[i].sampled_compressed_iterations,
                              entropy_pass_s);
  const sim::RunTotals& base = totals.front();
  const auto gpu_hours_of = [gpus](const sim::RunTotals& t) { return t.training_time_s / 3600.0 * gpus; };

  SimulateOutcome out;
  out.simulated = cache.simulated;  // the break-even probe's simulations are not the run's
  results::ResultDocument& result = out.result;
  result.scenario = in.scenario_path;
  set_setup(result, in.setup, in.iterations, in.compression);
  result.sections["entropy"] = in.source_description;
  result.sections["dac"] = dac;
  result.sections["memory"] = in.memory;
  if (request.configurations) {
    result.sections["configurations"] = ordered_json::array();
    for (std::size_t p = 0; p < cache.plans.size(); ++p)
      result.sections["configurations"].push_back(configuration_json(cache.plans[p], cache.results[p]));
  }
  if (even) {
    ordered_json b = break_even_json(*even, in.compression.controller.cqm.quantum);
    b["r_max"] = in.compression.controller.cqm.r_max;
    b["r_max_from"] = in.compression.r_max_auto ? "break_even" : "compression.r_max";
    result.sections["break_even"] = std::move(b);
  }
  result.simulations = static_cast<std::int64_t>(cache.plans.size());
  result.composition = cache.compose ? "stage-separable" : "exact";
  result.simulated_iterations = static_cast<std::int64_t>(cache.simulated_plans.size());
  for (std::size_t i = 0; i < runs.size(); ++i) {
    result.runs.push_back(result_run(runs[i], totals[i], base, gpu_hours_of(totals[i]), cl.price_per_gpu_hour_usd));
    if (core::reads_entropy(runs[i].policy, in.compression.controller))
      result.runs.back().detail["entropy_passes"] = {{"sampled_iterations", runs[i].sampled_iterations},
                                                     {"pass_s", entropy_pass_s}};
  }
  set_fidelity(result, in, schedules, out.warnings);
  result.entropy_series = entropy_series(*in.source, in.setup.parallel.pp, in.iterations);
  if (request.timeline) out.timeline = chrome_trace(cache.plans, cache.results, in.setup.parallel, cl.gpus_per_node);
  out.warnings.insert(out.warnings.begin(), in.warnings.begin(), in.warnings.end());
  out.warnings.insert(out.warnings.end(), out_warnings.begin(), out_warnings.end());
  for (std::string& w : trace_warnings(result)) out.warnings.push_back(std::move(w));
  result.warnings = out.warnings;
  if (request.bandwidth_curve) add_bandwidth_section(request, result);  // the run's own figures are its first point
  result.sections["verdict"] =
      results::verdict_section(results::result_verdicts(result, request.min_saving), request.min_saving);
  return out;
}

}  // namespace edgc::engine
