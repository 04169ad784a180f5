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
#include <utility>
#include <vector>

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
// The trace's own settings (ranks up to 12 on its 64x64 matrices): the defaults' r_max 128 is refused for it.
const std::string kReplayScenario = std::string(EDGC_SOURCE_DIR) + "/scenarios/replay/tinygpt-licenses.json";

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
  const CliRun r = edgc_nccl("replay --scenario " + kReplayScenario + " --backend cuda --out " + gpu.string(), tmp);
  if (r.code != 0) {
    // No usable GPU (the CUDA runtime says why, e.g. cudaErrorNoDevice or cudaErrorInsufficientDriver).
    expect_refusal(r, "--backend", gpu, "CUDA device");
    expect_refusal(edgc_nccl("live --scenario " + kLiveScenario + " --backend cuda --out " + gpu.string(), tmp),
                   "--backend", gpu, "CUDA device");
    return;
  }
  // A GPU: the same windows and decisions as the CPU replay, and (to float rounding) the same entropies, which are
  // statistics of the trace's gradients. The compression error carries the whole history of warm-started Q and error
  // feedback: the backends' last-bit differences (per step within 1e-4, gpu.CudaPowerSgd.*) grow through it, so
  // windows drift apart (up to 2.9 % relative on an H100 against its host's CPU backend) while each stage's mean over
  // the run stays close (within 0.6 %). Bounds: 10 % per window, 2 % on the stage means.
  const fs::path cpu = tmp / "cpu";
  const CliRun c = edgc("replay --scenario " + kReplayScenario + " --out " + cpu.string(), tmp);
  ASSERT_EQ(c.code, 0) << c.err;
  const json jg = json::parse(read_file(gpu / "replay.json"));
  const json jc = json::parse(read_file(cpu / "replay.json"));
  EXPECT_EQ(jg["scenario"]["replay"]["backend"], "cuda");
  ASSERT_EQ(jg["windows"].size(), jc["windows"].size());
  std::vector<double> sum_gpu, sum_cpu;
  for (std::size_t w = 0; w < jc["windows"].size(); ++w)
    for (std::size_t s = 0; s < jc["windows"][w]["stages"].size(); ++s) {
      const json& g = jg["windows"][w]["stages"][s];
      const json& h = jc["windows"][w]["stages"][s];
      EXPECT_EQ(g["rank"], h["rank"]) << "window " << w << " stage " << s;
      for (const auto& [key, tol] : {std::pair{"entropy_gaussian", 1e-3}, std::pair{"relative_error", 0.1}}) {
        ASSERT_EQ(g[key].is_number(), h[key].is_number()) << key;
        if (h[key].is_number()) {
          EXPECT_NEAR(g[key].get<double>(), h[key].get<double>(), tol * std::abs(h[key].get<double>()) + 1e-9)
              << key << " window " << w << " stage " << s;
        }
      }
      if (h["relative_error"].is_number()) {
        sum_gpu.resize(std::max(sum_gpu.size(), s + 1), 0.0);
        sum_cpu.resize(sum_gpu.size(), 0.0);
        sum_gpu[s] += g["relative_error"].get<double>();
        sum_cpu[s] += h["relative_error"].get<double>();
      }
    }
  ASSERT_FALSE(sum_cpu.empty());
  for (std::size_t s = 0; s < sum_cpu.size(); ++s)
    EXPECT_NEAR(sum_gpu[s], sum_cpu[s], 0.02 * sum_cpu[s]) << "stage " << s << " mean relative error";
}
#endif

}  // namespace
