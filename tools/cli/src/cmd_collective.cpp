// `edgc collective`: one collective over a range of message sizes on the simulated cluster, printed the way
// nccl-tests prints its measurements, so a simulated table can be laid beside a measured log. All sizes are timed
// one after the other in one simulation (SimGrid cannot be reset within a process).
#include <cctype>
#include <cstdint>
#include <iostream>
#include <nlohmann/json.hpp>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "cli.hpp"
#include "edgc/core/error.hpp"
#include "edgc/results/table.hpp"
#include "edgc/scenario/cluster_config.hpp"
#include "edgc/sim/collectives.hpp"
#include "edgc/sim/engine_info.hpp"
#include "edgc/sim/platform.hpp"
#include "edgc/sim/spec_names.hpp"

namespace edgc::cli {
namespace {

namespace sg4 = simgrid::s4u;

constexpr std::uint64_t kFloatBytes = 4;  // nccl-tests' default data type

/// "8", "64K", "1M", "1G" (binary multiples, as nccl-tests reads -b/-e) → bytes.
std::uint64_t parse_size(const std::string& text, const std::string& option) {
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])) != 0) ++digits;
  const std::string suffix = text.substr(digits);
  std::uint64_t mult = 1;
  if (suffix == "K" || suffix == "k")
    mult = 1ULL << 10;
  else if (suffix == "M" || suffix == "m")
    mult = 1ULL << 20;
  else if (suffix == "G" || suffix == "g")
    mult = 1ULL << 30;
  else if (!suffix.empty())
    digits = 0;
  if (digits == 0 || digits > 12) throw UsageError(option, "expected a size like 8, 64K, 1M or 1G, got '" + text + "'");
  return std::stoull(text.substr(0, digits)) * mult;
}

/// Message sizes from min to max, multiplied by `factor` each time, rounded down to whole floats (at least one).
std::vector<std::uint64_t> size_range(std::uint64_t min_bytes, std::uint64_t max_bytes, std::uint64_t factor) {
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t s = min_bytes; s <= max_bytes; s *= factor) {
    sizes.push_back(std::max(kFloatBytes, s / kFloatBytes * kFloatBytes));
    if (s > max_bytes / factor) break;
  }
  return sizes;
}

/// GPU ranks of the collective's members: spread = one GPU per node before the second GPU of any node (every ring
/// hop crosses the fabric); packed = fill node 0, then node 1, …
std::vector<int> place(const sim::Platform& p, int ranks, bool spread) {
  std::vector<int> out;
  for (int i = 0; i < ranks; ++i) out.push_back(spread ? (i % p.nodes()) * p.gpus_per_node() + i / p.nodes() : i);
  return out;
}

// What one `edgc collective` measured, for the two printers.
struct CollectiveRun {
  const sim::ClusterSpec& spec;
  sim::CollectiveOp op;
  int ranks;
  const std::string& placement;
  std::string network;
  const std::vector<std::uint64_t>& sizes;
  const std::vector<double>& took_s;
  std::vector<std::string> algorithm;  ///< per size: ring | tree (what all_reduce() chose; rings otherwise)
  int channels = 1;
};

void print_json(const CollectiveRun& c) {
  const double factor = sim::bus_bandwidth_factor(c.op, c.ranks);
  nlohmann::ordered_json j = {{"schema", "edgc.collective/1"},
                              {"cluster", c.spec.name},
                              {"op", sim::collective_op_name(c.op)},
                              {"ranks", c.ranks},
                              {"placement", c.placement},
                              {"network", c.network},
                              {"channels", c.channels},
                              {"simgrid", sim::simgrid_version()},
                              {"rows", nlohmann::ordered_json::array()}};
  for (std::size_t i = 0; i < c.sizes.size(); ++i) {
    const double algbw = static_cast<double>(c.sizes[i]) / c.took_s[i] / 1e9;
    j["rows"].push_back({{"size_bytes", c.sizes[i]},
                         {"count", c.sizes[i] / kFloatBytes},
                         {"type", "float"},
                         {"time_us", c.took_s[i] * 1e6},
                         {"algbw_GBps", algbw},
                         {"busbw_GBps", algbw * factor},
                         {"algorithm", c.algorithm[i]}});
  }
  std::cout << j.dump(1) << "\n";
}

// nccl-tests' layout: a header line, one row per size, the average bus bandwidth.
void print_table(const CollectiveRun& c) {
  const double factor = sim::bus_bandwidth_factor(c.op, c.ranks);
  std::cout << "# edgc collective: " << sim::collective_op_name(c.op) << " on " << c.ranks << " of "
            << c.spec.total_gpus() << " GPUs of '" << c.spec.name << "' (" << c.placement << " placement, " << c.network
            << " network, " << c.channels << " ring channel" << (c.channels == 1 ? "" : "s")
            << ", simulated with SimGrid " << sim::simgrid_version() << ")\n";
  results::Table table({"size(B)", "count", "type", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "algo"});
  double busbw_sum = 0;
  for (std::size_t i = 0; i < c.sizes.size(); ++i) {
    const double algbw = static_cast<double>(c.sizes[i]) / c.took_s[i] / 1e9;
    busbw_sum += algbw * factor;
    table.add_row({std::to_string(c.sizes[i]), std::to_string(c.sizes[i] / kFloatBytes), "float",
                   results::fmt_f(c.took_s[i] * 1e6, 2), results::fmt_f(algbw, 2), results::fmt_f(algbw * factor, 2),
                   c.algorithm[i]});
  }
  table.print(std::cout);
  std::cout << "# Avg bus bandwidth    : " << results::fmt_f(busbw_sum / static_cast<double>(c.sizes.size()), 3)
            << "\n";
}

int run_collective_cmd(const std::vector<std::string>& args) {
  std::string scenario_path;
  std::string cluster_path;
  std::vector<std::string> overrides;
  std::string op_name = "all_reduce";
  int ranks = 0;
  std::string min_text = "8";
  std::string max_text = "1G";
  std::int64_t step_factor = 2;
  std::string network;
  std::string placement = "spread";
  po::options_description opts;
  auto add = opts.add_options();
  add("scenario", po::value(&scenario_path), "scenario JSON with a cluster section (or an included cluster file)");
  add("cluster", po::value(&cluster_path), "cluster file (scenarios/clusters/*.json), instead of --scenario");
  add("set", po::value(&overrides)->composing(), "override a scenario key: dotted.key=value (repeatable)");
  add("op", po::value(&op_name), "all_reduce | reduce_scatter | all_gather | sendrecv (default all_reduce)");
  add("ranks", po::value(&ranks)->required(), "number of GPUs taking part");
  add("minbytes", po::value(&min_text), "smallest message, e.g. 8, 1K, 1M (default 8)");
  add("maxbytes", po::value(&max_text), "largest message (default 1G)");
  add("stepfactor", po::value(&step_factor), "size multiplier between rows (default 2)");
  add("network", po::value(&network), "network profile: ideal | calibrated (default: the scenario's, else ideal)");
  add("placement", po::value(&placement), "spread (one GPU per node first) | packed (fill nodes) (default spread)");
  add("json", "print one JSON document");
  po::variables_map vm;
  if (!parse("collective",
             "(--scenario F | --cluster F) [--set k=v]... --op OP --ranks N [--minbytes 8] [--maxbytes 1G] "
             "[--stepfactor 2] [--network ideal|calibrated] [--placement spread|packed] [--json]",
             opts, {}, args, vm))
    return 0;

  // Everything the user gave is checked before the engine starts, so bad input never leaves partial output.
  if (scenario_path.empty() == cluster_path.empty()) throw UsageError("give exactly one of --scenario and --cluster");
  const sim::CollectiveOp op = sim::collective_op_from_name(op_name);
  if (placement != "spread" && placement != "packed")
    throw UsageError("--placement", "expected spread or packed, got '" + placement + "'");
  if (step_factor < 2) throw UsageError("--stepfactor", "must be >= 2, got " + std::to_string(step_factor));
  const std::uint64_t min_bytes = parse_size(min_text, "--minbytes");
  const std::uint64_t max_bytes = parse_size(max_text, "--maxbytes");
  if (min_bytes < 1 || min_bytes > max_bytes)
    throw UsageError("--minbytes", "must be between 1 and --maxbytes (" + max_text + "), got '" + min_text + "'");
  if (!network.empty() && !sim::network_profile_from_name(network))
    throw UsageError("--network", "expected ideal or calibrated, got '" + network + "'");

  scenario::Scenario scenario =
      scenario::load_scenario(scenario_path.empty() ? cluster_path : scenario_path, overrides);
  const sim::ClusterSpec spec = scenario::read_cluster(scenario);
  const sim::NetworkProfile profile = scenario::read_network(scenario, network);
  scenario.reject_unknown({"cluster", "network"});
  if (ranks < 1 || ranks > spec.total_gpus())
    throw UsageError("--ranks", "must be between 1 and the cluster's " + std::to_string(spec.total_gpus()) +
                                    " GPUs, got " + std::to_string(ranks));
  if (op == sim::CollectiveOp::kSendRecv && ranks < 2) throw UsageError("--ranks", "sendrecv needs at least 2");
  const auto sizes = size_range(min_bytes, max_bytes, static_cast<std::uint64_t>(step_factor));

  const std::unique_ptr<sim::sg4::Engine> engine_ptr = sim::boot_engine();
  sim::sg4::Engine& engine = *engine_ptr;
  const sim::Platform platform = sim::Platform::build(engine, spec, profile);
  sim::Group group{{}, "coll"};
  for (int r : place(platform, ranks, placement == "spread")) group.hosts.push_back(platform.gpu(r));
  const std::vector<double> took_s = sim::time_collective_sweep(engine, op, group, sizes);

  CollectiveRun run{spec,
                    op,
                    ranks,
                    placement,
                    std::string(sim::network_profile_name(profile.kind)),
                    sizes,
                    took_s,
                    {},
                    sim::ring_channels(group)};
  for (const std::uint64_t bytes : sizes)
    run.algorithm.push_back(op == sim::CollectiveOp::kAllReduce
                                ? sim::allreduce_algorithm_name(sim::chosen_allreduce_algorithm(group, bytes))
                                : "ring");
  if (vm.count("json") != 0U)
    print_json(run);
  else
    print_table(run);
  return 0;
}

}  // namespace

void add_collective_command(std::vector<Command>& commands) {
  commands.push_back(
      {"collective", "simulate one NCCL-style collective over message sizes (nccl-tests layout)", run_collective_cmd});
}

}  // namespace edgc::cli
