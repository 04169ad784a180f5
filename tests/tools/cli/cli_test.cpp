// The edgc binary as users meet it: exit codes, one-line errors naming file and field, no partial output.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_test_util.hpp"

namespace {

using edgc::cli::test::CliRun;
using edgc::cli::test::edgc;
using edgc::traces::test::read_file;
using edgc::traces::test::TempDir;

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(Cli, HelpOnEverySubcommandExitsZero) {
  TempDir tmp;
  for (const char* c : {"--help", "trace inspect --help", "trace synth --help", "version --help", "trace --help"}) {
    const CliRun r = edgc(c, tmp);
    EXPECT_EQ(r.code, 0) << c << ": " << r.err;
    EXPECT_NE(r.out.find("usage"), std::string::npos) << c;
  }
}

TEST(Cli, BadUsageExitsTwoWithOneLine) {
  TempDir tmp;
  for (const char* c : {"", "frobnicate", "trace frob", "trace inspect", "trace inspect x --no-such-flag",
                        "trace synth --out x --dtype f64", "trace synth --out x --shapes 3xq",
                        "trace synth --out x --iterations 0", "trace synth --out x --layers notanumber",
                        // shapes past what a trace may hold (2^42 elements), past 64 bits, or negative
                        "trace synth --out x --shapes 4294967296x4294967296",
                        "trace synth --out x --shapes 18446744073709551616x1", "trace synth --out x --shapes 8x-8"}) {
    const CliRun r = edgc(c, tmp);
    EXPECT_EQ(r.code, 2) << c;
    if (std::string(c).empty()) continue;  // bare `edgc` prints usage
    EXPECT_EQ(count_lines(r.err), 1) << c << ": " << r.err;
    EXPECT_EQ(r.err.rfind("edgc: error: ", 0), 0u) << r.err;
    EXPECT_TRUE(r.out.empty()) << c;
  }
  EXPECT_FALSE(std::filesystem::exists("x"));
  const CliRun big = edgc("trace synth --out x --shapes 4294967296x4294967296", tmp);
  EXPECT_NE(big.err.find("--shapes: '4294967296x4294967296' has more than 2^42 elements"), std::string::npos)
      << big.err;
}

TEST(Cli, SynthThenInspectJsonIsKeyedByIterationAndTensor) {
  TempDir tmp;
  const auto dir = tmp / "t";
  ASSERT_EQ(edgc("trace synth --out " + dir.string() +
                     " --iterations 3 --stride 5 --layers 2 --stages 2 "
                     "--shapes 32x48,48 --mode blocks --fraction 0.5 --block-elems 64 --dtype bf16",
                 tmp)
                .code,
            0);
  const CliRun r = edgc("trace inspect " + dir.string() + " --json", tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "edgc.trace_inspect/1");
  ASSERT_EQ(j["tensors"].size(), 4u);
  EXPECT_EQ(j["tensors"][0]["numel"], 32 * 48);
  EXPECT_EQ(j["tensors"][0]["captured_elems"], 768);  // 12 of 24 blocks of 64
  for (const char* it : {"0", "5", "10"}) {
    ASSERT_TRUE(j["iterations"].contains(it)) << it;
    const auto& s = j["iterations"][it]["tensors"]["layers.1.attn.qkv.weight"];
    EXPECT_EQ(s["count"], 768);
    EXPECT_GT(s["std"].get<double>(), 0.0);
    EXPECT_EQ(s["nan"], 0);
  }
  const CliRun text = edgc("trace inspect " + dir.string(), tmp);
  EXPECT_EQ(text.code, 0);
  EXPECT_NE(text.out.find("per-stage trend"), std::string::npos);
}

TEST(Cli, CorruptIterationGivesExitTwoNamingTheFileAndNoPartialOutput) {
  TempDir tmp;
  const auto dir = tmp / "t";
  ASSERT_EQ(edgc("trace synth --out " + dir.string() + " --iterations 4 --layers 1 --stages 1 --shapes 8x8", tmp).code,
            0);
  // Damage the last iteration only: inspect must print nothing at all, not three good iterations and an error.
  const auto last = dir / "iter_000003.safetensors";
  std::filesystem::resize_file(last, std::filesystem::file_size(last) - 10);
  for (const char* flags : {"", " --json"}) {
    const CliRun r = edgc("trace inspect " + dir.string() + flags, tmp);
    EXPECT_EQ(r.code, 2);
    EXPECT_TRUE(r.out.empty());
    EXPECT_NE(r.err.find(last.string()), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
    EXPECT_EQ(count_lines(r.err), 1);
  }
}

TEST(Cli, SynthRefusesANonEmptyOutputAndLeavesItUntouched) {
  TempDir tmp;
  const auto dir = tmp / "busy";
  std::filesystem::create_directories(dir);
  edgc::traces::test::write_file(dir / "keep.txt", "mine");
  const CliRun r = edgc("trace synth --out " + dir.string(), tmp);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(dir.string()), std::string::npos);
  EXPECT_EQ(read_file(dir / "keep.txt"), "mine");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(tmp.path())) ++entries;
  EXPECT_EQ(entries, 3u);  // busy/, stdout.txt, stderr.txt: no staging directory left behind
}

TEST(Cli, VersionReportsTheLinkedSimGrid) {
  TempDir tmp;
  const CliRun r = edgc("version --json", tmp);
  ASSERT_EQ(r.code, 0);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["trace_format_version"].dump(), "1.1");
  EXPECT_EQ(j["simgrid"].get<std::string>().rfind("3.", 0), 0u);
}

TEST(Cli, CqmPrintsTheRankErrorModel) {
  TempDir tmp;
  const CliRun r = edgc("cqm --m 1920 --n 1920 --rmax 128 --json", tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "edgc.cqm/1");
  ASSERT_EQ(j["rows"].size(), 128u);
  const auto& last = j["rows"][127];
  EXPECT_EQ(last["r"], 128);
  EXPECT_NEAR(last["g"].get<double>(), 0.778, 0.002);
  EXPECT_NEAR(last["captured"].get<double>(), 1.0 - last["g"].get<double>(), 1e-12);
  EXPECT_DOUBLE_EQ(last["compression_ratio"].get<double>(), 1920.0 * 1920.0 / (3840.0 * 128.0));

  const CliRun bad = edgc("cqm --m 0 --n 5", tmp);
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(count_lines(bad.err), 1) << bad.err;
  EXPECT_NE(bad.err.find("--m"), std::string::npos) << bad.err;
  EXPECT_TRUE(bad.out.empty());
}

TEST(Cli, CollectiveMatchesTheRingClosedFormOnTheIdealNetwork) {
  TempDir tmp;
  const std::string cluster = std::string(EDGC_SOURCE_DIR) + "/scenarios/clusters/dgx-h100.json";
  const CliRun r = edgc("collective --scenario " + cluster + " --op all_reduce --ranks 8 --maxbytes 1M --json", tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "edgc.collective/1");
  const auto& last = j["rows"].back();
  ASSERT_EQ(last["size_bytes"], 1u << 20);
  // Spread placement: every ring hop crosses the fabric, NIC bandwidth B and NIC-to-NIC latency L from the file.
  const auto spec = nlohmann::json::parse(read_file(cluster))["cluster"]["inter_node"];
  const double b = spec["nic_bandwidth_GBps"].get<double>() * 1e9;
  const double l = spec["latency_us"].get<double>() * 1e-6;
  const double n = 8;
  const double s = 1 << 20;
  const double t = 2 * (n - 1) / n * s / b + 2 * (n - 1) * l;
  const double busbw_GBps = s / t * 2 * (n - 1) / n / 1e9;
  EXPECT_NEAR(last["busbw_GBps"].get<double>() / busbw_GBps, 1.0, 0.01);

  for (const std::string bad : {"--ranks 8 --set cluster.inter_node.nics_per_node=3", "--ranks 8 --op frob",
                                "--ranks 65", "--ranks 8 --maxbytes 1Q", "--ranks 8 --network fast"}) {
    const CliRun e = edgc("collective --scenario " + cluster + " " + bad, tmp);
    EXPECT_EQ(e.code, 2) << bad;
    EXPECT_EQ(count_lines(e.err), 1) << bad << ": " << e.err;
    EXPECT_TRUE(e.out.empty()) << bad;
  }
  const CliRun e =
      edgc("collective --scenario " + cluster + " --ranks 8 --set cluster.inter_node.nics_per_node=3", tmp);
  EXPECT_NE(e.err.find("cluster.inter_node.nics_per_node"), std::string::npos) << e.err;
}

TEST(Cli, CalibrateFitsNcclTestsLogsAndRejectsMalformedOnes) {
  TempDir tmp;
  const std::string src = EDGC_SOURCE_DIR;
  const std::string cluster = " --cluster " + src + "/scenarios/clusters/dgx-h100.json";
  const std::string out = (tmp / "cal.json").string();
  const CliRun r = edgc("calibrate" + cluster + " --nccl-tests " + src + "/tests/data/nccl/h100-1node-8gpu.log" +
                            " --nccl-tests " + src + "/tests/data/nccl/h100-2node-16gpu.log --out " + out,
                        tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(read_file(out));
  EXPECT_EQ(j["schema"], "edgc.calibration/1");
  EXPECT_EQ(j["algorithm"], "auto");
  // The round trip: every row of the two-node log simulated with the fitted profile (8 channels, trees) is the
  // measured time. Inside a node the log's busbw exceeds what a ring over NVLink can carry above ~256 MiB (NVLS,
  // in-switch reduction, not modelled): efficiency is capped at 1 there and the error shows in the round trip.
  for (const auto& row : j["inter"]["round_trip"]) {
    EXPECT_NEAR(row["error"].get<double>(), 0.0, 0.01) << row.dump();
    EXPECT_EQ(row["algorithm"], "tree") << row.dump();
  }
  for (const auto& row : j["intra"]["round_trip"]) {
    EXPECT_NEAR(row["error"].get<double>(), 0.0, row["bytes"].get<double>() < 2.6e8 ? 0.01 : 0.08) << row.dump();
    EXPECT_EQ(row["algorithm"], "ring") << row.dump();
  }
  EXPECT_NE(r.out.find("largest |error| 0.0 %"), std::string::npos) << r.out;
  // The fitted profile predicts the 2-node log's 1 GiB all-reduce (6,756 us measured; one ring on one NIC per
  // node, as the simulator ran it before channels, gave 53 ms).
  const CliRun coll = edgc("collective" + cluster + " --set cluster.nodes=2 --set network.profile=calibrated" +
                               " --set network.calibration=" + out +
                               " --ranks 16 --placement packed --minbytes 1G --maxbytes 1G --json",
                           tmp);
  ASSERT_EQ(coll.code, 0) << coll.err;
  const auto cj = nlohmann::json::parse(coll.out);
  EXPECT_NEAR(cj["rows"][0]["time_us"].get<double>() / 6755.93, 1.0, 0.01) << coll.out;
  EXPECT_EQ(cj["channels"], 8);

  edgc::traces::test::write_file(tmp / "bad.log",
                                 "# Rank 0\n# Rank 1\n        8   2  float  sum  -1  10.0  0.00  0.00  0\n");
  const CliRun bad = edgc(
      "calibrate" + cluster + " --nccl-tests " + (tmp / "bad.log").string() + " --out " + (tmp / "x.json").string(),
      tmp);
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(count_lines(bad.err), 1) << bad.err;
  EXPECT_NE(bad.err.find("bad.log:3"), std::string::npos) << bad.err;
  EXPECT_FALSE(std::filesystem::exists(tmp / "x.json"));
}

TEST(Cli, CalibrateSkipsNcclDebugLinesAndRefusesABandwidthAboveTheLineRate) {
  TempDir tmp;
  const std::string src = EDGC_SOURCE_DIR;
  const std::string cluster = " --cluster " + src + "/scenarios/clusters/dgx-h100.json";
  const std::string log = read_file(src + "/tests/data/nccl/h100-1node-8gpu.log");
  // The same log as NCCL_DEBUG=INFO prints it: debug lines before and between the rows.
  std::string noisy = "node0:1000:1000 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n";
  for (std::size_t at = 0, next; at < log.size(); at = next + 1) {
    next = log.find('\n', at);
    noisy += log.substr(at, next - at + 1);
    if (log[at] != '#') noisy += "node0:1003:1003 [3] NCCL WARN Cuda failure 'out of memory' (retrying)\n";
  }
  edgc::traces::test::write_file(tmp / "noisy.log", noisy);
  ASSERT_EQ(edgc("calibrate" + cluster + " --nccl-tests " + src + "/tests/data/nccl/h100-1node-8gpu.log" + " --out " +
                     (tmp / "a.json").string(),
                 tmp)
                .code,
            0);
  const CliRun r = edgc(
      "calibrate" + cluster + " --nccl-tests " + (tmp / "noisy.log").string() + " --out " + (tmp / "b.json").string(),
      tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("skipped 9 NCCL INFO/WARN lines"), std::string::npos) << r.out;
  const auto a = nlohmann::json::parse(read_file(tmp / "a.json"));
  const auto b = nlohmann::json::parse(read_file(tmp / "b.json"));
  EXPECT_EQ(a["intra"]["points"], b["intra"]["points"]);  // the same fit as the clean log

  // 220 GB/s at 16 MiB against a cluster whose NVLink is set to 100 GB/s, 175 GB/s with in-switch reduction over 8
  // GPUs: another machine's log.
  const CliRun fast = edgc("calibrate" + cluster + " --set cluster.intra_node.bandwidth_GBps=100 --nccl-tests " +
                               (tmp / "noisy.log").string() + " --out " + (tmp / "c.json").string(),
                           tmp);
  EXPECT_EQ(fast.code, 2) << fast.err;
  EXPECT_EQ(count_lines(fast.err), 1) << fast.err;
  EXPECT_NE(fast.err.find("noisy.log: busbw: measured "), std::string::npos) << fast.err;
  EXPECT_NE(fast.err.find("219.9 GB/s at 1.678e+07 bytes"), std::string::npos) << fast.err;  // the first such row
  EXPECT_NE(fast.err.find("above the cluster's line rate 100 GB/s x 1.75"), std::string::npos) << fast.err;
  EXPECT_FALSE(std::filesystem::exists(tmp / "c.json"));
}

}  // namespace
