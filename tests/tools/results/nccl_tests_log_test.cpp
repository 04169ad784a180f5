// The nccl-tests all_reduce_perf log reader (edgc/results/nccl_tests_log.hpp): the bundled logs' rows and ranks,
// NCCL_DEBUG lines skipped and counted, and every malformed row refused naming "file:line" and the column.
#include "edgc/results/nccl_tests_log.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "edgc/core/error.hpp"
#include "expect_error.hpp"
#include "trace_test_util.hpp"

namespace edgc::results {
namespace {

using traces::test::TempDir;
using traces::test::write_file;

const std::string kRow = "        1024   256  float  sum  -1   10.00  0.10  0.18  0   10.00  0.10  0.18  0\n";

TEST(NcclTestsLog, ReadsTheBundledLogs) {
  const std::string dir = std::string(EDGC_SOURCE_DIR) + "/tests/data/nccl/";
  const NcclTestsLog one = read_nccl_tests_log(dir + "h100-1node-8gpu.log");
  EXPECT_EQ(one.ranks, 8);
  ASSERT_EQ(one.rows.size(), 8U);
  EXPECT_EQ(one.rows.front().bytes, 32768.0);
  EXPECT_EQ(one.rows.front().time_us, 40.0);
  EXPECT_EQ(one.rows.front().busbw_GBps, 1.43);
  EXPECT_EQ(one.rows.back().bytes, 17179869184.0);
  EXPECT_EQ(one.skipped, 0);
  EXPECT_EQ(read_nccl_tests_log(dir + "h100-2node-16gpu.log").ranks, 16);
}

TEST(NcclTestsLog, SkipsAndCountsNcclDebugLines) {
  TempDir tmp;
  write_file(tmp / "a.log", "# Rank 0\nh:1:1 [0] NCCL INFO Bootstrap\n" + kRow + "h:1:1 [0] NCCL WARN slow\n");
  const NcclTestsLog log = read_nccl_tests_log((tmp / "a.log").string());
  EXPECT_EQ(log.ranks, 1);
  EXPECT_EQ(log.rows.size(), 1U);
  EXPECT_EQ(log.skipped, 2);
}

TEST(NcclTestsLog, RefusesMalformedRowsNamingTheLineAndColumn) {
  TempDir tmp;
  const std::pair<std::string, std::string> bad[] = {
      {"1024 256 float sum -1 10.0 0.1 0.18 0\n", "a.log:1: expected 13 columns"},
      {"x 256 float sum -1 10 0.1 0.18 0 10 0.1 0.18 0\n", "a.log:1: size: not a positive number"},
      {"1e999 256 float sum -1 10 0.1 0.18 0 10 0.1 0.18 0\n", "a.log:1: size"},
      {"1024 256 float sum -1 0 0.1 0.18 0 10 0.1 0.18 0\n", "a.log:1: time"},
      {"1024 256 float sum -1 10 0.1 nan 0 10 0.1 0.18 0\n", "a.log:1: busbw"},
      {"1024 256 float sum -1 10 0.1 0.18 3 10 0.1 0.18 0\n", "a.log:1: #wrong"},
      {kRow + kRow, "a.log:2: size: sizes must increase"},
      {"# only comments\n\n", "a.log: no all_reduce_perf data rows"},
  };
  for (const auto& [text, message] : bad) {
    write_file(tmp / "a.log", text);
    SCOPED_TRACE(text);
    edgc::test::expect_config_error([&] { read_nccl_tests_log((tmp / "a.log").string()); }, std::nullopt, std::nullopt,
                                    {message});
  }
  EXPECT_THROW(read_nccl_tests_log((tmp / "missing.log").string()), ConfigError);
}

// A log path that names a device (one endless line) is refused after kMaxWholeFileBytes, not read to exhaustion.
TEST(NcclTestsLog, ALogPastTheSizeLimitIsRefused) {
  if (!std::filesystem::exists("/dev/zero")) GTEST_SKIP() << "no /dev/zero";
  edgc::test::expect_config_error([] { read_nccl_tests_log("/dev/zero"); }, "/dev/zero", "",
                                  {"larger than 256 MiB, more than any nccl-tests log holds"});
}

}  // namespace
}  // namespace edgc::results
