// Sweep specs: expansion order and values, seeded random draws, and every rejection naming file and field.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include "edgc/core/error.hpp"
#include "edgc/scenario/sweep_spec.hpp"
#include "expect_error.hpp"
#include "trace_test_util.hpp"

namespace {

using edgc::ConfigError;
using edgc::scenario::expand_points;
using edgc::scenario::read_sweep_spec;
using edgc::traces::test::TempDir;

const std::string kData = std::string(EDGC_SOURCE_DIR) + "/tests/data/sweep/";
const std::string kBase = std::string(EDGC_SOURCE_DIR) + "/tests/data/simulate/small.json";

TEST(SweepSpec, GridIsRowMajorWithTheLastAxisFastest) {
  const auto spec = read_sweep_spec(kData + "small-grid.json");
  const auto points = expand_points(spec);
  ASSERT_EQ(points.size(), 12U);
  EXPECT_EQ(points[0].params.dump(), R"({"compression.window":10,"compression.r_min":8,"compression.alpha":0.2})");
  EXPECT_EQ(points[1].params.dump(), R"({"compression.window":10,"compression.r_min":8,"compression.alpha":0.5})");
  EXPECT_EQ(points[2].params.dump(), R"({"compression.window":10,"compression.r_min":16,"compression.alpha":0.2})");
  EXPECT_EQ(points[11].params.dump(), R"({"compression.window":30,"compression.r_min":16,"compression.alpha":0.5})");
  std::set<std::string> distinct;
  for (std::size_t i = 0; i < points.size(); ++i) {
    EXPECT_EQ(points[i].index, static_cast<std::int64_t>(i));
    distinct.insert(points[i].params.dump());
  }
  EXPECT_EQ(distinct.size(), 12U);
  EXPECT_EQ(points[11].sets,
            (std::vector<std::string>{"compression.window=30", "compression.r_min=16", "compression.alpha=0.5"}));
}

TEST(SweepSpec, RandomDrawsAreSeededInRangeAndRounded) {
  const auto spec = read_sweep_spec(kData + "small-random.json");
  const auto a = expand_points(spec);
  const auto b = expand_points(spec);
  ASSERT_EQ(a.size(), 6U);
  std::set<std::string> labels;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].params, b[i].params) << "same seed, same points";
    const auto& w = a[i].params["compression.window"];
    ASSERT_TRUE(w.is_number_integer());
    EXPECT_GE(w.get<int>(), 8);
    EXPECT_LE(w.get<int>(), 40);
    const double beta = a[i].params["compression.beta"].get<double>();
    EXPECT_GE(beta, 0.05);
    EXPECT_LE(beta, 0.5);
    labels.insert(a[i].params["network"].get<std::string>());
    // A bundle sets each of its keys.
    const bool fast = a[i].params["network"] == "200 Gb/s";
    EXPECT_EQ(a[i].sets.back(), std::string("cluster.inter_node.nic_bandwidth_GBps=") + (fast ? "25" : "1"));
  }
  EXPECT_EQ(labels.size(), 2U) << "6 draws should hit both bundle values";
  // Another seed draws other points.
  auto other = spec;
  other.seed = 12;
  EXPECT_NE(expand_points(other)[0].params, a[0].params);
}

TEST(SweepSpec, StringValuesStayStrings) {
  TempDir tmp;
  const auto path = tmp / "s.json";
  std::ofstream(path) << R"({"base": ")" << kBase
                      << R"(", "axes": [{"key": "entropy.source", "values": ["synthetic", "true"]}]})";
  const auto points = expand_points(read_sweep_spec(path.string()));
  EXPECT_EQ(points[0].sets.back(), "entropy.source=synthetic");
  EXPECT_EQ(points[1].sets.back(), "entropy.source=\"true\"") << "a string that reads as JSON stays a string";
}

struct Bad {
  const char* body;   // the spec's JSON, with BASE standing for the base scenario path
  const char* field;  // the field the error must name
};

TEST(SweepSpec, RejectsBadSpecsNamingTheField) {
  const Bad cases[] = {
      {R"({"axes": [{"key": "compression.window", "values": [1]}]})", "base"},
      {R"({"base": "no-such-file.json", "axes": [{"key": "a", "values": [1]}]})", "base"},
      {R"({"base": "BASE", "axes": [{"key": "a", "values": [1]}], "colour": 1})", "colour"},
      {R"({"base": "BASE"})", "axes"},
      {R"({"base": "BASE", "axes": []})", "axes"},
      {R"({"base": "BASE", "axes": [{"key": "a", "values": []}]})", "axes[0].values"},
      {R"({"base": "BASE", "axes": [{"key": "a", "values": [1, null]}]})", "axes[0].values[1]"},
      {R"({"base": "BASE", "axes": [{"key": "a..b", "values": [1]}]})", "axes[0].key"},
      {R"({"base": "BASE", "axes": [{"key": "a", "values": [1]}, {"key": "a", "values": [2]}]})", "axes[1].key"},
      {R"({"base": "BASE", "axes": [{"key": "a", "range": [1, 2]}]})", "axes[0].range"},
      {R"({"base": "BASE", "axes": [{"key": "a", "values": [1], "range": [1, 2]}]})", "axes[0]"},
      {R"({"base": "BASE", "axes": [{"key": "b", "values": [{"x.y": 1}, 2]}]})", "axes[0].values[1]"},
      {R"({"base": "BASE", "axes": [{"key": "b", "values": [{"x.y": 1}], "labels": ["a", "b"]}]})", "axes[0].labels"},
      {R"({"base": "BASE", "axes": [{"key": "a", "values": [1], "unit": "s"}]})", "axes[0].unit"},
      {R"({"base": "BASE", "mode": "lattice", "axes": [{"key": "a", "values": [1]}]})", "mode"},
      {R"({"base": "BASE", "mode": "random", "axes": [{"key": "a", "values": [1]}]})", "samples"},
      {R"({"base": "BASE", "samples": 3, "axes": [{"key": "a", "values": [1]}]})", "samples"},
      {R"({"base": "BASE", "mode": "random", "samples": 2, "axes": [{"key": "a", "range": [0, 1], "scale": "log"}]})",
       "axes[0].range"},
      {R"({"base": "BASE", "mode": "random", "samples": 2, "axes": [{"key": "a", "range": [2, 1]}]})", "axes[0].range"},
      {R"({"base": "BASE", "mode": "random", "samples": 2, "axes": [{"key": "a", "range": [0.2, 0.7], "integer": true}]})",
       "axes[0].range"},
      {R"({"base": "BASE", "mode": "random", "samples": 2, "axes": [{"key": "a", "range": [8, 4e115], "integer": true}]})",
       "axes[0].range"},
      {R"({"base": "BASE", "mode": "random", "samples": 2, "axes": [{"key": "a", "range": [-1e19, 0], "integer": true}]})",
       "axes[0].range"},
      {R"({"base": "BASE", "repeats": 0, "axes": [{"key": "a", "values": [1]}]})", "repeats"},
      {R"({"base": "BASE", "set": [1], "axes": [{"key": "a", "values": [1]}]})", "set"},
      {R"({"base": "BASE", "policies": 3, "axes": [{"key": "a", "values": [1]}]})", "policies"},
      {R"({"base": "BASE", "policies": "none,edgcc", "axes": [{"key": "a", "values": [1]}]})", "policies"},
      {R"({"base": "BASE", "policies": ["edgc", "magic"], "axes": [{"key": "a", "values": [1]}]})", "policies"},
      {R"({"base": "BASE", "axes": [{"key": "a", "values": [1]}]} trailing)", ""},
  };
  TempDir tmp;
  int n = 0;
  for (const Bad& c : cases) {
    std::string body = c.body;
    if (const auto at = body.find("BASE"); at != std::string::npos) body.replace(at, 4, kBase);
    const auto path = tmp / ("bad" + std::to_string(n++) + ".json");
    std::ofstream(path) << body;
    SCOPED_TRACE(body);
    edgc::test::expect_config_error([&] { expand_points(read_sweep_spec(path.string())); }, path.string(), c.field);
  }
}

// Fuzz finding: a base whose file name is too long for the OS (ENAMETOOLONG) threw std::filesystem's
// filesystem_error instead of naming the field.
TEST(SweepSpec, ABaseNameTooLongForTheOsIsAConfigErrorNamingBase) {
  TempDir tmp;
  const auto path = tmp / "long.json";
  std::ofstream(path) << R"({"base": ")" + std::string(300, 'x') + R"(.json", "axes": [{"key": "a", "values": [1]}]})";
  edgc::test::expect_config_error([&] { (void)read_sweep_spec(path.string()); }, path.string(), "base",
                                  {"is not a readable file (File name too long)"});
}

}  // namespace
