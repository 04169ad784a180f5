// engine::run_collective_sweep called directly (the `collective` command without its option parsing): the sizes
// nccl-tests would time, the figures of an all-reduce and a reduce-scatter sweep, the writers, and bad requests
// refused before anything is simulated. Each simulation runs in a forked child (SimGrid runs one simulation per
// process), so this binary may hold many tests.
#include "edgc/engine/collective_sweep.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "edgc/core/isolated.hpp"
#include "edgc/results/collective_report.hpp"
#include "refusal.hpp"

namespace edgc::engine {
namespace {

using nlohmann::json;
using test::refusal;

const std::string kSource = EDGC_SOURCE_DIR;

CollectiveRequest h100(const std::string& op, int ranks) {
  CollectiveRequest request;
  request.cluster = kSource + "/scenarios/clusters/dgx-h100.json";
  request.op = op;
  request.ranks = ranks;
  request.min_bytes = "1K";
  request.max_bytes = "1M";
  return request;
}

// The report of run_collective_sweep(request), computed in a child: {"json", "table"}.
json sweep_in_child(const CollectiveRequest& request) {
  const std::vector<std::string> out =
      core::run_isolated({[&] {
                           const results::CollectiveReport report = run_collective_sweep(request);
                           std::ostringstream table;
                           results::print_collective_table(table, report);
                           return json{{"json", results::to_json(report)}, {"table", table.str()}}.dump();
                         }},
                         1);
  return json::parse(out.front());
}

TEST(CollectiveSizes, DoubleFromMinToMaxInWholeFloats) {
  EXPECT_EQ(collective_sizes(1, 10, 2), (std::vector<std::uint64_t>{4, 4, 4, 8}));
  const std::vector<std::uint64_t> sizes = collective_sizes(8, 1ULL << 30, 2);
  ASSERT_EQ(sizes.size(), 28U);
  EXPECT_EQ(sizes.front(), 8U);
  EXPECT_EQ(sizes.back(), 1ULL << 30);
  EXPECT_EQ(collective_sizes(1024, 1024, 4), (std::vector<std::uint64_t>{1024}));
  EXPECT_EQ(collective_sizes(1000, 100000, 10), (std::vector<std::uint64_t>{1000, 10000, 100000}));
}

TEST(RunCollectiveSweep, TimesAnAllReduceAtEverySize) {
  CollectiveRequest request = h100("all_reduce", 16);
  request.placement = "packed";
  const json got = sweep_in_child(request);
  const json& j = got.at("json");
  EXPECT_EQ(j.at("schema"), "edgc.collective/1");
  EXPECT_EQ(j.at("cluster"), "dgx-h100");
  EXPECT_EQ(j.at("op"), "all_reduce");
  EXPECT_EQ(j.at("ranks"), 16);
  EXPECT_EQ(j.at("placement"), "packed");
  EXPECT_EQ(j.at("network"), "ideal");
  const json& rows = j.at("rows");
  ASSERT_EQ(rows.size(), 11U);  // 1 KiB to 1 MiB
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].at("size_bytes"), 1024ULL << i);
    EXPECT_EQ(rows[i].at("count"), (1024ULL << i) / 4);
    const double time_us = rows[i].at("time_us").get<double>();
    EXPECT_GT(time_us, 0.0);
    EXPECT_NEAR(rows[i].at("algbw_GBps").get<double>(), static_cast<double>(1024ULL << i) / (time_us * 1e-6) / 1e9,
                1e-9);
    // all-reduce: busbw = algbw · 2(n-1)/n
    EXPECT_NEAR(rows[i].at("busbw_GBps").get<double>() / rows[i].at("algbw_GBps").get<double>(), 2.0 * 15 / 16, 1e-12);
    if (i > 0) {
      EXPECT_GE(time_us, rows[i - 1].at("time_us").get<double>());
    }
    const std::string algorithm = rows[i].at("algorithm");
    EXPECT_TRUE(algorithm == "ring" || algorithm == "tree") << algorithm;
  }
  const std::string table = got.at("table");
  EXPECT_EQ(table.rfind("# edgc collective: all_reduce on 16 of ", 0), 0U) << table;
  EXPECT_NE(table.find("\n# Avg bus bandwidth    : "), std::string::npos) << table;
}

TEST(RunCollectiveSweep, RunsOtherOperationsOnRings) {
  const json j = sweep_in_child(h100("reduce_scatter", 8)).at("json");
  EXPECT_EQ(j.at("placement"), "spread");
  for (const json& row : j.at("rows")) EXPECT_EQ(row.at("algorithm"), "ring");
}

TEST(RunCollectiveSweep, RefusesBadRequestsBeforeSimulating) {
  CollectiveRequest neither = h100("all_reduce", 8);
  neither.cluster.clear();
  EXPECT_NE(refusal([&] { run_collective_sweep(neither); }).message.find("exactly one of --scenario and --cluster"),
            std::string::npos);
  CollectiveRequest placement = h100("all_reduce", 8);
  placement.placement = "diagonal";
  EXPECT_EQ(refusal([&] { run_collective_sweep(placement); }).field, "--placement");
  CollectiveRequest step = h100("all_reduce", 8);
  step.step_factor = 1;
  EXPECT_EQ(refusal([&] { run_collective_sweep(step); }).field, "--stepfactor");
  CollectiveRequest size = h100("all_reduce", 8);
  size.max_bytes = "1T";
  EXPECT_EQ(refusal([&] { run_collective_sweep(size); }).field, "--maxbytes");
  CollectiveRequest inverted = h100("all_reduce", 8);
  inverted.min_bytes = "2M";
  EXPECT_EQ(refusal([&] { run_collective_sweep(inverted); }).field, "--minbytes");
  CollectiveRequest network = h100("all_reduce", 8);
  network.network = "fast";
  EXPECT_EQ(refusal([&] { run_collective_sweep(network); }).field, "--network");
  CollectiveRequest many = h100("all_reduce", 100000);
  EXPECT_EQ(refusal([&] { run_collective_sweep(many); }).field, "--ranks");
  CollectiveRequest lonely = h100("sendrecv", 1);
  EXPECT_EQ(refusal([&] { run_collective_sweep(lonely); }).field, "--ranks");
}

}  // namespace
}  // namespace edgc::engine
