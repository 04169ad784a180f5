// `edgc breakeven` end to end on the small whole-run scenario: the found bandwidth's saving, checked by an
// independent simulate run, the zero crossing's bracket, the curve files, and the refusals (exit 2, no output).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "cli_test_util.hpp"

namespace {

using edgc::cli::test::edgc;
using edgc::traces::test::read_file;
using edgc::traces::test::TempDir;
using nlohmann::json;

const std::string kSmall = std::string(EDGC_SOURCE_DIR) + "/tests/data/simulate/small.json";
const std::string kKey = "cluster.inter_node.nic_bandwidth_GBps";

// The saving of edgc against none, %, from a plain simulate run at `value`.
double simulated_saving(const TempDir& tmp, const std::string& dir, double value) {
  std::ostringstream v;
  v.precision(17);
  v << value;
  const auto r = edgc("simulate --scenario " + kSmall + " --set " + kKey + "=" + v.str() +
                          " --policies none,edgc --quiet --jobs 2 --out " + (tmp / dir).string(),
                      tmp);
  EXPECT_EQ(r.code, 0) << r.err;
  const json result = json::parse(read_file(tmp / dir / "result.json"));
  double none = 0.0, edgc_time = 0.0;
  for (const json& run : result["runs"]) {
    if (run["policy"] == "none") none = run["training_time_s"];
    if (run["policy"] == "edgc") edgc_time = run["training_time_s"];
  }
  return 100.0 * (1.0 - edgc_time / none);
}

TEST(BreakevenCli, FindsTheBandwidthOfATargetSavingAndOfNoSaving) {
  TempDir tmp;
  const auto out = tmp / "be";
  const auto r = edgc("breakeven --scenario " + kSmall + " --vary " + kKey +
                          " --target 30 --lo 0.05 --hi 2000 --jobs 2 --out " + out.string(),
                      tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  const json doc = json::parse(read_file(out / "breakeven.json"));
  EXPECT_EQ(doc["schema"], "edgc.breakeven/1");
  EXPECT_NE(doc["assumption"].get<std::string>().find("monotone"), std::string::npos);
  const double tol = doc["tolerance_pct"];
  const json& target = doc["target"];
  ASSERT_TRUE(target["converged"].get<bool>()) << target;
  const double found = target["value"];
  EXPECT_GT(found, 0.05);
  EXPECT_LT(found, 2000.0);
  EXPECT_NEAR(target["saving_pct"].get<double>(), 30.0, tol);
  // The figure holds outside the search: simulate at the found bandwidth saves the target within tolerance.
  EXPECT_NEAR(simulated_saving(tmp, "check", found), 30.0, tol);
  // Slower NICs make the DP sync a larger share, so the saving falls as the bandwidth rises over the curve.
  const json& curve = doc["curve"];
  ASSERT_GE(curve.size(), 3U);
  EXPECT_TRUE(doc["monotone"].get<bool>());
  EXPECT_GT(curve.front()["saving_pct"].get<double>(), curve.back()["saving_pct"].get<double>());
  // At 2000 GB/s compression costs more than it saves, so the bracket holds a 0 % crossing too, located on sign.
  ASSERT_FALSE(doc["zero"]["value"].is_null()) << doc["zero"];
  EXPECT_GT(doc["zero"]["value"].get<double>(), found);
  // Each crossing lies between two simulated values whose savings straddle it.
  for (const char* which : {"target", "zero"}) {
    const json& c = doc[which];
    if (c["value"].is_null()) continue;
    const double sought = c["saving_pct_sought"];
    double s_lo = NAN, s_hi = NAN;
    for (const json& p : curve) {
      if (p["value"] == c["bracket"][0]) s_lo = p["saving_pct"];
      if (p["value"] == c["bracket"][1]) s_hi = p["saving_pct"];
    }
    EXPECT_LE((s_lo - sought) * (s_hi - sought), 0.0) << which << " " << c;
  }
  // curve.csv: a header and one row per simulated value.
  std::ifstream csv(out / "curve.csv");
  std::string line;
  std::size_t rows = 0;
  std::getline(csv, line);
  EXPECT_EQ(line, "value,none_training_time_s,edgc_training_time_s,saving_pct");
  while (std::getline(csv, line)) ++rows;
  EXPECT_EQ(rows, curve.size());
  // curve.svg: one point per simulated value, the target as the threshold line.
  const std::string svg = read_file(out / "curve.svg");
  std::size_t points = 0;
  for (std::size_t at = svg.find("<circle class=\"mark point\""); at != std::string::npos;
       at = svg.find("<circle class=\"mark point\"", at + 1))
    ++points;
  EXPECT_EQ(points, curve.size());
  EXPECT_NE(svg.find("target 30 %"), std::string::npos);
  EXPECT_NE(r.out.find("saves 30.0 %: " + kKey + " ≈ "), std::string::npos) << r.out;
}

TEST(BreakevenCli, RefusesABracketWithoutTheTargetAndBadInputWithoutOutput) {
  TempDir tmp;
  const auto out = tmp / "be";
  auto r = edgc("breakeven --scenario " + kSmall + " --vary " + kKey + " --target 99 --lo 0.5 --hi 2 --jobs 2 --out " +
                    out.string(),
                tmp);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--target"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("does not contain a 99.0 % saving"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("monotone"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));

  r = edgc("breakeven --scenario " + kSmall + " --vary cluster.inter_node.nic_bandwith_GBps --target 5 --out " +
               out.string(),
           tmp);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("nic_bandwith_GBps"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));

  r = edgc("breakeven --scenario " + kSmall + " --vary " + kKey + " --target 5 --lo 4 --hi 2 --out " + out.string(),
           tmp);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--lo"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));

  r = edgc("breakeven --scenario " + kSmall + " --vary " + kKey + " --target 5 --policy none", tmp);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--policy"), std::string::npos) << r.err;
}

// simulate's verdict names the bandwidth at which a policy that does not pay would (result.json's bandwidth), and an
// independent simulate there saves the threshold within the stated tolerance; where every policy pays, the curve has
// the scenario's bandwidth with its quarter and quadruple and no verdict names a bandwidth.
TEST(BreakevenCli, SimulateNamesTheBandwidthAtWhichItWouldPay) {
  TempDir tmp;
  const auto r = edgc("simulate --scenario " + kSmall + " --set " + kKey + "=100 --policies none,edgc --jobs 2 --out " +
                          (tmp / "fast").string(),
                      tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  const json result = json::parse(read_file(tmp / "fast" / "result.json"));
  const json& b = result["bandwidth"];
  EXPECT_EQ(b["key"], kKey);
  EXPECT_EQ(b["scenario_value"], 100.0);
  EXPECT_EQ(b["gpus_per_nic"], 4.0);
  const json& edgc_entry = b["policies"][0];
  EXPECT_EQ(edgc_entry["policy"], "edgc");
  EXPECT_FALSE(edgc_entry["pays_at_scenario_value"].get<bool>());
  ASSERT_TRUE(edgc_entry["found"].get<bool>()) << b;
  ASSERT_TRUE(edgc_entry["converged"].get<bool>()) << b;
  const double found = edgc_entry["value"];
  EXPECT_LT(found, 100.0);
  const double tol = b["tolerance_pct"];
  EXPECT_NEAR(simulated_saving(tmp, "check", found), 2.0, tol);
  // The verdict quotes it, per NIC and per GPU (4 GPUs share the NIC), to 3 significant digits.
  const std::string text = result["verdict"]["runs"][0]["text"];
  char figure[64];
  std::snprintf(figure, sizeof figure, "%.3g GB/s per NIC (%.3g GB/s", found, found / 4.0);
  EXPECT_NE(text.find(std::string("It would pay (save 2.00 %) at a NIC bandwidth of ") + figure), std::string::npos)
      << text;
  EXPECT_NE(r.out.find(figure), std::string::npos) << r.out;
  EXPECT_EQ(text.find("edgc breakeven"), std::string::npos) << text;
  // The scenario's own run is the curve's first point: no simulation spent on it.
  EXPECT_EQ(b["simulations"].get<std::size_t>() + 1, b["curve"].size());

  const auto pays = edgc(
      "simulate --scenario " + kSmall + " --policies none,edgc --jobs 2 --quiet --out " + (tmp / "slow").string(), tmp);
  ASSERT_EQ(pays.code, 0) << pays.err;
  const json paid = json::parse(read_file(tmp / "slow" / "result.json"));
  ASSERT_EQ(paid["bandwidth"]["curve"].size(), 3U);
  EXPECT_EQ(paid["bandwidth"]["curve"][0]["value"], 0.25);
  EXPECT_EQ(paid["bandwidth"]["curve"][2]["value"], 4.0);
  EXPECT_TRUE(paid["bandwidth"]["policies"][0]["pays_at_scenario_value"].get<bool>());
  EXPECT_EQ(paid["verdict"]["runs"][0]["text"].get<std::string>().find("NIC bandwidth"), std::string::npos);
  // --no-bandwidth-curve leaves the section out.
  const auto off =
      edgc("simulate --scenario " + kSmall + " --set " + kKey +
               "=100 --policies none,edgc --jobs 2 --quiet --no-bandwidth-curve --out " + (tmp / "off").string(),
           tmp);
  ASSERT_EQ(off.code, 0) << off.err;
  const json plain = json::parse(read_file(tmp / "off" / "result.json"));
  EXPECT_FALSE(plain.contains("bandwidth"));
  EXPECT_NE(plain["verdict"]["runs"][0]["text"].get<std::string>().find("edgc breakeven"), std::string::npos);
}

}  // namespace
