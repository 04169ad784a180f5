// Golden outputs of `replay`, `sweep` (summary.csv), `plan` and `validate` on small inputs, beside the simulate
// golden in simulate_test.cpp: a refactoring that changes any figure, key or order fails here. Timings and paths
// of this checkout are left out. Regenerate after an intended change with
// EDGC_UPDATE_GOLDEN=1 ctest --test-dir build -R Golden and review the diff.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.hpp"
#include "edgc/kernels/backend.hpp"
#include "golden.hpp"

namespace {

namespace fs = std::filesystem;
using edgc::cli::test::edgc;
using edgc::test::erase_keys;
using edgc::test::expect_golden_json;
using edgc::traces::test::read_file;
using edgc::traces::test::TempDir;
using nlohmann::json;

const std::string kSource = EDGC_SOURCE_DIR;
const fs::path kGolden = fs::path(kSource) / "tests/data/golden";

// Paths of this checkout inside messages become "<source>", so the golden file holds no machine's path.
json relocated(const json& j) {
  std::string text = j.dump();
  for (std::size_t at = text.find(kSource); at != std::string::npos; at = text.find(kSource, at))
    text.replace(at, kSource.size(), "<source>");
  return json::parse(text);
}

// A CSV as {"header": [...], "rows": [[...]]}, numbers as numbers, so floats compare within a tolerance.
json csv_as_json(const std::string& text) {
  json out = {{"header", json::array()}, {"rows", json::array()}};
  std::istringstream in(text);
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    json row = json::array();
    std::istringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, ',')) {
      const json number = json::parse(cell, nullptr, false);
      row.push_back(!first && !cell.empty() && number.is_number() ? number : json(cell));
    }
    if (!line.empty() && line.back() == ',') row.push_back("");
    (first ? out["header"] : out["rows"].emplace_back()) = row;
    first = false;
  }
  return out;
}

TEST(Golden, ReplayOfTheBundledTrace) {
  const std::string why = edgc::kernels::backend_unavailable_reason(edgc::test::kGoldenCpuBackend);
  if (!why.empty())
    GTEST_SKIP() << "the replay golden is written with " << edgc::test::kGoldenCpuBackend << ": " << why;
  TempDir tmp;
  const auto r = edgc("replay --trace " + kSource + "/traces/bundled/tinygpt-licenses --scenario " + kSource +
                          "/scenarios/replay/tinygpt-licenses.json --backend " + edgc::test::kGoldenCpuBackend +
                          " --out " + (tmp / "r").string(),
                      tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  json got = json::parse(read_file(tmp / "r" / "replay.json"));
  got.erase("trace");
  erase_keys(got, [](const std::string& k) { return k.find("seconds") != std::string::npos; });
  expect_golden_json(relocated(got), kGolden / "replay.json");
}

TEST(Golden, SweepSummaryOfTheSmallGrid) {
  TempDir tmp;
  const auto r = edgc("sweep --spec " + kSource + "/tests/data/sweep/small-grid.json --out " + (tmp / "s").string() +
                          " --jobs 2 --quiet",
                      tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  expect_golden_json(relocated(csv_as_json(read_file(tmp / "s" / "summary.csv"))), kGolden / "sweep-summary.json");
}

TEST(Golden, PlanOfTheSmallPlan) {
  TempDir tmp;
  const auto r = edgc(
      "plan --spec " + kSource + "/tests/data/plan/small-plan.json --out " + (tmp / "p").string() + " --jobs 2 --quiet",
      tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  json got = json::parse(read_file(tmp / "p" / "plan.json"));
  got.erase("spec");
  got.erase("base");
  expect_golden_json(relocated(got), kGolden / "plan.json");
}

TEST(Golden, ValidateOfTheLiveFixture) {
  TempDir tmp;
  const auto r = edgc("validate --measured " + kSource + "/tests/data/live --out " + (tmp / "v.json").string(), tmp);
  ASSERT_EQ(r.code, 0) << r.err;
  json got = json::parse(read_file(tmp / "v.json"));
  for (const char* k : {"measurements", "cluster_file", "simgrid"}) got.erase(k);
  expect_golden_json(relocated(got), kGolden / "validate.json");
}

}  // namespace
