// engine::inspect_trace called directly (`edgc trace inspect` without its option parsing): every captured iteration's
// statistics per tensor and boundary, the JSON document keyed by iteration and name, the console tables, and a
// missing trace refused before anything is printed.
#include "edgc/engine/trace_inspection.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "edgc/core/error.hpp"
#include "edgc/results/trace_inspection.hpp"

namespace edgc::engine {
namespace {

const std::string kTrace = std::string(EDGC_SOURCE_DIR) + "/traces/bundled/tinygpt-licenses";

TEST(InspectTrace, StatisticsOfEveryCapturedIterationAsJsonAndTables) {
  const results::TraceInspection r = inspect_trace(kTrace);
  const std::size_t iterations = r.manifest.iterations.size();
  ASSERT_GT(iterations, 1U);
  ASSERT_EQ(r.stats.size(), iterations);
  ASSERT_EQ(r.boundary_stats.size(), iterations);
  EXPECT_EQ(r.stats.front().size(), r.manifest.tensors.size());
  EXPECT_EQ(r.boundary_stats.front().size(), r.manifest.boundaries.size());
  for (std::size_t k = 0; k < r.captured.size(); ++k) EXPECT_GT(r.captured[k], 0) << r.manifest.tensors[k].name;

  const nlohmann::ordered_json j = results::to_json(r);
  EXPECT_EQ(j.at("schema"), results::kTraceInspectSchema);
  EXPECT_EQ(j.at("trace"), kTrace);
  EXPECT_EQ(j.at("iterations").size(), iterations);
  const auto& first = j.at("iterations").at(std::to_string(r.manifest.iterations.front().iteration));
  EXPECT_EQ(first.at("tensors").at(r.manifest.tensors.front().name).at("count"), r.stats.front().front().count);

  std::ostringstream all;
  results::print_trace_inspection(all, r, 0);
  EXPECT_EQ(all.str().rfind("trace       " + kTrace + "  (edgc.trace v", 0), 0U) << all.str();
  EXPECT_NE(all.str().find("per-tensor statistics at " + std::to_string(iterations) + " of " +
                           std::to_string(iterations) + " iterations"),
            std::string::npos);
  std::ostringstream two;
  results::print_trace_inspection(two, r, 2);
  EXPECT_NE(two.str().find("per-tensor statistics at 2 of "), std::string::npos);  // the first and the last
}

TEST(InspectTrace, RefusesAMissingTrace) {
  EXPECT_THROW(inspect_trace(std::string(EDGC_SOURCE_DIR) + "/traces/no-such-trace"), InputError);
  EXPECT_EQ(results::with_commas(1234567), "1,234,567");
  EXPECT_EQ(results::with_commas(999), "999");
}

}  // namespace
}  // namespace edgc::engine
