// `edgc calibrate`: fits the calibrated network profile to nccl-tests all_reduce_perf logs, so that simulating each
// log's all-reduces reproduces the log. Each log becomes the intra-node curve (all ranks on one node) or the
// inter-node curve. The fit runs the simulator itself (channels, ring or tree as all_reduce() chooses them):
//   start   latency factor = time of the smallest message / (2(n-1) · route latency of the cluster file),
//           efficiency(row) = ideal ring time 2(n-1)/n · S / B / (measured time - latency part), B the busbw ceiling
//           of the hardware (the GPU's NVLink inside a node, 6 lanes on the DGX-1 cube-mesh; min(node NICs, NVLink)
//           across nodes);
//   repeat  simulate every log's sizes (ranks packed on nodes, as nccl-tests places them) in a child process, then
//           latency factor ×= measured / simulated time of the smallest message, and each row's efficiency
//           ×= simulated / measured time beyond that smallest message's (clamped to (0, 1]);
// keyed by the bytes of one transfer of that row's all-reduce as the simulator runs it (a ring step's chunk per
// channel, S/(n·C); a tree edge's S/(2C)), because that is the size SimGrid's factor callbacks see. The output
// carries the round trip: per row the measured time, the simulated time with the fitted profile, and the error.
#include <algorithm>
#include <cmath>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "edgc/core/atomic_file.hpp"
#include "edgc/core/error.hpp"
#include "edgc/core/isolated.hpp"
#include "edgc/results/nccl_tests_log.hpp"
#include "edgc/results/table.hpp"
#include "edgc/scenario/cluster_config.hpp"
#include "edgc/sim/collectives.hpp"
#include "edgc/sim/engine_info.hpp"
#include "edgc/sim/platform.hpp"

namespace edgc::cli {
namespace {

// `headroom`: how far busbw may exceed `ceiling_Bps` on this link class (NVSwitch reduces in the switch, NVLS, so
// each GPU sends and receives a buffer once: busbw up to 2(n-1)/n × the link rate).
nlohmann::ordered_json fit(const results::NcclTestsLog& log, int n, double ceiling_Bps, double route_latency_s,
                           double headroom) {
  const double steps = 2.0 * (n - 1);
  const results::NcclTestsRow& small = log.rows.front();
  const double lat_factor =
      route_latency_s > 0 ? std::max(1e-3, small.time_us * 1e-6 / (steps * route_latency_s)) : 1.0;
  nlohmann::ordered_json points = nlohmann::ordered_json::array();
  for (const results::NcclTestsRow& r : log.rows) {
    // 2 % beyond what the links can carry is measurement noise (timer granularity); more is another machine's log.
    if (r.busbw_GBps * 1e9 > 1.02 * headroom * ceiling_Bps)
      throw ConfigError(log.path, "busbw",
                        "measured " + results::fmt_g(r.busbw_GBps, 4) + " GB/s at " + results::fmt_g(r.bytes, 4) +
                            " bytes, above the cluster's line rate " + results::fmt_g(ceiling_Bps / 1e9, 4) + " GB/s" +
                            (headroom > 1 ? " x " + results::fmt_g(headroom, 3) + " (in-switch reduction)" : "") +
                            ": is --cluster the machine the log was taken on?");
    const double ideal_s = steps / n * r.bytes / ceiling_Bps;
    const double transfer_s = r.time_us * 1e-6 - steps * route_latency_s * lat_factor;
    const double eff = transfer_s > 0 ? std::clamp(ideal_s / transfer_s, 1e-3, 1.0) : 1.0;
    points.push_back({r.bytes / n, eff});
  }
  return {{"points", points},
          {"latency_factor", lat_factor},
          {"ranks", n},
          {"busbw_ceiling_GBps", ceiling_Bps / 1e9},
          {"source", log.path}};
}

constexpr int kFitRounds = 6;

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

int run_calibrate(const std::vector<std::string>& args) {
  std::vector<std::string> logs;
  std::string cluster_path;
  std::vector<std::string> overrides;
  int ranks_per_node = 0;
  int ranks = 0;
  std::string out;
  std::string algorithm_name = "auto";
  po::options_description opts;
  auto add = opts.add_options();
  add("nccl-tests", po::value(&logs)->required()->composing(), "all_reduce_perf log (repeatable: one per node count)");
  add("cluster", po::value(&cluster_path)->required(), "cluster file whose line rates the efficiencies refer to");
  add("set", po::value(&overrides)->composing(), "override a cluster key: dotted.key=value (repeatable)");
  add("ranks-per-node", po::value(&ranks_per_node), "GPUs per node in the logs (default: the cluster's)");
  add("ranks", po::value(&ranks), "ranks of every log (default: counted from its '# Rank' lines)");
  add("algorithm", po::value(&algorithm_name),
      "all-reduce algorithm the fit simulates: auto | ring | tree (default auto)");
  add("out", po::value(&out)->required(), "calibration JSON to write (atomically)");
  po::variables_map vm;
  if (!parse("calibrate", "--nccl-tests LOG... --cluster F [--ranks-per-node N] [--ranks N] [--algorithm A] --out FILE",
             opts, {}, args, vm))
    return 0;
  check_output_file(out, "--out");
  scenario::Scenario scenario = scenario::load_scenario(cluster_path, overrides);
  const sim::ClusterSpec spec = scenario::read_cluster(scenario);
  scenario.reject_unknown({"cluster"});
  if (vm.count("ranks-per-node") == 0U) ranks_per_node = spec.gpus_per_node;
  if (ranks_per_node < 1) throw UsageError("--ranks-per-node", "must be >= 1, got " + std::to_string(ranks_per_node));
  if (vm.count("ranks") != 0U && ranks < 2) throw UsageError("--ranks", "must be >= 2, got " + std::to_string(ranks));

  const std::optional<sim::CollectiveAlgorithm> algorithm = sim::allreduce_algorithm_from_name(algorithm_name);
  if (!algorithm) throw UsageError("--algorithm", "expected auto, ring or tree, got '" + algorithm_name + "'");
  if (ranks_per_node > spec.gpus_per_node)
    throw UsageError("--ranks-per-node", "must be at most the cluster's " + std::to_string(spec.gpus_per_node) +
                                             " GPUs per node, got " + std::to_string(ranks_per_node));

  const double lanes = spec.intra_topology == sim::IntraNodeTopology::kDgx1CubeMesh ? 6 : 1;
  const double nvlink_Bps = lanes * spec.intra_bandwidth_GBps * 1e9;
  const double nic_Bps = spec.nics_per_node * spec.nic_bandwidth_GBps * 1e9;
  nlohmann::ordered_json j = {{"schema", "edgc.calibration/1"},
                              {"cluster", spec.name},
                              {"algorithm", sim::allreduce_algorithm_name(*algorithm)}};
  int skipped = 0;
  std::vector<LogFit> fits;
  sim::ClusterSpec big = spec;  // enough nodes for every log
  for (const auto& path : logs) {
    LogFit f{results::read_nccl_tests_log(path), 0, false};
    skipped += f.log.skipped;
    f.ranks = ranks > 0 ? ranks : f.log.ranks;
    if (f.ranks < 2) throw ConfigError(path, "", "cannot tell the number of ranks (no '# Rank' lines): give --ranks");
    f.intra = f.ranks <= ranks_per_node;
    const char* kind = f.intra ? "intra" : "inter";
    if (j.contains(kind)) throw UsageError("--nccl-tests", std::string("two logs for the ") + kind + "-node curve");
    const int n = f.ranks;
    const double nvls = spec.intra_topology == sim::IntraNodeTopology::kSwitch ? 2.0 * (n - 1) / n : 1.0;
    j[kind] = f.intra ? fit(f.log, n, nvlink_Bps, spec.intra_latency_us * 1e-6, nvls)
                      : fit(f.log, n, std::min(nic_Bps, nvlink_Bps), spec.inter_latency_us * 1e-6, 1.0);
    big.nodes = std::max(big.nodes, (n + ranks_per_node - 1) / ranks_per_node);
    fits.push_back(std::move(f));
  }
  for (const char* kind : {"intra", "inter"}) {
    if (!j.contains(kind))
      j[kind] = {{"points", {{1, 1.0}}}, {"latency_factor", 1.0}, {"note", "no log given: line rate"}};
  }

  // Refine by simulation: the starting fit assumes one ring; the simulator runs channels and trees.
  sim::NetworkProfile profile;
  profile.kind = sim::NetworkProfileKind::kCalibrated;
  profile.algorithm = *algorithm;
  const auto curve_of = [&](bool intra) -> sim::EfficiencyCurve& { return intra ? profile.intra : profile.inter; };
  // A class without a log keeps the line rate (no points: efficiency 1, latency factor 1).
  std::vector<std::vector<double>> eff(fits.size());  // [log][row]
  for (std::size_t l = 0; l < fits.size(); ++l) {
    const nlohmann::ordered_json& start = j[fits[l].intra ? "intra" : "inter"];
    sim::EfficiencyCurve& c = curve_of(fits[l].intra);
    c.latency_factor = start["latency_factor"].get<double>();
    for (const auto& pt : start["points"]) {
      c.points.emplace_back(pt[0].get<double>(), pt[1].get<double>());
      eff[l].push_back(pt[1].get<double>());
    }
  }
  std::vector<Simulated> sims = simulate_logs(big, ranks_per_node, profile, fits);
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
    sims = simulate_logs(big, ranks_per_node, profile, fits);
  }

  // The fitted curves and the round trip: each log simulated with them.
  for (std::size_t l = 0; l < fits.size(); ++l) {
    const char* kind = fits[l].intra ? "intra" : "inter";
    const sim::EfficiencyCurve& c = curve_of(fits[l].intra);
    j[kind]["points"] = nlohmann::ordered_json::array();
    for (const auto& [bytes, e] : c.points) j[kind]["points"].push_back({bytes, e});
    j[kind]["latency_factor"] = c.latency_factor;
    nlohmann::ordered_json trip = nlohmann::ordered_json::array();
    results::Table table({"size(B)", "measured(us)", "simulated(us)", "error", "algorithm"});
    double worst = 0;
    for (std::size_t i = 0; i < fits[l].log.rows.size(); ++i) {
      const results::NcclTestsRow& row = fits[l].log.rows[i];
      const double simulated_us = sims[l].seconds[i] * 1e6;
      const double error = simulated_us / row.time_us - 1.0;
      worst = std::max(worst, std::abs(error));
      trip.push_back({{"bytes", row.bytes},
                      {"measured_us", row.time_us},
                      {"simulated_us", simulated_us},
                      {"error", error},
                      {"algorithm", sims[l].algorithm[i]}});
      table.add_row({results::fmt_g(row.bytes, 6), results::fmt_f(row.time_us, 2), results::fmt_f(simulated_us, 2),
                     results::fmt_f(100 * error, 1) + " %", sims[l].algorithm[i]});
    }
    j[kind]["round_trip"] = trip;
    std::cout << "# " << fits[l].log.path << ": " << fits[l].ranks << " ranks, " << kind
              << "-node curve; simulated with the fitted profile (largest |error| " << results::fmt_f(100 * worst, 1)
              << " %)\n";
    table.print(std::cout);
  }
  write_file_atomic(out, j.dump(1) + "\n");
  std::cout << "wrote " << out << " (" << logs.size() << " log" << (logs.size() == 1 ? "" : "s");
  if (skipped > 0) std::cout << "; skipped " << skipped << " NCCL INFO/WARN line" << (skipped == 1 ? "" : "s");
  std::cout << ")\n";
  return 0;
}

}  // namespace

void add_calibrate_command(std::vector<Command>& commands) {
  commands.push_back(
      {"calibrate", "fit the calibrated network profile to nccl-tests all_reduce_perf logs", run_calibrate});
}

}  // namespace edgc::cli
