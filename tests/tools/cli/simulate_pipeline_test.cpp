// `edgc simulate` with pipeline compression (edgc-pp) beyond the defaults: entropy-driven boundary ranks from the
// bundled trace's boundary gradients, and DAC's fitted pipeline hop.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cli_test_util.hpp"

namespace {

namespace fs = std::filesystem;
using edgc::traces::test::read_file;
using edgc::traces::test::TempDir;
using edgc::traces::test::write_file;
using nlohmann::json;
using Result = edgc::cli::test::CliRun;
using edgc::cli::test::edgc;

// compression.pp_rank_mode entropy: each boundary's rank follows the bundled trace's boundary entropy (format 1.1)
// between pp_r_min and pp_rank; plans whose boundaries differ are simulated as they are, so the composed run agrees
// with the exact one; without boundary gradients (the synthetic curve) the mode is refused without output.
TEST(SimulatePipelineCompression, EntropyDrivenBoundaryRanksFollowTheTrace) {
  TempDir tmp;
  const std::string scenario = std::string(EDGC_SOURCE_DIR) + "/scenarios/paper/gpt2-2.5b-32xv100-pipeline-bound.json";
  // The entropy mode needs stage-boundary gradients (format 1.1): the tiny-GPT trace has them, the scenario's
  // GPT-2-small entropy trace (gpt2s-docs-blocks) records none.
  const std::string mode = " --set compression.pp_rank_mode=entropy --set compression.pp_r_min=4 --set trace.path=" +
                           std::string(EDGC_SOURCE_DIR) + "/traces/bundled/tinygpt-licenses";
  const Result a = edgc("simulate --scenario " + scenario + mode + " --out " + (tmp / "a").string() + " --quiet", tmp);
  ASSERT_EQ(a.code, 0) << a.err;
  const Result b = edgc("simulate --scenario " + scenario + mode + " --set simulate.composition=exact --out " +
                            (tmp / "b").string() + " --quiet",
                        tmp);
  ASSERT_EQ(b.code, 0) << b.err;
  const json ra = json::parse(read_file(tmp / "a" / "result.json"));
  const json rb = json::parse(read_file(tmp / "b" / "result.json"));
  const json& pp = ra["runs"][2];
  ASSERT_EQ(pp["policy"], "edgc-pp");
  std::set<int> seen;
  bool differ = false;
  for (const auto& seg : pp["pp_rank_schedule"]) {
    const auto& r = seg["pp_ranks"];
    EXPECT_EQ(r[0], 0);
    for (std::size_t s = 1; s < r.size(); ++s) {
      const int x = r[s].get<int>();
      if (x == 0) continue;
      EXPECT_GE(x, 4);
      EXPECT_LE(x, 16);
      seen.insert(x);
      differ = differ || x != r[1].get<int>();
    }
  }
  EXPECT_GE(seen.size(), 2U) << "the boundary ranks should move";
  EXPECT_TRUE(differ) << "some window should give the boundaries different ranks";
  const double ta = pp["training_time_s"].get<double>();
  const double tb = rb["runs"][2]["training_time_s"].get<double>();
  EXPECT_NEAR(ta, tb, 1e-5 * tb);
  EXPECT_EQ(pp["pp_rank_schedule"], rb["runs"][2]["pp_rank_schedule"]);
  const Result c = edgc(
      "simulate --scenario " + scenario + mode + " --set entropy.source=synthetic --out " + (tmp / "c").string(), tmp);
  EXPECT_EQ(c.code, 2);
  EXPECT_NE(c.err.find("compression.pp_rank_mode: entropy needs a trace with stage-boundary gradients"),
            std::string::npos)
      << c.err;
  EXPECT_FALSE(fs::exists(tmp / "c"));
}

// DAC fitted from the simulation (η, c, t_bwd, the uncompressed sync) also measures the backward pipeline hop, plain
// and compressed at pp_rank, and credits the compressed one to edgc-pp's alignment (core/dac.hpp).
TEST(SimulatePipelineCompression, DacFitsThePipelineHopPlainAndCompressed) {
  TempDir tmp;
  const std::string scenario = std::string(EDGC_SOURCE_DIR) + "/scenarios/paper/gpt2-2.5b-32xv100-pipeline-bound.json";
  const Result r =
      edgc("simulate --scenario " + scenario + " --set compression.dac.enabled=true --policies none,edgc-pp" +
               " --out " + (tmp / "o").string() + " --quiet",
           tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  const json res = json::parse(read_file(tmp / "o" / "result.json"));
  const json& dac = res["dac"];
  EXPECT_EQ(dac["fitted_from_simulation"], true);
  EXPECT_GT(dac["eta_s_per_rank"].get<double>(), 0.0);
  EXPECT_GT(dac["t_bwd_s"].get<double>(), 0.0);
  const double plain = dac["t_p2p_s"].get<double>();
  const double compressed = dac["t_p2p_compressed_s"].get<double>();
  EXPECT_GT(plain, 0.0);
  EXPECT_GT(compressed, 0.0);
  EXPECT_LT(compressed, plain);  // one 25 Gb/s NIC per node: the compressed message is much faster
  // Without edgc-pp nothing is compressed on the pipeline and no compressed hop is fitted.
  const Result e = edgc("simulate --scenario " + scenario + " --set compression.dac.enabled=true --policies none,edgc" +
                            " --out " + (tmp / "e").string() + " --quiet",
                        tmp);
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_TRUE(json::parse(read_file(tmp / "e" / "result.json"))["dac"]["t_p2p_compressed_s"].is_null());
}

// DAC's η and c from a live run's measured T_com fit (compression.dac.measured) where its slope is resolved; where it
// is noise, the simulated fit, and result.json says which and why.
TEST(SimulatePipelineCompression, DacTakesAMeasuredSlopeOnlyWhereItIsResolved) {
  TempDir tmp;
  const std::string scenario = std::string(EDGC_SOURCE_DIR) + "/scenarios/paper/gpt2-2.5b-32xv100-pipeline-bound.json";
  json m = json::parse(read_file(fs::path(EDGC_SOURCE_DIR) / "tests/data/live/measurements.json"));
  const auto write_fit = [&](const std::string& name, double eta, double stderr_s, bool significant) {
    for (auto& f : m["tcom_fit"]) {
      f["eta_s"] = eta;
      f["c_s"] = 2e-3;
      f["eta_stderr_s"] = stderr_s;
      f["significant"] = significant;
    }
    write_file(tmp / name, m.dump(1));
    return (tmp / name).string();
  };
  const auto run = [&](const std::string& sets, const std::string& out) {
    const Result r = edgc("simulate --scenario " + scenario + " --set compression.dac.enabled=true " + sets +
                              " --policies none,edgc --quiet --out " + (tmp / out).string(),
                          tmp);
    EXPECT_EQ(r.code, 0) << r.err;
    return json::parse(read_file(tmp / out / "result.json"))["dac"];
  };
  const json simulated = run("", "plain");
  EXPECT_EQ(simulated["eta_source"], "simulated");
  const json resolved = run("--set compression.dac.measured=" + write_fit("resolved.json", 7e-6, 1e-7, true), "m");
  EXPECT_DOUBLE_EQ(resolved["eta_s_per_rank"].get<double>(), 7e-6);
  EXPECT_DOUBLE_EQ(resolved["c_s"].get<double>(), 2e-3);
  EXPECT_EQ(resolved["eta_source"].get<std::string>().rfind("measured: eta 7 +- 0.1 us/rank", 0), 0U)
      << resolved["eta_source"];
  EXPECT_DOUBLE_EQ(resolved["t_uncompressed_s"].get<double>(), simulated["t_uncompressed_s"].get<double>());
  const json noise = run("--set compression.dac.measured=" + write_fit("noise.json", 7e-6, 9e-6, false), "n");
  EXPECT_DOUBLE_EQ(noise["eta_s_per_rank"].get<double>(), simulated["eta_s_per_rank"].get<double>());
  EXPECT_EQ(noise["eta_source"].get<std::string>().rfind("simulated: the measured fit is noise", 0), 0U)
      << noise["eta_source"];
  // Both η and a measured fit, or a file that is not one: exit 2 naming the key or the file, no output.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"--set compression.dac.eta_s_per_rank=1e-5 --set compression.dac.measured=" + (tmp / "resolved.json").string(),
       "pipeline-bound.json: compression.dac.measured"},
      {"--set compression.dac.measured=" + (tmp / "nothing.json").string(), (tmp / "nothing.json").string()},
  };
  for (const auto& [sets, message] : bad) {
    const Result r = edgc("simulate --scenario " + scenario + " --set compression.dac.enabled=true " + sets +
                              " --out " + (tmp / "bad").string(),
                          tmp);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(tmp / "bad"));
  }
}

// The new settings refuse bad values naming their key, exit 2, no output.
TEST(SimulatePipelineCompression, BadPipelineRankAndHopSettingsAreRefusedWithoutOutput) {
  const std::string scenario = std::string(EDGC_SOURCE_DIR) + "/scenarios/paper/gpt2-2.5b-32xv100-pipeline-bound.json";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--set compression.pp_rank_mode=entropy --set compression.pp_r_min=3", "compression.pp_r_min"},
      {"--set compression.pp_rank_mode=entropy --set compression.pp_r_min=20", "compression.pp_r_min"},
      {"--set compression.pp_rank_mode=entropy --set compression.pp_rank=18", "compression.pp_rank"},
      {"--set compression.pp_rank_mode=1", "compression.pp_rank_mode"},
      {"--set compression.dac.enabled=true --set compression.dac.eta_s_per_rank=1e-5 "
       "--set compression.dac.t_uncompressed_s=0.01 --set compression.dac.t_p2p_s=-1",
       "compression.dac.t_p2p_s"},
  };
  for (const auto& [sets, key] : cases) {
    TempDir tmp;
    const Result r = edgc("simulate --scenario " + scenario + " " + sets + " --out " + (tmp / "o").string(), tmp);
    EXPECT_EQ(r.code, 2) << sets << ": " << r.err;
    EXPECT_NE(r.err.find("pipeline-bound.json: " + key), std::string::npos) << sets << ": " << r.err;
    EXPECT_FALSE(fs::exists(tmp / "o")) << sets;
  }
}

}  // namespace
