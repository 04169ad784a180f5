// `edgc validate --measured DIR [--calibration DIR2 | --scenario F] [--set k=v]... [--out FILE] [--json]`: the run
// `edgc live` measured (DIR/measurements.json), simulated on the cluster it ran on as priced by its own calibration
// (DIR/<cluster_file>), by another live run's calibration (--calibration: an independent prediction), or on another
// cluster and network (--scenario), and the prediction error per collective, stage sync, iteration and compression
// compute (validate.hpp). Writes DIR/validate.json (schema edgc.validate/1) atomically and prints the tables.
//
// Compute is priced by the cluster file's kernel profile (live writes kernels.json: its probe's PowerSGD batches and
// dense-buffer copies), else by the roofline of sim::powersgd_batch_s at the cluster's GPU figures and the compute.*
// knobs (defaults as for `edgc simulate`: compute.efficiency 0.4, compute.hbm_efficiency 0.85); live's cluster file
// holds its measured GEMM rate and copy bandwidth divided by those defaults.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <simgrid/s4u.hpp>

#include "cli.hpp"
#include "edgc/core/atomic_file.hpp"
#include "edgc/core/error.hpp"
#include "edgc/engine/live_calibration.hpp"
#include "edgc/engine/validate.hpp"
#include "edgc/results/measurements.hpp"
#include "edgc/results/table.hpp"
#include "edgc/scenario/cluster_config.hpp"
#include "edgc/scenario/config.hpp"
#include "edgc/scenario/model_config.hpp"
#include "edgc/sim/engine_info.hpp"
#include "edgc/sim/platform.hpp"

namespace edgc::cli {
namespace {

namespace fs = std::filesystem;
namespace sg4 = simgrid::s4u;
using nlohmann::ordered_json;

// The sections `edgc validate` reads from a cluster or scenario file; anything else would be silently ignored
// (a model, a layout and a policy make no sense here: the measurements fix them), so it is an error.
const std::set<std::string> kSections = {"cluster", "network", "compute", "description", "sources"};

struct Machine {
  std::string where;  // the file the cluster came from
  sim::ClusterSpec cluster;
  sim::NetworkProfile network;
  sim::CostParams cost;
};

Machine read_machine(const std::string& path, const std::vector<std::string>& sets) {
  scenario::Scenario sc = scenario::load_scenario(path, sets);
  for (auto it = sc.json().begin(); it != sc.json().end(); ++it)
    if (kSections.count(it.key()) == 0U)
      throw ConfigError(sc.where(), it.key(),
                        "not read by 'edgc validate' (it takes the cluster, network and compute "
                        "sections; the measurements fix model and layout)");
  Machine mc;
  mc.where = sc.where();
  mc.cluster = scenario::read_cluster(sc);
  mc.network = scenario::read_network(sc);
  mc.cost = scenario::read_model_config(sc, mc.cluster.gpu)
                .cost;  // compute.*; model and parallelism are absent (checked above)
  sc.reject_unknown({"cluster", "network", "compute"});
  return mc;
}

int run_validate_command(const std::vector<std::string>& args) {
  std::vector<std::string> measured;
  std::string scenario;
  std::vector<std::string> calibration;
  std::vector<std::string> sets;
  std::string out;
  po::options_description opts;
  auto add = opts.add_options();
  add("measured", po::value(&measured)->required()->composing(),
      "directory written by 'edgc live' (measurements.json, cluster.json); repeat it for repeated runs of one "
      "configuration: their steps are pooled, so each row's median and spread cover every run");
  add("calibration", po::value(&calibration)->composing(),
      "another 'edgc live' directory whose calibration (network profile, kernel profile) prices the measured run: "
      "an independent prediction (default: the measured run's own); repeat it to pool repeated calibration runs by "
      "medians");
  add("scenario", po::value(&scenario),
      "cluster or scenario file with cluster and optional network and compute sections (instead of --calibration)");
  add("set", po::value(&sets)->composing(), "override a key of the cluster file: dotted.key=value (repeatable)");
  add("out", po::value(&out), "output file (default DIR/validate.json, DIR the first --measured)");
  add("json", "print validate.json instead of the tables");
  po::variables_map vm;
  if (!parse("validate",
             "--measured DIR... [--calibration DIR2... | --scenario F] [--set k=v]... [--out FILE] [--json]", opts, {},
             args, vm))
    return 0;

  // Everything is read and checked before the engine starts: bad input never leaves an output file behind.
  const auto read_runs = [](const std::vector<std::string>& dirs, const char* option) {
    std::vector<std::string> paths;
    std::vector<results::Measurements> runs;
    for (const std::string& d : dirs) {
      if (!fs::is_directory(d)) throw UsageError(option, "'" + d + "' is not a directory");
      paths.push_back((fs::path(d) / "measurements.json").string());
      runs.push_back(results::read_measurements(paths.back()));
    }
    return std::make_pair(paths, runs);
  };
  // (No structured bindings: clang 14 cannot capture them in the lambdas below.)
  const auto measured_read = read_runs(measured, "--measured");
  const std::vector<std::string>& measured_paths = measured_read.first;
  const std::vector<results::Measurements>& measured_runs = measured_read.second;
  const fs::path dir(measured.front());
  const std::string measurements_path = measured_paths.front();
  // One run is used as read; several are pooled once (pooling copies every step).
  const auto pool_of = [](const std::vector<results::Measurements>& runs, const std::vector<std::string>& paths) {
    return runs.size() > 1 ? engine::pool_measurements(runs, paths) : results::Measurements{};
  };
  const results::Measurements measured_pool = pool_of(measured_runs, measured_paths);
  const results::Measurements& m = measured_runs.size() > 1 ? measured_pool : measured_runs.front();
  if (!scenario.empty() && !calibration.empty())
    throw UsageError("--calibration", "give --calibration or --scenario, not both");
  // The runs whose calibration prices this one: the measured runs themselves (read and pooled above), or the
  // --calibration runs.
  const bool own = calibration.empty();
  const std::vector<std::string>& cal_dirs = own ? measured : calibration;
  const auto other_read = own ? decltype(measured_read){} : read_runs(calibration, "--calibration");
  const std::vector<std::string>& cal_paths = own ? measured_paths : other_read.first;
  const std::vector<results::Measurements>& cal_runs = own ? measured_runs : other_read.second;
  const results::Measurements other_pool = own ? results::Measurements{} : pool_of(cal_runs, cal_paths);
  const results::Measurements& cal_m = own ? m : cal_runs.size() > 1 ? other_pool : cal_runs.front();
  const bool live_cluster_file = scenario.empty();
  const auto cluster_of = [&](std::size_t i) {
    const std::string path = (fs::path(cal_dirs[i]) / cal_runs[i].cluster_file).string();
    if (!fs::is_regular_file(path))
      throw ConfigError(cal_paths[i], "cluster_file", "'" + path + "' is not a readable file");
    return path;
  };
  Machine mc = read_machine(live_cluster_file ? cluster_of(0) : scenario, sets);
  // Several calibration runs: the first run's cluster file with the pooled network profile and kernel profile.
  if (live_cluster_file && cal_runs.size() > 1) {
    if (cal_m.calibration.ranks >= 2 && !cal_m.calibration.rows.empty()) {
      const engine::RingProfile ring = engine::ring_profile(cal_m.calibration);
      mc.network = engine::network_of(ring);
      mc.cluster.intra_latency_us = mc.cluster.inter_latency_us = std::max(1e-3, ring.latency_s * 1e6);
      mc.cluster.intra_bandwidth_GBps = mc.cluster.nic_bandwidth_GBps = ring.bandwidth_Bps / 1e9;
    }
    if (!mc.cost.kernel_profile.empty()) {
      std::vector<scenario::KernelProfile> profiles = {{mc.cost.kernel_profile, mc.cost.copy_profile}};
      for (std::size_t i = 1; i < cal_runs.size(); ++i) {  // the first run's file is mc's, read above
        const Machine other = read_machine(cluster_of(i), sets);
        profiles.push_back({other.cost.kernel_profile, other.cost.copy_profile});
      }
      scenario::KernelProfile pooled = engine::pool_kernel_profiles(profiles);
      mc.cost.kernel_profile = std::move(pooled.entries);
      mc.cost.copy_profile = std::move(pooled.copies);
    }
  }
  const std::vector<int> gpus = engine::validate::platform_gpus(m, mc.cluster, mc.where);
  const fs::path out_path = out.empty() ? dir / "validate.json" : fs::path(out);
  if (fs::is_directory(out_path)) throw UsageError("--out", "'" + out_path.string() + "' is a directory");
  if (const fs::path parent = out_path.parent_path(); !parent.empty() && !fs::is_directory(parent))
    throw UsageError("--out", "'" + parent.string() + "' is not a directory");

  const engine::validate::Patterns patterns = engine::validate::extract_patterns(m);
  std::vector<std::vector<engine::validate::StageCompute>> compute;
  for (const engine::validate::StepPattern& p : patterns.distinct) {
    auto& row = compute.emplace_back();
    for (const engine::validate::StagePattern& s : p.stages)
      row.push_back(engine::validate::modelled_compute(s, m.element_bytes, mc.cluster.gpu, mc.cost));
  }

  const std::unique_ptr<sim::sg4::Engine> engine_ptr = sim::boot_engine();
  sim::sg4::Engine& engine = *engine_ptr;
  const sim::Platform platform = sim::Platform::build(engine, mc.cluster, mc.network);
  const engine::validate::Simulated simulated =
      engine::validate::simulate(engine, platform, m, patterns, compute, gpus);
  const engine::validate::Report report = engine::validate::compare(m, patterns, simulated);

  std::size_t steps = 0;
  for (const auto& run : m.runs) steps += run.steps.size();
  const std::string network = mc.network.kind == sim::NetworkProfileKind::kIdeal ? "ideal" : "calibrated";
  // Where the prices come from, and how far this run's own calibration strays from them (machine drift).
  std::string runs_text;
  for (const std::string& d : calibration) runs_text += (runs_text.empty() ? "" : ", ") + d;
  const std::string calibrated_on = !scenario.empty()         ? "the file " + scenario
                                    : calibration.empty()     ? "this run's own calibration phase"
                                    : calibration.size() == 1 ? "the live run " + runs_text
                                                              : "the live runs " + runs_text + " (pooled by medians)";
  const double drift = engine::validate::calibration_drift(m, cal_m);
  std::vector<std::string> notes;
  if (calibration.empty() && scenario.empty())
    notes.push_back(
        "priced by this run's own calibration: the steps are not fitted, but for an independent check run "
        "another configuration and pass this directory as its --calibration");
  if (!calibration.empty() && std::isfinite(drift) && std::abs(drift - 1.0) > 0.1)
    notes.push_back("machine drift: this run's calibration all-reduces took " + results::fmt_f(drift, 2) +
                    "x (median over sizes) what the calibration run's took; differences of that order are the "
                    "machine changing between the runs, not the model");
  const engine::validate::SpeedShift shift = engine::validate::speed_shift(m, patterns);
  if (shift.ratio > 1.15)
    notes.push_back(std::string(measured_paths.size() > 1 ? "the machine's speed changed over these runs ("
                                                          : "the machine's speed changed during this run (") +
                    shift.policy + ": the median step took " + results::fmt_g(shift.early_s * 1e3, 3) +
                    " ms in the first third of its steps, " + results::fmt_g(shift.late_s * 1e3, 3) +
                    " ms in the last): no calibration taken at another time predicts that; rerun on a quieter machine");
  if (const std::string c = results::oversubscription_caveat(m); !c.empty()) notes.push_back("this run: " + c);
  if (!calibration.empty())
    if (const std::string c = results::oversubscription_caveat(cal_m); !c.empty())
      notes.push_back("the calibration run: " + c);
  const ordered_json header = {
      {"measurements", measurements_path},
      {"measured_runs", measured_paths},
      {"calibrated_on", calibrated_on},
      {"calibration_drift", std::isfinite(drift) ? ordered_json(drift) : ordered_json(nullptr)},
      {"within_run_shift", shift.ratio},
      {"notes", notes},
      {"cluster_file", mc.where},
      {"cluster",
       {{"name", mc.cluster.name}, {"nodes", mc.cluster.nodes}, {"gpus_per_node", mc.cluster.gpus_per_node}}},
      {"network", network},
      {"compute",
       {{"efficiency", mc.cost.compute_efficiency},
        {"hbm_efficiency", mc.cost.hbm_efficiency},
        {"kernel_profile", !mc.cost.kernel_profile.empty()}}},
      {"simgrid", sim::simgrid_version()},
      {"world_size", m.world_size},
      {"pp", m.pp},
      {"dp", m.dp},
      {"steps", steps},
      {"distinct_patterns", patterns.distinct.size()}};
  const ordered_json doc = engine::validate::report_json(report, patterns, simulated, header);
  write_file_atomic(out_path, doc.dump(2) + "\n");

  if (vm.count("json") != 0U) {
    std::cout << doc.dump(2) << "\n";
    return 0;
  }
  std::cout << "validate    " << measurements_path
            << (measured_paths.size() > 1 ? " and " + std::to_string(measured_paths.size() - 1) + " more run(s), pooled"
                                          : std::string())
            << ": " << m.world_size << " ranks (pp " << m.pp << " x dp " << m.dp << ", " << m.comm << "/" << m.backend
            << "), " << m.runs.size() << " policies, " << steps << " steps, " << patterns.distinct.size()
            << " distinct step patterns simulated on '" << mc.cluster.name << "' (" << mc.cluster.nodes << " x "
            << mc.cluster.gpus_per_node << " GPUs, " << network << " network), priced by " << calibrated_on << "\n";
  for (const std::string& n : notes) std::cout << "note: " << n << "\n";
  std::cout << "\n";
  engine::validate::print_report(std::cout, report);
  std::cout << "\nwrote       " << out_path.string() << "\n";
  return 0;
}

}  // namespace

void add_validate_command(std::vector<Command>& commands) {
  commands.push_back({"validate", "replay a live run's measurements on the simulated cluster: prediction error",
                      run_validate_command});
}

}  // namespace edgc::cli
