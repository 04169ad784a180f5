// Benchmark and validation: one simulated iteration of every row of a validation suite (a folder of NN-*.json
// scenarios, one per published measurement: scenarios/validation/narayanan2021/, the default,
// scenarios/validation/korthikanti2022/, scenarios/validation/megatron-core-2024/ and scenarios/validation/moe-2024/;
// `--suite all` runs the four in turn into one JSON document), against the published iteration time.
//
//   edgc_bench_validation [--suite DIR|all] [--rows all|1,2,5|1.7B,39.1B] [--band LO,HI] [--json FILE]
//
// Per row: the scenario is read as `simulate` reads it (cluster, network, model, parallelism, compute), its layout
// validated and its peak memory per GPU checked against cluster.gpu.memory_GiB (sim/memory.hpp); then one
// uncompressed iteration runs in a forked child (SimGrid cannot reset its engine): sg4::Engine, Platform::build and
// simulate_iteration, timed. The published figure is the file's `published.iteration_time_s` (derived from the
// published TFLOP/s per GPU with the paper's FLOP count where only those are published; the file shows the
// derivation). Printed per row: published and predicted iteration time, the signed error (predicted − published)
// / published, where the predicted time went (simulate's breakdown: compute, TP collectives, bubble and pipeline
// transfers, the rest), published and predicted TFLOP/s per GPU (the same FLOPs over each time; "-" where the row
// publishes none), the peak memory of the neediest stage, and the wall time of the simulation; then the mean
// absolute and the largest absolute error over the rows run.
//
// --layers FILE compares per-layer figures instead (a suite's layer table, e.g.
// scenarios/validation/korthikanti2022/table4-layers.json): the file names a row scenario of its folder and lists
// experiments, each a list of `--set` overrides of that scenario with the published forward and backward time of
// one transformer layer; each experiment's layer runs through sim::layer_pass_times in a forked child (compute,
// exposed TP collectives, collectives beside GEMMs), without the memory check (a layer table times one layer).
// Printed per experiment: published and predicted forward, backward and combined ms with their errors, the
// combined time's overhead over the first experiment's (the paper's "Overhead" column), and the prediction's
// compute and TP parts; then the mean and largest absolute error over the forward and backward figures.
//
// --band LO,HI makes the benchmark check its own result: exit 1 when a row's predicted / published lies outside
// [LO, HI] (the CTest sanity check; not an accuracy assertion). A row that fails to simulate also gives exit 1;
// a malformed scenario or flag gives 2.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/scenario/cluster_config.hpp"
#include "edgc/scenario/config.hpp"
#include "edgc/scenario/model_config.hpp"
#include "edgc/sim/engine_info.hpp"
#include "edgc/sim/iteration.hpp"
#include "edgc/sim/layout.hpp"
#include "edgc/sim/memory.hpp"
#include "edgc/sim/platform.hpp"
#include "edgc/sim/whole_run.hpp"
#include "harness.hpp"

namespace sg4 = simgrid::s4u;
namespace fs = std::filesystem;
using edgc::bench::Clock;
using edgc::bench::seconds_since;

namespace {

struct Options {
  std::string suite = EDGC_VALIDATION_SUITE;
  std::string layers;
  std::string rows = "all";
  std::string band;
  std::string json_out = "edgc_bench_validation.json";
};

// One row as read in the parent.
struct Row {
  int number = 0;  // 1-based, the file's NN- prefix
  std::string file;
  std::string model;
  int gpus = 0, tp = 0, pp = 0, dp = 0, chunks = 1, microbatches = 0;
  double published_s = 0.0;
  double published_tflops = 0.0;
  std::string not_in_mean;  // published.not_in_mean: why the row is shown but left out of the mean and maximum
  double peak_GiB = 0.0;
  int peak_stage = 0;
  std::optional<double> capacity_GiB;
};

// What the child sends back.
struct Sample {
  double build_wall_s = 0.0;
  double simulate_wall_s = 0.0;
  double iteration_s = 0.0;
  double peak_rss_mib = 0.0;
  edgc::sim::IterationBreakdown parts;  // where the iteration's time went (sim::breakdown)
};

// Reads one row's settings the way `simulate` does (unknown keys in its sections are errors) and checks memory.
Row read_row(const fs::path& file, int number) {
  Row r;
  r.number = number;
  r.file = file.string();
  edgc::scenario::Scenario sc = edgc::scenario::load_scenario(r.file, {});
  const edgc::sim::ClusterSpec cluster = edgc::scenario::read_cluster(sc);
  edgc::scenario::read_network(sc);
  const edgc::scenario::ModelConfig mc = edgc::scenario::read_model_config(sc, cluster.gpu);
  const edgc::sim::ParallelSpec p = edgc::sim::validate(mc.model, mc.parallel, cluster, sc.where());
  r.model = mc.model.name;
  r.gpus = cluster.total_gpus();
  r.tp = p.tp;
  r.pp = p.pp;
  r.dp = p.dp;
  r.chunks = edgc::sim::model_chunks(p);
  r.microbatches = p.microbatches;
  const std::vector<edgc::sim::StageMemory> memory = edgc::sim::stage_memory(mc.model, p);
  for (const edgc::sim::StageMemory& m : memory)
    if (edgc::sim::to_GiB(m.total_bytes()) > r.peak_GiB) {
      r.peak_GiB = edgc::sim::to_GiB(m.total_bytes());
      r.peak_stage = m.stage;
    }
  r.capacity_GiB = edgc::scenario::read_gpu_memory_GiB(sc);
  if (r.capacity_GiB) edgc::sim::check_fits(memory, *r.capacity_GiB, sc.where());
  sc.reject_unknown({"cluster", "network", "compute"});
  const nlohmann::json pub = sc.json().value("published", nlohmann::json::object());
  if (!pub.is_object() || !pub.contains("iteration_time_s") || !pub["iteration_time_s"].is_number() ||
      !(pub["iteration_time_s"].get<double>() > 0.0))
    throw edgc::ConfigError(r.file, "published.iteration_time_s", "expected the published iteration time, s > 0");
  r.published_s = pub["iteration_time_s"].get<double>();
  if (pub.contains("not_in_mean")) {
    if (!pub["not_in_mean"].is_string() || pub["not_in_mean"].get<std::string>().empty())
      throw edgc::ConfigError(r.file, "published.not_in_mean",
                              "expected the reason the row is left out of the mean (what edgc does not model)");
    r.not_in_mean = pub["not_in_mean"].get<std::string>();
  }
  if (pub.contains("tflops_per_gpu")) {
    if (!pub["tflops_per_gpu"].is_number() || !(pub["tflops_per_gpu"].get<double>() > 0.0))
      throw edgc::ConfigError(r.file, "published.tflops_per_gpu", "expected the published TFLOP/s per GPU, > 0");
    r.published_tflops = pub["tflops_per_gpu"].get<double>();
  }
  return r;
}

// Runs in the child: one uncompressed iteration.
Sample measure(const std::string& file) {
  edgc::scenario::Scenario sc = edgc::scenario::load_scenario(file, {});
  const edgc::sim::ClusterSpec cluster = edgc::scenario::read_cluster(sc);
  const edgc::sim::NetworkProfile profile = edgc::scenario::read_network(sc);
  const edgc::scenario::ModelConfig mc = edgc::scenario::read_model_config(sc, cluster.gpu);
  std::string name = "edgc_bench_validation";
  std::vector<char*> argv = {name.data(), nullptr};
  int argc = 1;
  Sample s;
  const auto t0 = Clock::now();
  sg4::Engine engine(&argc, argv.data());
  edgc::sim::IterationOptions options;
  options.where = file;
  const edgc::sim::Platform platform = edgc::sim::build_folding_platform(
      engine, cluster, profile, edgc::sim::validate(mc.model, mc.parallel, cluster, file), options);
  s.build_wall_s = seconds_since(t0);
  const auto t1 = Clock::now();
  const edgc::sim::IterationResult r = edgc::sim::simulate_iteration(
      engine, platform, mc.model, mc.parallel, mc.cost, edgc::sim::uncompressed_plan(mc.parallel.pp), options);
  s.simulate_wall_s = seconds_since(t1);
  s.iteration_s = r.iteration_s;
  s.parts = edgc::sim::breakdown(r);
  s.peak_rss_mib = edgc::bench::process_usage().peak_rss_mib;
  return s;
}

// The suite's row files (NN-*.json), sorted, filtered by --rows (numbers or model sizes such as 39.1B).
std::vector<Row> select_rows(const Options& opt) {
  std::vector<fs::path> files;
  if (!fs::is_directory(opt.suite)) throw edgc::UsageError("--suite", "'" + opt.suite + "' is not a directory");
  for (const auto& e : fs::directory_iterator(opt.suite)) {
    const std::string n = e.path().filename().string();
    if (n.size() > 8 && std::isdigit(static_cast<unsigned char>(n[0])) &&
        std::isdigit(static_cast<unsigned char>(n[1])) && n[2] == '-' && e.path().extension() == ".json")
      files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  const std::vector<std::string> wanted = edgc::bench::split(opt.rows, ',');
  const bool all = wanted.size() == 1 && wanted[0] == "all";
  std::vector<Row> out;
  std::vector<bool> used(wanted.size(), false);
  for (const fs::path& f : files) {
    const int number = std::stoi(f.filename().string().substr(0, 2));
    Row r = read_row(f, number);
    bool pick = all;
    for (std::size_t i = 0; i < wanted.size(); ++i)
      if (wanted[i] == std::to_string(number) || r.model == "GPT-" + wanted[i] || r.model == wanted[i])
        pick = used[i] = true;
    if (pick) out.push_back(r);
  }
  for (std::size_t i = 0; i < wanted.size() && !all; ++i)
    if (!used[i]) throw edgc::UsageError("--rows", "'" + wanted[i] + "' names no row of " + opt.suite);
  if (out.empty()) throw edgc::UsageError("--rows", "no row selected in " + opt.suite);
  return out;
}

// --band LO,HI; [0, +inf) when not given.
struct Band {
  bool given = false;
  double lo = 0.0;
  double hi = HUGE_VAL;
  bool contains(double ratio) const { return ratio >= lo && ratio <= hi; }
};

Band parse_band(const std::string& text) {
  if (text.empty()) return {};
  const std::vector<std::string> parts = edgc::bench::split(text, ',');
  try {
    if (parts.size() == 2) {
      const double lo = std::stod(parts[0]), hi = std::stod(parts[1]);
      if (lo > 0.0 && hi >= lo) return {true, lo, hi};
    }
  } catch (const std::exception&) {
  }
  throw edgc::UsageError("--band", "expected LO,HI with 0 < LO <= HI, got '" + text + "'");
}

// The suite's title: the first "# " heading of its README.md, else the folder's name.
std::string suite_title(const std::string& suite) {
  std::ifstream in(fs::path(suite) / "README.md");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("# ", 0) == 0) return line.substr(2);
  return fs::path(suite).filename().string();
}

void print_header(const Options& opt, const std::vector<Row>& rows) {
  std::printf("edgc_bench_validation: %s (SimGrid %s), suite %s, %zu row(s)\n", suite_title(opt.suite).c_str(),
              edgc::sim::simgrid_version().c_str(), opt.suite.c_str(), rows.size());
  std::printf("one uncompressed iteration per row; error = (predicted - published) / published\n\n");
  std::printf("  %3s %-15s %5s %3s %3s %3s %2s %4s %9s %9s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n", "row", "model",
              "GPUs", "tp", "pp", "dp", "v", "m", "pub_s", "pred_s", "error", "comp_s", "tp_s", "bub_s", "rest_s",
              "pub_TF", "pred_TF", "mem_GiB", "wall_s");
}

// A TFLOP/s figure, null where the row publishes none (0).
nlohmann::ordered_json tflops(double value) { return value > 0.0 ? nlohmann::ordered_json(value) : nullptr; }

// The band as the JSON records it: [LO, HI], or null when none was given.
nlohmann::ordered_json band_json(const Band& band) {
  return band.given ? nlohmann::ordered_json({band.lo, band.hi}) : nlohmann::ordered_json();
}

// "%8.1f", or a dash for a row without published TFLOP/s.
std::string tflops_cell(double value) {
  char cell[32];
  if (value > 0.0)
    std::snprintf(cell, sizeof cell, "%8.1f", value);
  else
    std::snprintf(cell, sizeof cell, "%8s", "-");
  return cell;
}

nlohmann::ordered_json row_json(const Row& r, const Sample& s) {
  const double error = (s.iteration_s - r.published_s) / r.published_s;
  return {{"row", r.number},
          {"file", fs::path(r.file).filename().string()},
          {"model", r.model},
          {"gpus", r.gpus},
          {"tp", r.tp},
          {"pp", r.pp},
          {"dp", r.dp},
          {"virtual_stages", r.chunks},
          {"microbatches", r.microbatches},
          {"published_iteration_s", r.published_s},
          {"predicted_iteration_s", s.iteration_s},
          {"error", error},
          {"ratio", s.iteration_s / r.published_s},
          {"in_mean", r.not_in_mean.empty()},
          {"not_in_mean", r.not_in_mean.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(r.not_in_mean)},
          {"predicted_breakdown_s",
           {{"compute", s.parts.compute_s},
            {"tp_comm", s.parts.tp_comm_s},
            {"bubble_and_pp", s.parts.bubble_s},
            {"all_to_all", s.parts.all_to_all_s},
            {"exposed_dp_comm", s.parts.exposed_dp_comm_s},
            {"embedding_sync", s.parts.embedding_sync_s},
            {"optimizer", s.parts.optimizer_s}}},
          {"published_tflops_per_gpu", tflops(r.published_tflops)},
          {"predicted_tflops_per_gpu", tflops(r.published_tflops * r.published_s / s.iteration_s)},
          {"peak_memory_GiB", r.peak_GiB},
          {"peak_memory_stage", r.peak_stage},
          {"memory_capacity_GiB", r.capacity_GiB ? nlohmann::ordered_json(*r.capacity_GiB) : nlohmann::ordered_json()},
          {"build_wall_s", s.build_wall_s},
          {"simulate_wall_s", s.simulate_wall_s},
          {"wall_s", s.build_wall_s + s.simulate_wall_s},
          {"peak_rss_MiB", s.peak_rss_mib}};
}

// One experiment of a layer table.
struct LayerExperiment {
  std::string name;
  std::vector<std::string> set;
  double forward_ms = 0.0;
  double backward_ms = 0.0;
};

struct LayerTable {
  std::string file;
  std::string scenario;  // the row scenario the experiments modify
  std::string source;
  std::vector<LayerExperiment> experiments;
};

// e[key], a published time of one layer in ms (> 0); ConfigError naming `at`.`key` otherwise.
double positive_ms(const nlohmann::json& e, const char* key, const std::string& file, const std::string& at) {
  if (!e.contains(key) || !e[key].is_number() || !(e[key].get<double>() > 0.0))
    throw edgc::ConfigError(file, at + "." + key, "expected the published time of one layer, ms > 0");
  return e[key].get<double>();
}

LayerTable read_layer_table(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw edgc::ConfigError(file, "", "cannot open the layer table");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw edgc::ConfigError(file, "", std::string("not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) throw edgc::ConfigError(file, "", "expected a JSON object");
  LayerTable t;
  t.file = file;
  if (!doc.contains("scenario") || !doc["scenario"].is_string())
    throw edgc::ConfigError(file, "scenario", "expected the row scenario the experiments modify (a file name)");
  t.scenario = (fs::path(file).parent_path() / doc["scenario"].get<std::string>()).string();
  if (!fs::is_regular_file(t.scenario)) throw edgc::ConfigError(file, "scenario", "'" + t.scenario + "' is not a file");
  if (!doc.contains("source") || !doc["source"].is_string())
    throw edgc::ConfigError(file, "source", "expected the published table's source");
  t.source = doc["source"].get<std::string>();
  if (!doc.contains("experiments") || !doc["experiments"].is_array() || doc["experiments"].empty())
    throw edgc::ConfigError(file, "experiments", "expected a non-empty list of experiments");
  for (std::size_t i = 0; i < doc["experiments"].size(); ++i) {
    const nlohmann::json& e = doc["experiments"][i];
    const std::string at = "experiments[" + std::to_string(i) + "]";
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string())
      throw edgc::ConfigError(file, at + ".name", "expected the experiment's name");
    LayerExperiment x;
    x.name = e["name"].get<std::string>();
    if (!e.contains("set") || !e["set"].is_array())
      throw edgc::ConfigError(file, at + ".set", "expected a list of KEY=VALUE overrides of the scenario");
    for (const nlohmann::json& kv : e["set"]) {
      if (!kv.is_string() || kv.get<std::string>().find('=') == std::string::npos)
        throw edgc::ConfigError(file, at + ".set", "expected KEY=VALUE strings");
      x.set.push_back(kv.get<std::string>());
    }
    x.forward_ms = positive_ms(e, "forward_ms", file, at);
    x.backward_ms = positive_ms(e, "backward_ms", file, at);
    t.experiments.push_back(x);
  }
  return t;
}

struct LayerSetup {
  edgc::sim::ClusterSpec cluster;
  edgc::sim::NetworkProfile profile;
  edgc::scenario::ModelConfig mc;
};

// The experiment's scenario, read as `simulate` reads it; its layout validated (ConfigError naming the file).
LayerSetup layer_setup(const LayerTable& t, const LayerExperiment& x) {
  edgc::scenario::Scenario sc = edgc::scenario::load_scenario(t.scenario, x.set);
  LayerSetup s{edgc::scenario::read_cluster(sc), edgc::scenario::read_network(sc), {}};
  s.mc = edgc::scenario::read_model_config(sc, s.cluster.gpu);
  s.mc.parallel = edgc::sim::validate(s.mc.model, s.mc.parallel, s.cluster, sc.where());
  sc.reject_unknown({"cluster", "network", "compute"});
  return s;
}

int run_layers(const Options& opt, const Band& band) {
  const LayerTable t = read_layer_table(opt.layers);
  for (const LayerExperiment& x : t.experiments) (void)layer_setup(t, x);  // every input checked before any output
  std::printf("edgc_bench_validation: layer table %s (SimGrid %s)\n", opt.layers.c_str(),
              edgc::sim::simgrid_version().c_str());
  std::printf(
      "source: %s\nscenario: %s; one transformer layer, one micro-batch; error = (predicted - published) / "
      "published\n\n",
      t.source.c_str(), t.scenario.c_str());
  std::printf("  %-26s %7s %7s %7s  %7s %7s %7s  %7s %7s %7s  %7s %7s  %7s %7s %7s %7s\n", "experiment", "pub_F",
              "pred_F", "err_F", "pub_B", "pred_B", "err_B", "pub_FB", "pred_FB", "err_FB", "pub_ovh", "pred_ovh",
              "F_comp", "F_tp", "B_comp", "B_tp");
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  double sum_abs = 0.0, max_abs = 0.0, base_pub = 0.0, base_pred = 0.0;
  int figures = 0;
  bool ok = true;
  for (std::size_t i = 0; i < t.experiments.size(); ++i) {
    const LayerExperiment& x = t.experiments[i];
    const auto p = edgc::bench::from_bytes<edgc::sim::LayerPassTimes>(edgc::bench::run_in_child(x.name, [&] {
      const LayerSetup s = layer_setup(t, x);
      std::string name = "edgc_bench_validation";
      std::vector<char*> argv = {name.data(), nullptr};
      int argc = 1;
      sg4::Engine engine(&argc, argv.data());
      const edgc::sim::Platform platform = edgc::sim::Platform::build(engine, s.cluster, s.profile);
      return edgc::bench::to_bytes(
          edgc::sim::layer_pass_times(platform, s.mc.model, s.mc.parallel, s.mc.cost, t.scenario));
    }));
    const double f = 1e3 * p.forward_s(), b = 1e3 * p.backward_s();
    const double pub_fb = x.forward_ms + x.backward_ms, pred_fb = f + b;
    if (i == 0) {
      base_pub = pub_fb;
      base_pred = pred_fb;
    }
    const double ef = (f - x.forward_ms) / x.forward_ms, eb = (b - x.backward_ms) / x.backward_ms;
    const double efb = (pred_fb - pub_fb) / pub_fb;
    for (const double e : {ef, eb}) {
      sum_abs += std::abs(e);
      max_abs = std::max(max_abs, std::abs(e));
      ++figures;
    }
    const bool inside = band.contains(f / x.forward_ms) && band.contains(b / x.backward_ms);
    ok = ok && inside;
    const double ovh_pub = pub_fb / base_pub - 1.0, ovh_pred = pred_fb / base_pred - 1.0;
    std::printf(
        "  %-26s %7.2f %7.2f %+6.1f%%  %7.2f %7.2f %+6.1f%%  %7.2f %7.2f %+6.1f%%  %+6.1f%% %+6.1f%%  %7.2f "
        "%7.2f %7.2f %7.2f%s\n",
        x.name.c_str(), x.forward_ms, f, 100 * ef, x.backward_ms, b, 100 * eb, pub_fb, pred_fb, 100 * efb,
        100 * ovh_pub, 100 * ovh_pred, 1e3 * p.forward_compute_s, 1e3 * p.forward_tp_s, 1e3 * p.backward_compute_s,
        1e3 * p.backward_tp_s, inside ? "" : "  OUTSIDE THE BAND");
    rows.push_back({{"experiment", x.name},
                    {"set", x.set},
                    {"published_ms", {{"forward", x.forward_ms}, {"backward", x.backward_ms}, {"combined", pub_fb}}},
                    {"predicted_ms", {{"forward", f}, {"backward", b}, {"combined", pred_fb}}},
                    {"error", {{"forward", ef}, {"backward", eb}, {"combined", efb}}},
                    {"overhead", {{"published", ovh_pub}, {"predicted", ovh_pred}}},
                    {"predicted_parts_ms",
                     {{"forward_compute", 1e3 * p.forward_compute_s},
                      {"forward_tp", 1e3 * p.forward_tp_s},
                      {"backward_compute", 1e3 * p.backward_compute_s},
                      {"backward_tp", 1e3 * p.backward_tp_s},
                      {"backward_tp_beside_gemms", 1e3 * p.backward_overlap_s}}}});
  }
  const double mean_abs = sum_abs / figures;
  std::printf("\n  %zu experiment(s): mean |error| %.1f %%, max |error| %.1f %% over the forward and backward times\n",
              t.experiments.size(), 100 * mean_abs, 100 * max_abs);
  std::printf("  overhead = combined time / the first experiment's - 1\n");
  if (band.given)
    std::printf("  band check [%g, %g] on predicted / published: %s\n", band.lo, band.hi, ok ? "pass" : "FAIL");
  edgc::bench::write_json(opt.json_out, {{"schema", "edgc.bench.validation_layers/1"},
                                         {"table", opt.layers},
                                         {"scenario", t.scenario},
                                         {"source", t.source},
                                         {"simgrid", edgc::sim::simgrid_version()},
                                         {"error_definition", "(predicted - published) / published time of one layer"},
                                         {"experiments", rows},
                                         {"mean_abs_error", mean_abs},
                                         {"max_abs_error", max_abs},
                                         {"band", band_json(band)},
                                         {"pass", ok}});
  return ok ? 0 : 1;
}

// One suite: every selected row simulated in a forked child, printed, and returned as the suite's JSON document;
// `all_ok` turns false when a row fails or falls outside the band.
nlohmann::ordered_json run_suite(const Options& opt, const Band& band, bool& all_ok) {
  const std::vector<Row> rows = select_rows(opt);
  print_header(opt, rows);
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  double sum_abs = 0.0, sum_signed = 0.0, max_abs = 0.0, wall = 0.0;
  int done = 0, counted = 0, max_row = 0;
  std::vector<std::string> left_out;
  std::vector<std::string> a2a_notes;  // mixture-of-experts rows: their token all-to-alls, inside bub_s
  bool ok = true;
  for (const Row& r : rows) {
    Sample s;
    try {
      s = edgc::bench::from_bytes<Sample>(
          edgc::bench::run_in_child(r.file, [&] { return edgc::bench::to_bytes(measure(r.file)); }));
    } catch (const std::exception& e) {
      std::printf("  %3d %-15s FAILED: %s\n", r.number, r.model.c_str(), e.what());
      out.push_back({{"row", r.number}, {"model", r.model}, {"error_message", e.what()}});
      ok = false;
      continue;
    }
    const nlohmann::ordered_json j = row_json(r, s);
    const double error = j["error"].get<double>();
    const bool inside = band.contains(j["ratio"].get<double>());
    ok = ok && inside;
    const edgc::sim::IterationBreakdown& b = s.parts;
    std::printf(
        "  %3d %-15s %5d %3d %3d %3d %2d %4d %9.3f %9.3f %+7.1f%%%s%8.3f %8.3f %8.3f %8.3f %s %s %8.1f %8.2f%s\n",
        r.number, r.model.c_str(), r.gpus, r.tp, r.pp, r.dp, r.chunks, r.microbatches, r.published_s, s.iteration_s,
        100.0 * error, r.not_in_mean.empty() ? " " : "*", b.compute_s, b.tp_comm_s, b.bubble_s + b.all_to_all_s,
        b.exposed_dp_comm_s + b.embedding_sync_s + b.optimizer_s, tflops_cell(r.published_tflops).c_str(),
        tflops_cell(r.published_tflops * r.published_s / s.iteration_s).c_str(), r.peak_GiB, j["wall_s"].get<double>(),
        inside ? "" : "  OUTSIDE THE BAND");
    if (b.all_to_all_s > 0)
      a2a_notes.push_back("row " + std::to_string(r.number) + ": " + std::to_string(b.all_to_all_s));
    std::fflush(stdout);
    wall += j["wall_s"].get<double>();
    ++done;
    if (!r.not_in_mean.empty()) {
      left_out.push_back("row " + std::to_string(r.number) + ": " + r.not_in_mean);
      out.push_back(j);
      continue;
    }
    ++counted;
    sum_abs += std::abs(error);
    sum_signed += error;
    if (std::abs(error) > max_abs) {
      max_abs = std::abs(error);
      max_row = r.number;
    }
    out.push_back(j);
  }
  const double mean_abs = counted > 0 ? sum_abs / counted : 0.0;
  const double mean_signed = counted > 0 ? sum_signed / counted : 0.0;
  std::printf(
      "\n  %d of %d row(s) in the mean: mean |error| %.1f %%, mean error %+.1f %% (%s), max |error| %.1f %% "
      "(row %d); simulation wall %.1f s\n",
      counted, done, 100.0 * mean_abs, 100.0 * mean_signed, mean_signed < 0 ? "under-predicts" : "over-predicts",
      100.0 * max_abs, max_row, wall);
  for (const std::string& why : left_out) std::printf("  * not in the mean, %s\n", why.c_str());
  for (const std::string& a2a : a2a_notes) std::printf("  bub_s includes the token all-to-alls (s), %s\n", a2a.c_str());
  if (band.given)
    std::printf("  band check [%g, %g] on predicted / published: %s\n", band.lo, band.hi, ok ? "pass" : "FAIL");
  all_ok = all_ok && ok;
  return nlohmann::ordered_json{{"schema", "edgc.bench.validation/1"},
                                {"suite", opt.suite},
                                {"simgrid", edgc::sim::simgrid_version()},
                                {"error_definition", "(predicted - published) / published iteration time"},
                                {"rows", out},
                                {"rows_in_mean", counted},
                                {"mean_abs_error", mean_abs},
                                {"mean_error", mean_signed},
                                {"max_abs_error", max_abs},
                                {"max_abs_error_row", max_row},
                                {"simulation_wall_s", wall},
                                {"band", band_json(band)},
                                {"pass", ok}};
}

int run(int argc, char** argv) {
  Options opt;
  edgc::bench::Args args("[--suite DIR] [--rows all|1,2,5|1.7B,39.1B] [--layers FILE] [--band LO,HI] [--json FILE]");
  args.text("--suite", opt.suite)
      .text("--rows", opt.rows)
      .text("--layers", opt.layers)
      .text("--band", opt.band)
      .json_path("--json", opt.json_out);
  if (const auto code = args.parse(argc, argv)) return *code;
  const Band band = parse_band(opt.band);
  if (!opt.layers.empty()) {
    if (opt.rows != "all" || opt.suite != EDGC_VALIDATION_SUITE)
      throw edgc::UsageError("--layers", "compares one layer table; --suite and --rows select suite rows instead");
    return run_layers(opt, band);
  }
  if (opt.suite != "all") {
    bool ok = true;
    edgc::bench::write_json(opt.json_out, run_suite(opt, band, ok));
    return ok ? 0 : 1;
  }
  // Every bundled suite, one after the other, in one JSON document.
  if (opt.rows != "all") throw edgc::UsageError("--rows", "selects rows of one suite; --suite all runs every row");
  bool ok = true;
  nlohmann::ordered_json suites = nlohmann::ordered_json::array();
  const fs::path root = fs::path(EDGC_VALIDATION_SUITE).parent_path();
  for (const char* name : {"narayanan2021", "korthikanti2022", "megatron-core-2024", "moe-2024"}) {
    Options one = opt;
    one.suite = (root / name).string();
    suites.push_back(run_suite(one, band, ok));
    std::printf("\n");
  }
  edgc::bench::write_json(opt.json_out,
                          {{"schema", "edgc.bench.validation_suites/1"}, {"suites", suites}, {"pass", ok}});
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return edgc::bench::run_main("edgc_bench_validation", [&] { return run(argc, argv); });
}
