// `edgc sweep` end to end: results agree with `edgc simulate` on the same settings, kill -9 at random moments
// and --resume loses and duplicates nothing, a partial last line is cut, changed specs and busy directories
// are refused, and 2 MPI ranks give the same result set as one process.
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "cli_test_util.hpp"

namespace {

namespace fs = std::filesystem;
using edgc::cli::test::edgc;
using edgc::traces::test::read_file;
using edgc::traces::test::TempDir;
using nlohmann::json;

const std::string kData = std::string(EDGC_SOURCE_DIR) + "/tests/data/sweep/";
const std::string kGrid = kData + "small-grid.json";

// results.jsonl by point, without the wall-clock field.
std::map<std::int64_t, json> results(const fs::path& dir) {
  std::map<std::int64_t, json> out;
  std::istringstream in(read_file(dir / "results.jsonl"));
  std::string line;
  while (std::getline(in, line)) {
    json j = json::parse(line);
    j.erase("wall_s");
    const auto point = j.at("point").get<std::int64_t>();
    EXPECT_EQ(out.count(point), 0U) << "point " << point << " recorded twice";
    out[point] = j;
  }
  return out;
}

// Writes TMP/spec.json: a one-axis grid over the test scenario `base` (tests/data/simulate/) for `policies`.
fs::path one_axis_spec(const TempDir& tmp, const std::string& base, const std::string& policies, const std::string& key,
                       const std::string& values) {
  const fs::path spec = tmp / "spec.json";
  std::ofstream(spec) << R"({"base": ")" << EDGC_SOURCE_DIR << "/tests/data/simulate/" << base << R"(", "policies": ")"
                      << policies << R"(", "axes": [{"key": ")" << key << R"(", "values": )" << values << "}]}";
  return spec;
}

const json& run_of(const json& line, const std::string& policy) {
  for (const json& r : line.at("runs"))
    if (r.at("policy") == policy) return r;
  throw std::runtime_error("no run " + policy);
}

TEST(SweepCli, PointsAgreeWithSimulateAndSummaryHasEveryPoint) {
  TempDir tmp;
  const auto out = tmp / "sweep";
  const auto r = edgc("sweep --spec " + kGrid + " --out " + out.string() + " --jobs 2", tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("best points for policy edgc"), std::string::npos) << r.out;
  const auto lines = results(out);
  ASSERT_EQ(lines.size(), 12U);
  // Point 7 = window 20, r_min 16, alpha 0.5: the same figures as simulate with those overrides.
  const json& p = lines.at(7);
  EXPECT_EQ(p["params"], json::parse(R"({"compression.window":20,"compression.r_min":16,"compression.alpha":0.5})"));
  const auto sim = edgc("simulate --scenario " + std::string(EDGC_SOURCE_DIR) +
                            "/tests/data/simulate/small.json --policies edgc --set compression.window=20 "
                            "--set compression.r_min=16 --set compression.alpha=0.5 --quiet --out " +
                            (tmp / "sim").string(),
                        tmp);
  ASSERT_EQ(sim.code, 0) << sim.err;
  const json result = json::parse(read_file(tmp / "sim" / "result.json"));
  for (const char* policy : {"none", "edgc"}) {
    const json* expected = nullptr;
    for (const json& x : result["runs"])
      if (x["policy"] == policy) expected = &x;
    ASSERT_NE(expected, nullptr);
    for (const char* f : {"iteration_time_s", "comm_latency_s", "training_time_s", "speedup_vs_none", "cost_usd"})
      EXPECT_DOUBLE_EQ(run_of(p, policy)[f].get<double>(), (*expected)[f].get<double>()) << policy << " " << f;
  }
  // Different windows give different EDGC schedules, hence different times.
  EXPECT_NE(run_of(lines.at(1), "edgc")["training_time_s"], run_of(lines.at(9), "edgc")["training_time_s"]);
  // summary.csv: a header and one row per point, in point order.
  std::istringstream csv(read_file(out / "summary.csv"));
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(
      header.rfind("point,compression.window,compression.r_min,compression.alpha,gpus,gpu,none.iteration_time_s", 0),
      0U)
      << header;
  EXPECT_NE(header.find("edgc.training_time_s"), std::string::npos);
  int rows = 0;
  for (std::string row; std::getline(csv, row); ++rows) EXPECT_EQ(row.rfind(std::to_string(rows) + ",", 0), 0U) << row;
  EXPECT_EQ(rows, 12);
  const json meta = json::parse(read_file(out / "sweep.json"));
  EXPECT_EQ(meta["schema"], "edgc.sweep/1");
  EXPECT_EQ(meta["points"], 12);
  EXPECT_EQ(meta["axes"][0]["values"], json::parse("[10, 20, 30]"));
}

// results.jsonl's lines by point, as written, less the wall-clock field.
std::map<std::int64_t, std::string> raw_lines(const fs::path& dir) {
  std::map<std::int64_t, std::string> out;
  std::istringstream in(read_file(dir / "results.jsonl"));
  const std::regex wall(R"(,"wall_s":[-+0-9.eE]+)");
  for (std::string line; std::getline(in, line);)
    out[json::parse(line).at("point").get<std::int64_t>()] = std::regex_replace(line, wall, "");
  return out;
}

// Long-lived workers keep the trace, replays, cache entries and rank-error tables of one point in memory for the
// next: the 64 x H100 paper scenario (bundled trace, gradient error measured) swept memoised gives byte for byte the
// lines of every point run in a fresh process without any memo or cache (EDGC_NO_MEMO=1).
TEST(SweepCli, MemoisedPointsGiveTheBytesOfUnmemoisedOnes) {
  TempDir tmp;
  const fs::path spec = tmp / "spec.json";
  std::ofstream(spec) << R"({"base": ")" << EDGC_SOURCE_DIR << R"(/scenarios/paper/gpt2-12.1b-64xh100.json",
    "policies": "none,edgc", "axes": [{"key": "compression.window", "values": [500, 1000]},
    {"key": "compression.beta", "values": [0.1, 0.25]}, {"key": "compression.r_min", "values": [16, 64]}]})";
  const auto memo =
      edgc("sweep --spec " + spec.string() + " --out " + (tmp / "memo").string() + " --jobs 2 --quiet", tmp);
  ASSERT_EQ(memo.code, 0) << memo.err;
  ASSERT_EQ(::setenv("EDGC_NO_MEMO", "1", 1), 0);
  const auto fresh =
      edgc("sweep --spec " + spec.string() + " --out " + (tmp / "fresh").string() + " --jobs 2 --quiet", tmp);
  ::unsetenv("EDGC_NO_MEMO");
  ASSERT_EQ(fresh.code, 0) << fresh.err;
  const auto a = raw_lines(tmp / "memo");
  ASSERT_EQ(a.size(), 8U);
  EXPECT_EQ(a, raw_lines(tmp / "fresh"));
  EXPECT_NE(a.at(0).find("\"gradient_error\""), std::string::npos);
  EXPECT_FALSE(fs::exists(tmp / "fresh" / "cache") && !fs::is_empty(tmp / "fresh" / "cache"));
}

// Starts `edgc args...` (stdout/stderr to files in `tmp`) and returns its pid.
pid_t spawn(const std::vector<std::string>& args, const TempDir& tmp) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::string out = (tmp / "spawn.out").string();
    if (!std::freopen(out.c_str(), "a", stdout) || !std::freopen(out.c_str(), "a", stderr)) std::_Exit(127);
    std::vector<char*> argv;
    std::string bin = EDGC_BINARY;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    std::_Exit(127);
  }
  return pid;
}

TEST(SweepCli, KillNineAtRandomMomentsThenResumeLosesAndDuplicatesNothing) {
  TempDir tmp;
  const std::string spec = kData + "small-kill.json";
  const auto reference = tmp / "reference";
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(edgc("sweep --spec " + spec + " --out " + reference.string() + " --jobs 2 --quiet", tmp).code, 0);
  // Kill at random moments within the time a whole sweep takes, so kills land in every phase: start-up, the
  // first simulations, appends, the summary.
  const auto whole_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  const auto out = tmp / "killed";
  std::mt19937 rng(2024);
  std::uniform_int_distribution<int> delay_ms(1, std::max(20, static_cast<int>(whole_ms / 8)));
  int kills = 0;
  int code = -1;
  // Twelve runs killed at random moments (unless they finished first), then one left to finish.
  for (int attempt = 0; attempt <= 12 && code != 0; ++attempt) {
    const pid_t pid =
        spawn({"sweep", "--spec", spec, "--out", out.string(), "--jobs", "2", "--resume", "--quiet"}, tmp);
    const int ms = attempt < 12 ? delay_ms(rng) : 600'000;
    int status = 0;
    pid_t done = 0;
    for (int waited = 0; waited < ms && done == 0; ++waited) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      done = ::waitpid(pid, &status, WNOHANG);
    }
    if (done == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ++kills;
      continue;
    }
    ASSERT_TRUE(WIFEXITED(status)) << read_file(tmp / "spawn.out");
    code = WEXITSTATUS(status);
    ASSERT_EQ(code, 0) << read_file(tmp / "spawn.out");
  }
  ASSERT_EQ(code, 0) << "the sweep never finished";
  EXPECT_GE(kills, 3) << "too few kills landed: make the sweep longer or the delays shorter";
  EXPECT_EQ(results(out), results(reference)) << kills << " kills";
}

TEST(SweepCli, ResumeCutsAPartialLastLineAndRunsOnlyMissingPoints) {
  TempDir tmp;
  const auto out = tmp / "sweep";
  ASSERT_EQ(edgc("sweep --spec " + kGrid + " --out " + out.string() + " --jobs 2 --quiet", tmp).code, 0);
  const auto full = results(out);
  // Keep points 0-4, then half of point 5's line, as a writer killed mid-line would leave it.
  std::istringstream in(read_file(out / "results.jsonl"));
  std::map<std::int64_t, std::string> by_point;
  for (std::string line; std::getline(in, line);) by_point[json::parse(line)["point"].get<std::int64_t>()] = line;
  {
    std::ofstream f(out / "results.jsonl", std::ios::trunc);
    for (int p = 0; p < 5; ++p) f << by_point[p] << "\n";
    f << by_point[5].substr(0, by_point[5].size() / 2);
  }
  const auto r = edgc("sweep --spec " + kGrid + " --out " + out.string() + " --jobs 2 --resume", tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("5 already done, 7 run"), std::string::npos) << r.out;
  EXPECT_EQ(results(out), full);
  // Resuming a finished sweep runs nothing.
  const auto again = edgc("sweep --spec " + kGrid + " --out " + out.string() + " --resume", tmp);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("12 already done, 0 run"), std::string::npos) << again.out;
}

// Two runs on one sweep directory: while one holds it (here the test holds its lock, as a running sweep does), a
// --resume is refused with exit 2 and the directory is left as it was; once released, --resume runs.
TEST(SweepCli, AResumeWhileAnotherRunHoldsTheDirectoryIsRefused) {
  TempDir tmp;
  const auto out = tmp / "sweep";
  ASSERT_EQ(edgc("sweep --spec " + kGrid + " --out " + out.string() + " --quiet", tmp).code, 0);
  const std::string before = read_file(out / "results.jsonl");
  const int fd = ::open((out / ".edgc-sweep.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  const auto r = edgc("sweep --spec " + kGrid + " --out " + out.string() + " --resume", tmp);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("is in use by another edgc sweep or plan"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(out / "results.jsonl"), before);
  ::close(fd);
  const auto again = edgc("sweep --spec " + kGrid + " --out " + out.string() + " --resume", tmp);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("12 already done, 0 run"), std::string::npos) << again.out;
}

TEST(SweepCli, RefusesBusyDirectoriesChangedSpecsAndCorruptResults) {
  TempDir tmp;
  const auto out = tmp / "sweep";
  ASSERT_EQ(edgc("sweep --spec " + kGrid + " --out " + out.string() + " --quiet", tmp).code, 0);
  // Without --resume: refused, nothing touched.
  const auto before = read_file(out / "results.jsonl");
  auto r = edgc("sweep --spec " + kGrid + " --out " + out.string(), tmp);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--resume"), std::string::npos) << r.err;
  // Another spec into the same directory.
  r = edgc("sweep --spec " + kData + "small-random.json --out " + out.string() + " --resume", tmp);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("sweep.json: spec"), std::string::npos) << r.err;
  // The same spec with another --set is another sweep too.
  r = edgc("sweep --spec " + kGrid + " --out " + out.string() + " --resume --set run.iterations=60", tmp);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(read_file(out / "results.jsonl"), before);
  // A corrupt line that is not the last one.
  {
    std::ofstream f(out / "results.jsonl", std::ios::trunc);
    f << "{\"point\": 0, \"params\": {}, \"runs\": []}\nnot json\n";
  }
  r = edgc("sweep --spec " + kGrid + " --out " + out.string() + " --resume", tmp);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("results.jsonl: line 2: not valid JSON"), std::string::npos) << r.err;
  // A non-empty directory that holds no sweep.
  fs::create_directories(tmp / "other");
  std::ofstream(tmp / "other" / "x.txt") << "x";
  r = edgc("sweep --spec " + kGrid + " --out " + (tmp / "other").string(), tmp);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("holds no sweep.json"), std::string::npos) << r.err;
}

TEST(SweepCli, InvalidPointsAreRecordedWithTheirErrorAndExitTwo) {
  TempDir tmp;
  const auto spec = one_axis_spec(tmp, "small.json", "none,edgc", "compression.r_min", "[8, 6]");
  const auto r = edgc("sweep --spec " + spec.string() + " --out " + (tmp / "s").string() + " --quiet", tmp);
  EXPECT_EQ(r.code, 2);
  const auto lines = results(tmp / "s");
  ASSERT_EQ(lines.size(), 2U);
  EXPECT_TRUE(lines.at(0).contains("runs"));
  ASSERT_TRUE(lines.at(1).contains("error"));
  EXPECT_NE(lines.at(1)["error"].get<std::string>().find("small.json: compression.r_min"), std::string::npos)
      << lines.at(1);
}

// A gradient-error budget: every point carries its measured and predicted error, summary.csv says per policy whether
// the point is within the budget (and why not), and the best points leave the others out.
TEST(SweepCli, AnErrorBudgetMarksPointsInfeasibleWithTheFigure) {
  TempDir tmp;
  const auto spec = one_axis_spec(tmp, "small-trace.json", "none,static", "compression.r_max", "[8, 32]");
  // Between the two points' errors: rank 8 is over the budget, rank 32 within it.
  const auto probe = edgc("sweep --spec " + spec.string() + " --out " + (tmp / "p").string() + " --quiet", tmp);
  ASSERT_EQ(probe.code, 0) << probe.err;
  const auto lines = results(tmp / "p");
  const double e8 = run_of(lines.at(0), "static").at("gradient_error").get<double>();
  const double e32 = run_of(lines.at(1), "static").at("gradient_error").get<double>();
  EXPECT_GT(e8, e32);
  EXPECT_GT(e32, 0.0);
  EXPECT_EQ(run_of(lines.at(0), "none").at("gradient_error").get<double>(), 0.0);
  EXPECT_GT(run_of(lines.at(0), "static").at("cqm_error").get<double>(), 0.0);
  const double budget = 0.5 * (e8 + e32);
  const auto r = edgc(
      "sweep --spec " + spec.string() + " --out " + (tmp / "s").string() + " --max-error " + std::to_string(budget),
      tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("within a gradient error of"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(1 points over it left out)"), std::string::npos) << r.out;
  std::istringstream csv(read_file(tmp / "s" / "summary.csv"));
  std::string header, row0, row1;
  std::getline(csv, header);
  std::getline(csv, row0);
  std::getline(csv, row1);
  EXPECT_NE(header.find(",static.gradient_error,static.cqm_error,static.error_budget,"), std::string::npos) << header;
  EXPECT_NE(row0.find(",infeasible: gradient error "), std::string::npos) << row0;
  EXPECT_NE(row0.find(",ok,"), std::string::npos) << row0;  // none is exact
  EXPECT_EQ(row1.find("infeasible"), std::string::npos) << row1;
  // The verdict (results/verdict.hpp) of the best point within the budget: point 1, against its own none.
  EXPECT_NE(r.out.find("verdict at point 1: static "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" (--min-saving)."), std::string::npos) << r.out;
  // --max-error is kept in sweep.json, so report honours the budget the sweep ran under (the spec has none).
  const json meta = json::parse(read_file(tmp / "s" / "sweep.json"));
  EXPECT_NEAR(meta.at("max_error").get<double>(), budget, 1e-6);
  EXPECT_FALSE(meta.at("spec").contains("max_error"));
  EXPECT_EQ(meta.at("min_saving").get<double>(), 0.02);
  const auto page = edgc("report " + (tmp / "s").string(), tmp);
  ASSERT_EQ(page.code, 0) << page.err;
  EXPECT_NE(read_file(tmp / "s" / "report.html").find("within the gradient-error budget of"), std::string::npos);
  // Without a budget, sweep.json has none and the report draws none.
  const json plain = json::parse(read_file(tmp / "p" / "sweep.json"));
  EXPECT_FALSE(plain.contains("max_error"));
}

// Thin evidence over a sweep: the warnings results::sweep_warnings finds (its unit tests check when) go to stderr
// and into the report; here the fastest point sits on the low edge of a short window axis.
TEST(SweepCli, ThinEvidenceWarningsAreInTheSummaryAndTheReport) {
  TempDir tmp;
  const auto spec = one_axis_spec(tmp, "small-trace.json", "none,edgc", "compression.window", "[5, 10, 20]");
  const auto r = edgc("sweep --spec " + spec.string() + " --out " + (tmp / "s").string() + " --report", tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string expected = "policy edgc: its fastest point (point 0) has compression.window = 5, the smallest";
  EXPECT_NE(r.err.find("edgc: warning: " + spec.string() + ": " + expected), std::string::npos) << r.err;
  const std::string html = read_file(tmp / "s" / "report.html");
  EXPECT_NE(html.find("Warnings (sweep printed them too)"), std::string::npos);
  EXPECT_NE(html.find(expected), std::string::npos);
}

TEST(SweepCli, RepeatsGiveTheMeanAndA95PercentIntervalOverSeeds) {
  TempDir tmp;
  const auto spec = tmp / "spec.json";
  std::ofstream(spec) << R"({"base": ")" << EDGC_SOURCE_DIR << R"(/tests/data/simulate/small.json",
    "policies": "none,edgc", "repeats": 3,
    "set": {"variability.compute_jitter_cv": 0.2, "variability.straggler_probability": 0.1,
            "variability.straggler_slowdown": 1.5},
    "axes": [{"key": "compression.window", "values": [10, 20]}]})";
  const auto r = edgc("sweep --spec " + spec.string() + " --out " + (tmp / "s").string() + " --quiet", tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = results(tmp / "s");
  const json& p = lines.at(1);
  EXPECT_EQ(p["repeats"], 3);
  // Repeat k is `simulate` with variability.seed = k.
  std::vector<double> t;
  for (int k = 0; k < 3; ++k) {
    const auto dir = tmp / ("sim" + std::to_string(k));
    const auto sim = edgc("simulate --scenario " + std::string(EDGC_SOURCE_DIR) +
                              "/tests/data/simulate/small.json --policies edgc --quiet --set compression.window=20 "
                              "--set variability.compute_jitter_cv=0.2 --set variability.straggler_probability=0.1 "
                              "--set variability.straggler_slowdown=1.5 --set variability.seed=" +
                              std::to_string(k) + " --out " + dir.string(),
                          tmp);
    ASSERT_EQ(sim.code, 0) << sim.err;
    const json result = json::parse(read_file(dir / "result.json"));
    for (const json& x : result["runs"])
      if (x["policy"] == "edgc") t.push_back(x["training_time_s"].get<double>());
  }
  ASSERT_EQ(t.size(), 3U);
  const double mean = (t[0] + t[1] + t[2]) / 3.0;
  double ss = 0.0;
  for (const double x : t) ss += (x - mean) * (x - mean);
  const double half = 4.303 * std::sqrt(ss / 2.0) / std::sqrt(3.0);  // t(0.975, 2 dof)
  const json& edgc_run = run_of(p, "edgc");
  EXPECT_NEAR(edgc_run["training_time_s"].get<double>(), mean, 1e-12 * mean);
  EXPECT_NEAR(edgc_run["training_time_s_ci95"].get<double>(), half, 1e-9 * half);
  EXPECT_GT(half, 0.0) << "jitter must make the repeats differ";
  const std::string csv = read_file(tmp / "s" / "summary.csv");
  EXPECT_NE(csv.find("edgc.training_time_s_ci95"), std::string::npos);
}

#ifdef EDGC_MPIEXEC
TEST(SweepCli, TwoMpiRanksGiveTheSameResultSetAsOneProcess) {
  TempDir tmp;
  const auto one = tmp / "one";
  const auto two = tmp / "two";
  ASSERT_EQ(edgc("sweep --spec " + kGrid + " --out " + one.string() + " --jobs 2 --quiet", tmp).code, 0);
  // Open MPI refuses root unless told; --oversubscribe lets 2 ranks run on a 1-core machine.
  const std::string cmd = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " + std::string(EDGC_MPIEXEC) +
                          " -np 2 --oversubscribe " + EDGC_BINARY + " sweep --spec " + kGrid + " --out " +
                          two.string() + " --jobs 1 >" + (tmp / "mpi.out").string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_file(tmp / "mpi.out");
  EXPECT_NE(read_file(tmp / "mpi.out").find("on 2 MPI ranks"), std::string::npos) << read_file(tmp / "mpi.out");
  EXPECT_EQ(results(two), results(one));
}
#endif

}  // namespace
