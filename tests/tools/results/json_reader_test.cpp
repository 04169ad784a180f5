// The strict JSON reader of the typed result documents (edgc/results/json_reader.hpp): each accessor takes good
// values and refuses bad ones with a ConfigError naming the file, the line label and the full field path.
#include "edgc/results/json_reader.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "edgc/core/error.hpp"
#include "expect_error.hpp"

namespace edgc::results {
namespace {

using Json = JsonNode::Json;

const char* const kFile = "in/doc.json";

// Runs `read`, which must throw ConfigError; checks its file and field, and that its detail holds `detail`.
void expect_error(const std::function<void()>& read, const std::string& field, const std::string& detail,
                  const std::string& file = kFile, edgc::test::CallerLine caller = edgc::test::CallerLine::current()) {
  edgc::test::expect_config_error(read, file, field, {detail}, caller);
}

const Json kDoc = Json::parse(R"({
  "schema": "edgc.test/1",
  "name": "gpt",
  "kind": "P",
  "flag": true,
  "time_s": 1.5,
  "negative": -2.5,
  "count": 7,
  "big": 18446744073709551615,
  "whole": 1e6,
  "half": 2.5,
  "gap": null,
  "runs": [{"policy": "none", "steps": [{"time_s": 0.25}, {"time_s": "slow"}]}],
  "params": {"b": 1, "a": 2}
})");

TEST(JsonReader, ReadsGoodValues) {
  const JsonNode root(kDoc, kFile);
  EXPECT_NO_THROW(root.check_schema("edgc.test/1"));
  EXPECT_EQ(root.at("name").string(), "gpt");
  EXPECT_EQ(root.at("kind").one_of({"P", "Q", "dense"}), "P");
  EXPECT_TRUE(root.at("flag").boolean());
  EXPECT_EQ(root.at("time_s").number(), 1.5);
  EXPECT_EQ(root.at("time_s").non_negative(), 1.5);
  EXPECT_EQ(root.number_at("negative"), -2.5);
  EXPECT_EQ(root.at("count").number(), 7.0);
  EXPECT_EQ(root.at("count").integer(), 7);
  EXPECT_EQ(root.at("count").integer(7, 7), 7);
  EXPECT_EQ(root.at("count").int32(0, 10), 7);
  EXPECT_EQ(root.at("whole").integer(), 1000000);  // an exact integer written as a double
  EXPECT_TRUE(std::isnan(root.at("gap").number_or_nan()));
  EXPECT_EQ(root.at("time_s").number_or_nan(), 1.5);
  const JsonNode steps = root.at("runs")[0].at("steps");
  ASSERT_EQ(steps.size(), 2U);
  EXPECT_EQ(steps[0].at("time_s").number(), 0.25);
  EXPECT_EQ(steps[1].path(), "runs[0].steps[1]");
  EXPECT_EQ(root.at("params").member_keys(), (std::vector<std::string>{"b", "a"}));  // the file's order
}

TEST(JsonReader, OptionalMembers) {
  const JsonNode root(kDoc, kFile);
  EXPECT_FALSE(root.find("absent").has_value());
  EXPECT_FALSE(root.find("gap").has_value());  // null counts as absent
  ASSERT_TRUE(root.find("name").has_value());
  EXPECT_EQ(root.find("name")->path(), "name");
  EXPECT_TRUE(std::isnan(root.optional_number("absent")));
  EXPECT_EQ(root.optional_number("time_s"), 1.5);
  EXPECT_EQ(root.optional_string("absent"), "");
  EXPECT_EQ(root.optional_string("name"), "gpt");
  EXPECT_EQ(root.optional_integer("absent"), 0);
  EXPECT_EQ(root.optional_integer("count"), 7);
  // Present but of the wrong type is an error, not "absent".
  expect_error([&] { root.optional_number("name"); }, "name", "expected a number, got string \"gpt\"");
  expect_error([&] { root.optional_string("count"); }, "count", "expected a string, got number 7");
}

TEST(JsonReader, WrongTypesNameTheField) {
  const JsonNode root(kDoc, kFile);
  expect_error([&] { root.at("count").string(); }, "count", "expected a string, got number 7");
  expect_error([&] { root.at("name").number(); }, "name", "expected a number, got string \"gpt\"");
  expect_error([&] { root.at("name").boolean(); }, "name", "expected true or false, got string \"gpt\"");
  expect_error([&] { root.at("name").integer(); }, "name", "expected an integer, got string \"gpt\"");
  expect_error([&] { root.at("half").integer(); }, "half", "expected an integer, got number 2.5");
  expect_error([&] { root.at("name").size(); }, "name", "expected an array, got string \"gpt\"");
  expect_error([&] { root.at("runs").at("x"); }, "runs", "expected an object, got array [{\"policy\"");
  expect_error([&] { root.at("gap").number(); }, "gap", "expected a number, got null null");
  expect_error([&] { root.at("runs")[0].at("steps")[1].at("time_s").non_negative(); }, "runs[0].steps[1].time_s",
               "expected a number, got string \"slow\"");
}

TEST(JsonReader, BadValuesNameTheField) {
  const JsonNode root(kDoc, kFile);
  expect_error([&] { root.at("negative").non_negative(); }, "negative", "must be >= 0, got number -2.5");
  expect_error([&] { root.at("count").integer(8); }, "count", "must be >= 8, got 7");
  expect_error([&] { root.at("count").int32(0, 6); }, "count", "must be <= 6, got 7");
  expect_error([&] { root.at("big").integer(); }, "big", "must be <= 9223372036854775807");
  expect_error([&] { root.at("big").int32(0); }, "big", "must be <= 2147483647");
  expect_error([&] { root.at("kind").one_of({"Q", "dense"}); }, "kind", "expected one of Q, dense, got \"P\"");
  expect_error([&] { root.at("runs")[1]; }, "runs[1]", "missing (the array has 1)");
  // Values a document built in memory may hold; dump() would print them as null.
  const Json inf = std::numeric_limits<double>::infinity();
  expect_error([&] { JsonNode(inf, kFile, "", "x").number(); }, "x", "expected a finite number, got inf");
  const Json nan = std::numeric_limits<double>::quiet_NaN();
  expect_error([&] { JsonNode(nan, kFile, "", "x").number(); }, "x", "expected a finite number, got NaN");
}

TEST(JsonReader, MissingAndUnknownMembers) {
  const JsonNode root(kDoc, kFile);
  expect_error([&] { root.at("runs")[0].at("steps")[0].at("comm_s"); }, "runs[0].steps[0].comm_s", "missing");
  expect_error([&] { root.at("params").keys({"a", "b", "c"}); }, "params.c", "missing");
  expect_error([&] { root.at("params").keys({"a"}); }, "params.b", "unknown key");
  EXPECT_NO_THROW(root.at("params").keys({"a", "b"}));
  expect_error([&] { root.at("name").keys({"a"}); }, "name", "expected an object, got string");
}

TEST(JsonReader, SchemaCheck) {
  EXPECT_NO_THROW(JsonNode(kDoc, kFile).check_schema("edgc.test/1"));
  expect_error([&] { JsonNode(kDoc, kFile).check_schema("edgc.test/2"); }, "schema",
               "expected \"edgc.test/2\", got \"edgc.test/1\"");
  const Json no_schema = Json::parse(R"({"a": 1})");
  expect_error([&] { JsonNode(no_schema, kFile).check_schema("edgc.test/1"); }, "schema",
               "expected \"edgc.test/1\", got nothing");
  const Json number_schema = Json::parse(R"({"schema": 3})");
  expect_error([&] { JsonNode(number_schema, kFile).check_schema("edgc.test/1"); }, "schema",
               "expected \"edgc.test/1\", got 3");
  const Json array = Json::parse("[1]");
  expect_error([&] { JsonNode(array, kFile).check_schema("edgc.test/1"); }, "", "expected an object, got array [1]");
}

TEST(JsonReader, LineLabelPrecedesThePath) {
  EXPECT_EQ(line_label(3), "line 3");
  const Json line = Json::parse(R"({"runs": [{"speedup_vs_none": "x"}]})");
  const JsonNode root(line, "out/results.jsonl", line_label(3));
  edgc::test::expect_config_error([&] { root.at("runs")[0].at("speedup_vs_none").number(); }, std::nullopt,
                                  "line 3: runs[0].speedup_vs_none",
                                  {"out/results.jsonl: line 3: runs[0].speedup_vs_none: expected a number"});
  // The line itself, with no path.
  expect_error([&] { root.at("runs").at("x"); }, "line 3: runs", "expected an object", "out/results.jsonl");
  const Json scalar = 1;
  expect_error([&] { JsonNode(scalar, "out/results.jsonl", line_label(4)).at("point"); }, "line 4",
               "expected an object, got number 1", "out/results.jsonl");
}

TEST(JsonReader, ParsesAndKeepsTheFileOrder) {
  const Json j = parse_json(R"({"z": 1, "a": [true, null, "s"]})", kFile);
  EXPECT_EQ(j.begin().key(), "z");
  const nlohmann::json sorted = parse_json<nlohmann::json>(R"({"z": 1, "a": 2})", kFile);
  EXPECT_EQ(sorted.begin().key(), "a");
}

TEST(JsonReader, TextThatIsNotJsonIsAConfigError) {
  expect_error([] { parse_json(R"({"a": )", kFile); }, "", "not valid JSON: parse error at line 1");
  expect_error([] { parse_json("", kFile); }, "", "not valid JSON");
  expect_error([] { parse_json<nlohmann::json>("{\"a\": 1} x", "r.jsonl", line_label(2)); }, "line 2",
               "not valid JSON: parse error at line 1", "r.jsonl");
  // The wording is the caller's (measurements.json says "invalid JSON").
  expect_error([] { parse_json("[", kFile, "", "invalid JSON"); }, "", "invalid JSON: parse error");
  if (const auto e = edgc::test::expect_config_error([] { parse_json("{", kFile); }, std::nullopt, std::nullopt)) {
    EXPECT_EQ(std::string(e->what()).find("[json.exception"), std::string::npos) << e->what();  // no exception id
  }
}

TEST(JsonReader, NumberTooLargeForADoubleNamesTheField) {
  expect_error([] { parse_json(R"({"runs": [{"a": 1}, {"b": {"time_s": 1e999}}]})", kFile); }, "runs[1].b.time_s",
               "expected a finite number, got 1e999 (too large for a double)");
  expect_error([] { parse_json(R"({"x": [0, [1, 2, -1e400]]})", kFile); }, "x[1][2]", "got -1e400");
  expect_error([] { parse_json<nlohmann::json>(R"({"point": 1, "wall_s": 1e999})", "r.jsonl", line_label(5)); },
               "line 5: wall_s", "got 1e999", "r.jsonl");
  expect_error([] { parse_json("1e999", kFile); }, "", "got 1e999");
  // An integer too long for 64 bits is read as a double, and one too long even for that overflows as well.
  EXPECT_EQ(parse_json("123456789012345678901234567890", kFile).get<double>(), 1.2345678901234568e29);
  expect_error([] { parse_json(R"({"n": 1)" + std::string(400, '0') + "}", kFile); }, "n", "too large for a double");
}

// Fuzz finding: measurements.json and result.json nested 200,000 deep overflowed the stack when the first message
// printed the value. Refused before parsing (core/json_depth.hpp).
TEST(JsonReader, NestingDeeperThanTheLimitIsAConfigError) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  expect_error([&] { parse_json(deep, kFile); }, "", "arrays and objects nested deeper than 64 levels (column 65)");
  expect_error([&] { parse_json<nlohmann::json>(R"({"runs": )" + deep + "}", "r.jsonl", line_label(4)); }, "line 4",
               "nested deeper than 64 levels (column 73)", "r.jsonl");
  EXPECT_NO_THROW(parse_json(std::string(64, '[') + std::string(64, ']'), kFile));
}

}  // namespace
}  // namespace edgc::results
