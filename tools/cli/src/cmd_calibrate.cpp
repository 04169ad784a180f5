// `edgc calibrate`: fits the calibrated network profile to nccl-tests all_reduce_perf logs. Each log becomes the
// intra-node curve (all ranks on one node) or the inter-node curve, as an α-β fit against the cluster's line rates:
//   latency factor  = time of the smallest message / (2(n-1) · route latency of the cluster file),
//   efficiency(S/n) = ideal transfer time 2(n-1)/n · S / B / (measured time - latency part),
// keyed by the bytes of one ring step (S/n), because that is the transfer size SimGrid's factor callbacks see.
// B is the busbw ceiling of the hardware: the GPU's NVLink bandwidth inside a node (6 lanes on the DGX-1
// cube-mesh), min(node NIC bandwidth, NVLink) across nodes (NCCL runs one ring per NIC).
#include <algorithm>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli.hpp"
#include "edgc/core/atomic_file.hpp"
#include "edgc/core/error.hpp"
#include "edgc/results/nccl_tests_log.hpp"
#include "edgc/results/table.hpp"
#include "edgc/scenario/cluster_config.hpp"

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

int run_calibrate(const std::vector<std::string>& args) {
  std::vector<std::string> logs;
  std::string cluster_path;
  std::vector<std::string> overrides;
  int ranks_per_node = 0;
  int ranks = 0;
  std::string out;
  po::options_description opts;
  auto add = opts.add_options();
  add("nccl-tests", po::value(&logs)->required()->composing(), "all_reduce_perf log (repeatable: one per node count)");
  add("cluster", po::value(&cluster_path)->required(), "cluster file whose line rates the efficiencies refer to");
  add("set", po::value(&overrides)->composing(), "override a cluster key: dotted.key=value (repeatable)");
  add("ranks-per-node", po::value(&ranks_per_node), "GPUs per node in the logs (default: the cluster's)");
  add("ranks", po::value(&ranks), "ranks of every log (default: counted from its '# Rank' lines)");
  add("out", po::value(&out)->required(), "calibration JSON to write (atomically)");
  po::variables_map vm;
  if (!parse("calibrate", "--nccl-tests LOG... --cluster F [--ranks-per-node N] [--ranks N] --out FILE", opts, {}, args,
             vm))
    return 0;
  check_output_file(out, "--out");
  scenario::Scenario scenario = scenario::load_scenario(cluster_path, overrides);
  const sim::ClusterSpec spec = scenario::read_cluster(scenario);
  scenario.reject_unknown({"cluster"});
  if (vm.count("ranks-per-node") == 0U) ranks_per_node = spec.gpus_per_node;
  if (ranks_per_node < 1) throw UsageError("--ranks-per-node", "must be >= 1, got " + std::to_string(ranks_per_node));
  if (vm.count("ranks") != 0U && ranks < 2) throw UsageError("--ranks", "must be >= 2, got " + std::to_string(ranks));

  const double lanes = spec.intra_topology == sim::IntraNodeTopology::kDgx1CubeMesh ? 6 : 1;
  const double nvlink_Bps = lanes * spec.intra_bandwidth_GBps * 1e9;
  const double nic_Bps = spec.nics_per_node * spec.nic_bandwidth_GBps * 1e9;
  nlohmann::ordered_json j = {{"schema", "edgc.calibration/1"}, {"cluster", spec.name}};
  int skipped = 0;
  for (const auto& path : logs) {
    const results::NcclTestsLog log = results::read_nccl_tests_log(path);
    skipped += log.skipped;
    const int n = ranks > 0 ? ranks : log.ranks;
    if (n < 2) throw ConfigError(path, "", "cannot tell the number of ranks (no '# Rank' lines): give --ranks");
    const bool intra = n <= ranks_per_node;
    const char* kind = intra ? "intra" : "inter";
    if (j.contains(kind)) throw UsageError("--nccl-tests", std::string("two logs for the ") + kind + "-node curve");
    const double nvls = spec.intra_topology == sim::IntraNodeTopology::kSwitch ? 2.0 * (n - 1) / n : 1.0;
    j[kind] = intra ? fit(log, n, nvlink_Bps, spec.intra_latency_us * 1e-6, nvls)
                    : fit(log, n, std::min(nic_Bps, nvlink_Bps), spec.inter_latency_us * 1e-6, 1.0);
  }
  for (const char* kind : {"intra", "inter"}) {
    if (!j.contains(kind))
      j[kind] = {{"points", {{1, 1.0}}}, {"latency_factor", 1.0}, {"note", "no log given: line rate"}};
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
