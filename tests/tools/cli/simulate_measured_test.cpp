// simulate of the tiny-GPT scenario (scenarios/whatif/tinygpt-2x1-converge.json) shows, beside each policy's
// gradient error, the validation-loss change the bundled convergence records measured (the match rule of
// results/convergence.hpp): on the console, in result.json and in the report with the loss curves; a run whose
// settings differ says why no record matches.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_test_util.hpp"

namespace {

using edgc::cli::test::edgc;
using edgc::traces::test::read_file;
using edgc::traces::test::TempDir;
using edgc::traces::test::write_file;
using nlohmann::json;

const std::string kTiny = std::string(EDGC_SOURCE_DIR) + "/scenarios/whatif/tinygpt-2x1-converge.json";

TEST(SimulateMeasured, TheTinyGptScenarioShowsTheMeasuredLossPerPolicy) {
  TempDir tmp;
  const auto r = edgc(
      "simulate --scenario " + kTiny + " --jobs 2 --no-bandwidth-curve --report --out " + (tmp / "tiny").string(), tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("measured loss (convergence records"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("- edgc: validation loss +0.0081 (seed 0), +0.018 (seed 1) against none, measured on a "
                       "4-layer GPT (d_model 64, 4 heads, seq_len 128) over 300 steps on 2 ranks"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("- edgc-megatron: validation loss +0.097 (seed 0) against none"), std::string::npos) << r.out;
  const json result = json::parse(read_file(tmp / "tiny" / "result.json"));
  for (const json& run : result["runs"]) {
    if (run["policy"] == "none") {
      EXPECT_FALSE(run.contains("measured_loss"));
      continue;
    }
    ASSERT_TRUE(run.contains("measured_loss")) << run["policy"];
    EXPECT_GT(run["measured_loss"]["change"].get<double>(), 0.0) << run["policy"];
  }
  const std::string html = read_file(tmp / "tiny" / "report.html");
  EXPECT_NE(html.find("Measured validation loss against none"), std::string::npos);
  EXPECT_NE(html.find("id=\"simulate-loss-1\""), std::string::npos);
  EXPECT_NE(html.find("id=\"simulate-loss-2\""), std::string::npos);

  // Other settings: no record matches, and the section says why.
  const auto other = edgc("simulate --scenario " + kTiny +
                              " --set compression.window=50 --jobs 2 "
                              "--no-bandwidth-curve --quiet --out " +
                              (tmp / "other").string(),
                          tmp);
  ASSERT_EQ(other.code, 0) << other.err;
  const json o = json::parse(read_file(tmp / "other" / "result.json"));
  EXPECT_EQ(o["convergence"]["records"][0]["mismatches"]["edgc"], "compression.window 50, the record's 20");
  for (const json& run : o["runs"]) EXPECT_FALSE(run.contains("measured_loss")) << run["policy"];
}

// A sweep's rows carry the measured loss per policy where the same rule matches: at window 20 (the records'), not at
// window 50.
TEST(SimulateMeasured, SweepRowsCarryTheMeasuredLossWhereTheRuleMatches) {
  TempDir tmp;
  write_file(tmp / "spec.json", R"({"base": ")" + kTiny +
                                    R"(", "policies": "none,edgc", "mode": "grid",
                                       "axes": [{"key": "compression.window", "values": [20, 50]}]})");
  const auto r =
      edgc("sweep --spec " + (tmp / "spec.json").string() + " --jobs 2 --quiet --out " + (tmp / "sweep").string(), tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream lines(read_file(tmp / "sweep" / "results.jsonl"));
  std::string line;
  int rows = 0;
  while (std::getline(lines, line)) {
    const json row = json::parse(line);
    ++rows;
    if (row["params"]["compression.window"] == 20) {
      ASSERT_TRUE(row.contains("measured_val_loss_change")) << line;
      EXPECT_NEAR(row["measured_val_loss_change"]["edgc"].get<double>(), (0.008062 + 0.017790) / 2, 1e-5);
    } else {
      EXPECT_FALSE(row.contains("measured_val_loss_change")) << line;
    }
  }
  EXPECT_EQ(rows, 2);
}

}  // namespace
