#include "outputs.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <map>

#include "edgc/engine/live_calibration.hpp"
#include "edgc/results/result_document.hpp"
#include "edgc/results/run_figures.hpp"
#include "edgc/results/table.hpp"

namespace edgc::live {

using nlohmann::ordered_json;

namespace {

// One policy run's times, averaged over its steps.
struct RunTotals {
  double iter = 0, comm = 0, train = 0, compute = 0;
  std::vector<double> stage;  // each stage's sync per step
};

RunTotals totals_of(const results::MeasuredRun& run, int pp) {
  RunTotals t;
  t.stage.assign(static_cast<std::size_t>(pp), 0.0);
  for (const auto& s : run.steps) {
    t.train += s.iteration_s;
    double worst_compute = 0;
    for (std::size_t k = 0; k < s.stages.size(); ++k) {
      t.stage[k] += s.stages[k].sync_s;
      worst_compute = std::max(worst_compute, s.stages[k].compute_s);
    }
    t.compute += worst_compute;
  }
  const double n = static_cast<double>(std::max<std::size_t>(1, run.steps.size()));
  t.iter = t.train / n;
  t.comm = t.iter;  // the longest stage sync per step, as simulate's comm_latency_s
  t.compute /= n;
  for (auto& x : t.stage) x /= n;
  return t;
}

// The controller's windows merged into runs of equal per-stage ranks.
std::vector<results::RankSegment> rank_schedule(const engine::ReplayResult& replay) {
  std::vector<results::RankSegment> schedule;
  for (const auto& w : replay.windows) {
    std::vector<std::int64_t> ranks;
    for (const auto& s : w.stages) ranks.push_back(s.rank);
    if (!schedule.empty() && schedule.back().ranks == ranks)
      schedule.back().end = w.end_iteration;
    else
      schedule.push_back({w.first_iteration, w.end_iteration, ranks});
  }
  return schedule;
}

results::ResultRun result_run(const results::MeasuredRun& run, const RunTotals& t, const RunTotals& base,
                              const engine::ReplayResult& replay) {
  std::int64_t wire = 0;
  std::int64_t dense = 0;
  for (const auto& s : run.steps)
    for (const auto& st : s.stages) wire += st.wire_bytes, dense += st.dense_bytes;
  results::ResultRun r;
  static_cast<results::RunFigures&>(r) =
      results::figures_vs_baseline(run.policy, t.iter, t.comm, t.train, base.comm, base.train);
  r.stage_comm_latency_s = t.stage;
  r.warmup_end_iteration = replay.warmup_end;
  r.rank_schedule = rank_schedule(replay);
  r.detail["steps"] = run.steps.size();
  r.detail["compression_compute_s"] = t.compute;
  r.detail["wire_bytes_ratio"] = dense > 0 ? static_cast<double>(wire) / static_cast<double>(dense) : 1.0;
  return r;
}

}  // namespace

ordered_json cluster_json(const results::Measurements& m, const Rates& rates, const std::string& gpu_name,
                          bool kernel_profile) {
  int nodes = 0;
  int per_node = 0;
  std::map<int, int> count;
  for (const auto& p : m.placement) ++count[p.node];
  nodes = static_cast<int>(count.size());
  for (const auto& [node, c] : count) per_node = std::max(per_node, c);
  const bool ring = m.calibration.ranks >= 2 && !m.calibration.rows.empty();
  const engine::RingProfile profile = ring ? engine::ring_profile(m.calibration) : engine::RingProfile{};
  const double latency_us = std::max(1e-3, (ring ? profile.latency_s : m.calibration.latency_s) * 1e6);
  const double bw_GBps = (ring ? profile.bandwidth_Bps : m.calibration.bandwidth_Bps) / 1e9;
  ordered_json sources = {
      {"cluster.gpu.peak_tflops",
       "fp32 GEMM rate the " + m.backend +
           " backend reached on a 384^3 product, median over ranks, divided by the "
           "cost model's default compute_efficiency 0.4 so that the default model predicts the measured rate"},
      {"cluster.gpu.hbm_GBps",
       "memory copy (bytes read + written per second) of 32 MiB, median over ranks, divided by "
       "the default hbm_efficiency 0.85"},
      {"cluster.intra_node",
       ring ? "latency: the alpha of the ring fit of the dense all-reduce calibration over one DP group of " +
                  std::to_string(m.calibration.ranks) +
                  " ranks (capped so that every row keeps a bandwidth part); bandwidth: the fastest row's "
                  "(measurements.json calibration)"
            : "no calibration (one rank per DP group): the copy bandwidth"},
      {"cluster.inter_node", "the same (one host: unused; several hosts: the groups' rings crossed hosts)"}};
  ordered_json cluster = {
      {"name", "live-" + (m.placement.empty() ? std::string("host") : m.placement[0].host)},
      {"gpus_per_node", per_node},
      {"nodes", nodes},
      {"gpu",
       {{"name", gpu_name}, {"peak_tflops", rates.gemm_flops / 0.4 / 1e12}, {"hbm_GBps", rates.copy_Bps / 0.85 / 1e9}}},
      {"intra_node", {{"topology", "switch"}, {"bandwidth_GBps", bw_GBps}, {"latency_us", latency_us}}},
      {"inter_node",
       {{"nics_per_node", 1}, {"nic_bandwidth_GBps", bw_GBps}, {"latency_us", latency_us}, {"fabric", "star"}}},
      {"price_per_gpu_hour_usd", 0.0}};
  ordered_json doc = {{"description", "The machines `edgc live` ran on, as measured by it: " +
                                          std::to_string(m.world_size) + " ranks (" + m.comm + ", " + m.backend +
                                          " backend) on " + std::to_string(nodes) + " host(s)."},
                      {"sources", sources},
                      {"cluster", cluster}};
  if (ring) {
    doc["sources"]["network"] =
        "calibrated profile (calibration.json): per all-reduce size the efficiency that makes the ring formula "
        "give the measured calibration time exactly (interpolated between sizes); MPI's algorithms are not NCCL's, "
        "so the ring is forced";
    doc["network"] = {{"profile", "calibrated"}, {"calibration", kCalibrationFile}, {"algorithm", "ring"}};
  }
  if (kernel_profile) {
    doc["sources"]["compute"] =
        "kernel profile (kernels.json): PowerSGD batches and dense-buffer copies timed by the probe at its ranks";
    doc["compute"] = {{"kernel_profile", kKernelProfileFile}};
  }
  return doc;
}

ordered_json calibration_json(const results::Measurements& m) {
  const engine::RingProfile profile = engine::ring_profile(m.calibration);
  ordered_json points = ordered_json::array();
  for (const auto& [bytes, eff] : profile.points) points.push_back({bytes, eff});
  const ordered_json curve = {{"points", points}, {"latency_factor", 1.0}};
  return {{"schema", "edgc.calibration/1"},
          {"source", "edgc live: dense all-reduces over each DP group of " + std::to_string(m.calibration.ranks) +
                         " ranks (measurements.json calibration); points keyed by the ring chunk (bytes / ranks)"},
          {"intra", curve},
          {"inter", curve}};
}

results::ResultDocument result_document(const LiveOptions& o, const results::Measurements& m,
                                        const std::vector<PolicyOutcome>& outcomes) {
  results::ResultDocument doc;
  doc.source = "live";
  doc.scenario = o.scenario_path;
  doc.parallelism = results::ResultParallelism{1, m.pp, m.dp, 0, "", 0, ""};
  doc.sections["trace"] = m.trace;
  doc.sections["note"] =
      "live mode times the data-parallel gradient sync of every stage (compression compute and real all-reduces); "
      "forward and backward compute are not run, so iteration_time_s and training_time_s cover the sync only "
      "(training_time_s = the sum over replayed steps)";
  ordered_json fits = ordered_json::array();
  for (const auto& f : m.tcom_fit) fits.push_back(results::to_json(f));
  doc.sections["tcom_fit"] = fits;
  std::vector<RunTotals> totals;
  for (const auto& run : m.runs) totals.push_back(totals_of(run, m.pp));
  for (std::size_t i = 0; i < m.runs.size(); ++i)
    doc.runs.push_back(result_run(m.runs[i], totals[i], totals.front(), outcomes[i].replay));
  return doc;
}

void print_summary(const results::Measurements& m, const results::ResultDocument& result, const std::string& out_dir) {
  std::cout << "# edgc live: " << m.world_size << " ranks (pp " << m.pp << " x dp " << m.dp << "), " << m.comm
            << " all-reduces, " << m.backend << " backend; trace " << m.trace << "\n";
  std::cout << "# calibration (dense all-reduce over " << m.calibration.ranks << " ranks): latency "
            << results::fmt_f(m.calibration.latency_s * 1e6, 2) << " us per ring step, bandwidth "
            << results::fmt_f(m.calibration.bandwidth_Bps / 1e9, 3) << " GB/s\n";
  results::Table t({"policy", "steps", "sync/step(ms)", "compute(ms)", "wire/dense", "sync vs none"});
  for (const results::ResultRun& r : result.runs)
    t.add_row({r.policy, std::to_string(r.detail.at("steps").get<std::size_t>()),
               results::fmt_f(r.iteration_time_s * 1e3, 3),
               results::fmt_f(r.detail.at("compression_compute_s").get<double>() * 1e3, 3),
               results::fmt_f(r.detail.at("wire_bytes_ratio").get<double>(), 3),
               results::fmt_f(-100.0 * r.comm_latency_reduction_vs_none, 1) + " %"});
  t.print(std::cout);
  results::Table f(
      {"stage", "T_com(r) = eta*r + c", "eta(us/rank)", "+-(us/rank)", "c(us)", "r2 (P+Q)", "points", "resolved"});
  for (const auto& x : m.tcom_fit)
    f.add_row({std::to_string(x.stage), "", results::fmt_f(x.eta_s * 1e6, 3), results::fmt_f(x.eta_stderr_s * 1e6, 3),
               results::fmt_f(x.c_s * 1e6, 2), results::fmt_f(x.r2, 3), std::to_string(x.points),
               x.significant ? "yes" : "no"});
  f.print(std::cout);
  for (const auto& x : m.tcom_fit)
    if (!x.significant)
      std::cout << "# warning: stage " << x.stage << "'s T_com slope is not resolved above the noise (eta "
                << results::fmt_g(x.eta_s * 1e6, 3) << " +- " << results::fmt_g(x.eta_stderr_s * 1e6, 3)
                << " us/rank, not positive at 95 %): simulate with compression.dac.measured set to this "
                   "measurements.json falls back to its own fit\n";
  if (const std::string caveat = results::oversubscription_caveat(m); !caveat.empty())
    std::cout << "# " << caveat << "\n";
  std::cout << "wrote " << out_dir << "/measurements.json, cluster.json, ";
  for (const char* file : {kCalibrationFile, kKernelProfileFile})
    if (std::filesystem::exists(std::filesystem::path(out_dir) / file)) std::cout << file << ", ";
  std::cout << "result.json\n";
}

}  // namespace edgc::live
