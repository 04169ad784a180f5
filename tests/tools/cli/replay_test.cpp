// `edgc replay` end to end on the bundled trace: the entropy trend, ranks within bounds, the sampled-vs-full
// agreement, determinism, and rejection of bad scenarios with no partial output.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_test_util.hpp"

namespace {

namespace fs = std::filesystem;
using edgc::traces::test::read_file;
using edgc::traces::test::TempDir;
using nlohmann::json;
using Result = edgc::cli::test::CliRun;
using edgc::cli::test::edgc;

const std::string kScenario = std::string(EDGC_SOURCE_DIR) + "/scenarios/replay/tinygpt-licenses.json";

// Drops wall-clock fields, the only ones allowed to differ between two runs with the same seed.
void strip_timing(json& j) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end();) {
      if (it.key().find("seconds") != std::string::npos) {
        it = j.erase(it);
      } else {
        strip_timing(*it);
        ++it;
      }
    }
  } else if (j.is_array()) {
    for (auto& x : j) strip_timing(x);
  }
}

std::string strip_timing_csv(const std::string& csv) {
  std::istringstream in(csv);
  std::ostringstream out;
  std::string line;
  while (std::getline(in, line)) {
    for (int k = 0; k < 2; ++k) line = line.substr(0, line.rfind(','));  // the last two columns are timings
    out << line << "\n";
  }
  return out.str();
}

class Replay : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new TempDir();
    const Result r = edgc("replay --scenario " + kScenario + " --out " + (*tmp_ / "a").string(), *tmp_);
    ASSERT_EQ(r.code, 0) << r.err;
    summary_ = r.out;
    result_ = json::parse(read_file(*tmp_ / "a" / "replay.json"));
  }
  static void TearDownTestSuite() { delete tmp_; }
  static TempDir* tmp_;
  static std::string summary_;
  static json result_;
};
TempDir* Replay::tmp_ = nullptr;
std::string Replay::summary_;
json Replay::result_;

TEST_F(Replay, WarmupEndsAndRanksMoveWithinBoundsPerStage) {
  const json& s = result_["summary"];
  ASSERT_TRUE(s["warmup_end_iteration"].is_number());
  EXPECT_GE(s["warmup_end_iteration"].get<int>(), 50);   // floor: 10 % of 500 iterations
  EXPECT_LE(s["warmup_end_iteration"].get<int>(), 160);  // ceiling: 30 %, rounded up to a window
  std::set<int> seen;
  int compressed_windows = 0;
  for (const auto& w : result_["windows"]) {
    ASSERT_EQ(w["stages"].size(), 4u);
    for (const auto& st : w["stages"]) {
      EXPECT_TRUE(st["entropy_gaussian"].is_number());
      EXPECT_TRUE(st["entropy_histogram"].is_number());
      EXPECT_TRUE(st["excess_kurtosis"].is_number());
      if (w["warmup"].get<bool>()) {
        EXPECT_EQ(st["rank"], 0);
        continue;
      }
      const int r = st["rank"];
      EXPECT_GE(r, 4);
      EXPECT_LE(r, 12);
      EXPECT_EQ(r % 4, 0);
      seen.insert(r);
      ++compressed_windows;
      const double err = st["relative_error"];
      EXPECT_GT(err, 0.0);
      EXPECT_LT(err, 1.0);
    }
  }
  EXPECT_GT(compressed_windows, 20);
  EXPECT_GE(seen.size(), 2u) << "ranks should move";
}

TEST_F(Replay, EntropyTrendIsVisibleAndTheSummaryIsPrinted) {
  // On this trace the block stages' gradient entropy falls by over a nat while the loss drops in the first 150
  // steps, then drifts back up as training goes on: the controller must see a trend, not a constant.
  const auto& ws = result_["windows"];
  for (int s = 1; s < 4; ++s) {
    EXPECT_LT(ws[2]["stages"][s]["entropy_gaussian"].get<double>(),
              ws[0]["stages"][s]["entropy_gaussian"].get<double>() - 0.5)
        << "stage " << s;
  }
  EXPECT_LT(ws.back()["mean_loss"].get<double>(), ws.front()["mean_loss"].get<double>() - 1.5);
  EXPECT_NE(summary_.find("s3 Hh"), std::string::npos);
  EXPECT_NE(summary_.find("decide the same ranks as full sampling"), std::string::npos);
}

TEST_F(Replay, SampledEntropyDecidesLikeFullSamplingInAtLeast95PercentOfWindows) {
  EXPECT_GE(result_["summary"]["agreement_with_full_sampling"].get<double>(), 0.95);
  // And it is cheaper: fewer elements touched than full sampling.
  EXPECT_LT(result_["summary"]["estimation_elements"].get<double>(),
            0.2 * result_["summary"]["full_estimation_elements"].get<double>());
}

TEST_F(Replay, SameSeedGivesIdenticalOutputsApartFromWallClock) {
  const Result r = edgc("replay --scenario " + kScenario + " --quiet --out " + (*tmp_ / "b").string(), *tmp_);
  ASSERT_EQ(r.code, 0) << r.err;
  json a = result_;
  json b = json::parse(read_file(*tmp_ / "b" / "replay.json"));
  strip_timing(a);
  strip_timing(b);
  const std::string da = a.dump();
  const std::string db = b.dump();
  const auto at = std::mismatch(da.begin(), da.end(), db.begin(), db.end()).first - da.begin();
  EXPECT_EQ(da.size(), db.size());
  EXPECT_EQ(at, static_cast<std::ptrdiff_t>(da.size()))
      << "first difference near: " << da.substr(static_cast<std::size_t>(std::max<std::ptrdiff_t>(0, at - 80)), 160);
  EXPECT_EQ(strip_timing_csv(read_file(*tmp_ / "a" / "windows.csv")),
            strip_timing_csv(read_file(*tmp_ / "b" / "windows.csv")));
}

TEST(ReplayRejects, BadScenariosExitTwoNamingTheKeyAndLeaveNoOutput) {
  TempDir tmp;
  const std::string out = (tmp / "out").string();
  const std::string base = "replay --scenario " + kScenario + " --out " + out + " ";
  struct Case {
    std::string args;
    std::string expect;
  };
  const Case cases[] = {
      {"--set compression.windw=5", "compression.windw: unknown key"},
      {"--set compression.alpha=x", "compression.alpha: expected a number"},
      {"--set compression.alpha=0", "compression.alpha: must be in (0, 1]"},
      {"--set compression.r_max=128", "compression.r_max: 128 exceeds the rank of stage 0's 64x64"},
      {"--set compression.r_min=6", "compression.r_min"},
      {"--set compression.policy=magic", "unknown policy 'magic'"},
      {"--set compression.warmup.mode=sometimes", "compression.warmup.mode"},
      {"--set replay.world_size=0", "replay.world_size"},
      {"--set replay.stages=-1", "replay.stages: must be >= 0"},
      {"--set replay.stages=5", "replay.stages: 5 is outside [1, 4]"},
      {"--set badassignment", "--set"},
      {"--trace " + (tmp / "missing").string(), "not a trace directory"},
  };
  for (const auto& c : cases) {
    const Result r = edgc(base + c.args, tmp);
    EXPECT_EQ(r.code, 2) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << c.args;
    EXPECT_FALSE(fs::exists(out)) << c.args;
  }
  edgc::traces::test::write_file(tmp / "bad.json", "{\"compression\": ");
  const Result r = edgc("replay --scenario " + (tmp / "bad.json").string() + " --out " + out, tmp);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("bad.json: invalid JSON"), std::string::npos) << r.err;
}

}  // namespace

namespace {

// The pipeline boundaries (trace format 1.1) under edgc-pp on the bundled trace, and on a synthetic trace whose
// boundary messages are exactly low-rank.
json replay_json(const std::string& args, TempDir& tmp, const std::string& out) {
  const Result r = edgc("replay " + args + " --out " + (tmp / out).string(), tmp);
  EXPECT_EQ(r.code, 0) << r.err;
  return r.code == 0 ? json::parse(read_file(tmp / out / "replay.json")) : json();
}

// Without a scenario the built-in r_max (128) exceeds the bundled trace's 64x64 matrices: replay lowers it to the
// largest rank that still compresses them (r·(64 + 64) < 64·64: 28) and says so; a chosen r_max is refused instead
// (BadScenariosExitTwoNamingTheKeyAndLeaveNoOutput).
// A crafted trace whose tensor stage wraps when narrowed to int (4294967295: replay died with SIGSEGV) or is past any
// pipeline (2^63 - 1: "double free or corruption") exits 2 naming the field; nothing is written.
TEST(ReplayRejects, ACraftedStageThatWouldWrapExitsTwoNamingTheField) {
  TempDir tmp;
  const fs::path trace = tmp / "crafted";
  fs::copy(std::string(EDGC_SOURCE_DIR) + "/traces/bundled/tinygpt-licenses", trace, fs::copy_options::recursive);
  for (const std::string stage : {"4294967295", "9223372036854775807", "-1"}) {
    nlohmann::ordered_json m = nlohmann::ordered_json::parse(read_file(trace / "trace.json"));
    m["tensors"][0]["stage"] = nlohmann::ordered_json::parse(stage);
    std::ofstream(trace / "trace.json") << m.dump();
    const Result r =
        edgc("replay --scenario " + kScenario + " --trace " + trace.string() + " --out " + (tmp / "out").string(), tmp);
    EXPECT_EQ(r.code, 2) << stage << r.err;
    EXPECT_NE(r.err.find("trace.json: tensors[0].stage: must be in [0, 65535], got " + stage), std::string::npos)
        << r.err;
    EXPECT_FALSE(fs::exists(tmp / "out"));
  }
}

TEST(ReplayDefaults, TheDefaultRankBoundFitsTheTraceWithANote) {
  TempDir tmp;
  const std::string trace = std::string(EDGC_SOURCE_DIR) + "/traces/bundled/tinygpt-licenses";
  const Result r =
      edgc("replay --trace " + trace + " --set compression.window=50 --quiet --out " + (tmp / "out").string(), tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  // 64 × 64 matrices: PowerSGD's skip rule compresses up to rank 15 ((64 + 64)·15·2 < 64²), 12 in steps of 4.
  const std::string note = "compression.r_max lowered from its default 128 to 12";
  EXPECT_NE(r.err.find("edgc: note: (defaults): " + note), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("; r_min to 4 (r_max / 4)"), std::string::npos) << r.err;
  const json doc = json::parse(read_file(tmp / "out" / "replay.json"));
  ASSERT_EQ(doc.at("notes").size(), 1U);
  EXPECT_EQ(doc.at("notes")[0].get<std::string>().rfind(note, 0), 0U);
  int compressed = 0;
  for (const json& w : doc.at("windows"))
    for (const json& st : w.at("stages")) {
      const int rank = st.value("rank", 0);
      EXPECT_LE(rank, 12);
      compressed += rank > 0 ? 1 : 0;
      // Every rank the replay uses is one PowerSGD compresses: fewer floats on the wire, a non-zero error.
      if (rank > 0) {
        EXPECT_LT(st.at("wire_floats").get<double>(), st.at("dense_floats").get<double>());
        EXPECT_GT(st.at("relative_error").get<double>(), 0.0);
      }
    }
  EXPECT_GT(compressed, 0);
}

// A window longer than the trace makes the whole replay one partial warm-up window: said, not silent.
TEST(ReplayDefaults, ATraceShorterThanOneWindowIsWarned) {
  TempDir tmp;
  const std::string trace = std::string(EDGC_SOURCE_DIR) + "/traces/bundled/tinygpt-licenses";
  const Result r =
      edgc("replay --trace " + trace + " --set compression.window=1000 --quiet --out " + (tmp / "out").string(), tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string warning = "the trace's 499 steps are fewer than one window of 1000 iterations";
  EXPECT_NE(r.err.find("edgc: warning: " + trace + ": " + warning), std::string::npos) << r.err;
  const Result fine =
      edgc("replay --trace " + trace + " --set compression.window=50 --quiet --out " + (tmp / "out2").string(), tmp);
  EXPECT_EQ(fine.err.find("fewer than one window"), std::string::npos) << fine.err;
}

TEST(ReplayBoundaries, BundledTraceLazyErrorPropagationTradesMessageErrorForAccumulatedError) {
  TempDir tmp;
  const std::string pp = std::string(EDGC_SOURCE_DIR) + "/scenarios/replay/tinygpt-licenses-pp.json";
  const json j = replay_json("--scenario " + pp, tmp, "pp");
  ASSERT_TRUE(j.is_object());
  const int rank = 8;
  const std::int64_t rows = 128, cols = 64;
  std::int64_t wire = 0, dense = 0;
  int compressed = 0;
  for (const auto& w : j["windows"]) {
    ASSERT_TRUE(w["stages"][0]["boundary"].is_null());  // stage 0 sends nothing backward
    for (std::size_t s = 1; s < 4; ++s) {
      const json& b = w["stages"][s]["boundary"];
      ASSERT_TRUE(b.is_object());
      const int messages = b["messages"].get<int>();
      EXPECT_EQ(messages, w["captured_iterations"].get<int>());
      // No compression in warm-up; the policy's pipeline rank afterwards, and exactly (rows + cols)·r floats a message.
      EXPECT_EQ(b["pp_rank"].get<int>(), w["warmup"].get<bool>() ? 0 : rank);
      const std::int64_t per = b["pp_rank"].get<int>() > 0 ? (rows + cols) * rank : rows * cols;
      EXPECT_EQ(b["wire_floats"].get<std::int64_t>(), messages * per);
      EXPECT_EQ(b["dense_floats"].get<std::int64_t>(), messages * rows * cols);
      wire += b["wire_floats"].get<std::int64_t>();
      dense += b["dense_floats"].get<std::int64_t>();
      if (b["pp_rank"].get<int>() == 0) {
        EXPECT_TRUE(b["message_error"].is_null());
        continue;
      }
      ++compressed;
      for (const char* k : {"message_error", "message_error_without_lazy_error_propagation", "accumulated_error",
                            "accumulated_error_without_lazy_error_propagation"}) {
        EXPECT_GT(b[k].get<double>(), 0.0) << k;
        EXPECT_LT(b[k].get<double>(), 1.5) << k;
      }
    }
  }
  EXPECT_GT(compressed, 0);
  EXPECT_EQ(j["summary"]["boundary_wire_floats"].get<std::int64_t>(), wire);
  EXPECT_EQ(j["summary"]["boundary_dense_floats"].get<std::int64_t>(), dense);
  // On this real trace: carrying the error makes each message worse but their sum (what the weight gradient sees)
  // better, on every boundary.
  for (std::size_t s = 1; s < 4; ++s) {
    const json& b = j["stages"][s]["boundary"];
    EXPECT_GT(b["mean_message_error"].get<double>(),
              b["mean_message_error_without_lazy_error_propagation"].get<double>());
    EXPECT_LT(b["mean_accumulated_error"].get<double>(),
              b["mean_accumulated_error_without_lazy_error_propagation"].get<double>());
  }
  // The DP-only policy leaves the boundaries uncompressed and says so.
  const Result r = edgc("replay --scenario " + kScenario + " --out " + (tmp / "dp").string(), tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("this policy sends them uncompressed"), std::string::npos) << r.out;
}

TEST(ReplayBoundaries, ExactlyLowRankMessagesAreRecoveredWithAndWithoutLazyErrorPropagation) {
  TempDir tmp;
  const Result s = edgc("trace synth --out " + (tmp / "t").string() +
                            " --shapes 32x32,32 --layers 2 --stages 2 --iterations 12 --rank 2 --noise 0 "
                            "--boundaries 48x32",
                        tmp);
  ASSERT_EQ(s.code, 0) << s.err;
  const json j = replay_json("--trace " + (tmp / "t").string() + " --scenario " + kScenario +
                                 " --set compression.policy='\"edgc-pp\"' --set compression.pp_rank=4"
                                 " --set compression.window=3 --set compression.warmup.mode='\"fixed\"'"
                                 " --set compression.warmup.fixed_iters=3",
                             tmp, "r");
  ASSERT_TRUE(j.is_object());
  int compressed = 0;
  for (const auto& w : j["windows"]) {
    const json& b = w["stages"][1]["boundary"];
    if (b["pp_rank"].get<int>() == 0) continue;
    ++compressed;
    for (const char* k : {"message_error", "message_error_without_lazy_error_propagation", "accumulated_error",
                          "accumulated_error_without_lazy_error_propagation"})
      EXPECT_LT(b[k].get<double>(), 1e-4) << k << " in window " << w["window"];
  }
  EXPECT_GE(compressed, 2);
}

}  // namespace

namespace {

// compression.pp_rank_mode entropy: on a synthetic trace whose boundary noise (and so its entropy) falls over the run,
// each boundary's rank comes down from pp_rank towards pp_r_min, by steps of at most compression.step; a version 1
// trace (no boundaries) refuses the mode naming the key, without output.
TEST(ReplayBoundaries, EntropyModeLowersEachBoundaryRankAsItsMessagesEntropyFalls) {
  TempDir tmp;
  const Result s = edgc("trace synth --out " + (tmp / "t").string() +
                            " --shapes 32x32,32 --layers 3 --stages 3 --iterations 80 --rank 2 --noise 1e-2"
                            " --signal 1e-4 --entropy-decay 4 --boundaries 64x48",
                        tmp);
  ASSERT_EQ(s.code, 0) << s.err;
  const std::string sets =
      " --set compression.policy='\"edgc-pp\"' --set compression.pp_rank_mode='\"entropy\"'"
      " --set compression.pp_rank=16 --set compression.pp_r_min=4 --set compression.step=4 --set compression.window=10"
      " --set compression.warmup.mode='\"fixed\"' --set compression.warmup.fixed_iters=10";
  const json j = replay_json("--trace " + (tmp / "t").string() + " --scenario " + kScenario + sets, tmp, "r");
  ASSERT_TRUE(j.is_object());
  for (std::size_t st = 1; st < 3; ++st) {
    int previous = 16;
    int last = 0;
    for (const auto& w : j["windows"]) {
      const json& b = w["stages"][st]["boundary"];
      const int r = b["pp_rank"].get<int>();
      if (r == 0) continue;
      EXPECT_TRUE(b["entropy_gaussian"].is_number());
      EXPECT_LE(r, previous) << "entropy only falls here";
      EXPECT_GE(r, previous - 4);
      EXPECT_GE(r, 4);
      previous = last = r;
    }
    EXPECT_LT(last, 16) << "stage " << st;
  }
  const Result v1 = edgc("replay --scenario " + kScenario + sets + " --trace " + (tmp / "t").string() +
                             "-missing --out " + (tmp / "x").string(),
                         tmp);
  EXPECT_EQ(v1.code, 2);
  TempDir tmp2;
  ASSERT_EQ(edgc("trace synth --out " + (tmp2 / "v1").string() + " --shapes 32x32 --layers 2 --stages 2", tmp2).code,
            0);
  const Result r = edgc("replay --trace " + (tmp2 / "v1").string() + " --scenario " + kScenario + sets + " --out " +
                            (tmp2 / "o").string(),
                        tmp2);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("compression.pp_rank_mode: entropy needs the trace's stage-boundary gradients"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(tmp2 / "o"));
}

}  // namespace
