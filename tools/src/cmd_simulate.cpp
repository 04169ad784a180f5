// `edgc simulate --scenario F [--set k=v]... --out DIR [--timeline FILE] [--jobs N] [--policies LIST]`: whole
// training runs under several compression policies, each distinct per-stage rank vector simulated once in its own
// process (whole_run_plan.hpp), written as result.json (schema edgc.result/1) with a summary table.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cli.hpp"
#include "cluster_config.hpp"
#include "compression_config.hpp"
#include "config.hpp"
#include "edgc/core/atomic_file.hpp"
#include "edgc/core/error.hpp"
#include "edgc/sim/cost_model.hpp"
#include "edgc/sim/engine_info.hpp"
#include "edgc/sim/layout.hpp"
#include "model_config.hpp"
#include "replay.hpp"
#include "table.hpp"
#include "whole_run_plan.hpp"

namespace edgc::cli {
namespace {

using nlohmann::ordered_json;
namespace fs = std::filesystem;

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

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

struct Inputs {
  std::string scenario_path;
  SimulationSetup setup;
  CompressionSettings compression;
  std::int64_t iterations = 0;
  std::vector<std::string> policies;
  std::unique_ptr<EntropySource> source;
};

Inputs read_inputs(const std::string& path, const std::vector<std::string>& sets, const std::string& policies_arg) {
  Inputs in;
  in.scenario_path = path;
  Scenario sc = load_scenario(path, sets);
  const std::string w = sc.where();
  SimulationSetup& st = in.setup;
  st.cluster = read_cluster(sc);
  st.network = read_network(sc);
  const ModelConfig mc = read_model_config(sc);
  st.model = mc.model;
  st.cost = mc.cost;
  st.parallel = sim::validate(mc.model, mc.parallel, st.cluster, w);
  in.iterations = sc.integer("run.iterations", 100000);
  if (in.iterations < 1) throw ConfigError(w, "run.iterations", "must be >= 1, got " + std::to_string(in.iterations));

  in.compression = read_compression(sc);
  core::ControllerConfig& cc = in.compression.controller;
  cc.stages = st.parallel.pp;
  cc.stage_shapes = cqm_shapes(st.model, st.parallel);
  for (int s = 0; s < st.parallel.pp; ++s) {
    const auto [rows, cols] = cc.stage_shapes[static_cast<std::size_t>(s)];
    if (cc.cqm.r_max > std::min(rows, cols))
      throw ConfigError(w, "compression.r_max",
                        std::to_string(cc.cqm.r_max) + " exceeds the rank of stage " + std::to_string(s) + "'s " +
                            std::to_string(rows) + "x" + std::to_string(cols) + " matrices");
  }
  apply_warmup_bounds(cc.warmup, in.compression.warmup_floor_fraction, in.compression.warmup_ceiling_fraction,
                      in.iterations, w);

  std::string list = policies_arg;
  if (list.empty()) {
    if (const std::string p = sc.string("simulate.policies", ""); !p.empty()) list = p;
    else list = "none,static," + cc.policy;
  }
  in.policies.push_back("none");  // the baseline of every speedup
  for (const std::string& p : split_list(list)) {
    if (p != "none" && p != "static" && p != "selective" && p != "loss" && p != "edgc")
      throw ConfigError(w, "simulate.policies", "unknown policy '" + p + "' (none, static, selective, loss, edgc)");
    if (std::find(in.policies.begin(), in.policies.end(), p) == in.policies.end()) in.policies.push_back(p);
  }

  const std::string trace_key = sc.string("trace.path", "");
  const std::string source = sc.string("entropy.source", trace_key.empty() ? "synthetic" : "trace");
  const bool from_trace = source == "trace";
  if (!from_trace && source != "synthetic")
    throw ConfigError(w, "entropy.source", "expected trace or synthetic, got '" + source + "'");
  if (from_trace && trace_key.empty())
    throw ConfigError(w, "trace.path", "entropy.source is trace but no trace.path is given");
  double bins = 8.0;
  std::string backend = "cpu";
  SyntheticEntropy curve;
  if (from_trace) {
    bins = sc.number("entropy.bins_per_sigma", bins);
    backend = sc.string("entropy.backend", backend);
  } else {
    curve.start_nats = sc.number("entropy.synthetic.start_nats", curve.start_nats);
    curve.end_nats = sc.number("entropy.synthetic.end_nats", curve.end_nats);
    curve.decay_fraction = sc.number("entropy.synthetic.decay_fraction", curve.decay_fraction);
    curve.stage_step_nats = sc.number("entropy.synthetic.stage_step_nats", curve.stage_step_nats);
    curve.noise_nats = sc.number("entropy.synthetic.noise_nats", curve.noise_nats);
    curve.seed = static_cast<std::uint64_t>(sc.integer("entropy.synthetic.seed", 0));
  }
  // Every key is read by now: a misspelt one fails before the trace is read or anything is simulated.
  sc.reject_unknown({"cluster", "network", "model", "parallelism", "compute", "compression", "run", "trace",
                     "entropy", "simulate"});
  if (!from_trace) {
    in.source = make_synthetic_source(curve, w);
    return in;
  }
  std::vector<double> params;
  for (int s = 0; s < st.parallel.pp; ++s) {
    const sim::StageParams sp = sim::stage_params(st.model, st.parallel, s);
    params.push_back(static_cast<double>(sp.sharded_per_shard) * st.parallel.tp + static_cast<double>(sp.replicated));
  }
  const std::string dir = fs::path(sc.resolve(trace_key)).lexically_normal().string();
  in.source = make_trace_source(measure_trace_entropy(dir, in.compression.gds, bins, backend), params);
  return in;
}

// Simulated plans, in order of first request; simulate() runs only the ones not seen before.
struct PlanCache {
  std::vector<sim::DpSyncPlan> plans;
  std::vector<sim::IterationResult> results;

  void simulate(const SimulationSetup& setup, const std::vector<sim::DpSyncPlan>& wanted, bool timeline, int jobs) {
    std::vector<sim::DpSyncPlan> fresh;
    for (const auto& p : wanted)
      if (std::find(plans.begin(), plans.end(), p) == plans.end() &&
          std::find(fresh.begin(), fresh.end(), p) == fresh.end())
        fresh.push_back(p);
    if (fresh.empty()) return;
    std::vector<sim::IterationResult> r = simulate_plans(setup, fresh, timeline, jobs);
    plans.insert(plans.end(), fresh.begin(), fresh.end());
    results.insert(results.end(), std::make_move_iterator(r.begin()), std::make_move_iterator(r.end()));
  }
  const sim::IterationResult& at(const sim::DpSyncPlan& p) const {
    return results[static_cast<std::size_t>(std::find(plans.begin(), plans.end(), p) - plans.begin())];
  }
};

// DAC's T_com(r) = η·r + c from stage 0's simulated sync at r_min and r_max, its backward time from the cost
// model, and the uncompressed sync time, unless the scenario gives η.
ordered_json fit_dac(Inputs& in, PlanCache& cache, bool timeline, int jobs) {
  core::DacConfig& dac = in.compression.controller.dac;
  if (!dac.enabled) return nullptr;
  const int pp = in.setup.parallel.pp;
  const auto& cqm = in.compression.controller.cqm;
  const bool fitted = dac.eta_s_per_rank <= 0.0;
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
    dac.t_uncompressed_s = cache.at(full).stages[0].dp_sync_s;
    const sim::ComputeCost c0 =
        sim::stage_compute(in.setup.model, in.setup.parallel, in.setup.cluster.gpu, in.setup.cost, 0);
    dac.t_bwd_s = c0.backward_s;
  }
  return {{"fitted_from_simulation", fitted},
          {"eta_s_per_rank", dac.eta_s_per_rank},
          {"c_s", dac.c_s},
          {"t_bwd_s", dac.t_bwd_s},
          {"t_uncompressed_s", dac.t_uncompressed_s}};
}

ordered_json breakdown_json(const sim::IterationBreakdown& b) {
  return {{"compute_s", b.compute_s},
          {"tp_comm_s", b.tp_comm_s},
          {"bubble_s", b.bubble_s},
          {"exposed_dp_comm_s", b.exposed_dp_comm_s},
          {"exposed_compression_s", b.exposed_compression_s},
          {"compression_s", b.compression_s}};
}

// Hours, GPU-hours and dollars: whole numbers when large, 4 significant digits when small.
std::string fmt_amount(double x) { return x >= 100.0 ? fmt_f(x, 0) : fmt_g(x, 4); }

const char* schedule_name(sim::PipelineSchedule s) {
  switch (s) {
    case sim::PipelineSchedule::kGpipe: return "gpipe";
    case sim::PipelineSchedule::kOneFOneB: return "1f1b";
    case sim::PipelineSchedule::kInterleaved: return "interleaved";
  }
  return "?";
}

double reduction(double base, double x) { return base > 0.0 ? 1.0 - x / base : 0.0; }

int run_simulate_command(const std::vector<std::string>& args) {
  std::string scenario;
  std::string out;
  std::string timeline;
  std::string policies;
  std::vector<std::string> sets;
  int jobs = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  po::options_description opts;
  opts.add_options()("scenario", po::value(&scenario)->required(), "scenario JSON (cluster, model, parallelism, "
                                                                    "compression, run, trace or entropy)")(
      "set", po::value(&sets)->composing(), "override a scenario key: dotted.key=value (repeatable)")(
      "out", po::value(&out)->required(), "output directory for result.json (must not exist or be empty)")(
      "timeline", po::value(&timeline), "also write one iteration per distinct rank vector as Chrome-trace JSON")(
      "policies", po::value(&policies), "compared policies, e.g. none,static,edgc (default: simulate.policies, "
                                        "else none,static,<compression.policy>)")(
      "jobs", po::value(&jobs), "simulations run in parallel (default: the CPU count)")(
      "quiet", "print only the output paths");
  po::variables_map vm;
  if (!parse("simulate",
             "--scenario F [--set k=v]... --out DIR [--timeline FILE] [--policies LIST] [--jobs N] [--quiet]", opts,
             {}, args, vm))
    return 0;
  if (jobs < 1) throw UsageError("--jobs", "must be >= 1, got " + std::to_string(jobs));
  if (!timeline.empty() && fs::is_directory(timeline)) throw UsageError("--timeline", "'" + timeline + "' is a directory");

  Inputs in = read_inputs(scenario, sets, policies);
  StagingDir staging(out);  // before the simulations: a busy --out fails fast
  const bool want_timeline = !timeline.empty();
  PlanCache cache;
  const ordered_json dac = fit_dac(in, cache, want_timeline, jobs);

  std::vector<PolicyRun> runs;
  for (const std::string& p : in.policies) {
    core::ControllerConfig cc = in.compression.controller;
    cc.policy = p;
    runs.push_back(plan_policy(cc, in.compression.gds, in.iterations, *in.source));
  }
  std::vector<const sim::RunSchedule*> schedules;
  for (const PolicyRun& r : runs) schedules.push_back(&r.schedule);
  cache.simulate(in.setup, sim::distinct_plans(schedules), want_timeline, jobs);

  const sim::ClusterSpec& cl = in.setup.cluster;
  const int gpus = cl.total_gpus();
  std::vector<sim::RunTotals> totals;
  for (const PolicyRun& r : runs) totals.push_back(sim::accumulate(r.schedule, cache.plans, cache.results));
  const sim::RunTotals& base = totals.front();
  const auto gpu_hours_of = [gpus](const sim::RunTotals& t) { return t.training_time_s / 3600.0 * gpus; };

  ordered_json result = {{"schema", "edgc.result/1"},
                         {"scenario", in.scenario_path},
                         {"simgrid", sim::simgrid_version()},
                         {"cluster", {{"name", cl.name}, {"gpus", gpus}, {"nodes", cl.nodes},
                                      {"gpus_per_node", cl.gpus_per_node}, {"gpu", cl.gpu.name},
                                      {"price_per_gpu_hour_usd", cl.price_per_gpu_hour_usd}}},
                         {"network", in.setup.network.kind == sim::NetworkProfileKind::kIdeal ? "ideal" : "calibrated"},
                         {"model", {{"name", in.setup.model.name}, {"parameters", sim::parameter_count(in.setup.model)}}},
                         {"parallelism", {{"tp", in.setup.parallel.tp}, {"pp", in.setup.parallel.pp},
                                          {"dp", in.setup.parallel.dp}, {"microbatches", in.setup.parallel.microbatches},
                                          {"schedule", schedule_name(in.setup.parallel.schedule)},
                                          {"virtual_stages", in.setup.parallel.virtual_stages},
                                          {"order", in.setup.parallel.order == sim::RankOrder::kTpDpPp ? "tp-dp-pp" : "tp-pp-dp"}}},
                         {"run", {{"iterations", in.iterations}, {"window", in.compression.gds.window_iters},
                                  {"alpha", in.compression.gds.alpha}, {"beta", in.compression.gds.beta},
                                  {"r_min", in.compression.controller.cqm.r_min},
                                  {"r_max", in.compression.controller.cqm.r_max},
                                  {"step", in.compression.controller.cqm.step}}},
                         {"entropy", in.source->describe()},
                         {"dac", dac},
                         {"simulations", cache.plans.size()},
                         {"runs", ordered_json::array()},
                         {"configurations", ordered_json::array()}};
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const sim::RunTotals& t = totals[i];
    const double gpu_hours = gpu_hours_of(t);
    ordered_json schedule = ordered_json::array();
    for (const sim::RunSegment& seg : runs[i].schedule.segments()) {
      ordered_json ranks = ordered_json::array();
      for (const sim::StageSync& s : seg.plan) ranks.push_back(s.powersgd_rank);
      schedule.push_back({{"begin", seg.begin}, {"end", seg.end}, {"ranks", ranks}});
    }
    result["runs"].push_back(
        {{"policy", runs[i].policy},
         {"iteration_time_s", t.iteration_time_s},
         {"comm_latency_s", t.comm_latency_s},
         {"training_time_s", t.training_time_s},
         {"speedup_vs_none", t.training_time_s > 0 ? base.training_time_s / t.training_time_s : 0.0},
         {"comm_latency_reduction_vs_none", reduction(base.comm_latency_s, t.comm_latency_s)},
         {"training_time_reduction_vs_none", reduction(base.training_time_s, t.training_time_s)},
         {"compressed_iterations", t.compressed_iterations},
         {"compressed_phase", t.compressed_iterations > 0
                                  ? ordered_json{{"iteration_time_s", t.compressed_iteration_time_s},
                                                 {"comm_latency_s", t.compressed_comm_latency_s},
                                                 {"comm_latency_reduction_vs_none",
                                                  reduction(base.comm_latency_s, t.compressed_comm_latency_s)},
                                                 {"iteration_time_reduction_vs_none",
                                                  reduction(base.iteration_time_s, t.compressed_iteration_time_s)}}
                                  : ordered_json(nullptr)},
         {"gpu_hours", gpu_hours},
         {"cost_usd", gpu_hours * cl.price_per_gpu_hour_usd},
         {"stage_comm_latency_s", t.stage_comm_latency_s},
         {"breakdown", breakdown_json(t.breakdown)},
         {"warmup_end_iteration", runs[i].warmup_end ? ordered_json(*runs[i].warmup_end) : ordered_json(nullptr)},
         {"windows", runs[i].windows},
         {"rank_bindings", runs[i].bindings},
         {"rank_schedule", schedule}});
  }
  for (std::size_t p = 0; p < cache.plans.size(); ++p) {
    ordered_json c = iteration_to_json(cache.results[p], false);
    ordered_json ranks = ordered_json::array();
    for (const sim::StageSync& s : cache.plans[p]) ranks.push_back(s.powersgd_rank);
    ordered_json entry = {{"ranks", ranks}, {"comm_latency_s", sim::comm_latency_s(cache.results[p])},
                          {"breakdown", breakdown_json(sim::breakdown(cache.results[p]))}};
    entry.update(c);
    result["configurations"].push_back(std::move(entry));
  }

  write_file_atomic(staging.path() / "result.json", result.dump(2) + "\n");
  if (want_timeline)
    write_file_atomic(timeline, chrome_trace(cache.plans, cache.results, in.setup.parallel, cl.gpus_per_node).dump() + "\n");
  staging.commit();

  if (vm.count("quiet") != 0U) {
    std::cout << out << "/result.json\n";
    if (want_timeline) std::cout << timeline << "\n";
    return 0;
  }
  std::cout << "simulate    " << in.scenario_path << ": " << gpus << " x " << cl.gpu.name << ", tp " << in.setup.parallel.tp
            << " pp " << in.setup.parallel.pp << " dp " << in.setup.parallel.dp << ", " << in.iterations
            << " iterations, " << cache.plans.size() << " distinct rank vectors simulated\n\n";
  Table t({"policy", "iter s", "comm latency s", "comm -%", "train h", "train -%", "speedup", "GPU-h", "cost $",
           "warm-up end"});
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const sim::RunTotals& x = totals[i];
    const double gpu_hours = gpu_hours_of(x);
    t.add_row({runs[i].policy, fmt_f(x.iteration_time_s, 3), fmt_f(x.comm_latency_s, 3),
               fmt_f(100.0 * reduction(base.comm_latency_s, x.comm_latency_s), 2), fmt_amount(x.training_time_s / 3600.0),
               fmt_f(100.0 * reduction(base.training_time_s, x.training_time_s), 2),
               fmt_f(base.training_time_s / x.training_time_s, 3), fmt_amount(gpu_hours),
               fmt_amount(gpu_hours * cl.price_per_gpu_hour_usd),
               runs[i].warmup_end ? std::to_string(*runs[i].warmup_end) : std::string("-")});
  }
  t.print(std::cout);
  std::cout << "\nper iteration (mean over the run), seconds\n";
  Table b({"policy", "compute", "TP comm", "bubble+PP", "exposed DP", "exposed compress", "compress total"});
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& x = totals[i].breakdown;
    b.add_row({runs[i].policy, fmt_f(x.compute_s, 3), fmt_f(x.tp_comm_s, 3), fmt_f(x.bubble_s, 3),
               fmt_f(x.exposed_dp_comm_s, 3), fmt_f(x.exposed_compression_s, 4), fmt_f(x.compression_s, 4)});
  }
  b.print(std::cout);
  std::cout << "\nwrote       " << out << "/result.json";
  if (want_timeline) std::cout << ", " << timeline;
  std::cout << "\n";
  return 0;
}

}  // namespace

void add_simulate_command(std::vector<Command>& commands) {
  commands.push_back({"simulate", "whole training runs per compression policy on a simulated cluster (result.json)",
                      run_simulate_command});
}

}  // namespace edgc::cli
