#include "simulation_result.hpp"

#include "edgc/results/run_figures.hpp"
#include "edgc/sim/cost_model.hpp"

namespace edgc::engine {

using nlohmann::ordered_json;
using results::breakdown_json;
using results::reduction;

ordered_json setup_json(const SimulationSetup& setup, std::int64_t iterations,
                        const scenario::CompressionSettings& compression) {
  const sim::ClusterSpec& cl = setup.cluster;
  const sim::ParallelSpec& par = setup.parallel;
  const core::CqmConfig& cqm = compression.controller.cqm;
  return {{"cluster",
           {{"name", cl.name},
            {"gpus", cl.total_gpus()},
            {"nodes", cl.nodes},
            {"gpus_per_node", cl.gpus_per_node},
            {"gpu", cl.gpu.name},
            {"price_per_gpu_hour_usd", cl.price_per_gpu_hour_usd}}},
          {"network", setup.network.kind == sim::NetworkProfileKind::kIdeal ? "ideal" : "calibrated"},
          {"model", {{"name", setup.model.name}, {"parameters", sim::parameter_count(setup.model)}}},
          {"parallelism",
           {{"tp", par.tp},
            {"pp", par.pp},
            {"dp", par.dp},
            {"microbatches", par.microbatches},
            {"schedule", results::schedule_name(par.schedule)},
            {"virtual_stages", par.virtual_stages},
            {"order", par.order == sim::RankOrder::kTpDpPp ? "tp-dp-pp" : "tp-pp-dp"}}},
          {"run",
           {{"iterations", iterations},
            {"window", compression.gds.window_iters},
            {"alpha", compression.gds.alpha},
            {"beta", compression.gds.beta},
            {"r_min", cqm.r_min},
            {"r_max", cqm.r_max},
            {"step", cqm.step}}},
          {"variability",
           {{"compute_jitter_cv", setup.variability.compute_jitter_cv},
            {"straggler_probability", setup.variability.straggler_probability},
            {"straggler_slowdown", setup.variability.straggler_slowdown},
            {"seed", setup.variability.seed}}}};
}

ordered_json run_json(const PolicyRun& run, const sim::RunTotals& t, const sim::RunTotals& base, double gpu_hours,
                      double price_per_gpu_hour_usd) {
  ordered_json schedule = ordered_json::array();
  for (const sim::RunSegment& seg : run.schedule.segments()) {
    ordered_json ranks = ordered_json::array();
    for (const sim::StageSync& s : seg.plan) ranks.push_back(s.powersgd_rank);
    schedule.push_back({{"begin", seg.begin}, {"end", seg.end}, {"ranks", ranks}});
  }
  const ordered_json compressed_phase =
      t.compressed_iterations > 0 ? ordered_json{{"iteration_time_s", t.compressed_iteration_time_s},
                                                 {"comm_latency_s", t.compressed_comm_latency_s},
                                                 {"comm_latency_reduction_vs_none",
                                                  reduction(base.comm_latency_s, t.compressed_comm_latency_s)},
                                                 {"iteration_time_reduction_vs_none",
                                                  reduction(base.iteration_time_s, t.compressed_iteration_time_s)}}
                                  : ordered_json(nullptr);
  return {{"policy", run.policy},
          {"iteration_time_s", t.iteration_time_s},
          {"comm_latency_s", t.comm_latency_s},
          {"training_time_s", t.training_time_s},
          {"speedup_vs_none", t.training_time_s > 0 ? base.training_time_s / t.training_time_s : 0.0},
          {"comm_latency_reduction_vs_none", reduction(base.comm_latency_s, t.comm_latency_s)},
          {"training_time_reduction_vs_none", reduction(base.training_time_s, t.training_time_s)},
          {"compressed_iterations", t.compressed_iterations},
          {"compressed_phase", compressed_phase},
          {"gpu_hours", gpu_hours},
          {"cost_usd", gpu_hours * price_per_gpu_hour_usd},
          {"stage_comm_latency_s", t.stage_comm_latency_s},
          {"breakdown", breakdown_json(t.breakdown)},
          {"warmup_end_iteration", run.warmup_end ? ordered_json(*run.warmup_end) : ordered_json(nullptr)},
          {"windows", run.windows},
          {"rank_bindings", run.bindings},
          {"rank_schedule", schedule}};
}

ordered_json configuration_json(const sim::DpSyncPlan& plan, const sim::IterationResult& r) {
  ordered_json ranks = ordered_json::array();
  for (const sim::StageSync& s : plan) ranks.push_back(s.powersgd_rank);
  ordered_json entry = {
      {"ranks", ranks}, {"comm_latency_s", sim::comm_latency_s(r)}, {"breakdown", breakdown_json(sim::breakdown(r))}};
  entry.update(iteration_to_json(r, false));
  return entry;
}

}  // namespace edgc::engine
