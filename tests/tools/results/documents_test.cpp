// The typed output documents (result.json, results.jsonl lines, sweep.json, plan.json): every field through its
// writer and its strict reader and back, repeats averaged to their closed form, the CSV and console reporters, and
// the reader's rejections naming the file and the field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <sstream>
#include <string>
#include <utility>

#include "edgc/core/error.hpp"
#include "edgc/results/caveats.hpp"
#include "edgc/results/plan_document.hpp"
#include "edgc/results/result_console.hpp"
#include "edgc/results/result_document.hpp"
#include "edgc/results/sweep_document.hpp"
#include "edgc/results/sweep_lines.hpp"
#include "expect_error.hpp"
#include "trace_test_util.hpp"

namespace edgc::results {
namespace {

using nlohmann::ordered_json;
using traces::test::TempDir;
using traces::test::write_file;

ResultRun sample_run(const std::string& policy, double train_s) {
  ResultRun r;
  r.policy = policy;
  r.iteration_time_s = train_s / 100.0;
  r.comm_latency_s = 0.125;
  r.training_time_s = train_s;
  r.speedup_vs_none = 1000.0 / train_s;
  r.comm_latency_reduction_vs_none = 0.25;
  r.training_time_reduction_vs_none = 1.0 - train_s / 1000.0;
  r.gpu_hours = train_s / 3600.0 * 64;
  r.cost_usd = r.gpu_hours * 2.5;
  r.compressed_iterations = 90;
  r.stage_comm_latency_s = {0.1, 0.125};
  r.breakdown = sim::IterationBreakdown{1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125};
  r.warmup_end_iteration = 10;
  r.rank_schedule = {{0, 10, {0, 0}}, {10, 100, {32, 16}}};
  r.detail["windows"] = 10;
  r.detail["note"] = "kept as written";
  return r;
}

ResultDocument sample_document() {
  ResultDocument d;
  d.scenario = "scenarios/small.json";
  d.cluster = ResultCluster{"dgx", 64, 8, 8, "H100", 2.5};
  d.model_name = "gpt";
  d.model_parameters = 1.5e9;
  d.parallelism = ResultParallelism{2, 2, 16, 8, "1f1b", 1, "tp-dp-pp"};
  d.run = ResultRunSettings{100, 10, 0.1, 0.25, 8, 64, 8};
  d.sections["simgrid"] = "3.32";
  d.sections["dac"] = {{"eta_s_per_rank", 1e-6}};
  d.simulations = 3;
  d.composition = "stage-separable";
  d.simulated_iterations = 2;
  d.runs = {sample_run("none", 1000.0), sample_run("edgc", 800.0)};
  d.runs[0].warmup_end_iteration.reset();
  d.entropy_series = EntropySeries{{0, 50, 99}, {{0, {1.0, std::nan(""), 3.0}, {1.5, 2.5, 3.5}}}};
  return d;
}

void expect_same_runs(const ResultRun& a, const ResultRun& b) {
  EXPECT_EQ(a.policy, b.policy);
  for (double RunFigures::*f :
       {&RunFigures::iteration_time_s, &RunFigures::comm_latency_s, &RunFigures::training_time_s,
        &RunFigures::speedup_vs_none, &RunFigures::comm_latency_reduction_vs_none,
        &RunFigures::training_time_reduction_vs_none, &RunFigures::gpu_hours, &RunFigures::cost_usd})
    EXPECT_EQ(a.*f, b.*f);
  EXPECT_EQ(a.compressed_iterations, b.compressed_iterations);
  EXPECT_EQ(a.stage_comm_latency_s, b.stage_comm_latency_s);
  ASSERT_EQ(a.breakdown.has_value(), b.breakdown.has_value());
  if (a.breakdown) {
    EXPECT_EQ(a.breakdown->compute_s, b.breakdown->compute_s);
    EXPECT_EQ(a.breakdown->compression_s, b.breakdown->compression_s);
  }
  EXPECT_EQ(a.warmup_end_iteration, b.warmup_end_iteration);
  EXPECT_EQ(a.rank_schedule, b.rank_schedule);
  EXPECT_EQ(a.detail, b.detail);
}

ResultDocument round_trip(const ResultDocument& d) {
  const ordered_json j = ordered_json::parse(to_json(d).dump());
  return parse_result_document(JsonNode(j, "result.json"));
}

TEST(ResultDocument, EveryFieldSurvivesWriterAndReader) {
  const ResultDocument d = sample_document();
  const ResultDocument back = round_trip(d);
  EXPECT_EQ(back.source, "simulate");
  EXPECT_EQ(back.scenario, d.scenario);
  ASSERT_TRUE(back.cluster);
  EXPECT_EQ(back.cluster->gpus, 64);
  EXPECT_EQ(back.cluster->gpu, "H100");
  EXPECT_EQ(back.cluster->price_per_gpu_hour_usd, 2.5);
  EXPECT_EQ(back.model_name, d.model_name);
  EXPECT_EQ(back.model_parameters, d.model_parameters);
  ASSERT_TRUE(back.parallelism);
  EXPECT_EQ(back.parallelism->dp, 16);
  EXPECT_EQ(back.parallelism->schedule, "1f1b");
  EXPECT_EQ(back.parallelism->order, "tp-dp-pp");
  ASSERT_TRUE(back.run);
  EXPECT_EQ(back.run->iterations, 100);
  EXPECT_EQ(back.run->beta, 0.25);
  EXPECT_EQ(back.run->r_max, 64);
  EXPECT_EQ(back.simulations, 3);
  EXPECT_EQ(back.composition, "stage-separable");
  EXPECT_EQ(back.simulated_iterations, 2);
  EXPECT_EQ(back.sections, d.sections);
  ASSERT_EQ(back.runs.size(), 2U);
  for (std::size_t i = 0; i < 2; ++i) expect_same_runs(back.runs[i], d.runs[i]);
  ASSERT_TRUE(back.entropy_series);
  EXPECT_EQ(back.entropy_series->iterations, d.entropy_series->iterations);
  EXPECT_TRUE(std::isnan(back.entropy_series->stages[0].gaussian_nats[1]));  // null in the file
  EXPECT_EQ(back.entropy_series->stages[0].histogram_nats, d.entropy_series->stages[0].histogram_nats);
  // A second round trip is a fixed point of the text.
  EXPECT_EQ(to_json(back).dump(), to_json(d).dump());
}

TEST(ResultDocument, LiveDocumentsCarryTheirSourceAndOnlyTheLayoutTheyHave) {
  ResultDocument d;
  d.source = "live";
  d.scenario = "s.json";
  d.parallelism = ResultParallelism{1, 2, 2, 0, "", 0, ""};
  ResultRun r = sample_run("none", 10.0);
  r.gpu_hours = RunFigures::kAbsent;
  r.cost_usd = RunFigures::kAbsent;
  r.breakdown.reset();
  d.runs = {r};
  const ordered_json j = to_json(d);
  EXPECT_EQ(j.at("source"), "live");
  EXPECT_EQ(j.at("parallelism"), ordered_json({{"tp", 1}, {"pp", 2}, {"dp", 2}}));
  EXPECT_FALSE(j.at("runs")[0].contains("gpu_hours"));  // absent, not NaN or null
  EXPECT_FALSE(j.at("runs")[0].contains("breakdown"));
  const ResultDocument back = round_trip(d);
  EXPECT_EQ(back.source, "live");
  EXPECT_TRUE(std::isnan(back.runs[0].gpu_hours));
  EXPECT_FALSE(back.cluster);
  EXPECT_FALSE(back.entropy_series);
}

void expect_rejected(const ordered_json& j, const std::string& expected,
                     edgc::test::CallerLine caller = edgc::test::CallerLine::current()) {
  edgc::test::expect_config_error([&] { (void)parse_result_document(JsonNode(j, "out/result.json")); }, std::nullopt,
                                  std::nullopt, {expected}, caller);
}

TEST(ResultDocument, ReaderNamesTheFileAndTheField) {
  const ordered_json good = to_json(sample_document());
  ordered_json j = good;
  j["schema"] = "edgc.result/2";
  expect_rejected(j, "out/result.json");
  j = good;
  j["runs"] = ordered_json::array();
  expect_rejected(j, "runs: is empty");
  j = good;
  j["runs"][1]["speedup_vs_none"] = "fast";
  expect_rejected(j, "runs[1].speedup_vs_none");
  j = good;
  j["runs"][0]["rank_schedule"][1]["ranks"][0] = -1;
  expect_rejected(j, "runs[0].rank_schedule[1].ranks[0]");
  j = good;
  j["runs"][0]["rank_schedule"][1]["end"] = 5;
  expect_rejected(j, "before its begin");
  j = good;
  j["composition"] = "approximate";
  expect_rejected(j, "composition");
  j = good;
  j["entropy_series"]["stages"][0]["gaussian_nats"].erase(0);
  expect_rejected(j, "expected 3");
  j = good;
  j.erase("runs");
  expect_rejected(j, "runs");
}

TEST(ResultDocument, ReadFromFileAndMissingFile) {
  TempDir dir;
  write_file(dir.path() / "result.json", to_json(sample_document()).dump(2));
  EXPECT_EQ(read_result_document(dir.path() / "result.json").runs.size(), 2U);
  EXPECT_THROW((void)read_result_document(dir.path() / "absent.json"), ConfigError);
}

TEST(ResultConsole, PrintsOneRowPerPolicyInBothTables) {
  std::ostringstream os;
  print_result_summary(os, sample_document());
  const std::string out = os.str();
  EXPECT_NE(out.find("scenarios/small.json: 64 x H100, tp 2 pp 2 dp 16, 100 iterations, 3 distinct rank vectors "
                     "composed from 2 simulated uniform-rank iterations"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("per iteration (mean over the run)"), std::string::npos);
  // Policy edgc: 800 s = 0.2222 h of training, speedup 1.25, warm-up ends at 10; none never leaves warm-up.
  EXPECT_NE(out.find("0.2222"), std::string::npos) << out;
  EXPECT_NE(out.find("1.250"), std::string::npos) << out;
  std::size_t rows = 0;
  for (std::size_t at = out.find("\n  edgc"); at != std::string::npos; at = out.find("\n  edgc", at + 1)) ++rows;
  EXPECT_EQ(rows, 2U);
  ResultDocument bare;
  bare.runs = {sample_run("none", 1.0)};
  EXPECT_THROW(print_result_summary(os, bare), InternalError);
}

SweepRecord sample_record() {
  SweepRecord r;
  r.point = 4;
  r.params = {{"compression.r_min", 8}, {"cluster", "dgx"}};
  r.gpus = 64;
  r.gpu = "H100";
  r.compute = "kernels";
  r.repeats = 2;
  r.simulations = 6;
  SweepRun run;
  static_cast<RunFigures&>(run) = sample_run("edgc", 800.0);
  run.warmup_end_iteration = 10;
  run.compressed_iterations = 90;
  run.training_time_s_ci95 = 12.5;
  r.runs = {run};
  r.wall_s = 1.5;
  return r;
}

SweepRecord record_round_trip(const SweepRecord& r) {
  const ordered_json j = ordered_json::parse(to_json(r).dump());
  return parse_sweep_record(JsonNode(j, "results.jsonl", "line 1"));
}

TEST(SweepRecord, FinishedAndFailedPointsSurviveWriterAndReader) {
  const SweepRecord r = sample_record();
  const SweepRecord back = record_round_trip(r);
  EXPECT_EQ(back.point, 4);
  EXPECT_EQ(back.params, r.params);
  EXPECT_FALSE(back.failed());
  EXPECT_EQ(back.gpus, 64);
  EXPECT_EQ(back.compute, "kernels");
  EXPECT_EQ(back.repeats, 2);
  EXPECT_EQ(back.simulations, 6);
  EXPECT_EQ(back.wall_s, 1.5);
  ASSERT_EQ(back.runs.size(), 1U);
  EXPECT_EQ(back.runs[0].training_time_s, 800.0);
  EXPECT_EQ(back.runs[0].training_time_s_ci95, 12.5);
  EXPECT_TRUE(std::isnan(back.runs[0].cost_usd_ci95));  // not written
  EXPECT_FALSE(to_json(r)["runs"][0].contains("cost_usd_ci95"));
  EXPECT_EQ(back.runs[0].warmup_end_iteration, 10);
  EXPECT_EQ(run_figure(back.runs[0], "training_time_s_ci95"), 12.5);
  EXPECT_EQ(run_figure(back.runs[0], "compressed_iterations"), 90.0);
  EXPECT_FALSE(run_figure(back.runs[0], "nonsense"));
  EXPECT_TRUE(std::isnan(back.trace_smaller_by));  // unknown: not written
  EXPECT_FALSE(to_json(r).contains("trace_smaller_by"));
  SweepRecord traced = r;
  traced.trace_smaller_by = 97.2;  // the verdict's test of the error's evidence (results/verdict.hpp)
  EXPECT_EQ(record_round_trip(traced).trace_smaller_by, 97.2);

  SweepRecord failed;
  failed.point = 7;
  failed.params = {{"k", 1}};
  failed.error = "s.json: model.layers: must be >= 1";
  const ordered_json fj = to_json(failed);
  EXPECT_EQ(fj, ordered_json({{"point", 7}, {"params", {{"k", 1}}}, {"error", failed.error}}));
  EXPECT_EQ(record_round_trip(failed).error, failed.error);
}

TEST(SweepRecord, ReaderNamesTheLine) {
  ordered_json j = to_json(sample_record());
  j["runs"][0]["training_time_s"] = nullptr;
  edgc::test::expect_config_error([&] { (void)parse_sweep_record(JsonNode(j, "out/results.jsonl", "line 3")); },
                                  std::nullopt, std::nullopt, {"out/results.jsonl: line 3: runs[0].training_time_s"});
}

// Fuzz finding: a document nested this deep parsed, then overflowed the stack in the message that printed the
// value (nlohmann's dump() recurses once per level). Every reader refuses it before parsing, naming the file (and
// the line of results.jsonl).
TEST(ResultDocument, NestingDeeperThanTheLimitIsRefusedNamingTheFile) {
  TempDir dir;
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  write_file(dir.path() / "result.json", deep);
  edgc::test::expect_config_error([&] { (void)read_result_document(dir.path() / "result.json"); },
                                  (dir.path() / "result.json").string(), std::nullopt,
                                  {"nested deeper than 64 levels (column 65)"});
  write_file(dir.path() / "results.jsonl",
             to_json(sample_record()).dump() + "\n{\"point\": 1, \"runs\": " + deep + "}\n");
  edgc::test::expect_config_error([&] { (void)read_sweep_records(dir.path() / "results.jsonl"); }, std::nullopt,
                                  std::nullopt,
                                  {"results.jsonl: line 2: arrays and objects nested deeper than 64 levels"});
}

// A point number is an integer in [0, 2^63 - 1], compared exactly: 2^64 - 1 wrapped to -1 before (and two such lines
// read as the same point), 1.0 is not a point number.
TEST(SweepRecord, PointNumbersAreCheckedIntegers) {
  TempDir dir;
  const std::string tail = R"(, "params": {}, "error": "x"})";
  const std::pair<std::string, std::string> cases[] = {
      {"{\"point\": 18446744073709551615" + tail, "line 1: point: must be in [0, 9223372036854775807]"},
      {"{\"point\": -1" + tail, "line 1: point: must be in [0, 9223372036854775807], got -1"},
      {"{\"point\": 1.0" + tail, "line 1: point: missing or not an integer"},
      {"{\"point\": 3" + tail + "\n{\"point\": 3" + tail, "line 2: point: point 3 appears twice"},
  };
  for (const auto& [text, says] : cases) {
    write_file(dir.path() / "results.jsonl", text + "\n");
    edgc::test::expect_config_error([&] { (void)read_sweep_records(dir.path() / "results.jsonl"); }, std::nullopt,
                                    std::nullopt, {says});
  }
}

// results.jsonl is bounded like every file read whole: a (sparse) file past kMaxSweepResultsBytes is refused from
// its size, before any of it is read.
TEST(SweepRecord, AResultsFilePastTheBoundIsRefusedUnread) {
  TempDir dir;
  const auto file = dir.path() / "results.jsonl";
  write_file(file, to_json(sample_record()).dump() + "\n");
  std::filesystem::resize_file(file, edgc::results::kMaxSweepResultsBytes + 1);
  edgc::test::expect_config_error([&] { (void)read_sweep_records(file); }, file.string(), std::nullopt,
                                  {"larger than 1024 MiB, more than any sweep's results.jsonl holds"});
}

// Fuzz finding: a results.jsonl whose folder name is too long for the OS threw std::filesystem's filesystem_error
// (a missing file is an empty sweep, one that cannot be looked at is an error naming it).
TEST(SweepRecord, AFileTheOsCannotLookAtIsAConfigError) {
  TempDir dir;
  const auto file = dir.path() / std::string(300, 'd') / "results.jsonl";
  edgc::test::expect_config_error([&] { (void)read_sweep_records(file); }, file.string(), std::nullopt,
                                  {"cannot be read: File name too long"});
  EXPECT_TRUE(read_sweep_records(dir.path() / "results.jsonl").empty());
}

TEST(SweepRecord, RepeatsAverageToTheMeanWithTheStudentTHalfWidth) {
  std::vector<ResultDocument> reps(2, sample_document());
  reps[0].runs[1].training_time_s = 700.0;
  reps[1].runs[1].training_time_s = 900.0;
  reps[1].runs[1].warmup_end_iteration = 99;  // the first repeat's is kept
  const std::vector<SweepRun> runs = average_runs(reps);
  ASSERT_EQ(runs.size(), 2U);
  EXPECT_EQ(runs[1].policy, "edgc");
  EXPECT_DOUBLE_EQ(runs[1].training_time_s, 800.0);
  // Two repeats: sd = 100·√2, half-width = t(0.975, 1) · sd / √2 = 12.706 · 100.
  EXPECT_NEAR(runs[1].training_time_s_ci95, 1270.6, 1e-9);
  EXPECT_EQ(runs[1].iteration_time_s_ci95, 0.0);  // identical repeats
  EXPECT_EQ(runs[1].warmup_end_iteration, 10);
  const std::vector<SweepRun> single = average_runs({reps[0]});
  EXPECT_TRUE(std::isnan(single[1].training_time_s_ci95));
  EXPECT_EQ(single[1].training_time_s, 700.0);
}

TEST(SweepCsv, OneColumnPerAxisAndFigureAndOneRowPerPoint) {
  SweepRecord failed;
  failed.point = 5;
  failed.params = {{"compression.r_min", 16}, {"cluster", "a,b"}};
  failed.error = "bad \"value\"";
  const std::string csv = summary_csv({"compression.r_min", "cluster"}, {sample_record(), failed}, true);
  std::istringstream in(csv);
  std::string header, row1, row2;
  std::getline(in, header);
  std::getline(in, row1);
  std::getline(in, row2);
  EXPECT_EQ(header.rfind("point,compression.r_min,cluster,gpus,gpu,edgc.iteration_time_s,", 0), 0U) << header;
  EXPECT_NE(header.find(",edgc.cost_usd,edgc.gradient_error,edgc.cqm_error,edgc.iteration_time_s_ci95,"),
            std::string::npos)
      << header;
  EXPECT_EQ(header.substr(header.size() - 6), ",error");
  EXPECT_EQ(row1.rfind("4,8,dgx,64,H100,8.0,0.125,800.0,1.25,", 0), 0U) << row1;
  EXPECT_EQ(row2.rfind("5,16,\"a,b\",,,", 0), 0U) << row2;
  const std::string quoted_error = ",\"bad \"\"value\"\"\"";
  EXPECT_EQ(row2.substr(row2.size() - quoted_error.size()), quoted_error) << row2;
  const std::size_t columns = static_cast<std::size_t>(std::count(header.begin(), header.end(), ','));
  EXPECT_EQ(static_cast<std::size_t>(std::count(row1.begin(), row1.end(), ',')), columns);
}

TEST(SweepDocument, EveryFieldSurvivesWriterAndReader) {
  SweepDocument d;
  d.spec_file = "s.json";
  d.base = "base.json";
  d.description = "r_min";
  d.mode = "random";
  d.axes = {{"compression.r_min", {8, 16}, std::pair{4.0, 32.0}}, {"cluster", {"a", "b"}, std::nullopt}};
  d.points = 4;
  d.repeats = 3;
  d.policies = {"none", "edgc"};
  d.spec = {{"base", "base.json"}};
  const ordered_json j = ordered_json::parse(to_json(d).dump());
  const SweepDocument back = parse_sweep_document(JsonNode(j, "sweep.json"));
  EXPECT_EQ(to_json(back), to_json(d));
  ASSERT_TRUE(back.axes[0].range);
  EXPECT_EQ(back.axes[0].range->second, 32.0);
  ordered_json bad = j;
  bad["mode"] = "exhaustive";
  EXPECT_THROW((void)parse_sweep_document(JsonNode(bad, "sweep.json")), ConfigError);
}

TEST(SweepRecord, RankBindingsSurviveWriterAndReader) {
  SweepRecord r = sample_record();
  r.runs[0].rank_bindings = {{"r_min", 3}, {"step", 40}};
  EXPECT_EQ(record_round_trip(r).runs[0].rank_bindings, r.runs[0].rank_bindings);
  r.runs[0].rank_bindings.clear();
  EXPECT_FALSE(to_json(r)["runs"][0].contains("rank_bindings"));
}

// A grid over r_min (3 values) x window (3 values): point p has r_min index p % 3, window index p / 3; policy edgc's
// training time and r_min bindings are whatever `time` and `bound` give.
std::vector<SweepRecord> grid_records(const std::function<double(int, int)>& time,
                                      const std::function<std::int64_t(int, int)>& bound) {
  const int r_mins[] = {8, 16, 32};
  const int windows[] = {250, 500, 1000};
  std::vector<SweepRecord> out;
  for (int p = 0; p < 9; ++p) {
    SweepRecord r;
    r.point = p;
    r.params = {{"compression.r_min", r_mins[p % 3]}, {"compression.window", windows[p / 3]}};
    SweepRun none;
    static_cast<RunFigures&>(none) = sample_run("none", 1000.0);
    SweepRun edgc;
    static_cast<RunFigures&>(edgc) = sample_run("edgc", time(p % 3, p / 3));
    edgc.rank_bindings = {{"r_min", bound(p % 3, p / 3)}, {"step", 5}};
    r.runs = {none, edgc};
    out.push_back(r);
  }
  return out;
}

SweepDocument grid_document() {
  SweepDocument d;
  d.axes = {{"compression.r_min", {8, 16, 32}, std::nullopt}, {"compression.window", {250, 500, 1000}, std::nullopt}};
  return d;
}

bool has_line(const std::vector<std::string>& lines, const std::string& part) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(part) != std::string::npos; });
}

TEST(SweepWarnings, ARankBoundThatNeverBindsAlongItsAxisIsNamed) {
  const auto time = [](int i, int j) { return 900.0 - 10.0 * i + 3.0 * (j - 1) * (j - 1); };  // interior in window
  const auto never = [](int, int) { return std::int64_t{0}; };
  const std::vector<std::string> w = sweep_warnings(grid_document(), grid_records(time, never), std::nullopt);
  EXPECT_TRUE(has_line(w, "axis compression.r_min: r_min decided no rank of policy edgc at any of 9 points"))
      << w.size();
  const auto once = [](int i, int j) { return std::int64_t{i == 2 && j == 2 ? 1 : 0}; };
  EXPECT_FALSE(has_line(sweep_warnings(grid_document(), grid_records(time, once), std::nullopt), "decided no rank"));
  // Runs without bindings (an older results.jsonl) say nothing either way.
  std::vector<SweepRecord> bare = grid_records(time, never);
  for (SweepRecord& r : bare) r.runs[1].rank_bindings.clear();
  EXPECT_FALSE(has_line(sweep_warnings(grid_document(), bare, std::nullopt), "decided no rank"));
}

TEST(SweepWarnings, ABestPointOnTheEdgeOfAnAxisIsNamedAndAnInteriorOneIsNot) {
  const auto some = [](int, int) { return std::int64_t{1}; };
  // Fastest at r_min 32 (largest) and window 500 (interior).
  const auto edge = [](int i, int j) { return 900.0 - 10.0 * i + 3.0 * (j - 1) * (j - 1); };
  std::vector<std::string> w = sweep_warnings(grid_document(), grid_records(edge, some), std::nullopt);
  ASSERT_EQ(w.size(), 1U);
  EXPECT_NE(w[0].find("policy edgc: its fastest point (point 5) has compression.r_min = 32, the largest value swept"),
            std::string::npos)
      << w[0];
  // Fastest inside both axes: nothing to say.
  const auto inside = [](int i, int j) { return 900.0 + (i - 1) * (i - 1) + (j - 1) * (j - 1); };
  EXPECT_TRUE(sweep_warnings(grid_document(), grid_records(inside, some), std::nullopt).empty());
  // A tie between an edge value and an interior one is not an edge optimum.
  const auto tie = [](int i, int j) { return 900.0 + (i == 2 ? 0.0 : (i == 1 ? 0.0 : 5.0)) + (j - 1) * (j - 1); };
  EXPECT_TRUE(sweep_warnings(grid_document(), grid_records(tie, some), std::nullopt).empty());
  // Under a budget the fastest point within it decides: with every r_min 32 point over it, the best is r_min 16,
  // inside the grid; with every r_min 16 and 32 point over it, r_min 8, the smallest value.
  std::vector<SweepRecord> budgeted = grid_records(edge, some);
  for (SweepRecord& r : budgeted) r.runs[1].gradient_error = r.params["compression.r_min"].get<int>() == 32 ? 0.6 : 0.1;
  EXPECT_TRUE(sweep_warnings(grid_document(), budgeted, 0.5).empty());
  for (SweepRecord& r : budgeted) r.runs[1].gradient_error = r.params["compression.r_min"].get<int>() >= 16 ? 0.6 : 0.1;
  w = sweep_warnings(grid_document(), budgeted, 0.5);
  ASSERT_EQ(w.size(), 1U);
  EXPECT_NE(w[0].find("within the error budget (point 3) has compression.r_min = 8, the smallest value swept"),
            std::string::npos)
      << w[0];
}

TEST(SweepWarnings, TheKernelModelsErrorBarOncePerGpuThatUsedIt) {
  const auto time = [](int i, int j) { return 900.0 + (i - 1) * (i - 1) + (j - 1) * (j - 1); };  // interior
  const auto some = [](int, int) { return std::int64_t{1}; };
  std::vector<SweepRecord> records = grid_records(time, some);
  EXPECT_TRUE(kernel_model_warnings(records).empty());  // no compute model recorded (an older results.jsonl)
  for (SweepRecord& r : records) {
    r.compute = r.point < 4 ? "kernels" : "efficiency";
    r.gpu = r.point < 2 ? "A100-SXM4-80GB" : "H100-SXM5-80GB";
  }
  records[3].error = "s.json: model.layers: must be >= 1";  // a failed point counts for nothing
  const std::vector<std::string> w = kernel_model_warnings(records);
  ASSERT_EQ(w.size(), 2U);
  EXPECT_EQ(w[0].rfind("2 point(s) on A100-SXM4-80GB: " + kernel_model_caveat("A100-SXM4-80GB"), 0), 0U) << w[0];
  EXPECT_EQ(w[1].rfind("1 point(s) on H100-SXM5-80GB: " + kernel_model_caveat("H100-SXM5-80GB"), 0), 0U) << w[1];
  EXPECT_EQ(w[0].find("no published run"), std::string::npos) << w[0];  // GPUs with validation rows
  EXPECT_EQ(w[1].find("no published run"), std::string::npos) << w[1];
  // Each GPU's band as sim::kKernelModelValidation states it, and sweep_warnings passes the lines on.
  EXPECT_NE(w[0].find("checked against 18 published Megatron-LM 2021-22 iteration times on A100 "
                      "(scenarios/validation/: narayanan2021, korthikanti2022): errors from -18.2 % to -6.5 %"),
            std::string::npos)
      << w[0];
  EXPECT_NE(w[1].find("16 published Megatron-Core 2024 iteration times on H100"), std::string::npos) << w[1];
  EXPECT_EQ(w[1].find("A100"), std::string::npos) << w[1];
  const std::vector<std::string> all = sweep_warnings(grid_document(), records, std::nullopt);
  EXPECT_TRUE(has_line(all, w[0]) && has_line(all, w[1]));
}

TEST(PlanDocument, EveryFieldSurvivesWriterAndReader) {
  PlanDocument d;
  d.spec = "plan.json";
  d.base = "base.json";
  d.target_iterations = 1000;
  d.target_tokens = 2e9;
  d.pays_threshold = 0.05;
  d.options = {{"A edgc", "H100", "edgc", 64, 8, 2, 4, 3600.0, 100.0, 1.2, true},
               {"B none", "A100", "none", 32, 4, 2, 4, 7200.0, 90.0, 1.0, true}};
  d.infeasible = {"C: does not fit"};
  d.verdicts = {"Fastest: A edgc"};
  const ordered_json j = ordered_json::parse(to_json(d).dump());
  const PlanDocument back = parse_plan_document(JsonNode(j, "plan.json"));
  EXPECT_EQ(to_json(back), to_json(d));
  ordered_json bad = j;
  bad["options"][1].erase("cost_usd");
  edgc::test::expect_config_error([&] { (void)parse_plan_document(JsonNode(bad, "out/plan.json")); }, std::nullopt,
                                  std::nullopt, {"options[1].cost_usd"});
}

}  // namespace
}  // namespace edgc::results
