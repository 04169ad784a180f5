// Issue 47's second hardening round through the edgc binary: every JSON file a user writes refuses a key given twice
// (naming it and both lines) and a path that names a device; a plan with no feasible combination says why for each;
// the OS refusing a directory operation is exit 1 with its reason, never "a bug in edgc"; a torn last line of
// results.jsonl is dropped with a warning; Ctrl-C leaves no hidden staging folder beside --out; a live layout error
// is printed once, not by every rank.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cli_test_util.hpp"

namespace {

namespace fs = std::filesystem;
using edgc::cli::test::CliRun;
using edgc::cli::test::edgc;
using edgc::traces::test::read_file;
using edgc::traces::test::TempDir;
using edgc::traces::test::write_file;
using nlohmann::json;

const std::string kSrc = EDGC_SOURCE_DIR;
const std::string kSmall = kSrc + "/tests/data/simulate/small.json";
const std::string kGrid = kSrc + "/tests/data/sweep/small-grid.json";
const std::string kPlan = kSrc + "/tests/data/plan/small-plan.json";
const std::string kTrace = kSrc + "/traces/bundled/tinygpt-licenses";

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// `text` with `entry` ("\"key\": value,") inserted right after its first '{': the key then stands twice in the top
// object, on line 2 and wherever the file had it.
std::string with_key_again(const std::string& text, const std::string& entry) {
  const auto brace = text.find('{');
  return text.substr(0, brace + 1) + "\n" + entry + text.substr(brace + 1);
}

// A refusal of the user's input: exit 2, one line naming what, nothing on stdout, never "internal error".
void expect_refusal(const CliRun& r, const std::vector<std::string>& needles, const std::string& what) {
  EXPECT_EQ(r.code, 2) << what << "\n" << r.err;
  EXPECT_EQ(occurrences(r.err, "\n"), 1U) << what << "\n" << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << what << "\n" << r.err;
  for (const std::string& n : needles)
    EXPECT_NE(r.err.find(n), std::string::npos) << what << ": " << n << "\n" << r.err;
}

TEST(Hardening, AKeyGivenTwiceIsRefusedNamingItAndBothLinesInEveryFileAUserWrites) {
  TempDir tmp;
  const fs::path out = tmp / "out";
  // A sweep spec and a plan spec (their base resolved from the copy's folder: given absolute).
  json grid = json::parse(read_file(kGrid));
  grid["base"] = kSmall;
  write_file(tmp / "grid.json", with_key_again(grid.dump(1), "\"policies\": \"none\","));
  expect_refusal(edgc("sweep --spec " + (tmp / "grid.json").string() + " --out " + out.string(), tmp),
                 {"grid.json", "policies: given twice (lines 2 and "}, "sweep spec");
  json plan = json::parse(read_file(kPlan));
  plan["base"] = kSmall;
  plan["clusters"] = {kSrc + "/tests/data/plan/slow-net.json"};
  write_file(tmp / "plan.json", with_key_again(plan.dump(1), "\"gpus\": [8],"));
  expect_refusal(edgc("plan --spec " + (tmp / "plan.json").string() + " --out " + out.string(), tmp),
                 {"plan.json", "gpus: given twice (lines 2 and "}, "plan spec");
  // A calibration file named by a scenario.
  write_file(tmp / "calibration.json", R"({"schema": "edgc.calibration/1",
  "intra": {"points": [[1, 0.5]], "latency_factor": 1},
  "inter": {"points": [[1, 0.4]], "latency_factor": 1, "latency_factor": 2}})");
  expect_refusal(edgc("simulate --scenario " + kSmall + " --set network.profile=calibrated --set network.calibration=" +
                          (tmp / "calibration.json").string() + " --out " + out.string(),
                      tmp),
                 {"calibration.json", "inter.latency_factor: given twice (lines 3 and 3)"}, "calibration file");
  fs::remove_all(out);
  // A result document read by report.
  fs::create_directories(tmp / "result");
  write_file(tmp / "result" / "result.json",
             with_key_again(read_file(kSrc + "/tests/data/report/simulate/result.json"), "\"scenario\": \"x.json\","));
  expect_refusal(edgc("report " + (tmp / "result").string(), tmp),
                 {"result.json", "scenario: given twice (lines 2 and "}, "result.json");
  EXPECT_FALSE(fs::exists(tmp / "result" / "report.html"));
  // A trace manifest: its iteration files linked beside the edited trace.json.
  fs::create_directories(tmp / "trace");
  for (const auto& e : fs::directory_iterator(kTrace))
    if (e.path().extension() == ".safetensors") fs::create_symlink(e.path(), tmp / "trace" / e.path().filename());
  write_file(tmp / "trace" / "trace.json",
             with_key_again(read_file(kTrace + "/trace.json"), "\"format\": \"edgc.trace\","));
  for (const std::string& command : {"trace inspect " + (tmp / "trace").string(),
                                     "replay --trace " + (tmp / "trace").string() + " --out " + out.string()})
    expect_refusal(edgc(command, tmp), {"trace.json", "format", "given twice (lines 2 and "}, command);
  EXPECT_FALSE(fs::exists(out));
}

// A path that names a device or a huge file is refused after at most 256 MiB, not read until memory runs out.
TEST(Hardening, ADeviceGivenAsAJsonFileIsRefusedAfterABoundedRead) {
  TempDir tmp;
  const fs::path out = tmp / "out";
  for (const std::string& command :
       {"simulate --scenario /dev/zero --out " + out.string(), "sweep --spec /dev/zero --out " + out.string(),
        "plan --spec /dev/zero --out " + out.string(),
        "simulate --scenario " + kSmall + " --set cluster=/dev/zero --out " + out.string()})
    expect_refusal(edgc(command, tmp), {"/dev/zero: larger than 256 MiB"}, command);
  fs::create_directories(tmp / "dir");
  fs::create_symlink("/dev/zero", tmp / "dir" / "result.json");
  expect_refusal(edgc("report " + (tmp / "dir").string(), tmp), {"result.json: larger than 256 MiB"}, "report");
  EXPECT_FALSE(fs::exists(out));
}

// Every combination of the plan fails to lay out: the one line gives each one's reason, not just the first.
TEST(Hardening, APlanWithNoFeasibleCombinationSaysWhyForEach) {
  TempDir tmp;
  json plan = json::parse(read_file(kPlan));
  plan["base"] = kSmall;
  plan["clusters"] = {kSrc + "/tests/data/plan/slow-net.json"};
  plan["gpus"] = {3, 5};
  plan["layouts"] = {{{"tp", 2}, {"pp", 2}}, {{"tp", 4}, {"pp", 1}}};
  write_file(tmp / "plan.json", plan.dump(1));
  const CliRun r = edgc("plan --spec " + (tmp / "plan.json").string() + " --out " + (tmp / "out").string(), tmp);
  expect_refusal(r, {"gpus: no cluster x gpus x layout combination can be laid out: "}, "plan");
  EXPECT_EQ(occurrences(r.err, "GPUs are not whole nodes"), 4U) << r.err;  // 2 GPU counts x 2 layouts
  EXPECT_FALSE(fs::exists(tmp / "out"));
}

// A window longer than the run makes the run one warm-up window: nothing is compressed and every saving reads 0 %.
// It runs (the figures are right for that setting), and says why they are all 0.
TEST(Hardening, AWindowLongerThanTheRunIsWarned) {
  TempDir tmp;
  const CliRun r = edgc(
      "simulate --scenario " + kSmall + " --set compression.window=2147483647 --out " + (tmp / "out").string(), tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("edgc: warning: " + kSmall +
                       ": compression.window: 2147483647 iterations is longer than the run's 120 (run.iterations)"),
            std::string::npos)
      << r.err;
  const json result = json::parse(read_file(tmp / "out" / "result.json"));
  EXPECT_NE(result["warnings"].dump().find("compression.window"), std::string::npos);
}

// The OS refusing a directory operation (here: DIR/cache exists as a file; a full disk or a read-only mount alike)
// is exit 1 with the path and the reason, not "a bug in edgc".
TEST(Hardening, ARefusedDirectoryOperationIsExitOneWithThePathAndTheReason) {
  TempDir tmp;
  const fs::path dir = tmp / "sweep";
  const std::string sweep = "sweep --spec " + kGrid + " --out " + dir.string() + " --quiet";
  ASSERT_EQ(edgc(sweep, tmp).code, 0);
  fs::remove_all(dir / "cache");
  write_file(dir / "cache", "not a folder");
  const CliRun r = edgc(sweep + " --resume", tmp);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err.rfind("edgc: error: ", 0), 0U) << r.err;
  EXPECT_NE(r.err.find((dir / "cache").string()), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("bug"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
}

// A read-only --out (a read-only mount: as root, permissions would not stop the writes) refuses the sweep with exit
// 1 and the OS reason, fresh or resumed. Needs root for the mounts (CI runs as root); skipped otherwise.
TEST(Hardening, AReadOnlySweepDirectoryGivesTheOsReason) {
  TempDir tmp;
  const fs::path src = tmp / "volume", mnt = tmp / "mnt";
  fs::create_directories(src);
  fs::create_directories(mnt);
  if (::geteuid() != 0 ||
      std::system(("mount --bind " + src.string() + " " + mnt.string() + " 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << "mount --bind needs root";
  struct Unmount {
    fs::path at;
    ~Unmount() { (void)std::system(("umount " + at.string()).c_str()); }
  } unmount{mnt};
  const std::string sweep = "sweep --spec " + kGrid + " --quiet --out ";
  ASSERT_EQ(edgc(sweep + (mnt / "done").string(), tmp).code, 0);  // a finished sweep to resume, then read-only
  fs::create_directories(mnt / "empty");
  ASSERT_EQ(std::system(("mount -o remount,ro,bind " + mnt.string() + " 2>/dev/null").c_str()), 0);
  for (const std::string& command : {sweep + (mnt / "new").string(), sweep + (mnt / "empty").string(),
                                     sweep + (mnt / "done").string() + " --resume"}) {
    const CliRun r = edgc(command, tmp);
    EXPECT_EQ(r.code, 1) << command << "\n" << r.err;
    EXPECT_EQ(occurrences(r.err, "\n"), 1U) << command << "\n" << r.err;
    EXPECT_NE(r.err.find("Read-only file system"), std::string::npos) << command << "\n" << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << command << "\n" << r.err;
  }
}

// A sweep killed mid-write leaves a torn last line: --resume drops it with a warning and runs that point again, and
// the directory ends whole.
TEST(Hardening, ResumeDropsATornLastLineWithAWarning) {
  TempDir tmp;
  const fs::path dir = tmp / "sweep";
  const std::string sweep = "sweep --spec " + kGrid + " --out " + dir.string() + " --quiet";
  ASSERT_EQ(edgc(sweep, tmp).code, 0);
  const std::string whole = read_file(dir / "results.jsonl");
  const std::string torn = whole.substr(0, whole.size() - 40);  // the last line cut short, no newline
  write_file(dir / "results.jsonl", torn);
  const CliRun r = edgc(sweep + " --resume", tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("edgc: warning: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("results.jsonl: its last line was incomplete (a run killed mid-write) and was dropped"),
            std::string::npos)
      << r.err;
  const std::string after = read_file(dir / "results.jsonl");
  EXPECT_EQ(occurrences(after, "\n"), 12U);  // every point once
  EXPECT_EQ(after.back(), '\n');
}

// Ctrl-C (SIGINT) and `kill` (SIGTERM) during a run: the process ends by the signal and no hidden .OUT.tmp-PID-N
// folder stays beside --out. The run is the paper's 64-GPU scenario, long enough to be interrupted while its output
// is staged; a run that still finished first proves nothing, and the test says so.
TEST(Hardening, ASignalDuringARunLeavesNoStagingFolderBesideOut) {
  for (const int sig : {SIGINT, SIGTERM}) {
    TempDir tmp;
    const fs::path out = tmp / "out";
    const std::string scenario = kSrc + "/scenarios/paper/gpt2-12.1b-64xh100.json";
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const std::string err = (tmp / "stderr.txt").string();
      ::execl("/bin/sh", "sh", "-c",
              ("exec " + std::string(EDGC_BINARY) + " simulate --scenario " + scenario + " --out " + out.string() +
               " --jobs 1 >/dev/null 2>" + err)
                  .c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    bool staged = false;
    for (int i = 0; i < 3000 && !staged; ++i) {  // up to 30 s for the staging folder to appear
      for (const auto& e : fs::directory_iterator(tmp.path()))
        staged = staged || e.path().filename().string().rfind(".out.tmp-", 0) == 0;
      if (!staged) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // into the simulation
    ASSERT_EQ(::kill(pid, sig), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) GTEST_SKIP() << "the run finished before the signal";
    ASSERT_TRUE(staged) << "no staging folder appeared: " << read_file(tmp / "stderr.txt");
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << "status " << status;
    for (const auto& e : fs::directory_iterator(tmp.path()))
      EXPECT_NE(e.path().filename().string().front(), '.') << e.path() << " left behind by signal " << sig;
    EXPECT_FALSE(fs::exists(out));
  }
}

// The crafted traces of the issue (tests/fuzz/regressions/replay/: the bundled manifest cut to 4 iterations, one
// field replaced by a value that wraps when narrowed, overflows a product or is negative) through every command that
// reads a trace: each either runs (the baseline, a layer of -1: outside the layers) or is refused with exit 2 in one
// line naming trace.json and the field; never a crash, an abort or an internal error. The fuzz target replay starts
// from the same files.
TEST(Hardening, CraftedTracesAreRefusedNamingTheFieldByEveryCommand) {
  TempDir tmp;
  const fs::path crafted = kSrc + "/tests/fuzz/regressions/replay";
  const std::vector<std::pair<std::string, std::string>> fields = {
      {"tensor-stage-", "tensors[4].stage"},
      {"tensor-layer-2p", "tensors[4].layer"},
      {"model-num-stages-", "model.num_stages"},
      {"boundary-stage-", "boundaries[0].stage"},
      {"shape-product-", "tensors[4].shape"},
      {"sampled-shape-", "tensors[0].shape"},
      {"last-iteration-", "iterations[3].iteration"},
      {"block-elems-", "sampling.block_elems"},
      {"boundary-micro-batch-", "boundaries[0].micro_batch"}};
  std::size_t files = 0;
  for (const auto& input : fs::directory_iterator(crafted)) {
    ++files;
    const std::string name = input.path().stem().string();
    const fs::path trace = tmp / name;
    fs::create_directories(trace);
    for (const auto& e : fs::directory_iterator(kTrace))
      if (e.path().extension() == ".safetensors") fs::create_symlink(e.path(), trace / e.path().filename());
    fs::copy_file(input.path(), trace / "trace.json");
    std::string field;
    for (const auto& [prefix, f] : fields)
      if (name.rfind(prefix, 0) == 0) field = f;
    const fs::path out = tmp / "out";
    std::vector<std::string> commands = {
        "trace inspect " + trace.string(),
        "replay --trace " + trace.string() + " --set replay.world_size=2 --out " + out.string(),
        "simulate --scenario " + kSrc + "/tests/data/simulate/small-trace.json --set trace.path=" + trace.string() +
            " --out " + out.string()};
    if (!field.empty())  // one process, no mpirun: the trace is checked before MPI starts
      commands.push_back("live --scenario " + kSrc + "/scenarios/live/tinygpt-cpu.json --trace " + trace.string() +
                         " --out " + out.string());
    for (const std::string& command : commands) {
      const CliRun r = edgc(command, tmp);
      const std::string what = name + ": " + command;
      if (field.empty()) {  // the baseline and a layer of -1 are valid traces
        EXPECT_EQ(r.code, 0) << what << "\n" << r.err;
      } else {
        expect_refusal(r, {(trace / "trace.json").string(), field}, what);
        EXPECT_FALSE(fs::exists(out)) << what;
      }
      fs::remove_all(out);
    }
  }
  EXPECT_EQ(files, 22U);
}

#ifdef EDGC_MPIEXEC
// A layout that cannot be (live.pp 3 on 2 ranks) fails alike on every rank: one line says so, not one per rank.
TEST(Hardening, ALiveLayoutErrorIsPrintedOnce) {
  TempDir tmp;
  const std::string cmd = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " + std::string(EDGC_MPIEXEC) +
                          " -np 2 --oversubscribe " + EDGC_BINARY + " live --scenario " + kSrc +
                          "/scenarios/live/tinygpt-cpu.json --set live.pp=3 --out " + (tmp / "out").string() + " >" +
                          (tmp / "log.txt").string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  const std::string log = read_file(tmp / "log.txt");
  EXPECT_NE(status, 0) << log;
  EXPECT_EQ(occurrences(log, "live.pp: 3 does not divide the 2 ranks"), 1U) << log;
  EXPECT_FALSE(fs::exists(tmp / "out"));
}
#endif

}  // namespace
