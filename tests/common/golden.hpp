#pragma once
// Golden outputs: a command's JSON (or text) compared with a file checked in beside its test data. After an
// intended change, regenerate with EDGC_UPDATE_GOLDEN=1 (the test then rewrites the file and skips) and review
// the diff: a golden file is never rewritten silently.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "trace_test_util.hpp"

namespace edgc::test {

/// The CPU kernels the replay goldens are written with. Each SIMD variant sums in its own order, and error feedback
/// carries the last bits from one iteration into the next, so a replay's figures agree across variants to about
/// 1e-3 relative, not to a golden's 1e-9: the replay goldens pin AVX2+FMA, which every x86-64 machine CI has run on
/// has, and skip where this build or CPU lacks it.
inline constexpr const char* kGoldenCpuBackend = "cpu-avx2";

inline bool updating_golden() {
  const char* update = std::getenv("EDGC_UPDATE_GOLDEN");
  return update != nullptr && std::string(update) == "1";
}

/// Same structure, same strings and integers, floating-point numbers within `rel` relative (or 1e-15 absolute).
inline void expect_close(const nlohmann::json& a, const nlohmann::json& b, const std::string& path, double rel = 1e-9) {
  if (a.is_number_float() || b.is_number_float()) {
    ASSERT_TRUE(a.is_number() && b.is_number()) << path;
    const double x = a.get<double>();
    const double y = b.get<double>();
    EXPECT_LE(std::abs(x - y), std::max(1e-15, rel * std::max(std::abs(x), std::abs(y))))
        << path << ": " << x << " vs " << y;
    return;
  }
  ASSERT_EQ(a.type(), b.type()) << path;
  if (a.is_object()) {
    ASSERT_EQ(a.size(), b.size()) << path << ": " << a.dump().substr(0, 200) << " vs " << b.dump().substr(0, 200);
    for (auto it = a.begin(); it != a.end(); ++it) {
      ASSERT_TRUE(b.contains(it.key())) << path << "." << it.key();
      expect_close(*it, b.at(it.key()), path + "." + it.key(), rel);
    }
  } else if (a.is_array()) {
    ASSERT_EQ(a.size(), b.size()) << path;
    for (std::size_t i = 0; i < a.size(); ++i) expect_close(a[i], b[i], path + "[" + std::to_string(i) + "]", rel);
  } else {
    EXPECT_EQ(a, b) << path;
  }
}

/// Compares `got` with the golden JSON file (or rewrites it under EDGC_UPDATE_GOLDEN=1).
inline void expect_golden_json(const nlohmann::json& got, const std::filesystem::path& golden) {
  if (updating_golden()) {
    std::ofstream(golden) << got.dump(2) << "\n";
    GTEST_SKIP() << "golden file rewritten: " << golden;
  }
  ASSERT_TRUE(std::filesystem::exists(golden)) << golden << " (create it with EDGC_UPDATE_GOLDEN=1)";
  expect_close(got, nlohmann::json::parse(traces::test::read_file(golden)), golden.filename().string());
}

/// Compares `got` with the golden text file byte for byte (or rewrites it under EDGC_UPDATE_GOLDEN=1).
inline void expect_golden_text(const std::string& got, const std::filesystem::path& golden) {
  if (updating_golden()) {
    std::ofstream(golden) << got;
    GTEST_SKIP() << "golden file rewritten: " << golden;
  }
  ASSERT_TRUE(std::filesystem::exists(golden)) << golden << " (create it with EDGC_UPDATE_GOLDEN=1)";
  EXPECT_EQ(got, traces::test::read_file(golden)) << golden;
}

/// Removes, at any depth, the object keys for which `drop(key)` holds (timings, paths of this checkout).
template <typename Pred>
void erase_keys(nlohmann::json& j, const Pred& drop) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end();) {
      if (drop(it.key())) {
        it = j.erase(it);
      } else {
        erase_keys(*it, drop);
        ++it;
      }
    }
  } else if (j.is_array()) {
    for (auto& x : j) erase_keys(x, drop);
  }
}

}  // namespace edgc::test
