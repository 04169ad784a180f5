// `--backend cuda` for `replay` and `live`. Plain edgc does not link the CUDA backend: it must refuse with one
// line naming the option (or the scenario key it came from), exit 2 and no output, on any machine. edgc-nccl links
// it: without a usable GPU it refuses the same way; with one, `replay --backend cuda` runs on the GPU and takes the
// decisions the CPU replay takes.
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_test_util.hpp"

namespace {

namespace fs = std::filesystem;
using edgc::cli::test::CliRun;
using edgc::cli::test::edgc;
using edgc::traces::test::read_file;
using edgc::traces::test::TempDir;
using nlohmann::json;

const std::string kTrace = std::string(EDGC_SOURCE_DIR) + "/traces/bundled/tinygpt-licenses";
const std::string kLiveScenario = std::string(EDGC_SOURCE_DIR) + "/scenarios/live/tinygpt-cpu.json";

// One line on stderr, ending in a newline.
bool one_line(const std::string& err) {
  return !err.empty() && err.back() == '\n' && std::count(err.begin(), err.end(), '\n') == 1;
}

void expect_refusal(const CliRun& r, const std::string& field, const fs::path& out, const std::string& why) {
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(one_line(r.err)) << r.err;
  EXPECT_NE(r.err.find(field + ": cuda: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out)) << out;
}

TEST(BackendCuda, PlainEdgcRefusesInOneLineNamingTheOption) {
  TempDir tmp;
  const fs::path out = tmp / "out";
  // What plain edgc says it lacks: the CUDA backend in a build with CUDA (edgc-nccl has it), CUDA itself otherwise.
  const std::string why = EDGC_BUILT_WITH_CUDA ? "edgc-nccl" : "no CUDA";
  expect_refusal(edgc("replay --trace " + kTrace + " --backend cuda --out " + out.string(), tmp), "--backend", out,
                 why);
  const CliRun by_key = edgc("replay --trace " + kTrace + " --set replay.backend=cuda --out " + out.string(), tmp);
  expect_refusal(by_key, "replay.backend", out, why);
#ifdef EDGC_MPIEXEC
  expect_refusal(edgc("live --scenario " + kLiveScenario + " --backend cuda --out " + out.string(), tmp), "--backend",
                 out, why);
  const CliRun live_key =
      edgc("live --scenario " + kLiveScenario + " --set live.backend=cuda --out " + out.string(), tmp);
  expect_refusal(live_key, "live.backend", out, why);
  EXPECT_NE(live_key.err.find(kLiveScenario), std::string::npos) << live_key.err;
#endif
  // Any other name is refused by name as well.
  const CliRun other = edgc("replay --trace " + kTrace + " --backend gpu9000 --out " + out.string(), tmp);
  EXPECT_EQ(other.code, 2);
  EXPECT_NE(other.err.find("--backend: gpu9000: unknown backend"), std::string::npos) << other.err;
}

#ifdef EDGC_NCCL_BINARY
CliRun edgc_nccl(const std::string& args, const TempDir& tmp) {
  const auto out = tmp / "nccl-stdout.txt";
  const auto err = tmp / "nccl-stderr.txt";
  const std::string cmd = std::string(EDGC_NCCL_BINARY) + " " + args + " >" + out.string() + " 2>" + err.string();
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_file(out), read_file(err)};
}

TEST(BackendCuda, EdgcNcclRunsReplayOnTheGpuOrRefusesWithoutOne) {
  TempDir tmp;
  const fs::path gpu = tmp / "gpu";
  const CliRun r = edgc_nccl("replay --trace " + kTrace + " --backend cuda --out " + gpu.string(), tmp);
  if (r.code != 0) {
    // No usable GPU (the CUDA runtime says why, e.g. cudaErrorNoDevice or cudaErrorInsufficientDriver).
    expect_refusal(r, "--backend", gpu, "CUDA device");
    expect_refusal(edgc_nccl("live --scenario " + kLiveScenario + " --backend cuda --out " + gpu.string(), tmp),
                   "--backend", gpu, "CUDA device");
    return;
  }
  // A GPU: the same windows, decisions and (to float rounding) entropies as the CPU replay.
  const fs::path cpu = tmp / "cpu";
  const CliRun c = edgc("replay --trace " + kTrace + " --out " + cpu.string(), tmp);
  ASSERT_EQ(c.code, 0) << c.err;
  const json jg = json::parse(read_file(gpu / "replay.json"));
  const json jc = json::parse(read_file(cpu / "replay.json"));
  EXPECT_EQ(jg["scenario"]["replay"]["backend"], "cuda");
  ASSERT_EQ(jg["windows"].size(), jc["windows"].size());
  for (std::size_t w = 0; w < jc["windows"].size(); ++w)
    for (std::size_t s = 0; s < jc["windows"][w]["stages"].size(); ++s) {
      const json& g = jg["windows"][w]["stages"][s];
      const json& h = jc["windows"][w]["stages"][s];
      EXPECT_EQ(g["rank"], h["rank"]) << "window " << w << " stage " << s;
      for (const char* key : {"entropy_gaussian", "relative_error"}) {
        ASSERT_EQ(g[key].is_number(), h[key].is_number()) << key;
        if (h[key].is_number()) {
          EXPECT_NEAR(g[key].get<double>(), h[key].get<double>(), 1e-3 * std::abs(h[key].get<double>()) + 1e-9)
              << key << " window " << w << " stage " << s;
        }
      }
    }
}
#endif

}  // namespace
