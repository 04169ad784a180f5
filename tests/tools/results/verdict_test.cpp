// The one verdict rule (results/verdict.hpp) on hand-computed cases: the threshold, the sign convention, 3
// significant digits, the reason in numbers (the DP-sync share) and the static-rank comparison at equal time.
#include "edgc/results/verdict.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "edgc/results/result_document.hpp"

namespace edgc::results {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

RunFigures run(const std::string& policy, double train_s, double error, double iteration_s = 10.0,
               double comm_s = 0.05) {
  RunFigures r;
  r.policy = policy;
  r.training_time_s = train_s;
  r.iteration_time_s = iteration_s;
  r.comm_latency_s = comm_s;
  r.cost_usd = train_s / 100.0;  // $1 per 100 s
  r.gradient_error = error;
  return r;
}

TEST(Verdict, ThresholdSplitsPaysMarginalAndDoesNotPay) {
  EXPECT_EQ(judge_saving(0.03, 0.02), Payoff::kPays);
  EXPECT_EQ(judge_saving(0.02, 0.02), Payoff::kMarginal);  // pays only strictly above the threshold
  EXPECT_EQ(judge_saving(0.0028, 0.02), Payoff::kMarginal);
  EXPECT_EQ(judge_saving(0.0, 0.02), Payoff::kDoesNotPay);
  EXPECT_EQ(judge_saving(-0.01, 0.02), Payoff::kDoesNotPay);
  EXPECT_EQ(judge_saving(kNaN, 0.02), Payoff::kDoesNotPay);
  EXPECT_EQ(judge_saving(0.03, 0.05), Payoff::kMarginal);  // a higher threshold turns the same saving marginal
  EXPECT_EQ(judge_saving(0.001, 0.0), Payoff::kPays);
  EXPECT_STREQ(payoff_name(Payoff::kPays), "pays");
  EXPECT_STREQ(payoff_name(Payoff::kMarginal), "marginal");
  EXPECT_STREQ(payoff_name(Payoff::kDoesNotPay), "does not pay");
}

TEST(Verdict, FiguresHaveThreeSignificantDigitsWithoutExponents) {
  EXPECT_EQ(fmt_sig3(0.2812), "0.281");
  EXPECT_EQ(fmt_sig3(48.5), "48.5");
  EXPECT_EQ(fmt_sig3(8353.0), "8350");
  EXPECT_EQ(fmt_sig3(9.996), "10.0");  // rounding carries into the next decade
  EXPECT_EQ(fmt_sig3(100.0), "100");
  EXPECT_EQ(fmt_sig3(-0.004987), "-0.00499");
  EXPECT_EQ(fmt_sig3(0.0), "0");
  EXPECT_EQ(fmt_sig3(kNaN), "-");
}

// The README's V100 paper scenario in round numbers: uncompressed 1,000,000 s, static saves 0.28 % at 42.5 % error,
// edgc 0.2812 % at 48.5 %; the DP sync 0.0545 s of a 10.921 s iteration.
TEST(Verdict, MarginalSavingNamesTheDpShareAndTheBetterStaticRank) {
  const RunFigures none = run("none", 1e6, 0.0, 10.921, 0.0545);
  const RunFigures st = run("static", 1e6 * (1.0 - 0.0028), 0.425);
  const RunFigures edgc = run("edgc", 1e6 * (1.0 - 0.002812), 0.485);
  const std::vector<Verdict> vs = judge_runs({&none, &st, &edgc}, kDefaultMinSaving);
  ASSERT_EQ(vs.size(), 2U);
  const Verdict& v = vs[1];
  EXPECT_EQ(v.policy, "edgc");
  EXPECT_EQ(v.payoff, Payoff::kMarginal);
  EXPECT_NEAR(v.saving, 0.002812, 1e-12);
  EXPECT_NEAR(v.dp_sync_share, 0.0545 / 10.921, 1e-12);
  EXPECT_EQ(v.better_than_static, "static");  // equal time (0.0012 % apart), less error
  // 2,812 s = 0.781 h; $10,000 − $9,971.88 = $28.1.
  EXPECT_NE(v.text.find("edgc marginal: saves 0.281 % of training time (0.781 h, $28.1) at 48.5 % gradient error "
                        "(measured on the trace); pays only above 2.00 % (--min-saving)."),
            std::string::npos)
      << v.text;
  EXPECT_NE(v.text.find("The data-parallel sync is 0.499 % of the uncompressed iteration."), std::string::npos)
      << v.text;
  EXPECT_NE(v.text.find("At equal time (within 0.100 % of training time) static rank saves 0.280 % at 42.5 % "
                        "gradient error (measured on the trace): static is better."),
            std::string::npos)
      << v.text;
  // static itself is judged without a comparison with itself.
  EXPECT_EQ(vs[0].policy, "static");
  EXPECT_TRUE(vs[0].better_than_static.empty());
  EXPECT_EQ(vs[0].text.find("Static rank"), std::string::npos) << vs[0].text;
}

TEST(Verdict, PaysAboveTheThresholdAndSaysWhoWinsAgainstStatic) {
  const RunFigures none = run("none", 1000.0, 0.0);
  // edgc 5 % faster than none and 2 points of training time faster than static, with less error: edgc dominates.
  const RunFigures st = run("static", 970.0, 0.3);
  const RunFigures edgc = run("edgc", 950.0, 0.2);
  Verdict v = judge_runs({&none, &st, &edgc}, kDefaultMinSaving)[1];
  EXPECT_EQ(v.payoff, Payoff::kPays);
  EXPECT_EQ(v.better_than_static, "edgc");
  EXPECT_NE(v.text.find("edgc pays: saves 5.00 % of training time"), std::string::npos) << v.text;
  EXPECT_NE(v.text.find("; above 2.00 % (--min-saving)."), std::string::npos) << v.text;
  EXPECT_NE(v.text.find(": edgc is better."), std::string::npos) << v.text;
  // Faster but with more error: a trade-off, nobody is "better".
  const RunFigures noisy = run("edgc", 950.0, 0.4);
  v = judge_runs({&none, &st, &noisy}, kDefaultMinSaving)[1];
  EXPECT_TRUE(v.better_than_static.empty());
  EXPECT_NE(v.text.find("a trade-off (edgc is faster, static more accurate)"), std::string::npos) << v.text;
  // The same run under a 10 % threshold is only marginal.
  EXPECT_EQ(judge_runs({&none, &st, &edgc}, 0.10)[1].payoff, Payoff::kMarginal);
}

TEST(Verdict, LossIsStatedAsACostWithSavingsPositive) {
  const RunFigures none = run("none", 1000.0, 0.0);
  RunFigures slow = run("edgc", 1010.0, kNaN);
  slow.cqm_error = 0.9;
  const Verdict v = judge_runs({&none, &slow}, kDefaultMinSaving)[0];
  EXPECT_EQ(v.payoff, Payoff::kDoesNotPay);
  EXPECT_NEAR(v.saving, -0.01, 1e-12);  // negative: it costs time
  // Only the CQM's figure: not quoted as the error, and said to be no evidence.
  EXPECT_NE(v.text.find("edgc does not pay: costs 1.00 % more training time (0.00278 h, $0.100 more); its gradient "
                        "error is not known (no trace was replayed, and the CQM's structure-free prediction is not "
                        "evidence)"),
            std::string::npos)
      << v.text;
}

TEST(Verdict, NothingToJudgeWithoutTheUncompressedRun) {
  const RunFigures edgc = run("edgc", 950.0, 0.2);
  EXPECT_TRUE(judge_runs({&edgc}, kDefaultMinSaving).empty());
}

TEST(Verdict, SectionCarriesTheThresholdBackToReaders) {
  const RunFigures none = run("none", 1000.0, 0.0);
  const RunFigures edgc = run("edgc", 990.0, 0.2);
  const std::vector<Verdict> vs = judge_runs({&none, &edgc}, 0.005);
  const nlohmann::ordered_json j = verdict_section(vs, 0.005);
  EXPECT_EQ(j["min_saving"].get<double>(), 0.005);
  ASSERT_EQ(j["runs"].size(), 1U);
  EXPECT_EQ(j["runs"][0]["verdict"], "pays");  // 1 % > 0.5 %
  EXPECT_NEAR(j["runs"][0]["saving"].get<double>(), 0.01, 1e-12);
  EXPECT_TRUE(j["runs"][0]["better_than_static"].is_null());
  ResultDocument doc;
  EXPECT_EQ(result_min_saving(doc), kDefaultMinSaving);
  doc.sections["verdict"] = j;
  EXPECT_EQ(result_min_saving(doc), 0.005);
}

// Memory with compression: each stage's simulated peak plus 4 bytes per parameter for the error-feedback buffer;
// stage 0 (3 GiB + 2^28 parameters = 1 GiB) tops stage 1 (3.25 GiB + 0.5 GiB) though its simulated peak is lower.
TEST(Verdict, MemoryAddsTheErrorFeedbackBufferToEachStagesPeak) {
  ResultDocument doc;
  EXPECT_TRUE(memory_with_error_feedback(doc).text.empty());
  doc.sections["memory"] = {{"peak_GiB", 3.25},
                            {"capacity_GiB", 16.0},
                            {"stages",
                             {{{"stage", 0}, {"parameters", 268435456.0}, {"peak_GiB", 3.0}},
                              {{"stage", 1}, {"parameters", 134217728.0}, {"peak_GiB", 3.25}}}}};
  const MemoryWithCompression m = memory_with_error_feedback(doc);
  EXPECT_DOUBLE_EQ(m.peak_GiB, 4.0);
  EXPECT_EQ(m.text,
            "Memory with compression: peak 4.00 GiB per GPU of 16.0 GiB (12.0 GiB headroom): the simulated 3.00 GiB "
            "plus 1.00 GiB for PowerSGD's error-feedback buffer (fp32, one value per parameter: assumed).");
  ResultRun none;
  none.policy = "none";
  none.training_time_s = 100.0;
  none.iteration_time_s = 1.0;
  ResultRun edgc = none;
  edgc.policy = "edgc";
  edgc.training_time_s = 90.0;
  doc.runs = {none, edgc};
  const std::vector<Verdict> vs = result_verdicts(doc, kDefaultMinSaving);
  ASSERT_EQ(vs.size(), 1U);
  EXPECT_DOUBLE_EQ(vs[0].peak_memory_GiB, 4.0);
  EXPECT_NE(vs[0].text.find("edgc pays: saves 10.0 % of training time"), std::string::npos) << vs[0].text;
  EXPECT_NE(vs[0].text.find(m.text), std::string::npos) << vs[0].text;
  EXPECT_EQ(verdict_section(vs, kDefaultMinSaving)["runs"][0]["peak_memory_GiB"].get<double>(), 4.0);
}

// A simulated run that does not pay names the command that finds the NIC bandwidth at which it would; one that pays,
// one without data parallelism and one on a single node do not.
TEST(Verdict, AMarginalSimulateVerdictPointsToTheBreakevenSearch) {
  ResultDocument doc;
  doc.scenario = "scenarios/x.json";
  doc.parallelism = ResultParallelism{};
  doc.parallelism->dp = 2;
  ResultRun none;
  none.policy = "none";
  none.training_time_s = 100.0;
  none.iteration_time_s = 1.0;
  ResultRun edgc = none;
  edgc.policy = "edgc";
  edgc.training_time_s = 99.0;
  doc.runs = {none, edgc};
  const std::string pointer =
      " The NIC bandwidth at which it would pay: edgc breakeven --scenario scenarios/x.json --vary "
      "cluster.inter_node.nic_bandwidth_GBps --target 2.00 --policy edgc (with this run's --set).";
  std::vector<Verdict> vs = result_verdicts(doc, kDefaultMinSaving);
  ASSERT_EQ(vs.size(), 1U);
  EXPECT_EQ(vs[0].payoff, Payoff::kMarginal);
  EXPECT_NE(vs[0].text.find(pointer), std::string::npos) << vs[0].text;
  EXPECT_NE(result_verdicts(doc, 0.05)[0].text.find("--target 5.00 --policy edgc"), std::string::npos);
  doc.runs[1].training_time_s = 90.0;  // pays: nothing to search for
  EXPECT_EQ(result_verdicts(doc, kDefaultMinSaving)[0].text.find("edgc breakeven"), std::string::npos);
  doc.runs[1].training_time_s = 99.0;
  doc.parallelism->dp = 1;  // no data-parallel sync: the NIC bandwidth cannot make it pay
  EXPECT_EQ(result_verdicts(doc, kDefaultMinSaving)[0].text.find("edgc breakeven"), std::string::npos);
}

// With simulate's "bandwidth" section, a verdict that does not pay quotes the NIC bandwidth at which it would (per NIC
// and per GPU, 3 significant digits), or says that none down to the searched low end does; a policy the section
// does not name keeps the breakeven command.
TEST(Verdict, AMarginalSimulateVerdictNamesTheBandwidthAtWhichItWouldPay) {
  ResultDocument doc;
  doc.scenario = "scenarios/x.json";
  doc.source = "simulate";
  doc.parallelism = ResultParallelism{};
  doc.parallelism->dp = 2;
  ResultRun none;
  none.policy = "none";
  none.training_time_s = 100.0;
  none.iteration_time_s = 1.0;
  ResultRun edgc = none;
  edgc.policy = "edgc";
  edgc.training_time_s = 99.0;
  ResultRun st = edgc;
  st.policy = "static";
  doc.runs = {none, st, edgc};
  doc.sections["bandwidth"] = {{"key", "cluster.inter_node.nic_bandwidth_GBps"},
                               {"scenario_value", 12.5},
                               {"gpus_per_nic", 2.0},
                               {"target_saving_pct", 2.0},
                               {"tolerance_pct", 0.1},
                               {"lo", 0.1953125},
                               {"policies",
                                {{{"policy", "edgc"},
                                  {"pays_at_scenario_value", false},
                                  {"found", true},
                                  {"value", 1.8235814},
                                  {"saving_pct", 1.9897},
                                  {"converged", true}},
                                 {{"policy", "static"},
                                  {"pays_at_scenario_value", false},
                                  {"found", false},
                                  {"value", nullptr},
                                  {"saving_pct_at_lo", 1.5}}}}};
  std::vector<Verdict> vs = result_verdicts(doc, kDefaultMinSaving);
  ASSERT_EQ(vs.size(), 2U);
  EXPECT_NE(vs[1].text.find(" It would pay (save 2.00 %) at a NIC bandwidth of 1.82 GB/s per NIC (0.912 GB/s = 7.29 "
                            "Gb/s per GPU), against this cluster's 12.5 GB/s per NIC (6.25 GB/s = 50.0 Gb/s per GPU): "
                            "simulated, it saves 1.99 % there (within 0.100 points)"),
            std::string::npos)
      << vs[1].text;
  EXPECT_EQ(vs[1].text.find("edgc breakeven"), std::string::npos) << vs[1].text;
  EXPECT_NE(vs[0].text.find(" No NIC bandwidth down to 0.195 GB/s per NIC (0.0977 GB/s = 0.781 Gb/s per GPU), "
                            "against this cluster's 12.5 GB/s per NIC (6.25 GB/s = 50.0 Gb/s per GPU) makes it pay "
                            "(it saves 1.50 % there)."),
            std::string::npos)
      << vs[0].text;
  // A verdict at another threshold than the section's, and a policy the section does not name, keep the command.
  EXPECT_NE(result_verdicts(doc, 0.05)[1].text.find("edgc breakeven --scenario scenarios/x.json"), std::string::npos);
  doc.sections["bandwidth"]["policies"].erase(1);
  EXPECT_NE(result_verdicts(doc, kDefaultMinSaving)[0].text.find("edgc breakeven --scenario scenarios/x.json"),
            std::string::npos);
  doc.runs[2].training_time_s = 90.0;  // pays: no bandwidth clause
  EXPECT_EQ(result_verdicts(doc, kDefaultMinSaving)[1].text.find("NIC bandwidth"), std::string::npos);
}

// An error measured on a trace of a model more than 100x smaller is not quoted as evidence; at 100x it still is.
TEST(Verdict, AnErrorMeasuredOnAFarSmallerModelIsNotEvidence) {
  ResultDocument doc;
  doc.model_parameters = 2.4e9;
  doc.sections["fidelity"] = {{"source", "trace"}, {"trace_parameters", 2.4e5}};
  ResultRun none;
  none.policy = "none";
  none.training_time_s = 100.0;
  none.iteration_time_s = 1.0;
  ResultRun edgc = none;
  edgc.policy = "edgc";
  edgc.training_time_s = 99.0;
  edgc.gradient_error = 0.485;
  edgc.cqm_error = 0.897;
  doc.runs = {none, edgc};
  std::string text = result_verdicts(doc, kDefaultMinSaving)[0].text;
  EXPECT_NE(text.find("; its gradient error is not known (the trace is of a model 10000x smaller, so the error "
                      "measured on it is not evidence)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("48.5"), std::string::npos) << text;
  EXPECT_DOUBLE_EQ(trace_smaller_by(doc), 1e4);
  // The clause alone, for callers that word their own sentence (plan): the same words.
  EXPECT_EQ(result_verdicts(doc, kDefaultMinSaving)[0].error_clause,
            "; its gradient error is not known (the trace is of a model 10000x smaller, so the error measured on it "
            "is not evidence)");
  // judge_runs (sweep and plan) applies the same rule when given the ratio.
  std::vector<const RunFigures*> runs = {&doc.runs[0], &doc.runs[1]};
  EXPECT_EQ(judge_runs(runs, kDefaultMinSaving, 1e4)[0].text.find("48.5"), std::string::npos);
  EXPECT_NE(judge_runs(runs, kDefaultMinSaving)[0].text.find("at 48.5 % gradient error"), std::string::npos);
  doc.sections["fidelity"]["trace_parameters"] = 2.4e7;  // 100x: the limit is exclusive
  text = result_verdicts(doc, kDefaultMinSaving)[0].text;
  EXPECT_NE(text.find("at 48.5 % gradient error (measured on the trace; CQM 89.7 %)"), std::string::npos) << text;
  EXPECT_EQ(result_verdicts(doc, kDefaultMinSaving)[0].error_clause,
            " at 48.5 % gradient error (measured on the trace; CQM 89.7 %)");
  // Unknown without the traced model's size, or the simulated model's.
  doc.sections["fidelity"].erase("trace_parameters");
  EXPECT_TRUE(std::isnan(trace_smaller_by(doc)));
}

}  // namespace
}  // namespace edgc::results
