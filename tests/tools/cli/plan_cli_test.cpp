// `edgc plan` end to end on two small clusters: options and infeasible combinations, ranking, the Pareto
// front against brute force, the verdict on where compression pays, token targets, and rejections.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include <gtest/gtest.h>

#include "cli_test_util.hpp"

namespace {

using edgc::cli::test::edgc;
using edgc::traces::test::read_file;
using edgc::traces::test::TempDir;
using nlohmann::json;

const std::string kPlanDir = std::string(EDGC_SOURCE_DIR) + "/tests/data/plan/";

TEST(PlanCli, RanksOptionsMarksTheParetoFrontAndSaysWhereCompressionPays) {
  TempDir tmp;
  const auto out = tmp / "plan";
  const auto r = edgc("plan --spec " + kPlanDir + "small-plan.json --out " + out.string() + " --jobs 2 --report", tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  const json plan = json::parse(read_file(out / "plan.json"));
  EXPECT_EQ(plan["schema"], "edgc.plan/1");
  EXPECT_EQ(plan["target"]["iterations"], 240);
  // 2 clusters x 3 GPU counts x 2 layouts = 12 combinations; tp 4 x pp 2 cannot use 12 GPUs (2), and dp 3 does
  // not divide the global batch of 16 (2 more): 8 options x 2 policies.
  const json& options = plan["options"];
  ASSERT_EQ(options.size(), 16U);
  ASSERT_EQ(plan["infeasible"].size(), 4U);
  EXPECT_NE(plan["infeasible"].dump().find("does not divide 12"), std::string::npos);
  EXPECT_NE(plan["infeasible"].dump().find("model.global_batch_size"), std::string::npos);
  for (std::size_t i = 1; i < options.size(); ++i)
    EXPECT_LE(options[i - 1]["training_time_s"].get<double>(), options[i]["training_time_s"].get<double>());
  // The Pareto flag agrees with brute force, and the front is not empty.
  int front = 0;
  for (const json& a : options) {
    bool dominated = false;
    for (const json& b : options) {
      // Time, cost and gradient error (null: unknown, compared as neither better nor worse).
      const double ta = a["training_time_s"], ca = a["cost_usd"], tb = b["training_time_s"], cb = b["cost_usd"];
      const double ea = a["gradient_error"].is_null() ? NAN : a["gradient_error"].get<double>();
      const double eb = b["gradient_error"].is_null() ? NAN : b["gradient_error"].get<double>();
      if (tb <= ta && cb <= ca && !(eb > ea) && (tb < ta || cb < ca || eb < ea)) dominated = true;
    }
    EXPECT_EQ(a["pareto"].get<bool>(), !dominated) << a["label"];
    front += dominated ? 0 : 1;
  }
  EXPECT_GE(front, 1);
  // Cost is GPU-hours times the cluster's price.
  for (const json& o : options) {
    const double price = o["gpu"] == "fast" ? 2.0 : 1.0;
    EXPECT_NEAR(o["cost_usd"].get<double>(), o["training_time_s"].get<double>() / 3600.0 * o["gpus"].get<int>() * price,
                1e-9 * o["cost_usd"].get<double>());
  }
  // On the 4 Gb/s cluster with dp 2, EDGC pays a lot; with dp 1 there is no sync to compress.
  const std::string verdicts = plan["verdicts"].dump();
  EXPECT_NE(verdicts.find("Compression pays"), std::string::npos) << verdicts;
  EXPECT_NE(verdicts.find("8xslow-net-gpu tp2 pp2 dp2 (edgc saves"), std::string::npos) << verdicts;
  EXPECT_NE(verdicts.find("does not pay"), std::string::npos) << verdicts;
  EXPECT_NE(verdicts.find("8xslow-net-gpu tp4 pp2 dp1 (edgc"), std::string::npos) << verdicts;
  // small.json has no trace: the only error is the CQM's, which the verdicts do not quote (results/verdict.hpp).
  EXPECT_NE(verdicts.find("; its gradient error is not known (no trace was replayed, and the CQM's structure-free "
                          "prediction is not evidence)"),
            std::string::npos)
      << verdicts;
  EXPECT_EQ(verdicts.find("% gradient error"), std::string::npos) << verdicts;
  EXPECT_NE(r.out.find("Fastest: "), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::exists(out / "report.html"));
  // The plan is also a sweep: resuming it runs nothing new and gives the same plan.
  const auto again = edgc("plan --spec " + kPlanDir + "small-plan.json --out " + out.string() + " --resume", tmp);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("0 simulated now, 10 from an earlier run"), std::string::npos) << again.out;
  EXPECT_EQ(json::parse(read_file(out / "plan.json"))["options"], options);
}

TEST(PlanCli, TokenTargetsBecomeIterations) {
  TempDir tmp;
  const auto spec = tmp / "tokens.json";
  // small.json: global batch 16 x sequence 256 = 4096 tokens per iteration; 1,000,000 tokens -> 245 iterations.
  std::ofstream(spec) << R"({"base": ")" << EDGC_SOURCE_DIR << R"(/tests/data/simulate/small.json",
    "target": {"tokens": 1000000}, "clusters": [")"
                      << kPlanDir << R"(slow-net.json"], "gpus": [8],
    "layouts": [{"tp": 2, "pp": 2}]})";
  const auto r = edgc("plan --spec " + spec.string() + " --out " + (tmp / "p").string() + " --quiet", tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  const json plan = json::parse(read_file(tmp / "p" / "plan.json"));
  EXPECT_EQ(plan["target"]["iterations"], 245);
  EXPECT_EQ(plan["options"].size(), 2U) << "none and the default edgc";
  EXPECT_NE(plan["verdicts"].dump().find("Compression pays (saves more than 2.00 % of training time)"),
            std::string::npos)
      << plan["verdicts"].dump();
  // --min-saving moves the threshold of the one verdict rule (simulate's): above this option's saving it is marginal.
  const auto high = edgc(
      "plan --spec " + spec.string() + " --out " + (tmp / "p").string() + " --quiet --resume --min-saving 0.9", tmp);
  ASSERT_EQ(high.code, 0) << high.err;
  const json again = json::parse(read_file(tmp / "p" / "plan.json"));
  EXPECT_EQ(again["pays_threshold"].get<double>(), 0.9);
  EXPECT_NE(again["verdicts"].dump().find("Compression is marginal (saves less than 90.0 % of training time)"),
            std::string::npos)
      << again["verdicts"].dump();
  const auto bad = edgc("plan --spec " + spec.string() + " --out " + (tmp / "q").string() + " --min-saving 2", tmp);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--min-saving"), std::string::npos) << bad.err;
  EXPECT_FALSE(std::filesystem::exists(tmp / "q"));
}

// Options priced by the kernel-level compute model carry its validated error band (a warning per GPU); options on
// compute.efficiency do not (the test above prints none).
TEST(PlanCli, StatesTheKernelModelsErrorBandForTheOptionsItPriced) {
  TempDir tmp;
  const auto spec = tmp / "kernels.json";
  std::ofstream(spec) << R"({"base": ")" << EDGC_SOURCE_DIR << R"(/tests/data/simulate/small.json",
    "target": {"iterations": 50}, "policies": ["none"],
    "clusters": [{"cluster": ")"
                      << kPlanDir << R"(slow-net.json", "set": {"compute.model": "kernels",
      "cluster.gpu.sm_count": 100, "cluster.gpu.matmul_tflops": 80, "cluster.gpu.matmul_m": 1024,
      "cluster.gpu.matmul_n": 1024, "cluster.gpu.matmul_k": 1024, "cluster.gpu.kernel_overhead_us": 5}}],
    "gpus": [8], "layouts": [{"tp": 2, "pp": 2}, {"tp": 4, "pp": 2}]})";
  const auto r = edgc("plan --spec " + spec.string() + " --out " + (tmp / "p").string(), tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("kernels.json: 2 point(s) on "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(": compute: the kernel-level model (measured GEMM, attention and HBM rates; "
                       "compute.efficiency not set) was checked against 18 published"),
            std::string::npos)
      << r.err;
  const auto plain = edgc("plan --spec " + kPlanDir + "small-plan.json --out " + (tmp / "q").string(), tmp);
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_EQ(plain.err.find("kernel-level"), std::string::npos) << plain.err;
}

TEST(PlanCli, RejectsBadSpecsNamingTheField) {
  struct Bad {
    std::string body;
    std::string field;
  };
  const std::string base = std::string(EDGC_SOURCE_DIR) + "/tests/data/simulate/small.json";
  const std::string cluster = kPlanDir + "slow-net.json";
  const std::string ok_tail = R"(, "clusters": [")" + cluster + R"("], "gpus": [8], "layouts": [{"tp": 2, "pp": 2}]})";
  const Bad cases[] = {
      {R"({"base": ")" + base + R"(")" + ok_tail, "target"},
      {R"({"base": ")" + base + R"(", "target": {"epochs": 3})" + ok_tail, "target.epochs"},
      {R"({"base": ")" + base + R"(", "target": {"iterations": 0})" + ok_tail, "target.iterations"},
      {R"({"base": ")" + base +
           R"(", "target": {"iterations": 10}, "clusters": ["no-such.json"], "gpus": [8], "layouts": [{"tp": 2, "pp": 2}]})",
       ""},
      {R"({"base": ")" + base + R"(", "target": {"iterations": 10}, "clusters": [")" + cluster +
           R"("], "gpus": [0], "layouts": [{"tp": 2, "pp": 2}]})",
       "gpus[0]"},
      {R"({"base": ")" + base + R"(", "target": {"iterations": 10}, "clusters": [")" + cluster +
           R"("], "gpus": [8], "layouts": [{"tp": 2}]})",
       "layouts[0]"},
      {R"({"base": ")" + base + R"(", "target": {"iterations": 10}, "clusters": [")" + cluster +
           R"("], "gpus": [6], "layouts": [{"tp": 2, "pp": 2}]})",
       "gpus"},
      {R"({"base": ")" + base + R"(", "target": {"iterations": 10}, "clusters": [{"cluster": ")" + cluster +
           R"(", "gpus": [8, 6]}], "layouts": [{"tp": 2, "pp": 2}]})",
       "clusters[0].gpus[1]"},
      {R"({"base": ")" + base + R"(", "target": {"iterations": 10}, "clusters": [{"cluster": ")" + cluster +
           R"(", "gpus": []}], "gpus": [8], "layouts": [{"tp": 2, "pp": 2}]})",
       "clusters[0].gpus"},
      {R"({"base": ")" + base + R"(", "target": {"iterations": 10}, "budget": 5)" + ok_tail, "budget"},
      // fuzz finding: a base file name too long for the OS threw std::filesystem's filesystem_error (exit 1)
      {R"({"base": ")" + std::string(300, 'x') + R"(.json", "target": {"iterations": 10})" + ok_tail, "base"},
  };
  TempDir tmp;
  int n = 0;
  for (const Bad& c : cases) {
    const auto spec = tmp / ("bad" + std::to_string(n) + ".json");
    std::ofstream(spec) << c.body;
    const auto out = tmp / ("out" + std::to_string(n++));
    const auto r = edgc("plan --spec " + spec.string() + " --out " + out.string(), tmp);
    EXPECT_EQ(r.code, 2) << c.body << "\n" << r.err;
    if (!c.field.empty())
      EXPECT_NE(r.err.find(": " + c.field + ": "), std::string::npos) << c.body << "\n" << r.err;
    else
      EXPECT_NE(r.err.find("no-such.json"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(out / "plan.json"));
  }
}

}  // namespace
