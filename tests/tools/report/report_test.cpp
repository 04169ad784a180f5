// `edgc report` end to end on the fixtures in tests/data/report/ (a simulate result with entropy_series, a sweep
// directory with a failed point and a truncated last line, a plan): the page and the SVG files, the data marks
// of each chart, escaping of labels from files, and rejection of bad input with exit code 2, a message naming
// the file and field (or line), and no page left behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_test_util.hpp"
#include "report_test_util.hpp"

namespace {

namespace fs = std::filesystem;
using edgc::cli::test::edgc;
using edgc::report::test::count;
using edgc::traces::test::read_file;
using edgc::traces::test::TempDir;
using edgc::traces::test::write_file;
using nlohmann::ordered_json;

const fs::path kFixtures = fs::path(EDGC_SOURCE_DIR) / "tests/data/report";

// A copy of fixture directories merged into one fresh directory.
fs::path copy_fixtures(const TempDir& tmp, const std::vector<std::string>& which, const std::string& name = "in") {
  const fs::path dir = tmp / name;
  fs::create_directories(dir);
  for (const std::string& w : which)
    for (const auto& e : fs::directory_iterator(kFixtures / w)) fs::copy_file(e.path(), dir / e.path().filename());
  return dir;
}

struct Failure {
  int code;
  std::string err;
};

// Runs the report on DIR expecting a rejection, and checks that nothing was written.
Failure reject(const fs::path& dir, const TempDir& tmp, const std::string& extra = "") {
  const auto r = edgc("report " + dir.string() + " " + extra, tmp);
  EXPECT_FALSE(fs::exists(dir / "report.html")) << r.err;
  EXPECT_FALSE(fs::exists(dir / "report")) << r.err;
  return {r.code, r.err};
}

TEST(Report, SimulateResultDrawsEveryChart) {
  TempDir tmp;
  const auto r = edgc("report " + (kFixtures / "simulate").string() + " --out " + (tmp / "page.html").string() +
                          " --svg-dir " + (tmp / "svg").string(),
                      tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, (tmp / "page.html").string() + "\n");
  const std::string html = read_file(tmp / "page.html");
  EXPECT_NE(html.find("<section id=\"simulate\">"), std::string::npos);
  EXPECT_EQ(html.find("<section id=\"sweep\">"), std::string::npos);
  EXPECT_NE(html.find("8 \xC3\x97 test-gpu, TP 2 \xC3\x97 PP 2 \xC3\x97 DP 2"), std::string::npos);
  // Self-contained: no external resources.
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));
  EXPECT_EQ(html.find("https://"), std::string::npos);

  const std::string bars = read_file(tmp / "svg/simulate-breakdown.svg");
  EXPECT_EQ(count(bars, "<rect class=\"mark bar\""), 14U);  // 3 policies x 5 parts, none has no compression
  for (const char* estimator : {"gaussian", "histogram"}) {
    const std::string svg = read_file(tmp / "svg" / ("simulate-entropy-" + std::string(estimator) + ".svg"));
    EXPECT_EQ(count(svg, "<path class=\"mark series\""), 2U) << estimator;  // two stages
    EXPECT_NE(svg.find("warm-up ends (edgc)"), std::string::npos) << estimator;
  }
  for (const char* policy : {"static", "edgc"})
    EXPECT_EQ(count(read_file(tmp / "svg" / ("simulate-ranks-" + std::string(policy) + ".svg")),
                    "<path class=\"mark series\""),
              2U)
        << policy;
  EXPECT_FALSE(fs::exists(tmp / "svg/simulate-ranks-none.svg"));
  // Communication at its own scale: TP comm and exposed DP comm of 3 policies, exposed compression of 2.
  const std::string comm = read_file(tmp / "svg/simulate-communication.svg");
  EXPECT_EQ(count(comm, "<rect class=\"mark bar\""), 8U);
  EXPECT_NE(comm.find("<title>edgc, exposed DP comm: 24.01</title>"), std::string::npos);
  // Time against error: the measured error of 3 policies (none at 0) and the CQM's of the 2 compressing ones.
  const std::string te = read_file(tmp / "svg/simulate-time-error.svg");
  EXPECT_EQ(count(te, "<circle class=\"mark point\""), 5U);
  EXPECT_NE(te.find(">static (CQM)</text>"), std::string::npos);
  // The policy table carries both errors.
  EXPECT_NE(html.find("<th>gradient error (measured)</th><th>gradient error (CQM)</th>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\">45.8%</td><td class=\"num\">91.3%</td>"), std::string::npos);
  // The same charts are inline in the page.
  EXPECT_EQ(count(html, "<svg "), 7U);
  EXPECT_EQ(count(html, "class=\"mark "), 14U + 8 + 5 + 2 * 2 + 2 * 2);
}

TEST(Report, DefaultsWriteBesideTheInputs) {
  TempDir tmp;
  const fs::path dir = copy_fixtures(tmp, {"simulate", "sweep", "plan"});
  const auto r = edgc("report " + dir.string(), tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, (dir / "report.html").string() + "\n");
  const std::string html = read_file(dir / "report.html");
  for (const char* id : {"simulate", "sweep", "plan"})
    EXPECT_NE(html.find("<section id=\"" + std::string(id) + "\">"), std::string::npos) << id;
  std::size_t svgs = 0;
  for (const auto& e : fs::directory_iterator(dir / "report")) svgs += e.path().extension() == ".svg" ? 1 : 0;
  EXPECT_EQ(svgs, 13U);  // simulate 7, sweep 4 (time-error, three heatmaps of edgc), plan 2
  // Labels from the files are escaped in the page and in the charts.
  EXPECT_EQ(html.find("<spot>"), std::string::npos);
  EXPECT_NE(html.find("256xH100 tp8 pp4 dp8 edgc &amp; &lt;spot&gt;"), std::string::npos);
  EXPECT_NE(html.find("&lt;check &amp; fail&gt;"), std::string::npos);  // a failed point's error message
  EXPECT_EQ(read_file(dir / "report/plan-time-cost.svg").find("<spot>"), std::string::npos);
  // No temporary files are left next to the outputs.
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos);
}

TEST(Report, SweepHeatmapsAverageOverTheOtherAxes) {
  TempDir tmp;
  const fs::path dir = copy_fixtures(tmp, {"sweep"});
  {
    const auto run = edgc("report " + dir.string(), tmp);
    ASSERT_EQ(run.code, 0) << run.err;
    // The torn last line is left out with a word on the console too, not only on the page.
    EXPECT_NE(run.err.find("edgc: warning: " + (dir / "results.jsonl").string() + ": the last line is incomplete"),
              std::string::npos)
        << run.err;
  }
  const std::string speedup = read_file(dir / "report/sweep-speedup-edgc.svg");
  // window x r_min: 3 x 3 cells, the one whose points both failed is hatched.
  EXPECT_EQ(count(speedup, "<rect class=\"mark cell\""), 8U);
  EXPECT_EQ(count(speedup, "<rect class=\"cell-empty\""), 1U);
  EXPECT_EQ(count(read_file(dir / "report/sweep-comm-reduction-edgc.svg"), "<rect class=\"mark cell\""), 8U);
  const std::string html = read_file(dir / "report.html");
  EXPECT_NE(html.find("Averaged over the other swept parameters: compression.alpha (2 values)."), std::string::npos);
  EXPECT_NE(html.find("2 points failed"), std::string::npos);
  EXPECT_NE(html.find("incomplete"), std::string::npos);  // the truncated last line is left out, and said so
  EXPECT_NE(html.find("The 10 fastest points"), std::string::npos);
  EXPECT_NE(html.find("28.25 \xC2\xB1 0.11"), std::string::npos);  // mean ± 95 % interval over repeats

  // Other axes on request: r_min x alpha, every cell has points (from the other windows).
  const auto r = edgc("report " + dir.string() + " --x compression.r_min --y compression.alpha --out " +
                          (tmp / "b.html").string() + " --svg-dir " + (tmp / "b").string(),
                      tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string b = read_file(tmp / "b/sweep-speedup-edgc.svg");
  EXPECT_EQ(count(b, "<rect class=\"mark cell\""), 6U);
  EXPECT_EQ(count(b, "<rect class=\"cell-empty\""), 0U);
  EXPECT_NE(read_file(tmp / "b.html").find("compression.window (3 values)"), std::string::npos);
}

TEST(Report, OneVaryingAxisGivesALineChartAndRandomSweepsAreBinned) {
  TempDir tmp;
  const fs::path dir = tmp / "one";
  fs::create_directories(dir);
  write_file(dir / "sweep.json",
             R"({"schema": "edgc.sweep/1", "mode": "grid", "repeats": 1, "policies": ["none", "edgc"],
    "axes": [{"key": "compression.window", "values": [250, 500, 1000]}, {"key": "model.name", "values": ["gpt"]}]})");
  std::string lines;
  for (int i = 0; i < 3; ++i) {
    const ordered_json line = {{"point", i},
                               {"params", {{"compression.window", 250 << i}, {"model.name", "gpt"}}},
                               {"runs",
                                {{{"policy", "none"}, {"training_time_s", 100}, {"speedup_vs_none", 1}},
                                 {{"policy", "static"}, {"training_time_s", 95}, {"speedup_vs_none", 1.05}},
                                 {{"policy", "edgc"},
                                  {"training_time_s", 90},
                                  {"speedup_vs_none", 1.1 + 0.01 * i},
                                  {"comm_latency_reduction_vs_none", 0.3}}}}};
    lines += line.dump() + "\n";
  }
  write_file(dir / "results.jsonl", lines);
  {
    const auto run = edgc("report " + dir.string(), tmp);
    ASSERT_EQ(run.code, 0) << run.err;
  }
  const std::string svg = read_file(dir / "report/sweep-speedup.svg");
  EXPECT_EQ(count(svg, "<path class=\"mark series\""), 2U);  // one line per compressing policy
  EXPECT_EQ(count(svg, "class=\"mark cell\""), 0U);
  EXPECT_TRUE(fs::exists(dir / "report/sweep-comm-reduction.svg"));

  // A random sweep draws a different value at every point: numbers are binned on a 1-2-5 grid.
  const fs::path rnd = tmp / "random";
  fs::create_directories(rnd);
  write_file(rnd / "sweep.json", R"({"schema": "edgc.sweep/1", "mode": "random", "axes": [
    {"key": "compression.alpha", "range": [0.05, 0.5]}, {"key": "compression.beta", "range": [0.1, 0.9]}]})");
  ordered_json spec = ordered_json::parse(read_file(rnd / "sweep.json"));  // as edgc sweep writes it: the values drawn
  for (int i = 0; i < 40; ++i) spec["axes"][0]["values"].push_back(0.05 + 0.011 * i);
  write_file(rnd / "sweep.json", spec.dump());
  lines.clear();
  for (int i = 0; i < 40; ++i) {
    const ordered_json line = {
        {"point", i},
        {"params", {{"compression.alpha", 0.05 + 0.011 * i}, {"compression.beta", 0.1 + 0.0197 * ((i * 7) % 40)}}},
        {"runs", {{{"policy", "edgc"}, {"training_time_s", 90}, {"speedup_vs_none", 1.0 + 0.005 * i}}}}};
    lines += line.dump() + "\n";
  }
  write_file(rnd / "results.jsonl", lines);
  {
    const auto run = edgc("report " + rnd.string(), tmp);
    ASSERT_EQ(run.code, 0) << run.err;
  }
  const std::string heat = read_file(rnd / "report/sweep-speedup-edgc.svg");
  const std::size_t cells = count(heat, "<rect class=\"mark cell\"") + count(heat, "<rect class=\"cell-empty\"");
  EXPECT_GE(cells, 9U);
  EXPECT_LE(cells, 100U);
  EXPECT_NE(heat.find("0.1\xE2\x80\x93"
                      "0.15"),
            std::string::npos);  // a bin label
  EXPECT_NE(read_file(rnd / "report.html").find("Values are binned"), std::string::npos);
}

TEST(Report, SweepsAndPlansShowTheTimeErrorTradeOffAndWhichDifferencesAreNoise) {
  TempDir tmp;
  const fs::path dir = copy_fixtures(tmp, {"sweep", "plan"});
  {
    const auto run = edgc("report " + dir.string(), tmp);
    ASSERT_EQ(run.code, 0) << run.err;
  }
  // Every finished point and policy (16 points x none, edgc), the front drawn as a staircase, never as lines.
  const std::string te = read_file(dir / "report/sweep-time-error.svg");
  EXPECT_EQ(count(te, "<circle class=\"mark point\""), 32U);
  EXPECT_EQ(count(te, "class=\"front\""), 1U);
  EXPECT_EQ(count(te, "class=\"threshold\""), 0U);                      // no budget in this spec
  EXPECT_NE(te.find("<title>none: training time"), std::string::npos);  // no compression settings on none
  EXPECT_NE(te.find("<title>edgc alpha=0.2 r_min=16 window=5: training time"), std::string::npos);
  const std::string html = read_file(dir / "report.html");
  // Speedup repeats carry a 95 % interval of 0.0041: the colours span at least that band, and the caption says so.
  EXPECT_NE(html.find("Differences below \xC2\xB1"
                      "0.0041\xC3\x97 (the widest 95 % interval over 2 repeats) are "
                      "within the model&#39;s run-to-run noise"),
            std::string::npos);
  EXPECT_NE(html.find("no 95 % interval for this figure"), std::string::npos);  // comm reduction: none written
  EXPECT_NE(html.find("Gradient error is a deterministic replay"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir / "report/sweep-gradient-error-edgc.svg"));
  EXPECT_NE(html.find("<th>gradient error</th><th>CQM error</th>"), std::string::npos);

  // The plan: time against error with its budget, options as points (never joined), the error in the table, and
  // what was left out.
  const std::string plan = read_file(dir / "report/plan-time-error.svg");
  EXPECT_EQ(count(plan, "<circle class=\"mark point\""), 8U);
  EXPECT_EQ(count(plan, "<path"), 0U);
  EXPECT_EQ(count(plan, "class=\"threshold\""), 1U);
  EXPECT_EQ(count(read_file(dir / "report/plan-time-cost.svg"), "<path"), 0U);
  EXPECT_NE(html.find("Gradient-error budget: 60%"), std::string::npos);
  EXPECT_NE(html.find("1 left out"), std::string::npos);
  EXPECT_NE(html.find("gradient error 71.0 % &gt; budget 60.0 %"), std::string::npos);

  // A budget in the sweep spec: the best points keep to it and the chart draws it.
  ordered_json spec = ordered_json::parse(read_file(dir / "sweep.json"));
  spec["spec"] = {{"max_error", 0.5}};
  write_file(dir / "sweep.json", spec.dump());
  {
    const auto run = edgc("report " + dir.string(), tmp);
    ASSERT_EQ(run.code, 0) << run.err;
  }
  EXPECT_EQ(count(read_file(dir / "report/sweep-time-error.svg"), "class=\"threshold\""), 1U);
  // gradient error 0.6 - 0.006 r_min: r_min 8 (55.2 %) and 16 (50.4 %) are over 50 %, r_min 32 (40.8 %) is within.
  const std::string budget = read_file(dir / "report.html");
  EXPECT_NE(budget.find("fastest points by training time within the gradient-error budget of 50%"), std::string::npos);
  EXPECT_EQ(budget.find(">55.2%</td>"), std::string::npos);
  EXPECT_NE(budget.find(">40.8%</td>"), std::string::npos);
}

TEST(Report, ResultWithoutEntropySeriesSkipsThatChartWithANote) {
  TempDir tmp;
  const fs::path dir = tmp / "old";
  fs::create_directories(dir);
  ordered_json j = ordered_json::parse(read_file(kFixtures / "simulate/result.json"));
  j.erase("entropy_series");
  write_file(dir / "result.json", j.dump());
  {
    const auto run = edgc("report " + dir.string(), tmp);
    ASSERT_EQ(run.code, 0) << run.err;
  }
  EXPECT_NE(read_file(dir / "report.html").find("no entropy_series"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "report/simulate-entropy-gaussian.svg"));
  EXPECT_TRUE(fs::exists(dir / "report/simulate-ranks-edgc.svg"));
}

TEST(Report, SimulateWarningsAreListedAboveTheSummaryEscaped) {
  TempDir tmp;
  const fs::path dir = tmp / "warned";
  fs::create_directories(dir);
  ordered_json j = ordered_json::parse(read_file(kFixtures / "simulate/result.json"));
  j["warnings"] = {"t: one captured iteration <only>", "second"};
  write_file(dir / "result.json", j.dump());
  {
    const auto run = edgc("report " + dir.string(), tmp);
    ASSERT_EQ(run.code, 0) << run.err;
  }
  const std::string html = read_file(dir / "report.html");
  const std::size_t warned = html.find("t: one captured iteration &lt;only&gt;");
  ASSERT_NE(warned, std::string::npos);
  EXPECT_LT(warned, html.find("second"));
  EXPECT_NE(html.find("Warnings (simulate printed them too)"), std::string::npos);

  j["warnings"] = {"fine", 3};
  write_file(dir / "result.json", j.dump());
  fs::remove(dir / "report.html");
  fs::remove_all(dir / "report");
  const Failure f = reject(dir, tmp);
  EXPECT_EQ(f.code, 2);
  EXPECT_NE(f.err.find("result.json: warnings[1]: expected a string"), std::string::npos) << f.err;
}

// simulate's bandwidth section is drawn: each policy's simulated points (filled) and the linear model's (rings), the
// threshold line; labels from the file are escaped. Without the section, a note says why there is no chart.
TEST(Report, SimulateBandwidthCurveIsDrawnEscaped) {
  TempDir tmp;
  const fs::path dir = tmp / "bw";
  fs::create_directories(dir);
  ordered_json j = ordered_json::parse(read_file(kFixtures / "simulate/result.json"));
  j["bandwidth"] = {{"key", "cluster.inter_node.nic_bandwidth_GBps"},
                    {"scenario_value", 1.0},
                    {"gpus_per_nic", 4.0},
                    {"target_saving_pct", 2.0},
                    {"tolerance_pct", 0.1},
                    {"lo", 1.0 / 64},
                    {"policies",
                     {{{"policy", "edgc"}, {"pays_at_scenario_value", true}},
                      {{"policy", "st<a&b>"}, {"pays_at_scenario_value", false}, {"found", true}, {"value", 0.5}}}},
                    {"curve",
                     {{{"value", 0.5}, {"saving_pct", {{"edgc", 30.0}, {"st<a&b>", 2.0}}}},
                      {{"value", 1.0}, {"saving_pct", {{"edgc", 20.0}, {"st<a&b>", 1.0}}}}}},
                    {"model_curve",
                     {{{"value", 0.25}, {"saving_pct", {{"edgc", 40.0}, {"st<a&b>", 3.0}}}},
                      {{"value", 0.5}, {"saving_pct", {{"edgc", 31.0}, {"st<a&b>", 2.1}}}},
                      {{"value", 4.0}, {"saving_pct", {{"edgc", 5.0}, {"st<a&b>", 0.1}}}}}}};
  write_file(dir / "result.json", j.dump());
  {
    const auto run = edgc("report " + dir.string(), tmp);
    ASSERT_EQ(run.code, 0) << run.err;
  }
  const std::string svg = read_file(dir / "report/simulate-bandwidth.svg");
  EXPECT_EQ(count(svg, "<circle class=\"mark point\""), 2U * 2 + 2U * 3);
  EXPECT_NE(svg.find("st&lt;a&amp;b&gt; (simulated)"), std::string::npos);
  EXPECT_EQ(svg.find("st<a&b>"), std::string::npos);
  EXPECT_NE(svg.find("class=\"threshold\""), std::string::npos);
  EXPECT_NE(svg.find("pays above 2 % (--min-saving)"), std::string::npos);
  EXPECT_NE(svg.find("log scale"), std::string::npos);  // 0.25 to 4 GB/s: a decade and more
  const std::string html = read_file(dir / "report.html");
  EXPECT_NE(html.find("id=\"simulate-bandwidth\""), std::string::npos);
  EXPECT_EQ(html.find("No bandwidth curve"), std::string::npos);
  // The fixture itself has no section: a note instead of the chart.
  const auto plain = edgc("report " + (kFixtures / "simulate").string() + " --out " + (tmp / "p.html").string() +
                              " --svg-dir " + (tmp / "svg").string(),
                          tmp);
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_NE(read_file(tmp / "p.html").find("No bandwidth curve: simulate ran with --no-bandwidth-curve"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(tmp / "svg/simulate-bandwidth.svg"));
}

// The planner's question first: a verdict per compressing policy (against none) and the settings, above the warnings
// and the table. Figures set here so the lines are known exactly.
TEST(Report, SimulateVerdictAndSettingsComeFirst) {
  TempDir tmp;
  const fs::path dir = tmp / "verdict";
  fs::create_directories(dir);
  ordered_json j = ordered_json::parse(read_file(kFixtures / "simulate/result.json"));
  auto& runs = j["runs"];
  runs[0]["training_time_s"] = 36000.0;
  runs[0]["cost_usd"] = 1000.0;
  runs[1]["training_time_s"] = 39600.0;  // static: 10 % slower, $100 more
  runs[1]["training_time_reduction_vs_none"] = -0.1;
  runs[1]["cost_usd"] = 1100.0;
  runs[1]["cqm_error"] = 0.5;
  runs[1].erase("gradient_error");       // judged by the CQM then
  runs[2]["training_time_s"] = 27000.0;  // edgc: 25 % faster, $250 saved
  runs[2]["training_time_reduction_vs_none"] = 0.25;
  runs[2]["cost_usd"] = 750.0;
  runs[2]["gradient_error"] = 0.4;
  runs[2]["cqm_error"] = 0.9;
  j["fidelity"] = {{"source", "trace"}, {"trace", "t"}, {"stretch", 2.0}, {"rank_mapping", "equal energy"}};
  j["warnings"] = {"a warning"};
  write_file(dir / "result.json", j.dump());
  {
    const auto run = edgc("report " + dir.string(), tmp);
    ASSERT_EQ(run.code, 0) << run.err;
  }
  const std::string html = read_file(dir / "report.html");
  const std::size_t verdict = html.find("Verdict (against no compression)");
  ASSERT_NE(verdict, std::string::npos);
  // The one verdict rule (results/verdict.hpp): savings positive, 3 significant digits, the threshold stated.
  EXPECT_NE(html.find("edgc pays: saves 25.0 % of training time (2.50 h, $250) at 40.0 % gradient error (measured on "
                      "the trace; CQM 90.0 %); above 2.00 % (--min-saving)."),
            std::string::npos);
  EXPECT_NE(html.find("static does not pay: costs 10.0 % more training time (1.00 h, $100 more); its gradient error is "
                      "not known (no trace was replayed, and the CQM&#39;s structure-free prediction is not evidence); "
                      "pays only above 2.00 % (--min-saving)."),
            std::string::npos);
  // static's only error figure is the CQM's: no evidence to call either policy the better.
  EXPECT_NE(html.find("the gradient errors are not both known, so neither is better."), std::string::npos);
  EXPECT_EQ(html.find("edgc is better."), std::string::npos);
  const std::size_t settings =
      html.find("compression: window 10 iterations, \xCE\xB1 0.2, \xCE\xB2 0.25, r_min 8, r_max 64, step 8");
  ASSERT_NE(settings, std::string::npos);
  EXPECT_NE(html.find("network profile: ideal"), std::string::npos);
  EXPECT_NE(html.find("entropy: synthetic curve from -4 to -6 nats"), std::string::npos);
  EXPECT_NE(html.find("gradient error: PowerSGD with error feedback replayed on t (2\xC3\x97 stretch); ranks mapped by "
                      "equal energy"),
            std::string::npos);
  EXPECT_LT(verdict, settings);
  EXPECT_LT(settings, html.find("a warning"));
  EXPECT_LT(html.find("a warning"), html.find("Compared policies"));
}

// Every string a user controls that reaches a report (scenario and spec paths, descriptions, cluster, GPU, model and
// option names, axis labels, verdicts, failed points' messages, warnings) is given a script element and quotes that
// would end an attribute; in the page and in every chart each occurrence comes out escaped, never as markup.
TEST(Report, UserStringsAreEscapedInThePageAndEveryChart) {
  TempDir tmp;
  const fs::path dir = copy_fixtures(tmp, {"simulate", "sweep", "plan"});
  const std::string payload = "<script>alert(1)</script>\"'><svg onload=x>";
  const std::string escaped = "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&gt;&lt;svg onload=x&gt;";
  const auto poison = [&](ordered_json& v) { v = v.get<std::string>() + payload; };
  const auto edit = [&](const fs::path& file, const std::function<void(ordered_json&)>& change) {
    ordered_json j = ordered_json::parse(read_file(file));
    change(j);
    write_file(file, j.dump(1));
  };
  edit(dir / "result.json", [&](ordered_json& j) {
    for (const char* k : {"scenario"}) poison(j[k]);
    poison(j["cluster"]["gpu"]);
    poison(j["cluster"]["name"]);
    poison(j["model"]["name"]);
    j["verdicts"] = {"verdict " + payload};
    j["warnings"] = {"warning " + payload};
  });
  const std::string axis = "compression.window";
  edit(dir / "sweep.json", [&](ordered_json& j) {
    poison(j["base"]);
    j["description"] = "sweep " + payload;
    j["spec_file"] = "spec " + payload;
    poison(j["axes"][0]["key"]);
  });
  {  // results.jsonl: the renamed axis in every point's params, the GPU name, failed points' messages
    std::string lines;
    std::istringstream in(read_file(dir / "results.jsonl"));
    for (std::string line; std::getline(in, line);) {
      ordered_json j = ordered_json::parse(line, nullptr, false);
      if (j.is_discarded()) continue;  // the fixture's torn last line
      ordered_json params;
      for (const auto& [k, v] : j["params"].items()) params[k == axis ? axis + payload : k] = v;
      j["params"] = params;
      if (j.contains("gpu")) poison(j["gpu"]);
      if (j.contains("error")) poison(j["error"]);
      lines += j.dump() + "\n";
    }
    write_file(dir / "results.jsonl", lines);
  }
  edit(dir / "plan.json", [&](ordered_json& j) {
    for (ordered_json& o : j["options"]) {
      poison(o["label"]);
      poison(o["gpu"]);
    }
    for (ordered_json& v : j["verdicts"]) poison(v);
    for (ordered_json& v : j["infeasible"]) poison(v);
  });
  const auto r = edgc("report " + dir.string(), tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<fs::path> files = {dir / "report.html"};
  for (const auto& e : fs::directory_iterator(dir / "report")) files.push_back(e.path());
  ASSERT_EQ(files.size(), 14U);  // the page and its 13 charts
  std::size_t reached = 0;
  for (const fs::path& f : files) {
    const std::string text = read_file(f);
    // Every occurrence is the escaped one: no script element, no attribute closed early, no new element.
    EXPECT_EQ(count(text, "alert(1)"), count(text, escaped)) << f;
    // The page's one script is its own self-check, after the content; no other script element anywhere.
    EXPECT_EQ(count(text, "<script"), f.extension() == ".html" ? 1U : 0U) << f;
    if (f.extension() == ".html") {
      EXPECT_GT(text.find("<script"), text.find("</main>")) << f;
    }
    EXPECT_EQ(text.find("<svg onload"), std::string::npos) << f;
    EXPECT_EQ(text.find("\"'>"), std::string::npos) << f;
    reached += count(text, escaped) > 0 ? 1 : 0;
  }
  const std::string html = read_file(dir / "report.html");
  EXPECT_GE(count(html, escaped), 10U);  // the strings did reach the page
  EXPECT_GE(reached, 5U);                // and several charts (axis labels, option and GPU names)
}

TEST(ReportRejects, MissingOrEmptyDirectory) {
  TempDir tmp;
  const auto missing = edgc("report " + (tmp / "nope").string(), tmp);
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find((tmp / "nope").string() + ": no such directory"), std::string::npos) << missing.err;
  fs::create_directories(tmp / "empty");
  const Failure empty = reject(tmp / "empty", tmp);
  EXPECT_EQ(empty.code, 2);
  for (const char* name : {"empty", "result.json", "sweep.json", "results.jsonl", "plan.json"})
    EXPECT_NE(empty.err.find(name), std::string::npos) << name << ": " << empty.err;
  const auto usage = edgc("report", tmp);
  EXPECT_EQ(usage.code, 2);
}

TEST(ReportRejects, MalformedResultJsonNamingTheField) {
  TempDir tmp;
  const fs::path dir = copy_fixtures(tmp, {"simulate", "plan"});
  const std::string good = read_file(dir / "result.json");
  write_file(dir / "result.json", good.substr(0, good.size() / 2));
  Failure f = reject(dir, tmp);
  EXPECT_EQ(f.code, 2);
  EXPECT_NE(f.err.find("result.json: not valid JSON"), std::string::npos) << f.err;

  ordered_json j = ordered_json::parse(good);
  j["runs"][1]["training_time_s"] = "fast";
  write_file(dir / "result.json", j.dump());
  f = reject(dir, tmp);
  EXPECT_EQ(f.code, 2);
  EXPECT_NE(f.err.find("result.json: runs[1].training_time_s: expected a number"), std::string::npos) << f.err;

  j = ordered_json::parse(good);
  j["runs"][1]["breakdown"]["entropy_s"] = "x";  // the GDS passes' part: optional, but a number when given
  write_file(dir / "result.json", j.dump());
  f = reject(dir, tmp);
  EXPECT_EQ(f.code, 2);
  EXPECT_NE(f.err.find("result.json: runs[1].breakdown.entropy_s: expected a number"), std::string::npos) << f.err;

  j = ordered_json::parse(good);
  j["entropy_series"]["stages"][1]["histogram_nats"].erase(0);
  write_file(dir / "result.json", j.dump());
  f = reject(dir, tmp);
  EXPECT_NE(f.err.find("entropy_series.stages[1].histogram_nats: has 23 values, expected 24"), std::string::npos)
      << f.err;

  j = ordered_json::parse(good);
  j["schema"] = "edgc.result/9";
  write_file(dir / "result.json", j.dump());
  f = reject(dir, tmp);
  EXPECT_NE(f.err.find("result.json: schema: expected \"edgc.result/1\""), std::string::npos) << f.err;
}

TEST(ReportRejects, MalformedResultsLineNamingTheLine) {
  TempDir tmp;
  const fs::path dir = copy_fixtures(tmp, {"sweep"});
  const std::string good = read_file(dir / "results.jsonl");
  const std::size_t second = good.find('\n') + 1;
  const std::size_t third = good.find('\n', second) + 1;
  // Line 2 cut short, followed by more lines: not a write in progress, but a broken file.
  write_file(dir / "results.jsonl", good.substr(0, second + 20) + "\n" + good.substr(third));
  Failure f = reject(dir, tmp);
  EXPECT_EQ(f.code, 2);
  EXPECT_NE(f.err.find("results.jsonl: line 2: not valid JSON"), std::string::npos) << f.err;

  std::string bad = good;
  const std::size_t at = bad.find("\"speedup_vs_none\": ", third);
  bad.replace(at, std::string("\"speedup_vs_none\": ").size(), "\"speedup_vs_none\": \"x\", \"was\": ");
  write_file(dir / "results.jsonl", bad);
  f = reject(dir, tmp);
  EXPECT_EQ(f.code, 2);
  EXPECT_NE(f.err.find("results.jsonl: line 3: runs[0].speedup_vs_none: expected a number"), std::string::npos)
      << f.err;

  fs::remove(dir / "sweep.json");
  write_file(dir / "results.jsonl", good);
  f = reject(dir, tmp);
  EXPECT_EQ(f.code, 2);
  EXPECT_NE(f.err.find("sweep.json: missing"), std::string::npos) << f.err;
}

TEST(ReportRejects, MalformedPlanAndBadOptions) {
  TempDir tmp;
  const fs::path dir = copy_fixtures(tmp, {"plan"});
  ordered_json j = ordered_json::parse(read_file(dir / "plan.json"));
  j["options"][1].erase("cost_usd");
  write_file(dir / "plan.json", j.dump());
  Failure f = reject(dir, tmp);
  EXPECT_EQ(f.code, 2);
  EXPECT_NE(f.err.find("plan.json: options[1].cost_usd: missing"), std::string::npos) << f.err;

  j = ordered_json::parse(read_file(kFixtures / "plan/plan.json"));
  j["options"][0]["pareto"] = "yes";
  write_file(dir / "plan.json", j.dump());
  f = reject(dir, tmp);
  EXPECT_NE(f.err.find("plan.json: options[0].pareto: expected true or false"), std::string::npos) << f.err;

  // --x/--y name sweep axes: unknown keys, and a directory without a sweep, are usage errors.
  fs::copy_file(kFixtures / "plan/plan.json", dir / "plan.json", fs::copy_options::overwrite_existing);
  f = reject(dir, tmp, "--x compression.window");
  EXPECT_EQ(f.code, 2);
  EXPECT_NE(f.err.find("--x: choose sweep axes"), std::string::npos) << f.err;
  const fs::path sweep = copy_fixtures(tmp, {"sweep"}, "sweep");
  f = reject(sweep, tmp, "--y compression.nope");
  EXPECT_EQ(f.code, 2);
  EXPECT_NE(f.err.find("--y: 'compression.nope' is not a sweep axis (axes: compression.window, compression.r_min, "
                       "compression.alpha)"),
            std::string::npos)
      << f.err;

  // --svg-dir naming a file.
  write_file(tmp / "file", "x");
  const auto r = edgc("report " + dir.string() + " --svg-dir " + (tmp / "file").string(), tmp);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("exists and is not a directory"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "report.html"));
}

}  // namespace
