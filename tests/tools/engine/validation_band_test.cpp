// The kernel-level compute model's error bands as `simulate` states them (sim::kKernelModelValidation) against what
// edgc_bench_validation measured on the validation suites in this build: the JSON files of the tests
// Validation.Narayanan2021, Validation.Korthikanti2022 and Validation.MegatronCore2024, named on the command line as
// GPU=FILE (the rows counted in each file's mean make up that GPU's band).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "edgc/sim/kernel_model.hpp"

namespace {

std::multimap<std::string, std::string> g_files;  // GPU -> the benchmark's JSON output

TEST(KernelModelValidation, StatedBandsAreTheMeasuredOnes) {
  ASSERT_FALSE(g_files.empty()) << "usage: edgc_validation_band_test GPU=FILE ...";
  for (const edgc::sim::ValidatedBand& v : edgc::sim::kKernelModelValidation) {
    SCOPED_TRACE(v.gpu);
    int rows = 0;
    double lowest = std::numeric_limits<double>::infinity();
    double highest = -std::numeric_limits<double>::infinity();
    double sum = 0.0, sum_abs = 0.0;
    const auto [begin, end] = g_files.equal_range(v.gpu);
    ASSERT_NE(begin, end) << "no suite measured for " << v.gpu;
    for (auto it = begin; it != end; ++it) {
      std::ifstream in(it->second);
      ASSERT_TRUE(in) << it->second;
      const nlohmann::json doc = nlohmann::json::parse(in);
      ASSERT_EQ(doc.at("schema"), "edgc.bench.validation/1") << it->second;
      for (const nlohmann::json& row : doc.at("rows")) {
        ASSERT_TRUE(row.contains("error")) << it->second << ": a row did not simulate: " << row.dump();
        if (!row.at("in_mean").get<bool>()) continue;
        const double e = row.at("error").get<double>();
        lowest = std::min(lowest, e);
        highest = std::max(highest, e);
        sum += e;
        sum_abs += std::abs(e);
        ++rows;
      }
    }
    EXPECT_EQ(rows, v.rows);
    // The statement rounds to 0.1 %: it must be the measured band so rounded.
    const char* fix = "update sim::kKernelModelValidation and the suites' READMEs";
    EXPECT_NEAR(lowest, v.lowest_error, 0.0005) << fix;
    EXPECT_NEAR(highest, v.highest_error, 0.0005) << fix;
    EXPECT_NEAR(sum / rows, v.mean_error, 0.0005) << fix;
    EXPECT_NEAR(sum_abs / rows, v.mean_abs_error, 0.0005) << fix;
  }
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::size_t eq = arg.find('=');
    if (eq != std::string::npos) g_files.emplace(arg.substr(0, eq), arg.substr(eq + 1));
  }
  return RUN_ALL_TESTS();
}
