// engine::run_collective_sweep: the options checked before the engine starts (so bad input never leaves partial
// output), then every size timed: from the closed form where the collective provably runs alone on its links, the
// others in one simulation.
#include "edgc/engine/collective_sweep.hpp"

#include <algorithm>
#include <cctype>
#include <memory>
#include <simgrid/s4u.hpp>

#include "edgc/core/checked_int.hpp"
#include "edgc/core/error.hpp"
#include "edgc/scenario/cluster_config.hpp"
#include "edgc/sim/collectives.hpp"
#include "edgc/sim/engine_info.hpp"
#include "edgc/sim/platform.hpp"
#include "edgc/sim/spec_names.hpp"

namespace edgc::engine {
namespace {

/// "8", "64K", "1M", "1G" (binary multiples, as nccl-tests reads -b/-e) → bytes, at most kMaxBytes.
constexpr std::int64_t kMaxBytes = std::int64_t{1} << 62;
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
  // 12 digits fit int64; times 1G they may not (999999999999G wrapped before): the product is checked.
  const auto bytes = checked_multiply(parse_integer<std::int64_t>(text.substr(0, digits), 0, kMaxBytes),
                                      static_cast<std::int64_t>(mult), kMaxBytes);
  if (!bytes) throw UsageError(option, "'" + text + "' is more than 2^62 bytes");
  return static_cast<std::uint64_t>(*bytes);
}

/// GPU ranks of the collective's members: spread = one GPU per node before the second GPU of any node (every ring
/// hop crosses the fabric); packed = fill node 0, then node 1, …
std::vector<int> place(const sim::Platform& p, int ranks, bool spread) {
  std::vector<int> out;
  for (int i = 0; i < ranks; ++i) out.push_back(spread ? (i % p.nodes()) * p.gpus_per_node() + i / p.nodes() : i);
  return out;
}

// The request checked: the operation and the sizes (the cluster is checked once it is read).
struct Checked {
  sim::CollectiveOp op{};
  std::vector<std::uint64_t> sizes;
};

Checked check_options(const CollectiveRequest& r) {
  if (r.scenario.empty() == r.cluster.empty()) throw UsageError("give exactly one of --scenario and --cluster");
  Checked checked;
  checked.op = sim::collective_op_from_name(r.op);
  if (r.placement != "spread" && r.placement != "packed")
    throw UsageError("--placement", "expected spread or packed, got '" + r.placement + "'");
  if (r.step_factor < 2) throw UsageError("--stepfactor", "must be >= 2, got " + std::to_string(r.step_factor));
  const std::uint64_t min_bytes = parse_size(r.min_bytes, "--minbytes");
  const std::uint64_t max_bytes = parse_size(r.max_bytes, "--maxbytes");
  if (min_bytes < 1 || min_bytes > max_bytes)
    throw UsageError("--minbytes", "must be between 1 and --maxbytes (" + r.max_bytes + "), got '" + r.min_bytes + "'");
  if (!r.network.empty() && !sim::network_profile_from_name(r.network))
    throw UsageError("--network", "expected ideal or calibrated, got '" + r.network + "'");
  checked.sizes = collective_sizes(min_bytes, max_bytes, static_cast<std::uint64_t>(r.step_factor));
  return checked;
}

}  // namespace

std::vector<std::uint64_t> collective_sizes(std::uint64_t min_bytes, std::uint64_t max_bytes, std::uint64_t factor) {
  constexpr std::uint64_t kFloat = results::kCollectiveElementBytes;
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t s = min_bytes; s <= max_bytes; s *= factor) {
    sizes.push_back(std::max(kFloat, s / kFloat * kFloat));
    if (s > max_bytes / factor) break;
  }
  return sizes;
}

results::CollectiveReport run_collective_sweep(const CollectiveRequest& request) {
  const Checked checked = check_options(request);
  scenario::Scenario scenario =
      scenario::load_scenario(request.scenario.empty() ? request.cluster : request.scenario, request.sets);
  const sim::ClusterSpec spec = scenario::read_cluster(scenario);
  const sim::NetworkProfile profile = scenario::read_network(scenario, request.network);
  scenario.reject_unknown({"cluster", "network"});
  const int ranks = request.ranks;
  if (ranks < 1 || ranks > spec.total_gpus())
    throw UsageError("--ranks", "must be between 1 and the cluster's " + std::to_string(spec.total_gpus()) +
                                    " GPUs, got " + std::to_string(ranks));
  if (checked.op == sim::CollectiveOp::kSendRecv && ranks < 2) throw UsageError("--ranks", "sendrecv needs at least 2");

  const std::unique_ptr<sim::sg4::Engine> engine = sim::boot_engine();
  const sim::Platform platform = sim::Platform::build(*engine, spec, profile);
  sim::Group group{{}, "coll"};
  for (int r : place(platform, ranks, request.placement == "spread")) group.hosts.push_back(platform.gpu(r));
  const std::vector<double> took_s =
      sim::time_collective_sweep(*engine, platform, checked.op, group, checked.sizes, request.simulate_all);

  results::CollectiveReport report;
  report.cluster = spec.name;
  report.cluster_gpus = spec.total_gpus();
  report.op = sim::collective_op_name(checked.op);
  report.ranks = ranks;
  report.placement = request.placement;
  report.network = std::string(sim::network_profile_name(profile.kind));
  report.channels = sim::ring_channels(group);
  report.simgrid = sim::simgrid_version();
  report.bus_factor = sim::bus_bandwidth_factor(checked.op, ranks);
  for (std::size_t i = 0; i < checked.sizes.size(); ++i) {
    const std::uint64_t bytes = checked.sizes[i];
    report.rows.push_back({bytes, took_s[i],
                           checked.op == sim::CollectiveOp::kAllReduce
                               ? sim::allreduce_algorithm_name(sim::chosen_allreduce_algorithm(group, bytes))
                           : checked.op == sim::CollectiveOp::kAllToAll ? "pairwise"
                                                                        : "ring"});
  }
  return report;
}

}  // namespace edgc::engine
