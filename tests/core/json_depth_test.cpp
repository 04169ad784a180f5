// The nesting limit of JSON input (edgc/core/json_depth.hpp): documents up to kMaxJsonDepth pass, deeper ones are
// named by line and column, brackets inside strings do not count.
#include "edgc/core/json_depth.hpp"

#include <gtest/gtest.h>

#include <string>

namespace edgc {
namespace {

std::string nested(int levels) {
  const auto n = static_cast<std::size_t>(levels);
  return std::string(n, '[') + std::string(n, ']');
}

TEST(JsonDepth, AcceptsDocumentsUpToTheLimit) {
  EXPECT_EQ(json_depth_error(""), "");
  EXPECT_EQ(json_depth_error(R"({"a": [1, {"b": [2]}], "c": "x"})"), "");
  EXPECT_EQ(json_depth_error(nested(kMaxJsonDepth)), "");
  // Brackets inside strings, escaped quotes included, are text.
  EXPECT_EQ(json_depth_error("[\"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"]"), "");
  // Siblings do not add up: depth, not count.
  std::string wide = "[";
  for (int i = 0; i < 1000; ++i) wide += nested(10) + ",";
  EXPECT_EQ(json_depth_error(wide + "0]"), "");
}

TEST(JsonDepth, NamesWhereTheFirstBracketPastTheLimitStands) {
  EXPECT_EQ(json_depth_error(nested(kMaxJsonDepth + 1)),
            "arrays and objects nested deeper than 64 levels (column " + std::to_string(kMaxJsonDepth + 1) + ")");
  EXPECT_EQ(
      json_depth_error("{\n  \"a\": " + std::string(100000, '[')),
      "arrays and objects nested deeper than 64 levels (line 2, column " + std::to_string(7 + kMaxJsonDepth) + ")");
  EXPECT_EQ(json_depth_error(std::string(1000, '{')).find("arrays and objects nested deeper"), 0U);
}

}  // namespace
}  // namespace edgc
