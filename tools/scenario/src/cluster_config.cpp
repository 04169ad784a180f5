#include "edgc/scenario/cluster_config.hpp"

#include <array>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include "edgc/core/checked_int.hpp"
#include "edgc/core/error.hpp"
#include "edgc/core/json_depth.hpp"
#include "edgc/scenario/limits.hpp"
#include "edgc/sim/collectives.hpp"
#include "edgc/sim/platform.hpp"
#include "edgc/sim/spec_names.hpp"

namespace edgc::scenario {
namespace {

// A fact with no sensible default (a latency, a price): its absence is an error naming the key and what it means,
// not a silent 0.
double required_number(Scenario& s, const std::string& key, const std::string& meaning) {
  if (!s.has(key)) throw ConfigError(s.where(), key, "missing: " + meaning);
  return s.number(key, 0.0);
}

namespace fs = std::filesystem;

sim::EfficiencyCurve read_curve(const nlohmann::json& doc, const std::string& path, const std::string& key) {
  const auto it = doc.find(key);
  if (it == doc.end() || !it->is_object()) throw ConfigError(path, key, "expected an object");
  sim::EfficiencyCurve c;
  const auto pts = it->find("points");
  if (pts == it->end() || !pts->is_array() || pts->empty())
    throw ConfigError(path, key + ".points", "expected a non-empty array of [bytes, efficiency]");
  for (std::size_t i = 0; i < pts->size(); ++i) {
    const auto& p = (*pts)[i];
    const std::string at = key + ".points[" + std::to_string(i) + "]";
    if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number())
      throw ConfigError(path, at, "expected [bytes, efficiency], got " + p.dump());
    const double bytes = p[0].get<double>();
    const double eff = p[1].get<double>();
    if (!(bytes > 0) || (!c.points.empty() && bytes <= c.points.back().first))
      throw ConfigError(path, at, "bytes must be positive and increasing, got " + p.dump());
    if (!(eff > 0 && eff <= 1)) throw ConfigError(path, at, "efficiency must be in (0, 1], got " + p.dump());
    c.points.emplace_back(bytes, eff);
  }
  const auto lf = it->find("latency_factor");
  if (lf != it->end()) {
    if (!lf->is_number() || !(lf->get<double>() > 0))
      throw ConfigError(path, key + ".latency_factor", "expected a positive number, got " + lf->dump());
    c.latency_factor = lf->get<double>();
  }
  return c;
}

// Keys that come together: false when none is given; ConfigError naming the first missing one (saying `why`) when
// only some are.
bool all_or_none(const Scenario& s, std::initializer_list<const char*> keys, const std::string& why) {
  int present = 0;
  for (const char* k : keys) present += s.has(k) ? 1 : 0;
  if (present == 0) return false;
  for (const char* k : keys)
    if (!s.has(k)) throw ConfigError(s.where(), k, "missing: " + why);
  return true;
}

// A number in (0, limit], else ConfigError naming `key`.
double positive_at_most(Scenario& s, const char* key, double limit) {
  const double v = s.number(key, 0.0);
  if (!(v > 0.0 && v <= limit))
    throw ConfigError(s.where(), key, "must be in (0, " + std::to_string(static_cast<long long>(limit)) + "]");
  return v;
}

// The measured GEMM figures of the kernel-level compute model (sim/kernel_model.hpp): all or none.
void read_gpu_gemm(Scenario& s, sim::GpuSpec& gpu) {
  if (!all_or_none(s,
                   {"cluster.gpu.sm_count", "cluster.gpu.matmul_tflops", "cluster.gpu.matmul_m", "cluster.gpu.matmul_n",
                    "cluster.gpu.matmul_k", "cluster.gpu.kernel_overhead_us"},
                   "the kernel-level compute model needs all of sm_count, matmul_tflops, matmul_m, matmul_n, matmul_k "
                   "and kernel_overhead_us (scenarios/SOURCES.md §19), or none of them"))
    return;
  gpu.sm_count = s.int32("cluster.gpu.sm_count", 0);
  if (gpu.sm_count < 1 || gpu.sm_count > 100000)
    throw ConfigError(s.where(), "cluster.gpu.sm_count", "must be in [1, 100000], got " + std::to_string(gpu.sm_count));
  gpu.matmul_tflops = positive_at_most(s, "cluster.gpu.matmul_tflops", 1e6);
  if (gpu.peak_tflops > 0 && gpu.matmul_tflops > gpu.peak_tflops)
    throw ConfigError(s.where(), "cluster.gpu.matmul_tflops",
                      "a measured GEMM rate cannot exceed the GPU's peak (cluster.gpu.peak_tflops)");
  gpu.matmul_m = positive_at_most(s, "cluster.gpu.matmul_m", 1e7);
  gpu.matmul_n = positive_at_most(s, "cluster.gpu.matmul_n", 1e7);
  gpu.matmul_k = positive_at_most(s, "cluster.gpu.matmul_k", 1e7);
  gpu.kernel_overhead_us = s.number("cluster.gpu.kernel_overhead_us", 0.0);
  if (!(gpu.kernel_overhead_us >= 0.0 && gpu.kernel_overhead_us <= 1e6))
    throw ConfigError(s.where(), "cluster.gpu.kernel_overhead_us", "must be microseconds in [0, 1e6]");
}

// The measured FP8 GEMM figure: the rate and the shape it was measured at, all or none.
void read_gpu_fp8(Scenario& s, sim::GpuSpec& gpu) {
  if (!all_or_none(s,
                   {"cluster.gpu.fp8_matmul_tflops", "cluster.gpu.fp8_matmul_m", "cluster.gpu.fp8_matmul_n",
                    "cluster.gpu.fp8_matmul_k"},
                   "the FP8 GEMM figure needs fp8_matmul_tflops with the shape it was measured at (fp8_matmul_m, "
                   "fp8_matmul_n, fp8_matmul_k), or none of them"))
    return;
  if (!gpu.has_kernel_model())
    throw ConfigError(s.where(), "cluster.gpu.fp8_matmul_tflops",
                      "the FP8 figure belongs to the kernel-level model: give the 16-bit GEMM figures too "
                      "(cluster.gpu.sm_count, matmul_tflops, ...)");
  gpu.fp8_matmul_tflops = positive_at_most(s, "cluster.gpu.fp8_matmul_tflops", 1e6);
  gpu.fp8_matmul_m = positive_at_most(s, "cluster.gpu.fp8_matmul_m", 1e7);
  gpu.fp8_matmul_n = positive_at_most(s, "cluster.gpu.fp8_matmul_n", 1e7);
  gpu.fp8_matmul_k = positive_at_most(s, "cluster.gpu.fp8_matmul_k", 1e7);
}

// cluster.gpu.attention: {"kernel": "...", "rows": [[head_dim, seq, heads, group, forward TFLOP/s, backward
// TFLOP/s], ...]}, a full grid over head_dim × seq × heads for each group (kernel_model.hpp, attention_rate_tflops).
void read_gpu_attention(Scenario& s, sim::GpuSpec& gpu) {
  const nlohmann::json* rows = s.raw("cluster.gpu.attention.rows");
  gpu.attention_source = s.string("cluster.gpu.attention.kernel", "");
  if (rows == nullptr) {
    if (s.has("cluster.gpu.attention"))
      throw ConfigError(s.where(), "cluster.gpu.attention.rows",
                        "missing: expected [[head_dim, seq, heads, group, forward_tflops, backward_tflops], ...]");
    return;
  }
  const std::string key = "cluster.gpu.attention.rows";
  if (!rows->is_array() || rows->empty() || rows->size() > 4096)
    throw ConfigError(s.where(), key, "expected a non-empty array of at most 4096 rows");
  for (std::size_t i = 0; i < rows->size(); ++i) {
    const nlohmann::json& r = (*rows)[i];
    const std::string at = key + "[" + std::to_string(i) + "]";
    if (!r.is_array() || r.size() != 6)
      throw ConfigError(s.where(), at, "expected [head_dim, seq, heads, group, forward_tflops, backward_tflops]");
    for (const nlohmann::json& v : r)
      if (!v.is_number() || !(v.get<double>() > 0.0) || !(v.get<double>() <= 1e7))
        throw ConfigError(s.where(), at, "every entry must be a positive number, got " + r.dump());
    std::array<int, 4> whole{};  // within (0, 1e7] by the check above
    for (std::size_t k = 0; k < 4; ++k) {
      const auto n = json_integer_if<int>(r[k], 1, 10'000'000);
      if (!n) throw ConfigError(s.where(), at, "head_dim, seq, heads and group must be integers, got " + r.dump());
      whole[k] = *n;
    }
    gpu.attention_rates.push_back({whole[0], whole[1], whole[2], whole[3], r[4].get<double>(), r[5].get<double>()});
  }
  // Every group's rows must be a full grid (the interpolation reads every corner), each point once.
  for (const sim::AttentionRate& a : gpu.attention_rates) {
    std::set<int> dims, seqs, heads;
    int rows_of_group = 0;
    for (const sim::AttentionRate& b : gpu.attention_rates)
      if (b.group == a.group) {
        dims.insert(b.head_dim);
        seqs.insert(b.seq);
        heads.insert(b.heads);
        ++rows_of_group;
      }
    if (static_cast<std::size_t>(rows_of_group) != dims.size() * seqs.size() * heads.size())
      throw ConfigError(s.where(), key,
                        "the rows of group " + std::to_string(a.group) +
                            " are not a full grid of head_dim x seq x heads with each point once");
  }
}

// cluster.gpu.gemm_grid: {"bf16": [[m, n, k, tflops], ...], "fp8": [...]}, each a full grid over m × n × k.
void read_gpu_gemm_grid(Scenario& s, sim::GpuSpec& gpu) {
  for (const bool fp8 : {false, true}) {
    const std::string key = std::string("cluster.gpu.gemm_grid.") + (fp8 ? "fp8" : "bf16");
    const nlohmann::json* rows = s.raw(key);
    if (rows == nullptr) continue;
    if (!gpu.has_kernel_model() || (fp8 && gpu.fp8_matmul_tflops <= 0.0))
      throw ConfigError(s.where(), key,
                        "corrects the kernel-level model's GEMM times: give the GPU's GEMM figures too "
                        "(matmul_tflops, and fp8_matmul_tflops for the fp8 grid)");
    if (!rows->is_array() || rows->empty() || rows->size() > 4096)
      throw ConfigError(s.where(), key, "expected a non-empty array of at most 4096 [m, n, k, tflops] rows");
    std::set<double> ms, ns, ks;
    std::set<std::tuple<double, double, double>> points;
    for (std::size_t i = 0; i < rows->size(); ++i) {
      const nlohmann::json& r = (*rows)[i];
      const std::string at = key + "[" + std::to_string(i) + "]";
      if (!r.is_array() || r.size() != 4)
        throw ConfigError(s.where(), at, "expected [m, n, k, tflops], got " + r.dump());
      for (const nlohmann::json& v : r)
        if (!v.is_number() || !(v.get<double>() > 0.0) || !(v.get<double>() <= 1e7))
          throw ConfigError(s.where(), at, "every entry must be a positive number up to 1e7, got " + r.dump());
      const double tflops = r[3].get<double>();
      if (tflops > (fp8 ? gpu.fp8_matmul_tflops : gpu.matmul_tflops) * 1.0001)
        throw ConfigError(s.where(), at,
                          "a grid rate above the GPU's maximum achievable rate (" +
                              std::string(fp8 ? "fp8_matmul_tflops" : "matmul_tflops") + "): " + r.dump());
      const double m = r[0].get<double>(), n = r[1].get<double>(), k = r[2].get<double>();
      ms.insert(m);
      ns.insert(n);
      ks.insert(k);
      if (!points.insert({m, n, k}).second) throw ConfigError(s.where(), at, "a shape given twice: " + r.dump());
      gpu.gemm_rates.push_back({m, n, k, tflops, fp8});
    }
    if (points.size() != ms.size() * ns.size() * ks.size())
      throw ConfigError(s.where(), key, "the rows are not a full grid of m x n x k");
  }
}

}  // namespace

sim::ClusterSpec read_cluster(Scenario& s) {
  const auto it = s.json().find("cluster");
  if (it == s.json().end() || !it->is_object())
    throw ConfigError(s.where(), "cluster", "missing: expected an object or the path of a cluster file");
  sim::ClusterSpec c;
  c.name = s.string("cluster.name", "");
  c.gpus_per_node = s.int32("cluster.gpus_per_node", c.gpus_per_node);
  c.nodes = s.int32("cluster.nodes", c.nodes);
  check_cluster_size(s, c.nodes, c.gpus_per_node);  // nodes × gpus_per_node is an int: refuse before it overflows
  c.gpu.name = s.string("cluster.gpu.name", "");
  c.gpu.peak_tflops = s.number("cluster.gpu.peak_tflops", 0.0);
  c.gpu.hbm_GBps = s.number("cluster.gpu.hbm_GBps", 0.0);
  read_gpu_memory_GiB(s);  // checked here so that every command accepts the key; simulate uses it
  read_gpu_gemm(s, c.gpu);
  read_gpu_fp8(s, c.gpu);
  read_gpu_attention(s, c.gpu);
  read_gpu_gemm_grid(s, c.gpu);
  const std::string topo = s.string("cluster.intra_node.topology", "switch");
  if (topo == "switch")
    c.intra_topology = sim::IntraNodeTopology::kSwitch;
  else if (topo == "dgx1-cube-mesh")
    c.intra_topology = sim::IntraNodeTopology::kDgx1CubeMesh;
  else
    throw ConfigError(s.where(), "cluster.intra_node.topology",
                      "expected \"switch\" or \"dgx1-cube-mesh\", got \"" + topo + "\"");
  c.intra_bandwidth_GBps = s.number("cluster.intra_node.bandwidth_GBps", 0.0);
  c.intra_latency_us = required_number(s, "cluster.intra_node.latency_us",
                                       "the per-hop latency of the GPU links in microseconds, e.g. 0.6 for NVLink");
  c.nics_per_node = s.int32("cluster.inter_node.nics_per_node", c.nics_per_node);
  c.nic_bandwidth_GBps = s.number("cluster.inter_node.nic_bandwidth_GBps", 0.0);
  c.inter_latency_us = required_number(s, "cluster.inter_node.latency_us",
                                       "the per-hop latency between nodes in microseconds, e.g. 2 for InfiniBand");
  const std::string fabric = s.string("cluster.inter_node.fabric", "star");
  if (fabric == "star")
    c.fabric = sim::Fabric::kStar;
  else if (fabric == "fat-tree")
    c.fabric = sim::Fabric::kFatTree;
  else
    throw ConfigError(s.where(), "cluster.inter_node.fabric",
                      "expected \"star\" or \"fat-tree\", got \"" + fabric + "\"");
  c.fat_tree_nodes_per_leaf = s.int32("cluster.inter_node.nodes_per_leaf", c.fat_tree_nodes_per_leaf);
  c.oversubscription = s.number("cluster.inter_node.oversubscription", c.oversubscription);
  c.price_per_gpu_hour_usd = required_number(s, "cluster.price_per_gpu_hour_usd",
                                             "the price of one GPU-hour in USD (0 when cost does not matter)");
  sim::validate(c, s.where());
  return c;
}

std::optional<double> read_gpu_memory_GiB(Scenario& s) {
  constexpr const char* kKey = "cluster.gpu.memory_GiB";
  if (!s.has(kKey)) return std::nullopt;
  const double gib = s.number(kKey, 0.0);
  if (!(gib > 0.0)) throw ConfigError(s.where(), kKey, "must be a positive number of GiB, got " + std::to_string(gib));
  return gib;
}

sim::NetworkProfile read_network(Scenario& s, const std::string& profile_override) {
  std::string profile = s.string("network.profile", "ideal");
  const std::string calibration = s.string("network.calibration", "");
  const std::string algorithm = s.string("network.algorithm", "auto");
  const std::optional<sim::CollectiveAlgorithm> chosen = sim::allreduce_algorithm_from_name(algorithm);
  if (!chosen)
    throw ConfigError(s.where(), "network.algorithm",
                      "expected \"auto\", \"ring\" or \"tree\", got \"" + algorithm + "\"");
  if (!profile_override.empty()) profile = profile_override;
  const std::optional<sim::NetworkProfileKind> kind = sim::network_profile_from_name(profile);
  if (kind == sim::NetworkProfileKind::kIdeal) {
    sim::NetworkProfile ideal;
    ideal.algorithm = *chosen;
    return ideal;
  }
  if (!kind && !profile_override.empty())
    throw UsageError("--network", "expected ideal or calibrated, got '" + profile + "'");
  if (!kind)
    throw ConfigError(s.where(), "network.profile", "expected \"ideal\" or \"calibrated\", got \"" + profile + "\"");
  if (calibration.empty())
    throw ConfigError(s.where(), "network.calibration",
                      "required with the calibrated profile: an efficiency file written by 'edgc calibrate'");
  sim::NetworkProfile calibrated = load_calibration(s.resolve(calibration));
  calibrated.algorithm = *chosen;
  return calibrated;
}

sim::NetworkProfile load_calibration(const std::string& path) {
  // Missing, too large, invalid, nested too deep, not an object, a key given twice: ConfigError naming the file.
  const nlohmann::json doc = Scenario::load(path, "calibration file").json();
  const auto schema = doc.find("schema");
  if (schema == doc.end() || *schema != "edgc.calibration/1")
    throw ConfigError(path, "schema", "expected \"edgc.calibration/1\"");
  sim::NetworkProfile p;
  p.kind = sim::NetworkProfileKind::kCalibrated;
  p.intra = read_curve(doc, path, "intra");
  p.inter = read_curve(doc, path, "inter");
  return p;
}

}  // namespace edgc::scenario
