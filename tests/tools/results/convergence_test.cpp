// The convergence match rule (results/convergence.hpp) on the bundled records: a match (the change against none, per
// record and averaged), each kind of mismatch named, no section without records, and a bad record refused.
#include "edgc/results/convergence.hpp"

#include <gtest/gtest.h>

#include <string>

#include "edgc/core/error.hpp"
#include "edgc/results/result_document.hpp"
#include "trace_test_util.hpp"

namespace edgc::results {
namespace {

const std::string kMeasured = std::string(EDGC_SOURCE_DIR) + "/scenarios/measured/";

// A result of the tiny GPT with converge.py's settings, policies none, static and edgc.
ResultDocument tiny_result() {
  ResultDocument doc;
  doc.model_architecture = {{"layers", 4}, {"hidden", 64}, {"heads", 4}, {"seq_len", 128}};
  doc.run = ResultRunSettings{300, 20, 0.25, 0.25, 4, 12, 4};
  for (const char* p : {"none", "static", "edgc"}) {
    ResultRun r;
    r.policy = p;
    r.training_time_s = 1.0;
    doc.runs.push_back(r);
  }
  return doc;
}

TEST(Convergence, ARecordOfTheSameModelAndSettingsMatchesEveryPolicy) {
  const ConvergenceRecord seed0 = read_convergence_record(kMeasured + "cpu-tiny-gpt-converge.json");
  const ConvergenceRecord seed1 = read_convergence_record(kMeasured + "cpu-tiny-gpt-converge-seed1.json");
  EXPECT_EQ(seed0.steps, 300);
  EXPECT_EQ(seed1.seed, 1);
  ResultDocument doc = tiny_result();
  add_convergence({seed0, seed1}, doc);
  for (const char* p : {"static", "edgc"}) {
    const double c0 = seed0.find(p)->final_val_loss - seed0.find("none")->final_val_loss;
    const double c1 = seed1.find(p)->final_val_loss - seed1.find("none")->final_val_loss;
    const nlohmann::ordered_json& m = doc.runs[p == std::string("static") ? 1 : 2].detail["measured_loss"];
    ASSERT_TRUE(m.is_object()) << p;
    EXPECT_DOUBLE_EQ(m["change"].get<double>(), (c0 + c1) / 2) << p;
    ASSERT_EQ(m["records"].size(), 2U);
    EXPECT_DOUBLE_EQ(m["records"][1]["change"].get<double>(), c1);
    EXPECT_DOUBLE_EQ(doc.sections["convergence"]["records"][0]["matches"][p]["change"].get<double>(), c0);
  }
  EXPECT_FALSE(doc.runs[0].detail.contains("measured_loss"));  // none is the reference, not a row
  const std::vector<std::string> lines = convergence_lines(doc);
  ASSERT_EQ(lines.size(), 2U);
  EXPECT_NE(lines[1].find("edgc: validation loss +0.0081 (seed 0), +0.018 (seed 1) against none, measured on a "
                          "4-layer GPT (d_model 64, 4 heads, seq_len 128) over 300 steps on 2 ranks"),
            std::string::npos)
      << lines[1];
}

TEST(Convergence, AnotherModelOrOtherSettingsDoNotMatchAndSayWhy) {
  const ConvergenceRecord rec = read_convergence_record(kMeasured + "cpu-tiny-gpt-converge.json");
  const ConvergenceKey key = *convergence_key(tiny_result());
  EXPECT_EQ(convergence_mismatch(rec, key, "edgc"), "");
  EXPECT_EQ(convergence_mismatch(rec, key, "edgc-pp"), "the record has no run of edgc-pp");
  ConvergenceKey k = key;
  k.hidden = 1920;
  EXPECT_EQ(convergence_mismatch(rec, k, "edgc"), "model.hidden 1920, the record's 64");
  k = key;
  k.window = 1000;
  EXPECT_EQ(convergence_mismatch(rec, k, "edgc"), "compression.window 1000, the record's 20");
  EXPECT_EQ(convergence_mismatch(rec, k, "none"), "");  // the reference has no compression settings
  k = key;
  k.alpha = 0.1;
  EXPECT_EQ(convergence_mismatch(rec, k, "static"), "compression.alpha 0.1, the record's 0.25");

  ResultDocument doc = tiny_result();
  doc.run->r_max = 128;
  add_convergence({rec}, doc);
  EXPECT_FALSE(doc.runs[2].detail.contains("measured_loss"));
  EXPECT_EQ(doc.sections["convergence"]["records"][0]["mismatches"]["edgc"], "compression.r_max 128, the record's 12");
  EXPECT_TRUE(convergence_lines(doc).empty());
}

TEST(Convergence, NoRecordsNoSectionAndABadRecordIsRefused) {
  ResultDocument doc = tiny_result();
  add_convergence({}, doc);
  EXPECT_FALSE(doc.sections.contains("convergence"));
  EXPECT_TRUE(convergence_lines(doc).empty());
  traces::test::TempDir tmp;
  traces::test::write_file(tmp / "bad.json", R"({"schema": "edgc.converge/1", "settings": {"layers": 4}})");
  try {
    read_convergence_record(tmp / "bad.json");
    FAIL() << "no throw";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("settings.d_model"), std::string::npos) << e.what();
  }
}

// A record made with converge.py --device cuda names its GPU: carried into the section and the console line; a device
// other than cpu or cuda, or a GPU record without the GPU's name, is refused naming the field.
TEST(Convergence, ARecordMadeOnAGpuSaysSo) {
  nlohmann::ordered_json doc =
      nlohmann::ordered_json::parse(traces::test::read_file(kMeasured + "cpu-tiny-gpt-converge.json"));
  doc["settings"]["device"] = "cuda";
  doc["provenance"]["gpu"] = "NVIDIA H200";
  doc["provenance"]["ranks_per_gpu"] = 2;
  traces::test::TempDir tmp;
  traces::test::write_file(tmp / "gpu.json", doc.dump());
  const ConvergenceRecord rec = read_convergence_record(tmp / "gpu.json");
  EXPECT_EQ(rec.gpu, "NVIDIA H200");
  EXPECT_EQ(rec.ranks_per_gpu, 2);
  ResultDocument result = tiny_result();
  add_convergence({rec}, result);
  EXPECT_EQ(result.sections["convergence"]["records"][0]["gpu"], "NVIDIA H200");
  const std::vector<std::string> lines = convergence_lines(result);
  ASSERT_EQ(lines.size(), 2U);
  EXPECT_NE(lines[1].find("over 300 steps on 2 ranks, sharing one NVIDIA H200 (bundled"), std::string::npos)
      << lines[1];
  // The CPU record says nothing of a GPU.
  ResultDocument cpu = tiny_result();
  add_convergence({read_convergence_record(kMeasured + "cpu-tiny-gpt-converge.json")}, cpu);
  EXPECT_FALSE(cpu.sections["convergence"]["records"][0].contains("gpu"));
  EXPECT_EQ(convergence_lines(cpu)[1].find("sharing"), std::string::npos);

  const auto refused = [&](const nlohmann::ordered_json& bad, const std::string& field) {
    traces::test::write_file(tmp / "bad.json", bad.dump());
    try {
      read_convergence_record(tmp / "bad.json");
      ADD_FAILURE() << "no throw for " << field;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  nlohmann::ordered_json bad = doc;
  bad["settings"]["device"] = "tpu";
  refused(bad, "settings.device");
  bad = doc;
  bad["provenance"].erase("gpu");
  refused(bad, "provenance.gpu");
  bad = doc;
  bad.erase("provenance");
  refused(bad, "provenance.gpu");
}

}  // namespace
}  // namespace edgc::results
