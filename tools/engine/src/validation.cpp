#include "edgc/engine/validation.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <set>
#include <utility>

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
#include "edgc/sim/spec_names.hpp"

namespace edgc::engine {
namespace {

namespace fs = std::filesystem;

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

// Live runs as read, and their measurements.json paths; one run is used as read, several are pooled once
// (pooling copies every step).
struct Runs {
  std::vector<std::string> dirs;
  std::vector<std::string> paths;
  std::vector<results::Measurements> runs;
  results::Measurements pool;

  const results::Measurements& measurements() const { return runs.size() > 1 ? pool : runs.front(); }
};

Runs read_runs(const std::vector<std::string>& dirs, const char* option) {
  Runs r;
  r.dirs = dirs;
  for (const std::string& d : dirs) {
    if (!fs::is_directory(d)) throw UsageError(option, "'" + d + "' is not a directory");
    r.paths.push_back((fs::path(d) / "measurements.json").string());
    r.runs.push_back(results::read_measurements(r.paths.back()));
  }
  if (r.runs.size() > 1) r.pool = pool_measurements(r.runs, r.paths);
  return r;
}

// The machine that prices the run: a cluster or scenario file, else the calibration runs' cluster files (the
// measured runs' own when no other is given). Several calibration runs: the first run's cluster file with the
// pooled network profile and kernel profile.
Machine priced_machine(const ValidateRequest& request, const Runs& cal) {
  if (!request.scenario.empty()) return read_machine(request.scenario, request.sets);
  const auto cluster_of = [&](std::size_t i) {
    std::string path = (fs::path(cal.dirs[i]) / cal.runs[i].cluster_file).string();
    if (!fs::is_regular_file(path))
      throw ConfigError(cal.paths[i], "cluster_file", "'" + path + "' is not a readable file");
    return path;
  };
  Machine mc = read_machine(cluster_of(0), request.sets);
  if (cal.runs.size() < 2) return mc;
  const results::Measurements& cal_m = cal.measurements();
  if (cal_m.calibration.ranks >= 2 && !cal_m.calibration.rows.empty()) {
    const RingProfile ring = ring_profile(cal_m.calibration);
    mc.network = network_of(ring);
    mc.cluster.intra_latency_us = mc.cluster.inter_latency_us = std::max(1e-3, ring.latency_s * 1e6);
    mc.cluster.intra_bandwidth_GBps = mc.cluster.nic_bandwidth_GBps = ring.bandwidth_Bps / 1e9;
  }
  if (!mc.cost.kernel_profile.empty()) {
    std::vector<scenario::KernelProfile> profiles = {{mc.cost.kernel_profile, mc.cost.copy_profile}};
    for (std::size_t i = 1; i < cal.runs.size(); ++i) {  // the first run's file is mc's, read above
      const Machine other = read_machine(cluster_of(i), request.sets);
      profiles.push_back({other.cost.kernel_profile, other.cost.copy_profile});
    }
    scenario::KernelProfile pooled = pool_kernel_profiles(profiles);
    mc.cost.kernel_profile = std::move(pooled.entries);
    mc.cost.copy_profile = std::move(pooled.copies);
  }
  return mc;
}

// The report's file: checked before the simulation, so that bad input never leaves an output file behind.
std::string out_path_of(const ValidateRequest& request) {
  const fs::path out_path =
      request.out.empty() ? fs::path(request.measured.front()) / "validate.json" : fs::path(request.out);
  if (fs::is_directory(out_path)) throw UsageError("--out", "'" + out_path.string() + "' is a directory");
  if (const fs::path parent = out_path.parent_path(); !parent.empty() && !fs::is_directory(parent))
    throw UsageError("--out", "'" + parent.string() + "' is not a directory");
  return out_path.string();
}

// Where the prices come from, in words.
std::string calibrated_on(const ValidateRequest& request) {
  std::string runs_text;
  for (const std::string& d : request.calibration) runs_text += (runs_text.empty() ? "" : ", ") + d;
  return !request.scenario.empty()         ? "the file " + request.scenario
         : request.calibration.empty()     ? "this run's own calibration phase"
         : request.calibration.size() == 1 ? "the live run " + runs_text
                                           : "the live runs " + runs_text + " (pooled by medians)";
}

// What the reader should know to judge the errors: how the run was priced, and how far this run's own calibration
// strays from the one that priced it (machine drift) or the machine's speed moved while it ran.
std::vector<std::string> notes_of(const ValidateRequest& request, const Runs& measured, const results::Measurements& m,
                                  const results::Measurements& cal_m, double drift, const validate::SpeedShift& shift) {
  std::vector<std::string> notes;
  if (request.calibration.empty() && request.scenario.empty())
    notes.push_back(
        "priced by this run's own calibration: the steps are not fitted, but for an independent check run "
        "another configuration and pass this directory as its --calibration");
  if (!request.calibration.empty() && std::isfinite(drift) && std::abs(drift - 1.0) > 0.1)
    notes.push_back("machine drift: this run's calibration all-reduces took " + results::fmt_f(drift, 2) +
                    "x (median over sizes) what the calibration run's took; differences of that order are the "
                    "machine changing between the runs, not the model");
  if (shift.ratio > 1.15)
    notes.push_back(std::string(measured.paths.size() > 1 ? "the machine's speed changed over these runs ("
                                                          : "the machine's speed changed during this run (") +
                    shift.policy + ": the median step took " + results::fmt_g(shift.early_s * 1e3, 3) +
                    " ms in the first third of its steps, " + results::fmt_g(shift.late_s * 1e3, 3) +
                    " ms in the last): no calibration taken at another time predicts that; rerun on a quieter machine");
  if (const std::string c = results::oversubscription_caveat(m); !c.empty()) notes.push_back("this run: " + c);
  if (!request.calibration.empty())
    if (const std::string c = results::oversubscription_caveat(cal_m); !c.empty())
      notes.push_back("the calibration run: " + c);
  return notes;
}

// What the simulated figures rest on: files, cluster, parameters.
void describe(results::ValidateReport& report, const Runs& measured, const Machine& mc) {
  const results::Measurements& m = measured.measurements();
  report.measurements = measured.paths.front();
  report.measured_runs = measured.paths;
  report.cluster_file = mc.where;
  report.cluster_name = mc.cluster.name;
  report.nodes = mc.cluster.nodes;
  report.gpus_per_node = mc.cluster.gpus_per_node;
  report.network = std::string(sim::network_profile_name(mc.network.kind));
  report.compute_efficiency = mc.cost.compute_efficiency;
  report.hbm_efficiency = mc.cost.hbm_efficiency;
  report.kernel_profile = !mc.cost.kernel_profile.empty();
  report.simgrid = sim::simgrid_version();
  report.world_size = m.world_size;
  report.pp = m.pp;
  report.dp = m.dp;
  report.comm = m.comm;
  report.backend = m.backend;
  report.policies = m.runs.size();
  report.steps = 0;
  for (const auto& run : m.runs) report.steps += run.steps.size();
}

}  // namespace

ValidateOutcome run_validation(const ValidateRequest& request) {
  // Everything is read and checked before the engine starts: bad input never leaves an output file behind.
  const Runs measured = read_runs(request.measured, "--measured");
  const results::Measurements& m = measured.measurements();
  if (!request.scenario.empty() && !request.calibration.empty())
    throw UsageError("--calibration", "give --calibration or --scenario, not both");
  // The runs whose calibration prices this one: the measured runs themselves, or the --calibration runs.
  const bool own = request.calibration.empty();
  const Runs other = own ? Runs{} : read_runs(request.calibration, "--calibration");
  const Runs& cal = own ? measured : other;
  const results::Measurements& cal_m = cal.measurements();
  const Machine mc = priced_machine(request, cal);
  const std::vector<int> gpus = validate::platform_gpus(m, mc.cluster, mc.where);
  ValidateOutcome outcome;
  outcome.out_path = out_path_of(request);

  const validate::Patterns patterns = validate::extract_patterns(m);
  std::vector<std::vector<validate::StageCompute>> compute;
  for (const validate::StepPattern& p : patterns.distinct) {
    auto& row = compute.emplace_back();
    for (const validate::StagePattern& s : p.stages)
      row.push_back(validate::modelled_compute(s, m.element_bytes, mc.cluster.gpu, mc.cost));
  }
  const std::unique_ptr<sim::sg4::Engine> engine = sim::boot_engine();
  const sim::Platform platform = sim::Platform::build(*engine, mc.cluster, mc.network);
  const validate::Simulated simulated = validate::simulate(*engine, platform, m, patterns, compute, gpus);

  results::ValidateReport& report = outcome.report;
  report = validate::compare(m, patterns, simulated);
  describe(report, measured, mc);
  report.distinct_patterns = patterns.distinct.size();
  report.calibrated_on = calibrated_on(request);
  report.calibration_drift = validate::calibration_drift(m, cal_m);
  const validate::SpeedShift shift = validate::speed_shift(m, patterns);
  report.within_run_shift = shift.ratio;
  report.notes = notes_of(request, measured, m, cal_m, report.calibration_drift, shift);
  return outcome;
}

}  // namespace edgc::engine
