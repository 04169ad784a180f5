// `edgc plan --spec F --out DIR [--jobs N] [--resume] [--quiet]`: capacity planning. A plan spec lists cluster
// types, GPU counts and layouts; every feasible combination is simulated under each compression policy (as one
// sweep, so runs are parallel, cached and resumable, and spread over mpirun ranks), then ranked by the time and
// cost to reach the target, with the time–cost Pareto front and a verdict on whether compression pays.
//
//   {
//     "description": "…",
//     "base": "../paper/gpt2-12.1b-64xh100.json",       model, recipe, compression settings, trace
//     "target": {"iterations": 100000},                 or {"tokens": 2.0e11}: iterations = tokens / (global
//                                                       batch · sequence length), rounded up
//     "policies": ["none", "edgc"],                     compared policies (none is always included)
//     "clusters": ["../clusters/dgx-h100.json",         cluster files (relative to this spec), or objects
//                  {"cluster": "../clusters/dgx1-v100.json", "label": "V100", "set": {"compute.efficiency": 0.32}}],
//     "gpus": [32, 64, 128],                            total GPU counts (whole nodes)
//     "layouts": [{"tp": 8, "pp": 4}, {"tp": 4, "pp": 4}],   dp = gpus / (tp · pp)
//     "set": {"network.profile": "ideal"},              optional overrides of every option
//     "pays_threshold": 0.01                            compression "pays" when it cuts training time by more
//   }
//
// DIR holds the sweep's files (sweep.json, results.jsonl, summary.csv, cache/), the generated sweep spec
// (plan-sweep.json) and plan.json (schema edgc.plan/1).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <set>
#include <thread>

#include "cli.hpp"
#include "edgc/core/atomic_file.hpp"
#include "edgc/core/error.hpp"
#include "edgc/engine/mpi_session.hpp"
#include "edgc/engine/sweep.hpp"
#include "edgc/report/report.hpp"
#include "edgc/results/table.hpp"
#include "edgc/scenario/config.hpp"

namespace edgc::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

struct ClusterChoice {
  std::string path;   // absolute
  std::string label;  // GPU name unless given
  int gpus_per_node = 0;
  json sets = json::object();
};

struct Option {
  std::string label;
  std::string gpu;
  int gpus = 0;
  int tp = 0;
  int pp = 0;
  int dp = 0;
  json sets;  // dotted key → value
};

struct PlanSpec {
  std::string path;
  std::string base;
  std::string description;
  std::optional<std::int64_t> iterations;
  std::optional<double> tokens;
  std::vector<std::string> policies = {"none"};
  std::vector<Option> options;
  std::vector<std::string> skipped;  // combinations that cannot be laid out, with the reason
  json sets = json::object();
  double pays_threshold = 0.01;
  ordered_json document;
};

int positive_int(const std::string& where, const std::string& field, const json& v) {
  if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > 1'000'000)
    throw ConfigError(where, field, "expected a positive integer, got " + v.dump());
  return v.get<int>();
}

PlanSpec read_plan_spec(const std::string& path) {
  scenario::Scenario sc = scenario::Scenario::load(path);
  const std::string w = sc.where();
  const json& d = sc.json();
  PlanSpec spec;
  spec.path = path;
  spec.document = ordered_json::parse(d.dump());
  for (auto it = d.begin(); it != d.end(); ++it)
    if (std::set<std::string>{"description", "base", "target", "policies", "clusters", "gpus", "layouts", "set",
                              "pays_threshold"}
            .count(it.key()) == 0U)
      throw ConfigError(w, it.key(), "unknown key");
  spec.description = sc.string("description", "");
  const std::string base = sc.string("base", "");
  if (base.empty()) throw ConfigError(w, "base", "missing: the base scenario file");
  spec.base = fs::absolute(sc.resolve(base)).lexically_normal().string();
  if (!fs::is_regular_file(spec.base)) throw ConfigError(w, "base", "'" + spec.base + "' is not a readable file");
  spec.pays_threshold = sc.number("pays_threshold", spec.pays_threshold);
  if (!(spec.pays_threshold >= 0.0 && spec.pays_threshold < 1.0))
    throw ConfigError(w, "pays_threshold", "must be in [0, 1)");

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

  // Clusters.
  std::vector<ClusterChoice> clusters;
  if (!d.contains("clusters") || !d["clusters"].is_array() || d["clusters"].empty())
    throw ConfigError(w, "clusters", "expected a non-empty list of cluster files");
  for (std::size_t i = 0; i < d["clusters"].size(); ++i) {
    const std::string at = "clusters[" + std::to_string(i) + "]";
    const json& c = d["clusters"][i];
    ClusterChoice choice;
    std::string file;
    if (c.is_string()) {
      file = c.get<std::string>();
    } else if (c.is_object()) {
      for (auto it = c.begin(); it != c.end(); ++it)
        if (it.key() != "cluster" && it.key() != "label" && it.key() != "set")
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
    scenario::Scenario cl = scenario::Scenario::load(choice.path);  // errors name the cluster file
    cl.splice_include("cluster");
    if (!cl.has("cluster")) throw ConfigError(choice.path, "cluster", "missing: not a cluster file");
    choice.gpus_per_node = cl.int32("cluster.gpus_per_node", 0);
    if (choice.gpus_per_node < 1) throw ConfigError(choice.path, "cluster.gpus_per_node", "must be >= 1");
    if (choice.label.empty()) choice.label = cl.string("cluster.gpu.name", "gpu");
    clusters.push_back(std::move(choice));
  }
  std::vector<int> gpus;
  if (!d.contains("gpus") || !d["gpus"].is_array() || d["gpus"].empty())
    throw ConfigError(w, "gpus", "expected a non-empty list of GPU counts");
  for (std::size_t i = 0; i < d["gpus"].size(); ++i)
    gpus.push_back(positive_int(w, "gpus[" + std::to_string(i) + "]", d["gpus"][i]));
  std::vector<std::pair<int, int>> layouts;
  if (!d.contains("layouts") || !d["layouts"].is_array() || d["layouts"].empty())
    throw ConfigError(w, "layouts", "expected a non-empty list of {\"tp\": T, \"pp\": P}");
  for (std::size_t i = 0; i < d["layouts"].size(); ++i) {
    const std::string at = "layouts[" + std::to_string(i) + "]";
    const json& l = d["layouts"][i];
    if (!l.is_object() || !l.contains("tp") || !l.contains("pp") || l.size() != 2)
      throw ConfigError(w, at, "expected {\"tp\": T, \"pp\": P}");
    layouts.emplace_back(positive_int(w, at + ".tp", l["tp"]), positive_int(w, at + ".pp", l["pp"]));
  }

  for (const ClusterChoice& c : clusters)
    for (const int n : gpus)
      for (const auto& [tp, pp] : layouts) {
        const std::string name =
            std::to_string(n) + "x" + c.label + " tp" + std::to_string(tp) + " pp" + std::to_string(pp);
        if (n % c.gpus_per_node != 0) {
          spec.skipped.push_back(name + ": " + std::to_string(n) + " GPUs are not whole nodes of " +
                                 std::to_string(c.gpus_per_node));
          continue;
        }
        if (n % (tp * pp) != 0) {
          spec.skipped.push_back(name + ": tp·pp = " + std::to_string(tp * pp) + " does not divide " +
                                 std::to_string(n));
          continue;
        }
        Option o;
        o.gpu = c.label;
        o.gpus = n;
        o.tp = tp;
        o.pp = pp;
        o.dp = n / (tp * pp);
        o.label = std::to_string(n) + "x" + c.label + " tp" + std::to_string(tp) + " pp" + std::to_string(pp) + " dp" +
                  std::to_string(o.dp);
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
        spec.options.push_back(std::move(o));
      }
  if (spec.options.empty()) throw ConfigError(w, "gpus", "no cluster x gpus x layout combination can be laid out");
  if (spec.tokens) {
    // Tokens per iteration come from the base scenario's model (the same recipe on every option).
    scenario::Scenario b = scenario::load_scenario(spec.base, {});
    const double batch = static_cast<double>(b.integer("model.global_batch_size", 0));
    const double seq = static_cast<double>(b.integer("model.seq_len", 0));
    if (!(batch > 0 && seq > 0))
      throw ConfigError(spec.base, "model.global_batch_size", "needed (with seq_len) for a token target");
    const auto iters = static_cast<std::int64_t>(std::ceil(*spec.tokens / (batch * seq)));
    for (Option& o : spec.options) o.sets["run.iterations"] = iters;
    spec.iterations = iters;
  }
  return spec;
}

// The sweep that simulates every option: one bundle axis, written to DIR/plan-sweep.json so that workers
// (and --resume) read the same file.
scenario::SweepSpec plan_sweep(const PlanSpec& plan, const fs::path& dir) {
  ordered_json doc = {{"description", "generated by edgc plan from " + plan.path},
                      {"base", plan.base},
                      {"policies", plan.policies},
                      {"axes", ordered_json::array()}};
  ordered_json values = ordered_json::array();
  ordered_json labels = ordered_json::array();
  for (const Option& o : plan.options) {
    values.push_back(ordered_json::parse(o.sets.dump()));
    labels.push_back(o.label);
  }
  doc["axes"].push_back({{"key", "option"}, {"values", values}, {"labels", labels}});
  fs::create_directories(dir);
  const fs::path file = dir / "plan-sweep.json";
  write_file_atomic(file, doc.dump(2) + "\n");
  return scenario::read_sweep_spec(file.string());
}

// Hours and dollars: whole numbers when large, 4 significant digits when small.
std::string amount(double x) { return x >= 100.0 ? results::fmt_f(x, 0) : results::fmt_g(x, 4); }

struct Entry {
  const Option* option = nullptr;
  std::string policy;
  double time_s = 0.0;
  double cost = 0.0;
  double speedup = 1.0;
  bool pareto = false;
};

int run_plan_command(const std::vector<std::string>& args) {
  std::string spec_path;
  engine::SweepOptions so;
  so.jobs = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  po::options_description opts;
  opts.add_options()("spec", po::value(&spec_path)->required(), "plan spec JSON (scenarios/plans/)")(
      "out", po::value(&so.out)->required(), "output directory: plan.json plus the sweep's files")(
      "jobs", po::value(&so.jobs), "worker processes (on each MPI rank; default: the CPU count)")(
      "resume", "continue a plan whose simulations were interrupted")(
      "report", "also write DIR/report.html (time-cost Pareto front, heatmaps) and DIR/report/*.svg")(
      "quiet", "print only the output paths");
  po::variables_map vm;
  if (!parse("plan", "--spec F --out DIR [--jobs N] [--resume] [--report] [--quiet]", opts, {}, args, vm)) return 0;
  so.resume = vm.count("resume") != 0U;
  so.quiet = true;  // the plan prints its own tables
  const bool quiet = vm.count("quiet") != 0U;
  if (so.jobs < 1) throw UsageError("--jobs", "must be >= 1, got " + std::to_string(so.jobs));

  const PlanSpec plan = read_plan_spec(spec_path);
  const fs::path dir(so.out);
  engine::check_sweep_out(so.out, so.resume, "plan-sweep.json");  // before plan-sweep.json is written into DIR
  const std::unique_ptr<engine::MpiSession> mpi = engine::MpiSession::open_if_launched();
  scenario::SweepSpec sweep = plan_sweep(plan, dir);
  sweep.document["plan"] = plan.document;  // a changed plan spec is another sweep for --resume
  const engine::SweepOutcome outcome = engine::run_sweep(sweep, so, mpi.get());
  if (mpi != nullptr && mpi->rank() != 0) return 0;

  // Collect option × policy entries.
  std::vector<Entry> entries;
  std::vector<std::string> infeasible = plan.skipped;
  for (const json& line : outcome.results) {
    const Option& o = plan.options.at(static_cast<std::size_t>(line["point"].get<std::int64_t>()));
    if (line.contains("error")) {
      infeasible.push_back(o.label + ": " + line["error"].get<std::string>());
      continue;
    }
    for (const json& r : line["runs"])
      entries.push_back({&o, r["policy"].get<std::string>(), r["training_time_s"].get<double>(),
                         r["cost_usd"].get<double>(), r["speedup_vs_none"].get<double>(), false});
  }
  if (entries.empty()) throw ConfigError(spec_path, "clusters", "no option could be simulated: " + infeasible.front());
  // Pareto front: no other entry is at least as fast and as cheap, and strictly better in one.
  for (Entry& e : entries) {
    e.pareto = std::none_of(entries.begin(), entries.end(), [&](const Entry& x) {
      return x.time_s <= e.time_s && x.cost <= e.cost && (x.time_s < e.time_s || x.cost < e.cost);
    });
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.time_s < b.time_s; });

  // Verdicts: per option, the best compressing policy against none.
  std::vector<std::string> verdicts;
  std::vector<std::string> pays;
  std::vector<std::string> not_pays;
  for (const Option& o : plan.options) {
    const Entry* none = nullptr;
    const Entry* best = nullptr;
    for (const Entry& e : entries) {
      if (e.option != &o) continue;
      if (e.policy == "none")
        none = &e;
      else if (best == nullptr || e.time_s < best->time_s)
        best = &e;
    }
    if (none == nullptr || best == nullptr) continue;
    const double cut = 1.0 - best->time_s / none->time_s;
    (cut > plan.pays_threshold ? pays : not_pays)
        .push_back(o.label + " (" + best->policy + " " + results::fmt_f(-100.0 * cut, 2) + " %)");
  }
  const auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  if (!pays.empty())
    verdicts.push_back("Compression pays (cuts training time by more than " +
                       results::fmt_f(100.0 * plan.pays_threshold, 1) + " %) on: " + join(pays) + ".");
  if (!not_pays.empty())
    verdicts.push_back("Compression does not pay (changes training time by less than " +
                       results::fmt_f(100.0 * plan.pays_threshold, 1) + " %) on: " + join(not_pays) +
                       ". There the data-parallel sync is a small share of the iteration (a fast network for this "
                       "model and batch, or little data parallelism), so plain all-reduce is as good.");
  const Entry& fastest = entries.front();
  const Entry& cheapest =
      *std::min_element(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.cost < b.cost; });
  verdicts.push_back("Fastest: " + fastest.option->label + " " + fastest.policy + ", " +
                     amount(fastest.time_s / 3600.0) + " h for $" + amount(fastest.cost) + ".");
  verdicts.push_back("Cheapest: " + cheapest.option->label + " " + cheapest.policy + ", $" + amount(cheapest.cost) +
                     " in " + amount(cheapest.time_s / 3600.0) + " h.");

  ordered_json out = {{"schema", "edgc.plan/1"},
                      {"spec", plan.path},
                      {"base", plan.base},
                      {"target", plan.tokens ? ordered_json{{"tokens", *plan.tokens}, {"iterations", *plan.iterations}}
                                             : ordered_json{{"iterations", *plan.iterations}}},
                      {"pays_threshold", plan.pays_threshold},
                      {"options", ordered_json::array()},
                      {"infeasible", infeasible},
                      {"verdicts", verdicts}};
  for (const Entry& e : entries)
    out["options"].push_back({{"label", e.option->label + " " + e.policy},
                              {"gpu", e.option->gpu},
                              {"gpus", e.option->gpus},
                              {"tp", e.option->tp},
                              {"pp", e.option->pp},
                              {"dp", e.option->dp},
                              {"policy", e.policy},
                              {"training_time_s", e.time_s},
                              {"cost_usd", e.cost},
                              {"speedup_vs_none", e.speedup},
                              {"pareto", e.pareto}});
  write_file_atomic(dir / "plan.json", out.dump(2) + "\n");
  std::string report;
  if (vm.count("report") != 0U) report = report::write_report_into(dir).string();

  if (quiet) {
    std::cout << so.out << "/plan.json\n";
    if (!report.empty()) std::cout << report << "\n";
    return 0;
  }
  std::cout << "plan        " << spec_path << ": " << plan.options.size() << " cluster options x "
            << plan.policies.size() << " policies, target " << *plan.iterations << " iterations; " << outcome.ran
            << " simulated now, " << outcome.already_done << " from an earlier run\n\n";
  results::Table t({"#", "option", "policy", "train h", "cost $", "speedup vs none", "Pareto"});
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    t.add_row({std::to_string(i + 1), e.option->label, e.policy, amount(e.time_s / 3600.0), amount(e.cost),
               results::fmt_f(e.speedup, 4), e.pareto ? "*" : ""});
  }
  t.print(std::cout);
  std::cout << "\n";
  for (const std::string& v : verdicts) std::cout << "- " << v << "\n";
  if (!infeasible.empty()) {
    std::cout << "\nnot simulated (" << infeasible.size() << "):\n";
    for (const std::string& s : infeasible) std::cout << "  " << s << "\n";
  }
  std::cout << "\nwrote       " << so.out << "/plan.json\n";
  if (!report.empty()) std::cout << "report      " << report << "\n";
  return 0;
}

}  // namespace

void add_plan_command(std::vector<Command>& commands) {
  commands.push_back({"plan",
                      "rank cluster options (GPU type x count x layout x policy) by time and cost; Pareto front",
                      run_plan_command});
}

}  // namespace edgc::cli
