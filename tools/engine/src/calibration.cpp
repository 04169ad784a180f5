// engine::run_calibration: the fit of calibration.hpp in named steps (the starting fit of each log, the refinement
// by simulation, the round trip), each simulation in a child process.
#include "edgc/engine/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "edgc/core/atomic_file.hpp"
#include "edgc/core/error.hpp"
#include "edgc/core/isolated.hpp"
#include "edgc/results/nccl_tests_log.hpp"
#include "edgc/results/table.hpp"
#include "edgc/scenario/cluster_config.hpp"
#include "edgc/sim/collectives.hpp"
#include "edgc/sim/engine_info.hpp"
#include "edgc/sim/platform.hpp"
#include "edgc/sim/spec.hpp"

namespace edgc::engine {
namespace {

using results::CalibrationCurve;

constexpr int kFitRounds = 6;

// The starting fit of one log (calibration.hpp). `headroom`: how far busbw may exceed `ceiling_Bps` on this link
// class (NVSwitch reduces in the switch, NVLS, so each GPU sends and receives a buffer once: busbw up to 2(n-1)/n ×
// the link rate).
CalibrationCurve start_fit(const results::NcclTestsLog& log, int n, double ceiling_Bps, double route_latency_s,
                           double headroom) {
  const double steps = 2.0 * (n - 1);
  const results::NcclTestsRow& small = log.rows.front();
  CalibrationCurve curve;
  curve.from_log = true;
  curve.latency_factor = route_latency_s > 0 ? std::max(1e-3, small.time_us * 1e-6 / (steps * route_latency_s)) : 1.0;
  for (const results::NcclTestsRow& r : log.rows) {
    // 2 % beyond what the links can carry is measurement noise (timer granularity); more is another machine's log.
    if (r.busbw_GBps * 1e9 > 1.02 * headroom * ceiling_Bps)
      throw ConfigError(log.path, "busbw",
                        "measured " + results::fmt_g(r.busbw_GBps, 4) + " GB/s at " + results::fmt_g(r.bytes, 4) +
                            " bytes, above the cluster's line rate " + results::fmt_g(ceiling_Bps / 1e9, 4) + " GB/s" +
                            (headroom > 1 ? " x " + results::fmt_g(headroom, 3) + " (in-switch reduction)" : "") +
                            ": is --cluster the machine the log was taken on?");
    const double ideal_s = steps / n * r.bytes / ceiling_Bps;
    const double transfer_s = r.time_us * 1e-6 - steps * route_latency_s * curve.latency_factor;
    const double eff = transfer_s > 0 ? std::clamp(ideal_s / transfer_s, 1e-3, 1.0) : 1.0;
    curve.points.emplace_back(r.bytes / n, eff);
  }
  curve.ranks = n;
  curve.busbw_ceiling_GBps = ceiling_Bps / 1e9;
  curve.source = log.path;
  return curve;
}

// One log as the fit sees it.
struct LogFit {
  results::NcclTestsLog log;
  int ranks = 0;
  bool intra = false;
};

// What simulating one log's sizes gave: per row the seconds, the algorithm and the transfer size used as key.
struct Simulated {
  std::vector<double> seconds;
  std::vector<std::string> algorithm;
  std::vector<double> key_bytes;
};

// Simulates every log's all-reduces on `spec` with `profile`: one child process per log (SimGrid cannot be reset),
// ranks packed on nodes of `ranks_per_node` GPUs as nccl-tests places them.
std::vector<Simulated> simulate_logs(const sim::ClusterSpec& spec, int ranks_per_node,
                                     const sim::NetworkProfile& profile, const std::vector<LogFit>& logs) {
  std::vector<std::function<std::string()>> jobs;
  for (const LogFit& fit : logs) {
    jobs.emplace_back([&spec, ranks_per_node, &profile, &fit] {
      const std::unique_ptr<sim::sg4::Engine> engine = sim::boot_engine();
      const sim::Platform platform = sim::Platform::build(*engine, spec, profile);
      sim::Group g{{}, "calibrate"};
      for (int r = 0; r < fit.ranks; ++r)
        g.hosts.push_back(platform.gpu((r / ranks_per_node) * spec.gpus_per_node + r % ranks_per_node));
      std::vector<std::uint64_t> sizes;
      for (const results::NcclTestsRow& row : fit.log.rows) sizes.push_back(static_cast<std::uint64_t>(row.bytes));
      nlohmann::json out = {{"seconds", sim::time_collective_sweep(*engine, sim::CollectiveOp::kAllReduce, g, sizes)},
                            {"algorithm", nlohmann::json::array()},
                            {"key_bytes", nlohmann::json::array()}};
      for (const std::uint64_t bytes : sizes) {
        const sim::CollectiveAlgorithm a = sim::chosen_allreduce_algorithm(g, bytes);
        out["algorithm"].push_back(sim::allreduce_algorithm_name(a));
        const std::uint64_t key = sim::allreduce_transfer_bytes(a, g, bytes);
        out["key_bytes"].push_back(static_cast<double>(std::max<std::uint64_t>(key, 1)));
      }
      return out.dump();
    });
  }
  std::vector<Simulated> result;
  for (const std::string& text : core::run_isolated(jobs, 2)) {
    const nlohmann::json j = nlohmann::json::parse(text);
    result.push_back({j["seconds"].get<std::vector<double>>(), j["algorithm"].get<std::vector<std::string>>(),
                      j["key_bytes"].get<std::vector<double>>()});
  }
  return result;
}

// The curve of one log as points keyed by `key_bytes` (sorted; rows with the same key averaged).
std::vector<std::pair<double, double>> keyed_points(const std::vector<double>& key_bytes,
                                                    const std::vector<double>& efficiency) {
  std::map<double, std::pair<double, int>> by_key;
  for (std::size_t i = 0; i < key_bytes.size(); ++i) {
    auto& [sum, n] = by_key[key_bytes[i]];
    sum += efficiency[i];
    ++n;
  }
  std::vector<std::pair<double, double>> points;
  for (const auto& [key, acc] : by_key) points.emplace_back(key, acc.first / acc.second);
  return points;
}

// The checked request: the cluster, the ranks per node and the algorithm.
struct Setup {
  sim::ClusterSpec spec;
  int ranks_per_node = 0;
  sim::CollectiveAlgorithm algorithm{};
};

Setup check_request(const CalibrateRequest& request) {
  check_output_file(request.out, "--out");
  scenario::Scenario scenario = scenario::load_scenario(request.cluster, request.sets);
  Setup setup{scenario::read_cluster(scenario), 0, {}};
  scenario.reject_unknown({"cluster"});
  setup.ranks_per_node = request.ranks_per_node.value_or(setup.spec.gpus_per_node);
  if (setup.ranks_per_node < 1)
    throw UsageError("--ranks-per-node", "must be >= 1, got " + std::to_string(setup.ranks_per_node));
  if (request.ranks && *request.ranks < 2)
    throw UsageError("--ranks", "must be >= 2, got " + std::to_string(*request.ranks));
  const std::optional<sim::CollectiveAlgorithm> algorithm = sim::allreduce_algorithm_from_name(request.algorithm);
  if (!algorithm) throw UsageError("--algorithm", "expected auto, ring or tree, got '" + request.algorithm + "'");
  setup.algorithm = *algorithm;
  if (setup.ranks_per_node > setup.spec.gpus_per_node)
    throw UsageError("--ranks-per-node", "must be at most the cluster's " + std::to_string(setup.spec.gpus_per_node) +
                                             " GPUs per node, got " + std::to_string(setup.ranks_per_node));
  return setup;
}

// Reads every log and fits its starting curve into `report` (in the order of the logs); the classes without a log
// keep the line rate.
std::vector<LogFit> start_fits(const CalibrateRequest& request, const Setup& setup,
                               results::CalibrationReport& report) {
  const sim::ClusterSpec& spec = setup.spec;
  const double lanes = spec.intra_topology == sim::IntraNodeTopology::kDgx1CubeMesh ? 6 : 1;
  const double nvlink_Bps = lanes * spec.intra_bandwidth_GBps * 1e9;
  const double nic_Bps = spec.nics_per_node * spec.nic_bandwidth_GBps * 1e9;
  const auto has = [&report](const std::string& kind) {
    return std::any_of(report.curves.begin(), report.curves.end(),
                       [&kind](const CalibrationCurve& c) { return c.kind == kind; });
  };
  std::vector<LogFit> fits;
  for (const auto& path : request.logs) {
    LogFit f{results::read_nccl_tests_log(path), 0, false};
    report.skipped_lines += f.log.skipped;
    f.ranks = request.ranks.value_or(f.log.ranks);
    if (f.ranks < 2) throw ConfigError(path, "", "cannot tell the number of ranks (no '# Rank' lines): give --ranks");
    f.intra = f.ranks <= setup.ranks_per_node;
    const std::string kind = f.intra ? "intra" : "inter";
    if (has(kind)) throw UsageError("--nccl-tests", "two logs for the " + kind + "-node curve");
    const int n = f.ranks;
    const double nvls = spec.intra_topology == sim::IntraNodeTopology::kSwitch ? 2.0 * (n - 1) / n : 1.0;
    report.curves.push_back(
        f.intra ? start_fit(f.log, n, nvlink_Bps, spec.intra_latency_us * 1e-6, nvls)
                : start_fit(f.log, n, std::min(nic_Bps, nvlink_Bps), spec.inter_latency_us * 1e-6, 1.0));
    report.curves.back().kind = kind;
    fits.push_back(std::move(f));
  }
  for (const char* kind : {"intra", "inter"}) {
    if (has(kind)) continue;
    CalibrationCurve line_rate;
    line_rate.kind = kind;
    report.curves.push_back(line_rate);
  }
  return fits;
}

// Refines the starting curves by simulation (the starting fit assumes one ring; the simulator runs channels and
// trees) and writes the fitted curves and each log's round trip into the report's first curves (one per log).
void refine(const std::vector<LogFit>& fits, const Setup& setup, results::CalibrationReport& report) {
  sim::ClusterSpec big = setup.spec;  // enough nodes for every log
  for (const LogFit& f : fits)
    big.nodes = std::max(big.nodes, (f.ranks + setup.ranks_per_node - 1) / setup.ranks_per_node);
  sim::NetworkProfile profile;
  profile.kind = sim::NetworkProfileKind::kCalibrated;
  profile.algorithm = setup.algorithm;
  // A class without a log keeps the line rate (no points: efficiency 1, latency factor 1).
  const auto curve_of = [&](bool intra) -> sim::EfficiencyCurve& { return intra ? profile.intra : profile.inter; };
  std::vector<std::vector<double>> eff(fits.size());  // [log][row]
  for (std::size_t l = 0; l < fits.size(); ++l) {
    sim::EfficiencyCurve& c = curve_of(fits[l].intra);
    c.latency_factor = report.curves[l].latency_factor;
    for (const auto& [bytes, e] : report.curves[l].points) {
      c.points.emplace_back(bytes, e);
      eff[l].push_back(e);
    }
  }
  std::vector<Simulated> sims = simulate_logs(big, setup.ranks_per_node, profile, fits);
  for (int round = 0; round < kFitRounds; ++round) {
    for (std::size_t l = 0; l < fits.size(); ++l) {
      const auto& rows = fits[l].log.rows;
      const Simulated& sim_l = sims[l];
      sim::EfficiencyCurve& c = curve_of(fits[l].intra);
      c.latency_factor *= rows.front().time_us * 1e-6 / sim_l.seconds.front();
      for (std::size_t i = 1; i < rows.size(); ++i) {
        const double measured = (rows[i].time_us - rows.front().time_us) * 1e-6;
        const double simulated = sim_l.seconds[i] - sim_l.seconds.front();
        if (measured > 0 && simulated > 0) eff[l][i] = std::clamp(eff[l][i] * simulated / measured, 1e-3, 1.0);
      }
      c.points = keyed_points(sim_l.key_bytes, eff[l]);
    }
    sims = simulate_logs(big, setup.ranks_per_node, profile, fits);
  }
  for (std::size_t l = 0; l < fits.size(); ++l) {
    const sim::EfficiencyCurve& c = curve_of(fits[l].intra);
    CalibrationCurve& out = report.curves[l];
    out.points = c.points;
    out.latency_factor = c.latency_factor;
    for (std::size_t i = 0; i < fits[l].log.rows.size(); ++i) {
      const results::NcclTestsRow& row = fits[l].log.rows[i];
      const double simulated_us = sims[l].seconds[i] * 1e6;
      out.round_trip.push_back(
          {row.bytes, row.time_us, simulated_us, simulated_us / row.time_us - 1.0, sims[l].algorithm[i]});
    }
  }
}

}  // namespace

results::CalibrationReport run_calibration(const CalibrateRequest& request) {
  const Setup setup = check_request(request);
  results::CalibrationReport report;
  report.cluster = setup.spec.name;
  report.algorithm = sim::allreduce_algorithm_name(setup.algorithm);
  report.logs = static_cast<int>(request.logs.size());
  const std::vector<LogFit> fits = start_fits(request, setup, report);
  refine(fits, setup, report);
  return report;
}

}  // namespace edgc::engine
