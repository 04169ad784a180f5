// `edgc validate` end to end on tests/data/live: a hand-made live run (pp 2 × dp 2 on one host, two policies)
// whose "measured" times are the closed forms of its ideal-network cluster (make_fixture.py), so every prediction
// must agree to ≤ 0.1 %; one perturbed measurement must show up in its own row and nowhere else;
// bad measurements and cluster files exit 2 naming file and field, with no validate.json left behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_test_util.hpp"

namespace {

namespace fs = std::filesystem;
using edgc::cli::test::edgc;
using edgc::traces::test::read_file;
using edgc::traces::test::TempDir;
using edgc::traces::test::write_file;
using nlohmann::json;

const fs::path kFixture = fs::path(EDGC_SOURCE_DIR) / "tests/data/live";
// cluster.json of the fixture: one switch, per-rank link bandwidth and per-hop latency.
constexpr double kLatency_s = 20e-6;
constexpr double kBandwidth_Bps = 5e9;
constexpr double kTolerancePct = 0.1;

// The fixture copied into `tmp`/live (validate writes DIR/validate.json), measurements edited by `edit`.
fs::path copy_fixture(const TempDir& tmp, const std::function<void(json&)>& edit = {}) {
  const fs::path dir = tmp / "live";
  fs::create_directories(dir);
  fs::copy_file(kFixture / "cluster.json", dir / "cluster.json");
  json m = json::parse(read_file(kFixture / "measurements.json"));
  if (edit) edit(m);
  write_file(dir / "measurements.json", m.dump(1));
  return dir;
}

json run_ok(const TempDir& tmp, const fs::path& dir, const std::string& extra = "") {
  const auto r = edgc("validate --measured " + dir.string() + " " + extra, tmp);
  EXPECT_EQ(r.code, 0) << r.err;
  return json::parse(read_file(dir / "validate.json"));
}

const json& row(const json& doc, const std::string& category, const std::string& policy, int stage,
                const std::string& kind = "") {
  for (const auto& r : doc["rows"])
    if (r["category"] == category && r["policy"] == policy && r.value("stage", -1) == stage &&
        r.value("kind", std::string()) == kind)
      return r;
  throw std::runtime_error("no row " + category + " " + policy + " " + std::to_string(stage) + " " + kind);
}

TEST(Validate, IdealNetworkPredictionsMatchTheClosedForm) {
  const TempDir tmp;
  const fs::path dir = copy_fixture(tmp);
  const auto r = edgc("validate --measured " + dir.string(), tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("MAPE %"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("calibration"), std::string::npos) << r.out;
  const json doc = json::parse(read_file(dir / "validate.json"));
  EXPECT_EQ(doc["schema"], "edgc.validate/1");
  EXPECT_EQ(doc["distinct_patterns"], 3);
  EXPECT_EQ(doc["steps"], 5);

  // The simulated collectives themselves against 2(D − 1)·(L + S/(D·B)), independently of the measurements.
  int checked = 0;
  for (const auto& p : doc["patterns"])
    for (const auto& s : p["stages"])
      for (const auto& c : s["collectives"]) {
        const double bytes = c["bytes"].get<double>();
        const double closed = 2 * (2 - 1) * (kLatency_s + bytes / (2 * kBandwidth_Bps));
        EXPECT_NEAR(c["predicted_s"].get<double>(), closed, closed * kTolerancePct / 100) << c;
        ++checked;
      }
  EXPECT_EQ(checked, 2 + 6 + 6);

  // Every row within the tolerance; uncompressed compute is the dense buffer's copies.
  for (const auto& x : doc["rows"]) {
    EXPECT_GT(x["count"].get<int>(), 0) << x;
    EXPECT_LE(x["max_ape_pct"].get<double>(), kTolerancePct) << x;
  }
  EXPECT_GT(row(doc, "compute", "none", 0)["mean_predicted_s"].get<double>(), 0.0);
  ASSERT_EQ(doc["overall"].size(), 5U);  // collective, sync, iteration, compute, calibration
  EXPECT_EQ(doc["overall"][0]["category"], "collective");
  EXPECT_EQ(doc["overall"][0]["count"], 2 * 2 + 3 * 2 * 3);
  EXPECT_EQ(doc["overall"][4]["category"], "calibration");
  for (const auto& x : doc["overall"]) EXPECT_LE(x["max_ape_pct"].get<double>(), kTolerancePct) << x;
  EXPECT_EQ(row(doc, "collective", "edgc", 1, "P")["count"], 3);
  EXPECT_EQ(row(doc, "iteration", "none", -1)["count"], 2);
  for (const auto& c : doc["calibration"]["rows"]) EXPECT_LE(c["ape_pct"].get<double>(), kTolerancePct) << c;
  // T_com probes at ranks some step ran at are simulated; the probe at rank 16 (no step) is not.
  const auto& points = doc["tcom"]["points"];
  ASSERT_EQ(points.size(), 4U);
  EXPECT_LE(points[0]["ape_pct"].get<double>(), kTolerancePct);
  EXPECT_TRUE(points[2]["predicted_comm_s"].is_null());
}

TEST(Validate, APerturbedMeasurementShowsUpInItsOwnRow) {
  const TempDir tmp;
  // edgc step 0, stage 1, its P all-reduce (collectives: dense, P, Q) measured 1.5× the closed form.
  const fs::path dir = copy_fixture(tmp, [](json& m) {
    json& t = m["runs"][1]["steps"][0]["stages"][1]["collectives"][1]["time_s"];
    t = t.get<double>() * 1.5;
  });
  const json doc = run_ok(tmp, dir);
  const json& p = row(doc, "collective", "edgc", 1, "P");
  EXPECT_NEAR(p["max_ape_pct"].get<double>(), 100.0 / 3, 1e-3);  // |x − 1.5x| / 1.5x
  EXPECT_NEAR(p["mape_pct"].get<double>(), 100.0 / 9, 1e-3);     // one step of three
  for (const auto& x : doc["rows"])
    if (&x != &p && !x["max_ape_pct"].is_null()) {
      EXPECT_LE(x["max_ape_pct"].get<double>(), kTolerancePct) << x;
    }
  EXPECT_NEAR(doc["overall"][0]["max_ape_pct"].get<double>(), 100.0 / 3, 1e-3);
}

TEST(Validate, OverridesReachTheClusterAndTheComputeModel) {
  const TempDir tmp;
  const fs::path dir = copy_fixture(tmp);
  // Twice the link bandwidth: every collective predicted faster; compute untouched.
  json doc = run_ok(tmp, dir, "--set cluster.intra_node.bandwidth_GBps=10");
  EXPECT_GT(row(doc, "collective", "none", 0, "dense")["mape_pct"].get<double>(), 10.0);
  EXPECT_LE(row(doc, "compute", "edgc", 0)["max_ape_pct"].get<double>(), kTolerancePct);
  // Half the memory bandwidth: the (memory-bound) compression compute predicted twice as long.
  doc = run_ok(tmp, dir, "--set compute.hbm_efficiency=0.425");                       // the default 0.85 halved
  EXPECT_NEAR(row(doc, "compute", "edgc", 1)["mape_pct"].get<double>(), 100.0, 0.2);  // orthogonalisation FLOPs aside
  EXPECT_EQ(doc["compute"]["hbm_efficiency"], 0.425);
  // A scenario including the same cluster with the achieved rates themselves and efficiencies 1: the same model.
  write_file(tmp / "scenario.json", R"({"cluster": {"include": ")" + (dir / "cluster.json").string() +
                                        R"(", "gpu": {"peak_tflops": 0.1, "hbm_GBps": 8.5}},
                                        "network": {"profile": "ideal"},
                                        "compute": {"efficiency": 1, "hbm_efficiency": 1}})");
  const auto s = edgc("validate --measured " + dir.string() + " --scenario " + (tmp / "scenario.json").string() +
                          " --out " + (tmp / "v.json").string(),
                      tmp);
  ASSERT_EQ(s.code, 0) << s.err;
  doc = json::parse(read_file(tmp / "v.json"));
  for (const auto& x : doc["overall"]) EXPECT_LE(x["max_ape_pct"].get<double>(), kTolerancePct) << x;
  // --json prints the document.
  const auto r = edgc("validate --measured " + dir.string() + " --json", tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["schema"], "edgc.validate/1");
}

struct BadCase {
  std::string name;
  std::function<void(json&)> edit;                    // on measurements.json
  std::string extra;                                  // more arguments
  std::string file;                                   // file the message must name ("" = measurements.json)
  std::string field;                                  // field the message must name
  std::function<void(const fs::path&)> prepare = {};  // on the copied directory
};

TEST(ValidateRejects, BadInputExitsTwoNamingFileAndFieldWithoutOutput) {
  const std::vector<BadCase> cases = {
      {"schema", [](json& m) { m["schema"] = "edgc.live/0"; }, "", "", "schema"},
      {"missing key", [](json& m) { m.erase("dp"); }, "", "", "dp: missing"},
      {"extra key", [](json& m) { m["runs"][0]["steps"][1]["stages"][0]["collectives"][0]["extra"] = 1; }, "", "",
       "runs[0].steps[1].stages[0].collectives[0].extra: unknown key"},
      {"wrong type", [](json& m) { m["runs"][1]["steps"][2]["stages"][0]["collectives"][2]["time_s"] = "fast"; }, "",
       "", "runs[1].steps[2].stages[0].collectives[2].time_s"},
      {"negative time", [](json& m) { m["runs"][1]["steps"][1]["stages"][1]["sync_s"] = -1e-3; }, "", "",
       "runs[1].steps[1].stages[1].sync_s"},
      {"negative size", [](json& m) { m["runs"][0]["steps"][0]["stages"][1]["collectives"][0]["bytes"] = -4; }, "", "",
       "runs[0].steps[0].stages[1].collectives[0].bytes"},
      {"unknown kind", [](json& m) { m["runs"][1]["steps"][0]["stages"][0]["collectives"][1]["kind"] = "R"; }, "", "",
       "runs[1].steps[0].stages[0].collectives[1].kind"},
      {"stages != pp", [](json& m) { m["runs"][1]["steps"][2]["stages"].erase(1); }, "", "", "runs[1].steps[2].stages"},
      {"placement != world", [](json& m) { m["placement"].erase(3); }, "", "", "placement"},
      {"pp*dp != world", [](json& m) { m["world_size"] = 6; }, "", "", "world_size"},
      {"replica twice", [](json& m) { m["placement"][1]["replica"] = 0; }, "", "", "placement[1].replica"},
      {"matrix rank 0", [](json& m) { m["runs"][1]["steps"][0]["stages"][1]["matrices"][0]["rank"] = 0; }, "", "",
       "runs[1].steps[0].stages[1].matrices[0].rank"},
      {"bad json",
       {},
       "",
       "",
       "invalid JSON",
       [](const fs::path& d) { write_file(d / "measurements.json", R"({"schema": "edgc.live/1", "pp": )"); }},
      {"cluster file missing", {}, "", "", "cluster_file", [](const fs::path& d) { fs::remove(d / "cluster.json"); }},
      {"too few GPUs", {}, "--set cluster.gpus_per_node=2", "cluster.json", "cluster.nodes"},
      {"local past the node",
       {},
       "--set cluster.gpus_per_node=2 --set cluster.nodes=2",
       "cluster.json",
       "cluster.gpus_per_node"},
      {"bad cluster key",
       {},
       "--set cluster.intra_node.bandwdth_GBps=3",
       "cluster.json",
       "cluster.intra_node.bandwdth_GBps: unknown key"},
      {"scenario with a model",
       {},
       "",
       "scenario.json",
       "model",
       [](const fs::path& d) {
         write_file(d.parent_path() / "scenario.json", R"({"cluster": "live/cluster.json", "model": {"layers": 2}})");
       }},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    const TempDir tmp;
    const fs::path dir = copy_fixture(tmp, c.edit);
    if (c.prepare) c.prepare(dir);
    std::string extra = c.extra;
    if (c.file == "scenario.json") extra += " --scenario " + (tmp / "scenario.json").string();
    const auto r = edgc("validate --measured " + dir.string() + " " + extra, tmp);
    EXPECT_EQ(r.code, 2) << r.err;
    const std::string file = c.file.empty()              ? (dir / "measurements.json").string()
                             : c.file == "scenario.json" ? (tmp / "scenario.json").string()
                                                         : (dir / c.file).string();
    EXPECT_NE(r.err.find(file + ": " + c.field), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;  // one line
    EXPECT_FALSE(fs::exists(dir / "validate.json"));
  }
  // Usage errors.
  const TempDir tmp;
  EXPECT_EQ(edgc("validate", tmp).code, 2);
  EXPECT_EQ(edgc("validate --measured " + (tmp / "nowhere").string(), tmp).code, 2);
  const fs::path dir = copy_fixture(tmp);
  EXPECT_EQ(edgc("validate --measured " + dir.string() + " --out " + tmp.path().string(), tmp).code, 2);
  const auto both = edgc("validate --measured " + dir.string() + " --calibration " + dir.string() + " --scenario " +
                             (dir / "cluster.json").string(),
                         tmp);
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.err.find("--calibration"), std::string::npos) << both.err;
  EXPECT_EQ(edgc("validate --measured " + dir.string() + " --calibration " + (tmp / "nowhere").string(), tmp).code, 2);
  // Pooled runs must be repeats of one configuration.
  const fs::path other = tmp / "other";
  fs::create_directories(other);
  fs::copy_file(dir / "cluster.json", other / "cluster.json");
  json m = json::parse(read_file(dir / "measurements.json"));
  m["runs"][1]["policy"] = "static";
  write_file(other / "measurements.json", m.dump(1));
  const auto mixed = edgc("validate --measured " + dir.string() + " --measured " + other.string(), tmp);
  EXPECT_EQ(mixed.code, 2);
  EXPECT_NE(mixed.err.find((other / "measurements.json").string() + ": runs[1].policy"), std::string::npos)
      << mixed.err;
  EXPECT_FALSE(fs::exists(dir / "validate.json"));
}

// Calibrated on another run: its cluster file prices this one. Here the other run is the fixture and this run's
// every time is 1.25x the closed form (a slower machine): every error is 20 % of the measured (|x − 1.25x| / 1.25x),
// the verdict says which rows miss their target and what dominates them, and the note names the drift that this
// run's own calibration shows against the other run's profile.
TEST(Validate, CalibratedOnAnotherRunNamesTheDriftAndTheVerdict) {
  const TempDir tmp;
  const fs::path a = copy_fixture(tmp);
  const fs::path b = tmp / "b";
  fs::create_directories(b);
  fs::copy_file(a / "cluster.json", b / "cluster.json");
  json m = json::parse(read_file(a / "measurements.json"));
  for (auto& run : m["runs"])
    for (auto& step : run["steps"]) {
      step["iteration_s"] = step["iteration_s"].get<double>() * 1.25;
      for (auto& st : step["stages"]) {
        for (const char* key : {"sync_s", "compute_s"}) st[key] = st[key].get<double>() * 1.25;
        for (auto& c : st["collectives"]) c["time_s"] = c["time_s"].get<double>() * 1.25;
      }
    }
  for (auto& r : m["calibration"]["rows"]) r["time_s"] = r["time_s"].get<double>() * 1.25;
  write_file(b / "measurements.json", m.dump(1));
  const auto r = edgc("validate --measured " + b.string() + " --calibration " + a.string(), tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  const json doc = json::parse(read_file(b / "validate.json"));
  EXPECT_EQ(doc["calibrated_on"], "the live run " + a.string());
  EXPECT_NEAR(doc["calibration_drift"].get<double>(), 1.25, 1e-3);
  for (const auto& x : doc["overall"]) EXPECT_NEAR(x["error_pct"].get<double>(), 20.0, 0.1) << x;
  EXPECT_NE(r.out.find("note: machine drift: this run's calibration all-reduces took 1.25x"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("verdict: predictions do not hold here: collectives off by 20.0 % (target 15 %)"),
            std::string::npos)
      << r.out;
  // Every part is 25 % longer measured, so the larger part dominates the sync difference: compute (the fixture's
  // copies of the dense buffer at 8.5 GB/s outweigh its all-reduces at 5 GB/s), and nothing is left for "other".
  for (const auto& x : doc["overall"])
    if (x["category"] == "sync") {
      EXPECT_EQ(x["dominant"], "compute") << x;
      const auto& d = x["mean_difference_s"];
      EXPECT_LT(d["compute"].get<double>(), d["collectives"].get<double>());
      EXPECT_LT(d["collectives"].get<double>(), 0.0);
      EXPECT_NEAR(d["other"].get<double>(), 0.0, 1e-12);
    }
  // Pooled: the fixture and the slower copy measured, both as the calibration. Every calibration size's pooled time
  // is the median of x and 1.25x, 1.125x, and the pooled network profile reproduces it; the fixture's cluster file
  // has no kernel profile, so compute stays priced by its GPU rates: x against the pooled steps' 1.125x.
  const auto pooled = edgc("validate --measured " + a.string() + " --measured " + b.string() + " --calibration " +
                               a.string() + " --calibration " + b.string() + " --out " + (tmp / "p.json").string(),
                           tmp);
  ASSERT_EQ(pooled.code, 0) << pooled.err;
  EXPECT_NE(pooled.out.find("and 1 more run(s), pooled"), std::string::npos) << pooled.out;
  const json pd = json::parse(read_file(tmp / "p.json"));
  EXPECT_EQ(pd["steps"], 10);
  EXPECT_EQ(pd["network"], "calibrated");
  ASSERT_EQ(pd["calibration"]["rows"].size(), 3U);
  for (const auto& c : pd["calibration"]["rows"]) EXPECT_LT(c["ape_pct"].get<double>(), 1e-6) << c;
  for (const auto& x : pd["overall"])
    if (x["category"] == "compute") {
      EXPECT_NEAR(x["error_pct"].get<double>(), 100.0 / 9, 1e-6) << x;  // |x − 1.125x| / 1.125x
    }

  // Priced by its own calibration, the fixture holds within the closed form's tolerance and says so.
  const auto own = edgc("validate --measured " + a.string(), tmp);
  ASSERT_EQ(own.code, 0) << own.err;
  EXPECT_NE(own.out.find("verdict: predictions hold within 0.0 % here"), std::string::npos) << own.out;
  EXPECT_NE(own.out.find("note: priced by this run's own calibration"), std::string::npos) << own.out;
}

}  // namespace
