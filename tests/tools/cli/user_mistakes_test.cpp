// Issue 20's user mistakes through the edgc binary: each is exit 2 with one line on stderr naming the file or option
// and the key, nothing on stdout, no output left behind, and never the "internal error" that is kept for bugs. Also
// the degenerate traces that run but warn, and the up-front limits of replay.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.hpp"
#include "edgc/sim/engine_info.hpp"

namespace {

namespace fs = std::filesystem;
using edgc::cli::test::CliRun;
using edgc::cli::test::edgc;
using edgc::traces::test::read_file;
using edgc::traces::test::TempDir;
using edgc::traces::test::write_file;
using nlohmann::json;

const std::string kSrc = EDGC_SOURCE_DIR;
const std::string kSmall = kSrc + "/tests/data/simulate/small.json";
const std::string kGrid = kSrc + "/tests/data/sweep/small-grid.json";
const std::string kTrace = kSrc + "/traces/bundled/tinygpt-licenses";
const std::string kReplay = kSrc + "/scenarios/replay/tinygpt-licenses.json";
const std::string kCluster = kSrc + "/scenarios/clusters/dgx-h100.json";
const std::string kLog = kSrc + "/tests/data/nccl/h100-1node-8gpu.log";

int count_lines(const std::string& s) {
  int n = 0;
  for (const char c : s) n += c == '\n';
  return n;
}

void write_json(const fs::path& p, const json& j) { write_file(p, j.dump(1)); }

// The files the mistakes need, written into `tmp`: bad cluster and include files, sweep and plan specs, a live
// measurements file whose number overflows a double.
void write_fixtures(const TempDir& tmp) {
  fs::create_directories(tmp / "adir");
  const json small = json::parse(read_file(kSmall));
  json cluster = json::parse(read_file(kCluster));
  json no_price = cluster;
  no_price["cluster"].erase("price_per_gpu_hour_usd");
  write_json(tmp / "no-price.json", no_price);
  json no_latency = cluster;
  no_latency["cluster"]["inter_node"].erase("latency_us");
  write_json(tmp / "no-latency.json", no_latency);
  json include_dir = small;
  include_dir["cluster"] = (tmp / "adir").string();
  write_json(tmp / "include-dir.json", include_dir);
  write_json(tmp / "cycle-a.json", {{"cluster", {{"include", "cycle-b.json"}}}});
  write_json(tmp / "cycle-b.json", {{"cluster", {{"include", "cycle-a.json"}}}});
  json cycle = small;
  cycle["cluster"] = "cycle-a.json";
  write_json(tmp / "cycle.json", cycle);
  json misspelt = small;
  misspelt["compresion"] = {{"window", 20}};
  write_json(tmp / "misspelt-section.json", misspelt);
  json replay = json::parse(read_file(kReplay));
  replay["trace"]["path"] = kTrace;
  replay["replya"] = {{"world_size", 4}};
  write_json(tmp / "replay-misspelt-section.json", replay);
  const auto sweep = [&](const std::string& name, const json& axes, const json& set = json::object()) {
    json spec = {{"base", kSmall}, {"axes", axes}};
    if (!set.empty()) spec["set"] = set;
    write_json(tmp / name, spec);
  };
  write_json(tmp / "sweep-misspelt-base.json",
             {{"base", (tmp / "misspelt-section.json").string()},
              {"axes", json::array({{{"key", "compression.window"}, {"values", {10, 20}}}})}});
  sweep("typo-axis.json", json::array({{{"key", "compression.windw"}, {"values", {10, 20, 30}}}}));
  sweep("typo-section.json", json::array({{{"key", "compresion.window"}, {"values", {10, 20}}}}));
  sweep("typo-bundle.json",
        json::array({{{"key", "size"}, {"values", json::array({{{"cluster.nodes", 2}}, {{"cluster.nodez", 4}}})}}}));
  sweep("typo-set.json", json::array({{{"key", "compression.window"}, {"values", {10, 20}}}}),
        {{"run.iteratons", 100}});
  json grid = {{"base", kSmall}, {"axes", json::array()}};
  for (const char* key : {"compression.window", "compression.r_min", "compression.r_max", "compression.step",
                          "compression.quantum", "compression.block_bytes", "compression.seed"})
    grid["axes"].push_back({{"key", key}, {"values", {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}});
  write_json(tmp / "huge-grid.json", grid);  // 10^7 points
  json plan = json::parse(read_file(kSrc + "/tests/data/plan/small-plan.json"));
  for (json& c : plan["clusters"]) {
    if (c.is_string())
      c = kSrc + "/tests/data/plan/" + c.get<std::string>();
    else
      c["cluster"] = kSrc + "/tests/data/plan/" + c["cluster"].get<std::string>();
  }
  plan["base"] = kSmall;
  json overflow = plan;
  overflow["layouts"] = json::array({{{"tp", 1000000}, {"pp", 1000000}}});  // tp·pp = 10^12 overflows an int
  write_json(tmp / "plan-overflow.json", overflow);
  json tokens = plan;
  tokens["target"] = {{"tokens", 1e300}};
  write_json(tmp / "plan-tokens.json", tokens);
  json typo = plan;
  typo["set"] = {{"model.layerz", 4}};
  write_json(tmp / "plan-typo.json", typo);
  json budget = plan;
  budget["max_error"] = 0;
  write_json(tmp / "plan-budget.json", budget);
  json budget_grid = json::parse(read_file(kGrid));
  budget_grid["base"] = kSrc + "/tests/data/simulate/small.json";
  budget_grid["max_error"] = -0.5;
  write_json(tmp / "grid-budget.json", budget_grid);
  fs::create_directories(tmp / "live");
  std::string measured = read_file(kSrc + "/tests/data/live/measurements.json");
  const std::size_t at = measured.find("\"time_s\": ");
  ASSERT_NE(at, std::string::npos);
  const std::size_t end = measured.find_first_of(",\n}", at + 10);
  measured.replace(at + 10, end - at - 10, "1e999");
  write_file(tmp / "live" / "measurements.json", measured);
  fs::copy_file(kSrc + "/tests/data/live/cluster.json", tmp / "live" / "cluster.json");
}

struct Case {
  std::string issue;     // the case as issue 20 lists it (or "added")
  std::string args;      // after `edgc`
  std::string expected;  // in the one line on stderr
};

// Every case of issue 20 that is a user mistake (the crash, the runaways, the internal errors, the silently wrong
// values, the checks made too late), plus the neighbours found while fixing them.
std::vector<Case> cases(const TempDir& tmp) {
  const std::string out = " --out " + (tmp / "out").string();
  const std::string t = tmp.path().string() + "/";
  const std::string sim = "simulate --scenario " + kSmall;
  const std::string replay = "replay --scenario " + kReplay;
  return {
      {"crash: replay.world_size=100000", replay + " --set replay.world_size=100000" + out,
       "replay.world_size: 100000 emulated data-parallel ranks is beyond the supported maximum 256"},
      {"runaway: replay.world_size=1000", replay + " --set replay.world_size=1000" + out, "set it to at most 256"},
      {"added: replay.world_size=0", replay + " --set replay.world_size=0" + out, "replay.world_size: must be >= 1"},
      {"added: replay.bins_per_sigma=1e9", replay + " --set replay.bins_per_sigma=1e9" + out,
       "replay.bins_per_sigma: must be in (0, 4096]"},
      {"runaway: run.iterations=1e15", sim + " --set run.iterations=1000000000000000" + out,
       "run.iterations: 1000000000000000 iterations in windows of"},
      {"runaway: 10^7-point grid", "sweep --spec " + t + "huge-grid.json" + out,
       "has 10000000 points, more than 100000: raise --max-points"},
      {"added: --max-points", "sweep --spec " + kGrid + out + " --max-points 3",
       "has 12 points, more than 3: raise --max-points"},
      {"internal error: scenario is a directory", "simulate --scenario " + t + "adir" + out,
       "is a directory, not a scenario file"},
      {"internal error: include is a directory", "simulate --scenario " + t + "include-dir.json" + out,
       "adir: is a directory, not a scenario file"},
      {"internal error: --out /proc/x", sim + " --out /proc/edgc-x",
       "/proc/edgc-x: cannot create the output directory"},
      {"internal error: --timeline unwritable", sim + out + " --timeline /proc/edgc-x/t.json",
       "/proc/edgc-x/t.json: cannot be written (--timeline)"},
      {"added: --timeline a directory", sim + out + " --timeline " + t + "adir", "is a directory (--timeline"},
      {"added: network.algorithm misspelt", sim + " --set network.algorithm=trees" + out,
       "network.algorithm: expected \"auto\", \"ring\" or \"tree\", got \"trees\""},
      {"added: calibrate --algorithm misspelt",
       "calibrate --nccl-tests " + kLog + " --cluster " + kCluster + " --algorithm nvls --out " + t + "c.json",
       "--algorithm: expected auto, ring or tree, got 'nvls'"},
      {"added: calibrate --ranks-per-node above the cluster's",
       "calibrate --nccl-tests " + kLog + " --cluster " + kCluster + " --ranks-per-node 16 --out " + t + "c.json",
       "--ranks-per-node: must be at most the cluster's 8 GPUs per node, got 16"},
      {"internal error: calibrate --out a directory",
       "calibrate --nccl-tests " + kLog + " --cluster " + kCluster + " --out " + t + "adir", "is a directory (--out"},
      {"internal error: report --out unwritable",
       "report " + kSrc + "/tests/data/report/simulate --out /proc/edgc-x/r.html",
       "/proc/edgc-x/r.html: cannot create its folder (--out)"},
      {"internal error: model.hidden=2e9", sim + " --set model.hidden=2000000000" + out,
       "model.hidden: 2000000000 is beyond the supported maximum"},
      {"added: model.hidden=2e9 as a float", sim + " --set model.hidden=2e9" + out,
       "model.hidden: expected an integer"},
      {"internal error: measurements overflow a double", "validate --measured " + t + "live",
       "measurements.json: calibration.rows[0].time_s: expected a finite number"},
      {"silently wrong: cluster.nodes=1e9", sim + " --set cluster.nodes=1000000000" + out,
       "cluster.nodes: 1000000000 nodes is beyond the supported maximum 1048576"},
      {"added: nodes x gpus_per_node overflow", sim + " --set cluster.nodes=300000" + out,
       "cluster.nodes: 300000 nodes x 4 GPUs = 1200000 GPUs is beyond the supported maximum 1048576"},
      {"added: cluster.gpus_per_node huge", sim + " --set cluster.gpus_per_node=2000000000" + out,
       "cluster.gpus_per_node: 2000000000 GPUs per node is beyond the supported maximum"},
      {"added: collective on a 10^9-node cluster",
       "collective --cluster " + kCluster + " --set cluster.nodes=1000000000 --op all_reduce --ranks 8",
       "dgx-h100.json: cluster.nodes: 1000000000 nodes is beyond"},
      {"added: tp·pp·dp overflow", sim + " --set parallelism.tp=2000000000 --set parallelism.pp=2000000000" + out,
       "parallelism.tp: 2000000000 GPUs is beyond the supported maximum 1048576"},
      {"added: parallelism.dp huge", sim + " --set parallelism.dp=2000000" + out,
       "parallelism.dp: 2000000 replicas is beyond the supported maximum"},
      {"added: parallelism.virtual_stages huge", sim + " --set parallelism.virtual_stages=100000" + out,
       "parallelism.virtual_stages: 100000 model chunks per GPU is beyond the supported maximum 65536"},
      {"added: parallelism.microbatches huge", sim + " --set parallelism.microbatches=100000" + out,
       "parallelism.microbatches: 100000 micro-batches is beyond the supported maximum 65536"},
      {"added: derived micro-batches huge", sim + " --set model.global_batch_size=1000000000" + out,
       "model.global_batch_size: 1000000000 sequences / (micro_batch 2 x dp 2) = 250000000 micro-batches"},
      {"added: plan tp·pp overflow", "plan --spec " + t + "plan-overflow.json" + out,
       "gpus: no cluster x gpus x layout combination can be laid out"},
      {"added: plan token target beyond any run", "plan --spec " + t + "plan-tokens.json" + out,
       "target.tokens: needs more than 1e15 iterations"},
      {"silently wrong: model.layers=1e9", sim + " --set model.layers=1000000000" + out,
       "model.layers: 1000000000 is beyond the supported maximum"},
      {"silently wrong: compression.policy= (empty)", sim + " --set compression.policy=" + out,
       "compression.policy: unknown policy ''"},
      {"silently wrong: --policies ''", sim + " --policies ''" + out, "--policies: is empty"},
      {"added: --policies with an empty name", sim + " --policies none,,edgc" + out,
       "--policies: 'none,,edgc' has an empty policy name"},
      {"silently wrong: cluster without a price", sim + " --set cluster=" + t + "no-price.json" + out,
       "cluster.price_per_gpu_hour_usd: missing"},
      {"silently wrong: cluster without a latency", sim + " --set cluster=" + t + "no-latency.json" + out,
       "cluster.inter_node.latency_us: missing"},
      {"silently wrong: nested includes (a cycle)", "simulate --scenario " + t + "cycle.json" + out,
       "cluster.include: includes form a cycle"},
      {"silently wrong: a misspelt section is ignored", "simulate --scenario " + t + "misspelt-section.json" + out,
       "misspelt-section.json: compresion: unknown section (this command reads cluster, network, model"},
      {"added: a misspelt section of a replay scenario",
       "replay --scenario " + t + "replay-misspelt-section.json" + out,
       "replay-misspelt-section.json: replya: unknown section (this command reads compression, replay, trace, live"},
      {"added: a misspelt section of a sweep's base", "sweep --spec " + t + "sweep-misspelt-base.json" + out,
       "misspelt-section.json: compresion: unknown section"},
      {"silently wrong: trace inspect --rows -1", "trace inspect " + kTrace + " --rows -1", "--rows: must be >= 0"},
      {"too late: sweep --best-by nonsense", "sweep --spec " + kGrid + out + " --best-by nonsense",
       "--best-by: 'nonsense' is not a run figure"},
      {"added: --best-by a CI of a one-repeat sweep", "sweep --spec " + kGrid + out + " --best-by training_time_s_ci95",
       "'training_time_s_ci95' is not a run figure of this sweep"},
      {"too late: misspelt axis key", "sweep --spec " + t + "typo-axis.json" + out,
       "typo-axis.json: axes[0].key: 'compression.windw' is not a scenario key simulate reads"},
      {"added: axis key in no section simulate reads", "sweep --spec " + t + "typo-section.json" + out,
       "typo-section.json: axes[0].key: 'compresion.window': simulate reads no section 'compresion'"},
      {"added: misspelt key in one bundle value", "sweep --spec " + t + "typo-bundle.json" + out,
       "typo-bundle.json: axes[0].values[1].cluster.nodez: 'cluster.nodez' is not a scenario key"},
      {"added: misspelt key in the spec's set", "sweep --spec " + t + "typo-set.json" + out,
       "typo-set.json: set.run.iteratons: 'run.iteratons' is not a scenario key"},
      {"added: misspelt --set on a sweep", "sweep --spec " + kGrid + " --set compression.alfa=0.1" + out,
       "small-grid.json: --set: 'compression.alfa' is not a scenario key"},
      {"added: fidelity.max_error=0", sim + " --set fidelity.max_error=0" + out,
       "fidelity.max_error: must be > 0 (a relative error of the averaged gradient, e.g. 0.2), got 0"},
      {"added: fidelity.backend unknown", sim + " --set fidelity.backend=tpu" + out, "fidelity.backend: tpu"},
      {"added: sweep --max-error 0", "sweep --spec " + kGrid + out + " --max-error 0", "--max-error: must be > 0"},
      {"added: sweep spec max_error < 0", "sweep --spec " + t + "grid-budget.json" + out,
       "grid-budget.json: max_error: must be > 0"},
      {"added: plan max_error 0", "plan --spec " + t + "plan-budget.json" + out,
       "plan-budget.json: max_error: must be > 0"},
      {"added: plan --max-error -1", "plan --spec " + t + "plan-typo.json" + out + " --max-error -1",
       "--max-error: must be > 0"},
      {"added: plan with a misspelt set", "plan --spec " + t + "plan-typo.json" + out,
       "plan-typo.json: set.model.layerz: 'model.layerz' is not a scenario key simulate reads"},
  };
}

TEST(UserMistakes, EachIsExitTwoWithOneLineNamingFileOrKeyAndNeverAnInternalError) {
  TempDir tmp;
  write_fixtures(tmp);
  const fs::path out = tmp / "out";
  for (const Case& c : cases(tmp)) {
    const CliRun r = edgc(c.args, tmp);
    const std::string what = c.issue + " (edgc " + c.args + "): " + r.err;
    EXPECT_EQ(r.code, 2) << what;
    EXPECT_EQ(count_lines(r.err), 1) << what;
    EXPECT_EQ(r.err.rfind("edgc: error: ", 0), 0U) << what;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << what;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << what;
    EXPECT_TRUE(r.out.empty()) << what;
    EXPECT_FALSE(fs::exists(out)) << what;
    EXPECT_TRUE(fs::is_empty(tmp / "adir")) << what;
  }
}

// NaN for every value of a trace's iteration files (or of the first one only): the f32 data overwritten in place, the
// safetensors header keeps its offsets.
void poison_with_nan(const fs::path& dir, bool first_only = false) {
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".safetensors") continue;
    if (first_only && entry.path().filename() != "iter_000000.safetensors") continue;
    std::string bytes = read_file(entry.path());
    std::uint64_t header = 0;
    std::memcpy(&header, bytes.data(), sizeof header);
    const json h = json::parse(bytes.substr(8, header));
    for (const auto& [name, t] : h.items()) {
      if (name == "__metadata__") continue;
      ASSERT_EQ(t["dtype"], "F32");
      const float nan = std::numeric_limits<float>::quiet_NaN();
      for (std::uint64_t o = t["data_offsets"][0]; o < t["data_offsets"][1].get<std::uint64_t>(); o += 4)
        std::memcpy(bytes.data() + 8 + header + o, &nan, 4);
    }
    write_file(entry.path(), bytes);
  }
}

// A file of the wrong kind is named as such in the first line: a cluster file given as a scenario, a scenario given
// as a sweep or plan spec (they said "model.layers: must be a positive integer, got 0" and "assumptions: unknown
// key"). Exit 2, nothing written.
TEST(UserMistakes, FilesOfTheWrongKindAreNamedAsSuch) {
  TempDir tmp;
  const std::string root = std::string(EDGC_SOURCE_DIR) + "/scenarios/";
  const std::string cluster = root + "clusters/dgx-h100.json", scenario = root + "paper/gpt2-2.5b-32xv100.json";
  const struct {
    std::string args, expect;
  } cases[] = {
      {"simulate --scenario " + cluster, cluster + ": model: missing: this file holds a cluster, not a scenario"},
      {"sweep --spec " + scenario, scenario + ": base: missing: this file is a scenario, not a sweep spec"},
      {"plan --spec " + scenario, scenario + ": base: missing: this file is a scenario, not a plan spec"},
  };
  for (const auto& c : cases) {
    const CliRun r = edgc(c.args + " --out " + (tmp / "out").string(), tmp);
    EXPECT_EQ(r.code, 2) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(tmp / "out")) << c.args;
  }
}

// Degenerate traces run to the end (exit 0, outputs written) but say on stderr what is wrong with them.
TEST(UserMistakes, DegenerateTracesReplayAndSimulateWithAWarning) {
  TempDir tmp;
  const std::string synth = "trace synth --layers 2 --stages 2 --shapes 64x64 --out ";
  ASSERT_EQ(edgc(synth + (tmp / "one").string() + " --iterations 1", tmp).code, 0);
  ASSERT_EQ(edgc(synth + (tmp / "zero").string() + " --iterations 6 --signal 0 --noise 0", tmp).code, 0);
  ASSERT_EQ(edgc(synth + (tmp / "nan").string() + " --iterations 6", tmp).code, 0);
  ASSERT_EQ(edgc(synth + (tmp / "some-nan").string() + " --iterations 6", tmp).code, 0);
  ASSERT_EQ(edgc(synth + (tmp / "fine").string() + " --iterations 6", tmp).code, 0);
  poison_with_nan(tmp / "nan");
  poison_with_nan(tmp / "some-nan", true);
  const std::string ranks =
      " --set compression.window=2 --set compression.r_min=4 --set compression.r_max=16"
      " --set compression.step=4 --quiet";
  const std::string from_trace = " --set entropy=null --set entropy.source=trace --quiet --set trace.path=";
  struct Expect {
    std::string trace;
    std::string replay;    // in replay's warning ("" = none)
    std::string simulate;  // in simulate's warning ("" = none)
  };
  const Expect expects[] = {
      {"one", "one captured iteration: the entropy has no trend", "one captured iteration: its entropy stands for"},
      {"zero", "every finite gradient value is zero", "no simulated stage has a finite gradient entropy"},
      {"nan", "every gradient value is NaN or Inf", "no simulated stage has a finite gradient entropy"},
      // Entropy skips non-finite values, so simulate has nothing to say; replay's PowerSGD carries them on.
      {"some-nan", "8192 of 49152 gradient values are NaN or Inf, in 1 of 6 iterations", ""},
      {"fine", "", ""},
  };
  int n = 0;
  for (const Expect& e : expects) {
    const std::string trace = (tmp / e.trace).string();
    const fs::path r_out = tmp / ("replay" + std::to_string(n));
    const fs::path s_out = tmp / ("simulate" + std::to_string(n++));
    const CliRun r = edgc("replay --trace " + trace + ranks + " --out " + r_out.string(), tmp);
    EXPECT_EQ(r.code, 0) << e.trace << ": " << r.err;
    EXPECT_TRUE(fs::exists(r_out / "replay.json")) << e.trace;
    const CliRun s = edgc("simulate --scenario " + kSmall + from_trace + trace + " --out " + s_out.string(), tmp);
    EXPECT_EQ(s.code, 0) << e.trace << ": " << s.err;
    ASSERT_TRUE(fs::exists(s_out / "result.json")) << e.trace;
    // result.json keeps simulate's warnings (the same lines, without the "edgc: warning: " prefix). These traces are
    // also a few steps stretched over the run, of another size class than the simulated model, and give a high
    // gradient error, which simulate warns about too (tested in simulate_test.cpp): left out.
    // Where nothing finite is left to measure, each compressing policy also says its gradient error was not
    // measured (tested in simulate_test.cpp, SimulateFidelity.AnAllNanTraceMeasuresNoErrorInsteadOfAPerfectOne).
    const bool unmeasurable = e.trace == "zero" || e.trace == "nan";
    EXPECT_EQ(s.err.find("the gradient error was not measured") != std::string::npos, unmeasurable) << e.trace;
    const auto thin = [](const std::string& line) {
      return line.find(" steps are stretched ") != std::string::npos ||
             line.find("the gradient error was not measured") != std::string::npos ||
             line.find(" windows of ") != std::string::npos ||
             line.find(": recorded from another ") != std::string::npos ||
             line.find(" is above 50 %") != std::string::npos;
    };
    std::vector<std::string> warnings;
    const json result = json::parse(read_file(s_out / "result.json"));
    for (const json& w : result.at("warnings"))
      if (!thin(w.get<std::string>())) warnings.push_back(w.get<std::string>());
    const CliRun s_own = [&] {
      CliRun own = s;
      own.err.clear();
      std::istringstream lines(s.err);
      for (std::string line; std::getline(lines, line);)
        if (!thin(line)) own.err += line + "\n";
      return own;
    }();
    ASSERT_EQ(warnings.size(), e.simulate.empty() ? 0U : 1U) << e.trace << ": " << s.err;
    if (!e.simulate.empty()) {
      EXPECT_EQ("edgc: warning: " + warnings[0] + "\n", s_own.err) << e.trace;
    }
    for (const auto& [run, expected] : {std::pair{&r, e.replay}, std::pair{&s_own, e.simulate}}) {
      if (expected.empty()) {
        EXPECT_TRUE(run->err.empty()) << e.trace << ": " << run->err;
        continue;
      }
      EXPECT_EQ(count_lines(run->err), 1) << e.trace << ": " << run->err;
      EXPECT_EQ(run->err.rfind("edgc: warning: " + trace + ": ", 0), 0U) << run->err;
      EXPECT_NE(run->err.find(expected), std::string::npos) << e.trace << ": " << run->err;
    }
  }
}

// replay.world_size is refused from what that many emulated ranks would hold when it does not fit in half this
// machine's memory (ranks within the thread limit, a trace big enough): before any iteration is read.
TEST(UserMistakes, ReplayRefusesAWorldSizeWhoseRanksDoNotFitInMemory) {
  std::ifstream meminfo("/proc/meminfo");
  std::string label;
  std::int64_t kib = 0;
  meminfo >> label >> kib;
  ASSERT_EQ(label, "MemTotal:");
  // 256 ranks hold 8 bytes per value each (copy + error buffer): past half the memory from this many values on.
  const std::int64_t values = kib * 1024 / 2 / (256 * 8) + 1;
  const auto side = static_cast<std::int64_t>(std::ceil(std::sqrt(static_cast<double>(values))));
  if (side * side * 2 > (std::int64_t{1} << 29)) GTEST_SKIP() << "the trace would be over 512 MB on this machine";
  TempDir tmp;
  const std::string shape = std::to_string(side) + "x" + std::to_string(side);
  ASSERT_EQ(edgc("trace synth --layers 1 --stages 1 --iterations 1 --dtype bf16 --rank 1 --shapes " + shape +
                     " --out " + (tmp / "big").string(),
                 tmp)
                .code,
            0);
  const CliRun r = edgc("replay --trace " + (tmp / "big").string() +
                            " --set replay.world_size=256 --set compression.r_min=4 --set compression.r_max=8"
                            " --set compression.step=4 --out " +
                            (tmp / "out").string(),
                        tmp);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("replay.world_size: 256 emulated ranks need about"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("more than half of this machine's"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(": set it to at most "), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(tmp / "out"));
}

// A simulation whose actors' stacks cannot be mapped within vm.max_map_count is refused before anything runs (the
// hang of issue 20's 32,768-GPU simulate, where SimGrid failed to protect stacks and made no progress). 2^20 GPUs
// with overlapped buckets need 2^21 actors: more than any limit short of 2,098,176 mappings allows. Compute jitter
// keeps every replica (without it the replicas would fold by symmetry and need a handful of actors).
TEST(UserMistakes, ASimulationWhoseActorStacksExceedTheMappingLimitIsRefusedUpFront) {
  if (edgc::sim::vm_max_map_count() >= edgc::sim::plan_actor_stacks(2097152, 0).maps_unguarded)
    GTEST_SKIP() << "vm.max_map_count " << edgc::sim::vm_max_map_count() << " fits 2^21 actors";
  TempDir tmp;
  const CliRun r = edgc("simulate --scenario " + kSmall +
                            " --set cluster.nodes=262144 --set parallelism.dp=262144"
                            " --set parallelism.overlap_grad_reduce=true --set parallelism.microbatches=0"
                            " --set variability.compute_jitter_cv=0.1"
                            " --set model.global_batch_size=524288 --out " +
                            (tmp / "out").string(),
                        tmp);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("small.json: parallelism.dp: tp 2 x pp 2 x dp 262144 = 1048576 GPUs are simulated by "
                       "2097152 actors whose stacks need 2098176 memory mappings, more than this machine's "
                       "vm.max_map_count " +
                       std::to_string(edgc::sim::vm_max_map_count())),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("raise it ('sudo sysctl -w vm.max_map_count=4195328') or simulate fewer GPUs"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(tmp / "out"));
}

// Replicas that would fold are all simulated when a timeline is asked for (it shows every GPU), and the actor
// check counts them all: 2^20 GPUs of the H100 paper scenario with --timeline are refused up front.
// The pipeline-compression keys: edgc-pp needs a pipeline rank >= 1, and the fused embedding sync is a boolean.
TEST(UserMistakes, BadPipelineCompressionKeysAreRefusedWithoutOutput) {
  const std::string scenario = kSrc + "/scenarios/paper/gpt2-2.5b-32xv100-pipeline-bound.json";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--set compression.pp_rank=0", "compression.pp_rank: must be >= 1 for the edgc-pp policy, got 0"},
      {"--set parallelism.fused_embedding_sync=3", "parallelism.fused_embedding_sync: expected true or false"}};
  for (const auto& [set, message] : cases) {
    TempDir tmp;
    const CliRun r = edgc("simulate --scenario " + scenario + " " + set + " --out " + (tmp / "out").string(), tmp);
    EXPECT_EQ(r.code, 2) << set << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(tmp / "out")) << set;
  }
}

// compression.apply_to: an unknown value, and dense or experts on a dense model, exit 2 naming the key, no output.
TEST(UserMistakes, ApplyToIsRefusedWhereItCannotApply) {
  const std::string scenario = kSrc + "/scenarios/paper/gpt2-2.5b-32xv100.json";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--set compression.apply_to=expert", "compression.apply_to: must be all, dense or experts, got 'expert'"},
      {"--set compression.apply_to=experts", "compression.apply_to: dense or experts needs a mixture of experts"}};
  for (const auto& [set, message] : cases) {
    TempDir tmp;
    const CliRun r = edgc("simulate --scenario " + scenario + " " + set + " --out " + (tmp / "out").string(), tmp);
    EXPECT_EQ(r.code, 2) << set << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(tmp / "out")) << set;
  }
}

TEST(UserMistakes, ATimelineCountsEveryReplicasActors) {
  const std::int64_t gpus = 1048576;
  if (edgc::sim::vm_max_map_count() >= edgc::sim::plan_actor_stacks(gpus, 0).maps_unguarded)
    GTEST_SKIP() << "vm.max_map_count " << edgc::sim::vm_max_map_count() << " fits 2^20 actors";
  TempDir tmp;
  const CliRun r = edgc("simulate --scenario " + kSrc +
                            "/scenarios/paper/gpt2-12.1b-64xh100.json --set cluster.nodes=131072"
                            " --set parallelism.dp=32768 --set parallelism.microbatches=0"
                            " --set model.global_batch_size=8388608 --out " +
                            (tmp / "out").string() + " --timeline " + (tmp / "t.json").string(),
                        tmp);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("parallelism.dp: tp 8 x pp 4 x dp 32768 = 1048576 GPUs are simulated by 1048576 actors"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(tmp / "out"));
  EXPECT_FALSE(fs::exists(tmp / "t.json"));
}

}  // namespace
