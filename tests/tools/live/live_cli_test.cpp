// `edgc live` as a user runs it: `mpirun -np 4 edgc live` on the bundled trace (pp 2 × dp 2), then properties
// of what it measured that must hold whatever the machine's speed:
//  * every step was verified in-run (replicas bit-identical, equal to the in-process emulation, error feedback);
//  * the all-reduce payloads are the closed forms of the PowerSGD wire format (P: Σ m·r, Q: Σ n·r floats; dense:
//    every parameter of the stage when uncompressed);
//  * the controller took exactly the decisions `edgc replay` takes on the same trace with the same stages;
//  * result.json follows the simulate schema, cluster.json is a cluster file the simulator accepts, and
//    `edgc validate` runs on the directory and reports its error table.
// Bad live settings are rejected by a plain single process, naming the scenario and key, with no output.
#include <gtest/gtest.h>

#include <array>
#include <regex>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cli_test_util.hpp"

namespace edgc::cli::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using traces::test::read_file;
using traces::test::TempDir;

const std::string kScenario = std::string(EDGC_SOURCE_DIR) + "/scenarios/live/tinygpt-cpu.json";
const std::string kTrace = std::string(EDGC_SOURCE_DIR) + "/traces/bundled/tinygpt-licenses";

json load(const fs::path& p) { return json::parse(read_file(p)); }

TEST(LiveCli, RejectsBadLiveSettingsNamingTheKeyWithNoOutput) {
  TempDir tmp;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--set live.pp=3", "live.pp"},
      {"--set live.comm=tcp", "live.comm"},
      {"--set live.backend=tpu", "live.backend"},
      {"--set live.perturbation=-1", "live.perturbation"},
      {"--set live.calibration.repeats=0", "live.calibration.repeats"},
      {"--set live.probe.ranks=4,x", "live.probe.ranks"},
      {"--set live.probe.repeats=0", "live.probe.repeats"},
      {"--set live.calibration.repeats=100000000", "live.calibration.repeats: must be in [1, 10000]"},
      {"--set live.bins_per_sigma=1e9", "live.bins_per_sigma: must be in (0, 4096]"},
      {"--set live.max_iterations=-2", "live.max_iterations"},
      {"--set live.colour=1", "live.colour"},
      {"--set compression.r_max=0", "compression"},
      {"--trace " + (tmp / "no-such-trace").string(), "no-such-trace"},
  };
  for (const auto& [args, key] : cases) {
    const auto out = tmp / "out";
    const CliRun r = edgc("live --scenario " + kScenario + " " + args + " --out " + out.string(), tmp);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(key), std::string::npos) << args << "\n" << r.err;
    EXPECT_FALSE(fs::exists(out)) << args;
  }
}

TEST(LiveCli, OneProcessRunsWithoutMpirun) {
  TempDir tmp;
  const auto out = tmp / "one";
  const CliRun r = edgc("live --scenario " + kScenario + " --set live.max_iterations=30 --set live.probe.repeats=1" +
                            " --set live.calibration.repeats=1 --out " + out.string() + " --verify",
                        tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  // It runs, but measures no all-reduce between processes, and says so.
  EXPECT_NE(r.err.find("edgc: warning: live runs on 1 MPI rank (started without mpirun?)"), std::string::npos) << r.err;
  const json m = load(out / "measurements.json");
  EXPECT_EQ(m["world_size"], 1);
  EXPECT_EQ(m["pp"], 1);
  EXPECT_EQ(m["dp"], 1);
  ASSERT_EQ(m["runs"].size(), 2U);
  EXPECT_EQ(m["runs"][0]["steps"].size(), 30U);
}

#ifdef EDGC_LIVE_NP4_DIR
// The output of the CTest fixture live.np4.run (tests/live/CMakeLists.txt): `mpirun -np 4 edgc live --verify`
// on the bundled trace, run once for all these tests.
class LiveFourRanks : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(out_ / "result.json"))
        << "run the fixture first: ctest -R live.np4 (it writes " << out_ << ")\n"
        << read_file(log_path());
    log_ = read_file(log_path());
  }
  static fs::path log_path() { return fs::path(std::string(EDGC_LIVE_NP4_DIR) + ".log"); }

  const fs::path out_ = EDGC_LIVE_NP4_DIR;
  std::string log_;
};

TEST_F(LiveFourRanks, EveryStepWasVerifiedAgainstTheEmulation) {
  EXPECT_NE(log_.find("verify: 750 steps per rank bit-identical"), std::string::npos) << log_;  // 3 policies
  const json m = load(out_ / "measurements.json");
  EXPECT_EQ(m["schema"], "edgc.live/1");
  EXPECT_EQ(m["world_size"], 4);
  EXPECT_EQ(m["pp"], 2);
  EXPECT_EQ(m["dp"], 2);
  ASSERT_EQ(m["placement"].size(), 4U);
  for (int g = 0; g < 4; ++g) {
    EXPECT_EQ(m["placement"][g]["stage"], g / 2);
    EXPECT_EQ(m["placement"][g]["replica"], g % 2);
  }
}

TEST_F(LiveFourRanks, PayloadsAreTheClosedFormsOfThePowerSgdWireFormat) {
  const json m = load(out_ / "measurements.json");
  ASSERT_EQ(m["runs"].size(), 3U);
  EXPECT_EQ(m["runs"][0]["policy"], "none");
  EXPECT_EQ(m["runs"][1]["policy"], "edgc");
  EXPECT_EQ(m["runs"][2]["policy"], "edgc-pp");
  std::map<int, std::int64_t> dense_bytes;  // per stage, from the uncompressed run
  int compressed_steps = 0;
  for (const auto& run : m["runs"]) {
    ASSERT_EQ(run["steps"].size(), 250U);  // every captured iteration of the bundled trace
    for (const auto& step : run["steps"]) {
      ASSERT_EQ(step["stages"].size(), 2U);
      double longest = 0;
      for (int s = 0; s < 2; ++s) {
        const auto& st = step["stages"][s];
        longest = std::max(longest, st["sync_s"].get<double>());
        std::int64_t p = 0, q = 0;
        for (const auto& g : st["matrices"]) {
          p += g["count"].get<std::int64_t>() * g["rows"].get<std::int64_t>() * g["rank"].get<std::int64_t>() * 4;
          q += g["count"].get<std::int64_t>() * g["cols"].get<std::int64_t>() * g["rank"].get<std::int64_t>() * 4;
          EXPECT_EQ(g["rank"], st["rank"]);
        }
        std::int64_t wire = 0;
        for (const auto& c : st["collectives"]) {
          wire += c["bytes"].get<std::int64_t>();
          if (c["kind"] == "P") {
            EXPECT_EQ(c["bytes"], p);
          }
          if (c["kind"] == "Q") {
            EXPECT_EQ(c["bytes"], q);
          }
          EXPECT_GE(c["time_s"].get<double>(), 0.0);
          EXPECT_LE(c["time_s"].get<double>(), st["sync_s"].get<double>());
        }
        EXPECT_EQ(st["wire_bytes"], wire);
        if (run["policy"] == "none") {
          ASSERT_EQ(st["collectives"].size(), 1U);
          EXPECT_EQ(st["collectives"][0]["kind"], "dense");
          EXPECT_EQ(st["collectives"][0]["bytes"], st["dense_bytes"]);
          dense_bytes[s] = st["dense_bytes"].get<std::int64_t>();
        } else {
          EXPECT_EQ(st["dense_bytes"], dense_bytes[s]);
          if (st["rank"].get<int>() > 0) {
            ++compressed_steps;
            EXPECT_LT(st["wire_bytes"].get<std::int64_t>(), st["dense_bytes"].get<std::int64_t>());
          }
        }
      }
      EXPECT_DOUBLE_EQ(step["iteration_s"].get<double>(), longest);
    }
  }
  EXPECT_GT(compressed_steps, 0);
  // tiny-GPT: 241,024 parameters in 4 trace stages merged into 2, all of them synchronised.
  EXPECT_EQ((dense_bytes[0] + dense_bytes[1]) / 4, 241024);
}

TEST_F(LiveFourRanks, TheControllerDecidesWhatReplayDecides) {
  TempDir tmp;
  const CliRun r =
      edgc("replay --scenario " + kScenario + " --trace " + kTrace +
               " --set replay.stages=2 --set replay.compare_full=false --out " + (tmp / "replay").string() + " --quiet",
           tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  const json replay = load(tmp / "replay" / "replay.json");
  const json result = load(out_ / "result.json");
  const json& edgc_run = result["runs"][1];
  ASSERT_EQ(edgc_run["policy"], "edgc");
  // Expand live's schedule to one rank vector per window and compare with replay's windows.
  std::vector<json> live_ranks;
  for (const auto& seg : edgc_run["rank_schedule"])
    for (std::int64_t it = seg["begin"].get<std::int64_t>(); it < seg["end"].get<std::int64_t>(); it += 50)
      live_ranks.push_back(seg["ranks"]);
  ASSERT_EQ(live_ranks.size(), replay["windows"].size());
  for (std::size_t w = 0; w < live_ranks.size(); ++w) {
    json want = json::array();
    for (const auto& s : replay["windows"][w]["stages"]) want.push_back(s["rank"]);
    EXPECT_EQ(live_ranks[w], want) << "window " << w;
  }
  EXPECT_EQ(edgc_run["warmup_end_iteration"], replay["summary"]["warmup_end_iteration"]);
}

// The pipeline's backward messages: with pp = 2 the trace's boundary 2 (stages 0-1 | 2-3) is the one the run's
// stage 1 sends to stage 0, once per captured iteration and replica: 250 x 2 = 500 per policy. edgc-pp compresses
// them after warm-up at compression.pp_rank (16: (128 + 64) x 16 floats instead of 128 x 64), the others send them
// whole; every one was received as the in-process compressor sends and reconstructs it.
TEST_F(LiveFourRanks, StageBoundaryMessagesWentOverMpiAndMatchTheInProcessCompressor) {
  const std::regex line(R"(boundaries: ([a-z-]+): (\d+) stage-boundary messages sent backward over MPI, (\d+) )"
                        R"(compressed, (\d+) of (\d+) floats.*; (\d+) verified bit-identical)");
  std::map<std::string, std::array<std::int64_t, 5>> got;
  for (auto it = std::sregex_iterator(log_.begin(), log_.end(), line); it != std::sregex_iterator(); ++it) {
    const auto& mt = *it;
    got[mt[1]] = {std::stoll(mt[2]), std::stoll(mt[3]), std::stoll(mt[4]), std::stoll(mt[5]), std::stoll(mt[6])};
  }
  ASSERT_EQ(got.size(), 3U) << log_;
  for (const auto& [policy, v] : got) {
    const auto [sent, compressed, wire, dense, verified] = v;
    EXPECT_EQ(sent, 500) << policy;
    EXPECT_EQ(verified, 500) << policy;
    EXPECT_EQ(dense, 500 * 128 * 64) << policy;
    EXPECT_EQ(wire, compressed * (128 + 64) * 16 + (sent - compressed) * 128 * 64) << policy;
    if (policy == "edgc-pp") {
      EXPECT_GT(compressed, 0);
      EXPECT_LT(compressed, sent);  // not during warm-up
    } else {
      EXPECT_EQ(compressed, 0) << policy;
    }
  }
}

TEST_F(LiveFourRanks, ResultClusterAndTcomFitAreUsable) {
  const json result = load(out_ / "result.json");
  EXPECT_EQ(result["schema"], "edgc.result/1");
  for (const auto& run : result["runs"]) {
    for (const char* key : {"policy", "iteration_time_s", "comm_latency_s", "training_time_s", "speedup_vs_none"})
      EXPECT_TRUE(run.contains(key)) << key;
  }
  EXPECT_DOUBLE_EQ(result["runs"][0]["speedup_vs_none"].get<double>(), 1.0);
  const json m = load(out_ / "measurements.json");
  ASSERT_EQ(m["tcom_fit"].size(), 2U);
  for (const auto& f : m["tcom_fit"]) {
    EXPECT_EQ(f["points"], 8);  // probe ranks 1, 2, 3, 4, 6, 8, 10, 12: each compresses the 64 x 64 matrices
    EXPECT_GE(f["eta_stderr_s"].get<double>(), 0.0);
    EXPECT_TRUE(f["significant"].is_boolean());
  }
  for (const auto& p : m["tcom_points"]) {  // P + Q is part of the whole sync
    EXPECT_GT(p["compressed_comm_s"].get<double>(), 0.0) << p;
    EXPECT_LT(p["compressed_comm_s"].get<double>(), p["comm_s"].get<double>()) << p;
  }
  // The cluster file is one the simulator accepts: simulate a collective on it.
  TempDir tmp;
  const CliRun c = edgc("collective --cluster " + (out_ / "cluster.json").string() + " --ranks 2 --maxbytes 1M", tmp);
  EXPECT_EQ(c.code, 0) << c.err;
}

// kernels.json: the probe's batches per rank (each stage compresses its 64 x 64 matrices together) and the dense
// buffer's copies at the sizes the steps sent, uncompressed among them; cluster.json names it and calibration.json.
TEST_F(LiveFourRanks, TheProbeWritesAKernelProfileOfItsBatchesAndCopies) {
  const json m = load(out_ / "measurements.json");
  std::set<std::int64_t> dense_sizes;  // every dense all-reduce of every step
  std::map<int, int> matrices;         // rank → 64 x 64 matrices compressed per stage at that rank
  for (const auto& run : m["runs"])
    for (const auto& step : run["steps"])
      for (const auto& st : step["stages"]) {
        for (const auto& c : st["collectives"])
          if (c["kind"] == "dense") dense_sizes.insert(c["bytes"].get<std::int64_t>());
        for (const auto& g : st["matrices"]) matrices[g["rank"].get<int>()] = g["count"].get<int>();
      }
  const json k = load(out_ / "kernels.json");
  EXPECT_EQ(k["schema"], "edgc.kernel_profile/1");
  std::set<int> ranks;
  for (const auto& e : k["entries"]) {
    EXPECT_EQ(e["m"], 64);
    EXPECT_EQ(e["n"], 64);
    EXPECT_GT(e["step_s"].get<double>(), 0.0);
    ranks.insert(e["r"].get<int>());
    if (matrices.count(e["r"].get<int>())) {
      EXPECT_EQ(e["count"], matrices[e["r"].get<int>()]) << e;
    }
  }
  EXPECT_EQ(ranks, (std::set<int>{1, 2, 3, 4, 6, 8, 10, 12}));
  std::set<std::int64_t> copy_sizes;
  for (const auto& c : k["copies"]) copy_sizes.insert(c["bytes"].get<std::int64_t>());
  for (const std::int64_t b : dense_sizes) EXPECT_TRUE(copy_sizes.count(b)) << b << " bytes sent dense, no copy timed";
  const json cluster = load(out_ / "cluster.json");
  EXPECT_EQ(cluster["compute"]["kernel_profile"], "kernels.json");
  EXPECT_EQ(cluster["network"]["profile"], "calibrated");
  EXPECT_EQ(cluster["network"]["calibration"], "calibration.json");
  EXPECT_EQ(load(out_ / "calibration.json")["schema"], "edgc.calibration/1");
  for (const auto& p : m["placement"]) EXPECT_GT(p["host_cores"].get<int>(), 0);
}

// The network profile reproduces what it was made from: validate simulates every calibration row on the live
// cluster file; the probe's in-step rows, and the isolated rows outside their size range, come back exactly.
TEST_F(LiveFourRanks, TheCalibratedProfileReproducesItsRows) {
  TempDir tmp;
  const CliRun v = edgc("validate --measured " + out_.string() + " --out " + (tmp / "v.json").string(), tmp);
  ASSERT_EQ(v.code, 0) << v.err;
  const json j = load(tmp / "v.json");
  const auto& steps = j["calibration"]["step_rows"];
  ASSERT_FALSE(steps.empty());
  const std::int64_t lo = steps.front()["bytes"].get<std::int64_t>();
  const std::int64_t hi = steps.back()["bytes"].get<std::int64_t>();
  for (const auto& r : steps) EXPECT_LT(r["ape_pct"].get<double>(), 1e-6) << r;
  int outside = 0;
  for (const auto& r : j["calibration"]["rows"]) {
    const std::int64_t b = r["bytes"].get<std::int64_t>();
    if (b >= lo && b <= hi) continue;
    EXPECT_LT(r["ape_pct"].get<double>(), 1e-6) << r;
    ++outside;
  }
  EXPECT_GT(outside, 0);
  // 4 ranks on a machine with fewer cores: the output says what that does to the figures.
  const json m = load(out_ / "measurements.json");
  if (m["placement"][0]["host_cores"].get<int>() < 4) {
    EXPECT_NE(v.out.find("oversubscribed: 4 ranks on"), std::string::npos) << v.out;
    EXPECT_NE(log_.find("oversubscribed: 4 ranks on"), std::string::npos) << log_;
  }
  EXPECT_NE(v.out.find("verdict: "), std::string::npos) << v.out;
}

TEST_F(LiveFourRanks, ValidateReportsPredictionErrors) {
  TempDir tmp;
  const CliRun v = edgc("validate --measured " + out_.string() + " --out " + (tmp / "validate.json").string(), tmp);
  ASSERT_EQ(v.code, 0) << v.err;
  EXPECT_NE(v.out.find("MAPE"), std::string::npos) << v.out;
  const json j = load(tmp / "validate.json");
  EXPECT_EQ(j["schema"], "edgc.validate/1");
}
#endif

}  // namespace
}  // namespace edgc::cli::test
