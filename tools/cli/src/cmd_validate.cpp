// `edgc validate --measured DIR [--scenario F] [--set k=v]... [--out FILE] [--json]`: the run `edgc live` measured
// (DIR/measurements.json), simulated on the cluster it ran on (DIR/<cluster_file>) or on another cluster and network
// (--scenario), and the prediction error per collective, stage sync, iteration and compression compute
// (validate.hpp). Writes DIR/validate.json (schema edgc.validate/1) atomically and prints the tables.
//
// Compression compute is modelled with the roofline of sim::powersgd_batch_s at the cluster's GPU figures and the
// compute.* knobs (defaults as for `edgc simulate`: compute.efficiency 0.4, compute.hbm_efficiency 0.85). Live's
// cluster file is written for those defaults: it holds its measured GEMM rate and copy bandwidth divided by them.
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <simgrid/s4u.hpp>

#include "cli.hpp"
#include "edgc/core/atomic_file.hpp"
#include "edgc/core/error.hpp"
#include "edgc/engine/validate.hpp"
#include "edgc/results/measurements.hpp"
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
  std::string measured;
  std::string scenario;
  std::vector<std::string> sets;
  std::string out;
  po::options_description opts;
  auto add = opts.add_options();
  add("measured", po::value(&measured)->required(),
      "directory written by 'edgc live' (measurements.json, cluster.json)");
  add("scenario", po::value(&scenario),
      "cluster or scenario file with cluster and optional network and compute sections (default: DIR's cluster "
      "file)");
  add("set", po::value(&sets)->composing(), "override a key of the cluster file: dotted.key=value (repeatable)");
  add("out", po::value(&out), "output file (default DIR/validate.json)");
  add("json", "print validate.json instead of the tables");
  po::variables_map vm;
  if (!parse("validate", "--measured DIR [--scenario F] [--set k=v]... [--out FILE] [--json]", opts, {}, args, vm))
    return 0;

  // Everything is read and checked before the engine starts: bad input never leaves an output file behind.
  const fs::path dir(measured);
  if (!fs::is_directory(dir)) throw UsageError("--measured", "'" + measured + "' is not a directory");
  const std::string measurements_path = (dir / "measurements.json").string();
  const results::Measurements m = results::read_measurements(measurements_path);
  const bool live_cluster_file = scenario.empty();
  const std::string cluster_path = live_cluster_file ? (dir / m.cluster_file).string() : scenario;
  if (live_cluster_file && !fs::is_regular_file(cluster_path))
    throw ConfigError(measurements_path, "cluster_file", "'" + cluster_path + "' is not a readable file");
  const Machine mc = read_machine(cluster_path, sets);
  const std::vector<int> gpus = engine::validate::platform_gpus(m, mc.cluster, mc.where);
  const fs::path out_path = out.empty() ? dir / "validate.json" : fs::path(out);
  if (fs::is_directory(out_path)) throw UsageError("--out", "'" + out_path.string() + "' is a directory");
  if (const fs::path parent = out_path.parent_path(); !parent.empty() && !fs::is_directory(parent))
    throw UsageError("--out", "'" + parent.string() + "' is not a directory");

  const engine::validate::Patterns patterns = engine::validate::extract_patterns(m);
  std::vector<std::vector<double>> compute_s;
  for (const engine::validate::StepPattern& p : patterns.distinct) {
    auto& row = compute_s.emplace_back();
    for (const engine::validate::StagePattern& s : p.stages)
      row.push_back(engine::validate::modelled_compute_s(s, m.element_bytes, mc.cluster.gpu, mc.cost));
  }

  const std::unique_ptr<sim::sg4::Engine> engine_ptr = sim::boot_engine();
  sim::sg4::Engine& engine = *engine_ptr;
  const sim::Platform platform = sim::Platform::build(engine, mc.cluster, mc.network);
  const engine::validate::Simulated simulated =
      engine::validate::simulate(engine, platform, m, patterns, compute_s, gpus);
  const engine::validate::Report report = engine::validate::compare(m, patterns, simulated);

  std::size_t steps = 0;
  for (const auto& run : m.runs) steps += run.steps.size();
  const std::string network = mc.network.kind == sim::NetworkProfileKind::kIdeal ? "ideal" : "calibrated";
  const ordered_json header = {
      {"measurements", measurements_path},
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
  std::cout << "validate    " << measurements_path << ": " << m.world_size << " ranks (pp " << m.pp << " x dp " << m.dp
            << ", " << m.comm << "/" << m.backend << "), " << m.runs.size() << " policies, " << steps << " steps, "
            << patterns.distinct.size() << " distinct step patterns simulated on '" << mc.cluster.name << "' ("
            << mc.cluster.nodes << " x " << mc.cluster.gpus_per_node << " GPUs, " << network << " network)\n\n";
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
