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

// Duplicate keys, which nlohmann's parser resolves silently in favour of the last: named with their dotted path and
// both lines; the same key in different objects, keys inside strings and escaped quotes are not duplicates.
TEST(JsonDuplicateKey, NamesTheKeyPathAndBothLines) {
  const DuplicateKey d = json_duplicate_key("{\n \"compression\": {\n  \"window\": 1000,\n  \"window\": 50\n }\n}");
  EXPECT_EQ(d.key, "compression.window");
  EXPECT_EQ(d.first_line, 3U);
  EXPECT_EQ(d.second_line, 4U);
  EXPECT_EQ(json_duplicate_key(R"({"a": {"x": 1}, "b": {"x": 2}, "c": [{"x": 1}, {"x": 2}]})").key, "");
  EXPECT_EQ(json_duplicate_key(R"({"a": "\"a\": 1, \"a\": 2", "b": ["a", "a"]})").key, "");
  EXPECT_EQ(json_duplicate_key(R"({"a": 1, "b": {"c": [1, {"d": 1, "d": 2}]}})").key, "b.c.d");
  EXPECT_EQ(json_duplicate_key(R"({"a": 1, "a": 2})").key, "a");
}

}  // namespace
}  // namespace edgc
