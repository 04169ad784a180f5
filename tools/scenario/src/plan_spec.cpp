#include "edgc/scenario/plan_spec.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <utility>

#include "edgc/core/checked_int.hpp"
#include "edgc/core/error.hpp"
#include "edgc/scenario/config.hpp"

namespace edgc::scenario {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

struct ClusterChoice {
  std::string path;   // absolute
  std::string label;  // GPU name unless given
  int gpus_per_node = 0;
  json sets = json::object();
  std::vector<int> gpus;  // its own GPU counts ("gpus" of the entry); empty: the spec's top-level "gpus"
  std::string at;         // "clusters[i]", for messages
};

int positive_int(const std::string& where, const std::string& field, const json& v) {
  try {
    return json_integer<int>(v, 1, 1'000'000);
  } catch (const IntegerError&) {
    throw ConfigError(where, field, "expected a positive integer, got " + v.dump());
  }
}

void read_target(const json& d, const std::string& w, PlanSpec& spec) {
  if (!d.contains("target") || !d["target"].is_object() || d["target"].size() != 1)
    throw ConfigError(w, "target", "expected {\"iterations\": N} or {\"tokens\": T}");
  if (d["target"].contains("iterations")) {
    spec.iterations = positive_int(w, "target.iterations", d["target"]["iterations"]);
  } else if (d["target"].contains("tokens")) {
    const json& t = d["target"]["tokens"];
    if (!t.is_number() || !(t.get<double>() >= 1.0)) throw ConfigError(w, "target.tokens", "expected a number >= 1");
    spec.tokens = t.get<double>();
  } else {
    throw ConfigError(w, "target." + d["target"].begin().key(), "unknown target (iterations or tokens)");
  }
}

void read_policies_and_sets(const json& d, const std::string& w, PlanSpec& spec) {
  if (d.contains("policies")) {
    if (!d["policies"].is_array() || d["policies"].empty())
      throw ConfigError(w, "policies", "expected a list of policies");
    for (std::size_t i = 0; i < d["policies"].size(); ++i) {
      const json& p = d["policies"][i];
      if (!p.is_string()) throw ConfigError(w, "policies[" + std::to_string(i) + "]", "expected a string");
      if (std::find(spec.policies.begin(), spec.policies.end(), p.get<std::string>()) == spec.policies.end())
        spec.policies.push_back(p.get<std::string>());
    }
  } else {
    spec.policies.push_back("edgc");
  }
  if (d.contains("set")) {
    if (!d["set"].is_object()) throw ConfigError(w, "set", "expected an object of key: value");
    spec.sets = d["set"];
  }
}

// A cluster entry's own GPU counts: stated for that cluster, so a count that is not whole nodes of it is a mistake
// in the spec (an error), not a combination to skip as when one top-level list is crossed with every cluster.
std::vector<int> read_own_gpus(const std::string& w, const std::string& at, const json& v, const ClusterChoice& c) {
  if (!v.is_array() || v.empty())
    throw ConfigError(w, at + ".gpus", "expected a non-empty list of GPU counts for this cluster, got " + v.dump());
  std::vector<int> gpus;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string field = at + ".gpus[" + std::to_string(i) + "]";
    const int n = positive_int(w, field, v[i]);
    if (n % c.gpus_per_node != 0)
      throw ConfigError(w, field,
                        std::to_string(n) + " GPUs are not whole nodes of " + std::to_string(c.gpus_per_node) +
                            " (cluster.gpus_per_node of " + c.path + ")");
    if (std::find(gpus.begin(), gpus.end(), n) != gpus.end())
      throw ConfigError(w, field, std::to_string(n) + " is listed twice for this cluster");
    gpus.push_back(n);
  }
  return gpus;
}

ClusterChoice read_cluster_choice(const Scenario& sc, const std::string& w, const std::string& at, const json& c) {
  ClusterChoice choice;
  std::string file;
  if (c.is_string()) {
    file = c.get<std::string>();
  } else if (c.is_object()) {
    for (auto it = c.begin(); it != c.end(); ++it)
      if (it.key() != "cluster" && it.key() != "label" && it.key() != "set" && it.key() != "gpus")
        throw ConfigError(w, at + "." + it.key(), "unknown key");
    if (!c.contains("cluster") || !c["cluster"].is_string())
      throw ConfigError(w, at + ".cluster", "expected a file path");
    file = c["cluster"].get<std::string>();
    if (c.contains("label")) {
      if (!c["label"].is_string()) throw ConfigError(w, at + ".label", "expected a string");
      choice.label = c["label"].get<std::string>();
    }
    if (c.contains("set")) {
      if (!c["set"].is_object()) throw ConfigError(w, at + ".set", "expected an object of key: value");
      choice.sets = c["set"];
    }
  } else {
    throw ConfigError(w, at, "expected a cluster file path or {\"cluster\": path, ...}");
  }
  choice.path = fs::absolute(sc.resolve(file)).lexically_normal().string();
  Scenario cl = Scenario::load(choice.path, "cluster file");  // errors name the cluster file
  cl.splice_include("cluster");
  if (!cl.has("cluster")) throw ConfigError(choice.path, "cluster", "missing: not a cluster file");
  choice.gpus_per_node = cl.int32("cluster.gpus_per_node", 0);
  if (choice.gpus_per_node < 1) throw ConfigError(choice.path, "cluster.gpus_per_node", "must be >= 1");
  if (choice.label.empty()) choice.label = cl.string("cluster.gpu.name", "gpu");
  choice.at = at;
  if (c.is_object() && c.contains("gpus")) choice.gpus = read_own_gpus(w, at, c["gpus"], choice);
  return choice;
}

std::vector<ClusterChoice> read_clusters(const Scenario& sc, const json& d, const std::string& w) {
  if (!d.contains("clusters") || !d["clusters"].is_array() || d["clusters"].empty())
    throw ConfigError(w, "clusters", "expected a non-empty list of cluster files");
  std::vector<ClusterChoice> clusters;
  for (std::size_t i = 0; i < d["clusters"].size(); ++i)
    clusters.push_back(read_cluster_choice(sc, w, "clusters[" + std::to_string(i) + "]", d["clusters"][i]));
  return clusters;
}

// The top-level counts, the default of every cluster entry without its own; required only when some entry lacks
// them.
std::vector<int> read_gpus(const json& d, const std::string& w, const std::vector<ClusterChoice>& clusters) {
  if (!d.contains("gpus")) {
    for (const ClusterChoice& c : clusters)
      if (c.gpus.empty())
        throw ConfigError(w, "gpus",
                          "missing: " + c.at + " gives no \"gpus\" of its own, so the spec needs a list of GPU counts");
    return {};
  }
  if (!d["gpus"].is_array() || d["gpus"].empty())
    throw ConfigError(w, "gpus", "expected a non-empty list of GPU counts");
  std::vector<int> gpus;
  for (std::size_t i = 0; i < d["gpus"].size(); ++i)
    gpus.push_back(positive_int(w, "gpus[" + std::to_string(i) + "]", d["gpus"][i]));
  return gpus;
}

std::vector<std::pair<int, int>> read_layouts(const json& d, const std::string& w) {
  if (!d.contains("layouts") || !d["layouts"].is_array() || d["layouts"].empty())
    throw ConfigError(w, "layouts", "expected a non-empty list of {\"tp\": T, \"pp\": P}");
  std::vector<std::pair<int, int>> layouts;
  for (std::size_t i = 0; i < d["layouts"].size(); ++i) {
    const std::string at = "layouts[" + std::to_string(i) + "]";
    const json& l = d["layouts"][i];
    if (!l.is_object() || !l.contains("tp") || !l.contains("pp") || l.size() != 2)
      throw ConfigError(w, at, "expected {\"tp\": T, \"pp\": P}");
    layouts.emplace_back(positive_int(w, at + ".tp", l["tp"]), positive_int(w, at + ".pp", l["pp"]));
  }
  return layouts;
}

// One option, or the reason it cannot be laid out.
std::optional<PlanOption> make_option(const PlanSpec& spec, const ClusterChoice& c, int n, int tp, int pp,
                                      std::string& why_not) {
  const std::string name = std::to_string(n) + "x" + c.label + " tp" + std::to_string(tp) + " pp" + std::to_string(pp);
  if (n % c.gpus_per_node != 0) {
    why_not = name + ": " + std::to_string(n) + " GPUs are not whole nodes of " + std::to_string(c.gpus_per_node);
    return std::nullopt;
  }
  const std::int64_t tp_pp = std::int64_t{tp} * pp;  // each is at most 1,000,000: the product needs 64 bits
  if (n % tp_pp != 0) {
    why_not = name + ": tp·pp = " + std::to_string(tp_pp) + " does not divide " + std::to_string(n);
    return std::nullopt;
  }
  PlanOption o;
  o.gpu = c.label;
  o.gpus = n;
  o.tp = tp;
  o.pp = pp;
  o.dp = static_cast<int>(n / tp_pp);
  o.label = name + " dp" + std::to_string(o.dp);
  o.sets = json::object();
  for (auto it = spec.sets.begin(); it != spec.sets.end(); ++it) o.sets[it.key()] = *it;
  o.sets["cluster"] = c.path;
  o.sets["cluster.nodes"] = n / c.gpus_per_node;
  o.sets["parallelism.tp"] = tp;
  o.sets["parallelism.pp"] = pp;
  o.sets["parallelism.dp"] = o.dp;
  o.sets["parallelism.microbatches"] = 0;  // global batch / (micro-batch · dp) for each dp
  for (auto it = c.sets.begin(); it != c.sets.end(); ++it) o.sets[it.key()] = *it;
  if (spec.iterations) o.sets["run.iterations"] = *spec.iterations;
  return o;
}

// Tokens per iteration come from the base scenario's model (the same recipe on every option).
void apply_token_target(PlanSpec& spec) {
  Scenario b = load_scenario(spec.base, {});
  const double batch = static_cast<double>(b.integer("model.global_batch_size", 0));
  const double seq = static_cast<double>(b.integer("model.seq_len", 0));
  if (!(batch > 0 && seq > 0))
    throw ConfigError(spec.base, "model.global_batch_size", "needed (with seq_len) for a token target");
  const double steps = std::ceil(*spec.tokens / (batch * seq));
  if (!(steps <= 1e15))  // run.iterations' own check then names the plan's options; this keeps the cast defined
    throw ConfigError(spec.path, "target.tokens",
                      "needs more than 1e15 iterations of the base scenario's global_batch_size x seq_len tokens: "
                      "beyond any run that can be planned, check the value");
  const auto iters = static_cast<std::int64_t>(steps);
  for (PlanOption& o : spec.options) o.sets["run.iterations"] = iters;
  spec.iterations = iters;
}

}  // namespace

PlanSpec read_plan_spec(const std::string& path) {
  Scenario sc = Scenario::load(path, "plan spec");
  const std::string w = sc.where();
  const json& d = sc.json();
  PlanSpec spec;
  spec.path = path;
  spec.document = ordered_json::parse(d.dump());
  if (!d.contains("base") && (d.contains("model") || d.contains("parallelism") || d.contains("cluster")))
    throw ConfigError(w, "base",
                      "missing: this file is a scenario, not a plan spec (a plan spec names its scenario in \"base\")");
  const std::set<std::string> known = {"description", "base",    "target", "policies",       "clusters",
                                       "gpus",        "layouts", "set",    "pays_threshold", "max_error"};
  for (auto it = d.begin(); it != d.end(); ++it)
    if (known.count(it.key()) == 0U) throw ConfigError(w, it.key(), "unknown key");
  spec.description = sc.string("description", "");
  const std::string base = sc.string("base", "");
  if (base.empty()) throw ConfigError(w, "base", "missing: the base scenario file");
  spec.base = fs::absolute(sc.resolve(base)).lexically_normal().string();
  std::error_code ec;  // not the throwing overload: a name too long for the OS is an input error like any other
  if (!fs::is_regular_file(spec.base, ec))
    throw ConfigError(w, "base", "'" + spec.base + "' is not a readable file" + (ec ? " (" + ec.message() + ")" : ""));
  spec.pays_threshold = sc.number("pays_threshold", spec.pays_threshold);
  if (!(spec.pays_threshold >= 0.0 && spec.pays_threshold < 1.0))
    throw ConfigError(w, "pays_threshold", "must be in [0, 1)");
  if (d.contains("max_error")) {
    spec.max_error = sc.number("max_error", 0.0);
    if (!(*spec.max_error > 0.0))
      throw ConfigError(w, "max_error", "must be > 0 (a relative error of the averaged gradient, e.g. 0.2)");
  }
  read_target(d, w, spec);
  read_policies_and_sets(d, w, spec);
  const std::vector<ClusterChoice> clusters = read_clusters(sc, d, w);
  const std::vector<int> gpus = read_gpus(d, w, clusters);
  const std::vector<std::pair<int, int>> layouts = read_layouts(d, w);
  for (const ClusterChoice& c : clusters)
    for (const int n : c.gpus.empty() ? gpus : c.gpus)
      for (const auto& [tp, pp] : layouts) {
        std::string why_not;
        if (std::optional<PlanOption> o = make_option(spec, c, n, tp, pp, why_not))
          spec.options.push_back(std::move(*o));
        else
          spec.skipped.push_back(why_not);
      }
  if (spec.options.empty())
    throw ConfigError(w, "gpus",
                      "no cluster x gpus x layout combination can be laid out: " + reason_list(spec.skipped));
  if (spec.tokens) apply_token_target(spec);
  return spec;
}

std::string reason_list(const std::vector<std::string>& reasons, std::size_t shown) {
  std::string out;
  for (std::size_t i = 0; i < reasons.size() && i < shown; ++i) out += (i == 0 ? "" : "; ") + reasons[i];
  if (reasons.size() > shown) out += "; and " + std::to_string(reasons.size() - shown) + " more";
  return out;
}

}  // namespace edgc::scenario
