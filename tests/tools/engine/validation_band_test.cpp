// The kernel-level compute model's error band as `simulate` states it (sim::kKernelModelValidation) against what
// edgc_bench_validation measured on both validation suites in this build (the JSON files of the tests
// Validation.Narayanan2021 and Validation.Korthikanti2022, named on the command line).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "edgc/sim/kernel_model.hpp"

namespace {

std::vector<std::string> g_files;  // the benchmark's JSON outputs

TEST(KernelModelValidation, StatedBandIsTheMeasuredOne) {
  ASSERT_EQ(g_files.size(), 2u) << "usage: edgc_validation_band_test NARAYANAN.json KORTHIKANTI.json";
  int rows = 0;
  double lowest = std::numeric_limits<double>::infinity();
  double highest = -std::numeric_limits<double>::infinity();
  for (const std::string& file : g_files) {
    std::ifstream in(file);
    ASSERT_TRUE(in) << file;
    const nlohmann::json doc = nlohmann::json::parse(in);
    ASSERT_EQ(doc.at("schema"), "edgc.bench.validation/1") << file;
    for (const nlohmann::json& row : doc.at("rows")) {
      ASSERT_TRUE(row.contains("error")) << file << ": a row did not simulate: " << row.dump();
      const double e = row.at("error").get<double>();
      lowest = std::min(lowest, e);
      highest = std::max(highest, e);
      ++rows;
    }
  }
  const edgc::sim::ValidatedBand& v = edgc::sim::kKernelModelValidation;
  EXPECT_EQ(rows, v.rows);
  // The statement rounds to 0.1 %: it must be the measured band so rounded.
  EXPECT_NEAR(lowest, v.lowest_error, 0.0005) << "update sim::kKernelModelValidation and the suites' READMEs";
  EXPECT_NEAR(highest, v.highest_error, 0.0005) << "update sim::kKernelModelValidation and the suites' READMEs";
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) g_files.emplace_back(argv[i]);
  return RUN_ALL_TESTS();
}
