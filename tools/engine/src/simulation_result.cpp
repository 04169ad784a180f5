#include "simulation_result.hpp"

#include "edgc/results/run_figures.hpp"
#include "edgc/sim/cost_model.hpp"
#include "edgc/sim/engine_info.hpp"
#include "edgc/sim/layout.hpp"
#include "edgc/sim/spec_names.hpp"

namespace edgc::engine {

using nlohmann::ordered_json;
using results::breakdown_json;
using results::reduction;

void set_setup(results::ResultDocument& doc, const SimulationSetup& setup, std::int64_t iterations,
               const scenario::CompressionSettings& compression) {
  const sim::ClusterSpec& cl = setup.cluster;
  const sim::ParallelSpec& par = setup.parallel;
  const core::CqmConfig& cqm = compression.controller.cqm;
  doc.cluster = results::ResultCluster{cl.name,          cl.total_gpus(), cl.nodes,
                                       cl.gpus_per_node, cl.gpu.name,     cl.price_per_gpu_hour_usd};
  doc.model_name = setup.model.name;
  doc.model_parameters = static_cast<double>(sim::parameter_count(setup.model));
  const sim::ModelSpec& m = setup.model;
  doc.model_architecture = {{"layers", m.layers},
                            {"hidden", m.hidden},
                            {"heads", m.heads},
                            {"kv_heads", m.kv_heads_or_default()},
                            {"head_dim", m.head_dim_or_default()},
                            {"ffn_hidden", m.ffn_or_default()},
                            {"mlp", std::string(sim::mlp_name(m.mlp))},
                            {"norm", std::string(sim::norm_name(m.norm))},
                            {"position", std::string(sim::position_name(m.position))},
                            {"bias", std::string(sim::bias_name(m.bias))},
                            {"tie_embeddings", m.tie_embeddings},
                            {"dropout", m.dropout},
                            {"qk_norm", m.qk_norm},
                            {"vocab", m.vocab},
                            {"padded_vocab", sim::padded_vocab(m, setup.parallel.tp)},
                            {"seq_len", m.seq_len},
                            {"dtype", m.dtype},
                            {"attention", std::string(sim::attention_name(m.attention))},
                            {"precision", m.fp8 ? std::string("fp8") : m.dtype}};
  // No dense MLP where every layer is an MoE layer: the experts' width is below.
  if (m.moe() && m.moe_layer_pattern.empty()) doc.model_architecture.erase("ffn_hidden");
  if (m.moe())
    doc.model_architecture["mixture_of_experts"] = {{"experts", m.experts},
                                                    {"top_k", m.top_k},
                                                    {"moe_ffn_hidden", m.moe_ffn_or_default()},
                                                    {"shared_experts", m.shared_experts},
                                                    {"load_factor", m.moe_load_factor},
                                                    {"active_parameters", sim::active_parameter_count(m)},
                                                    {"ep", par.ep},
                                                    {"etp", par.etp},
                                                    {"expert_dp", sim::expert_dp_size(par)}};
  if (m.moe() && !m.moe_layer_pattern.empty())  // dense layers among the MoE ones (model.moe_layer_freq)
    doc.model_architecture["mixture_of_experts"]["moe_layers"] = sim::model_layer_mix(m).moe;
  if (m.moe() && par.moe_a2a_overlap) doc.model_architecture["mixture_of_experts"]["a2a_overlap"] = true;
  doc.parallelism = results::ResultParallelism{par.tp,
                                               par.pp,
                                               par.dp,
                                               par.microbatches,
                                               std::string(sim::schedule_name(par.schedule)),
                                               par.virtual_stages,
                                               std::string(sim::rank_order_name(par.order))};
  doc.run = results::ResultRunSettings{
      iterations, compression.gds.window_iters, compression.gds.alpha, compression.gds.beta, cqm.r_min, cqm.r_max,
      cqm.step};
  doc.sections["simgrid"] = sim::simgrid_version();
  doc.sections["network"] = std::string(sim::network_profile_name(setup.network.kind));
  // How pass times were computed (scenarios/README.md, `compute.model`), and the Megatron features in force.
  const sim::ParallelSpec& p = setup.parallel;
  doc.sections["cost_model"] = {
      {"framework", setup.framework.empty() ? ordered_json(nullptr) : ordered_json(setup.framework)},
      {"compute", setup.cost.compute_model == sim::ComputeModel::kKernels ? "kernels" : "efficiency"},
      {"efficiency", setup.cost.compute_efficiency},
      {"recompute", std::string(sim::recompute_name(setup.model.recompute))},
      {"sequence_parallel", p.sequence_parallel},
      {"distributed_optimizer", p.distributed_optimizer},
      {"overlap_grad_reduce", p.overlap_grad_reduce},
      {"overlap_param_gather", p.distributed_optimizer && p.overlap_param_gather},
      {"tp_comm_overlap", p.tp_comm_overlap},
      {"grad_reduce_bytes", sim::grad_bytes(setup.model, p)},
      {"embedding_allreduce", p.embedding_allreduce},
      {"fused_embedding_sync", sim::fused_embedding_sync_applies(p)},
      {"scatter_gather_p2p", p.scatter_gather_p2p},
      {"grad_accumulation_fusion", p.grad_accumulation_fusion},
      {"async_tp_allreduce", p.async_tp_allreduce}};
  doc.sections["variability"] = {{"compute_jitter_cv", setup.variability.compute_jitter_cv},
                                 {"straggler_probability", setup.variability.straggler_probability},
                                 {"straggler_slowdown", setup.variability.straggler_slowdown},
                                 {"seed", setup.variability.seed}};
}

results::ResultRun result_run(const PolicyRun& run, const sim::RunTotals& t, const sim::RunTotals& base,
                              double gpu_hours, double price_per_gpu_hour_usd) {
  results::ResultRun r;
  static_cast<results::RunFigures&>(r) = results::figures_vs_baseline(
      run.policy, t.iteration_time_s, t.comm_latency_s, t.training_time_s, base.comm_latency_s, base.training_time_s);
  r.gpu_hours = gpu_hours;
  r.cost_usd = gpu_hours * price_per_gpu_hour_usd;
  r.compressed_iterations = t.compressed_iterations;
  r.stage_comm_latency_s = t.stage_comm_latency_s;
  r.breakdown = t.breakdown;
  r.warmup_end_iteration = run.warmup_end;
  int pp_rank = 0;  // the pipeline's backward messages (edgc-pp): the largest rank of any boundary
  ordered_json pp_schedule = ordered_json::array();  // per segment, the rank of the messages each stage sends
  for (const sim::RunSegment& seg : run.schedule.segments()) {
    results::RankSegment s{seg.begin, seg.end, {}};
    std::vector<int> pp;
    for (std::size_t k = 0; k < seg.plan.size(); ++k) {
      s.ranks.push_back(seg.plan[k].powersgd_rank);
      pp.push_back(k == 0 ? 0 : seg.plan[k].pp_rank);  // stage 0 sends no backward message
      pp_rank = std::max(pp_rank, seg.plan[k].pp_rank);
    }
    if (!pp_schedule.empty() && pp_schedule.back()["pp_ranks"] == ordered_json(pp) &&
        pp_schedule.back()["end"] == seg.begin)
      pp_schedule.back()["end"] = seg.end;
    else
      pp_schedule.push_back({{"begin", seg.begin}, {"end", seg.end}, {"pp_ranks", pp}});
    r.rank_schedule.push_back(std::move(s));
  }
  r.detail["pp_rank"] = pp_rank;
  if (pp_rank > 0) r.detail["pp_rank_schedule"] = std::move(pp_schedule);
  r.detail["compressed_phase"] = t.compressed_iterations > 0
                                     ? ordered_json{{"iteration_time_s", t.compressed_iteration_time_s},
                                                    {"comm_latency_s", t.compressed_comm_latency_s},
                                                    {"comm_latency_reduction_vs_none",
                                                     reduction(base.comm_latency_s, t.compressed_comm_latency_s)},
                                                    {"iteration_time_reduction_vs_none",
                                                     reduction(base.iteration_time_s, t.compressed_iteration_time_s)}}
                                     : ordered_json(nullptr);
  r.detail["windows"] = run.windows;
  r.detail["rank_bindings"] = run.bindings;
  return r;
}

ordered_json configuration_json(const sim::DpSyncPlan& plan, const sim::IterationResult& r) {
  ordered_json ranks = ordered_json::array();
  ordered_json pp_ranks = ordered_json::array();
  for (const sim::StageSync& s : plan) {
    ranks.push_back(s.powersgd_rank);
    pp_ranks.push_back(s.pp_rank);
  }
  ordered_json entry = {{"ranks", ranks},
                        {"pp_ranks", pp_ranks},
                        {"comm_latency_s", sim::comm_latency_s(r)},
                        {"breakdown", breakdown_json(sim::breakdown(r))}};
  entry.update(iteration_to_json(r, false));
  return entry;
}

}  // namespace edgc::engine
