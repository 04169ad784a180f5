// The plain scan of a safetensors header (parse_safetensors_header with HeaderReader::kAny) must give exactly what
// the strict JSON parser gives (HeaderReader::kStrict): the same entries in the same order, or the same error, on
// plain headers, on headers it hands over to the parser, and on thousands of random mutations of both.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/traces/safetensors.hpp"

namespace edgc::traces {
namespace {

constexpr std::uint64_t kDataBytes = 4096;

// What a reader makes of `text` in a file with kDataBytes of data (or `file_size`): its entries, or its error.
std::string outcome(const std::string& text, HeaderReader reader, std::uint64_t file_size = 0) {
  if (file_size == 0) file_size = 8 + text.size() + kDataBytes;
  try {
    const SafetensorsHeader h = parse_safetensors_header(text, file_size, "t.safetensors", reader);
    std::string out = "start " + std::to_string(h.data_start);
    for (const SafetensorsEntry& e : h.entries)
      out += " | " + e.name + " " + std::string(safetensors_name(e.dtype)) + " " + shape_to_string(e.shape) + " " +
             std::to_string(e.begin) + "-" + std::to_string(e.end);
    return out;
  } catch (const TraceFormatError& e) {
    return std::string("error: ") + e.what();
  }
}

void expect_same(const std::string& text, std::uint64_t file_size = 0) {
  EXPECT_EQ(outcome(text, HeaderReader::kAny, file_size), outcome(text, HeaderReader::kStrict, file_size)) << text;
}

const std::string kPlain =
    R"({"__metadata__":{"format":"edgc.trace","iteration":"40"},"b.weight":{"dtype":"F32","shape":[4,2],)"
    R"("data_offsets":[0,32]},"a.weight@blocks":{"dtype":"I64","shape":[3,2],"data_offsets":[32,80]},)"
    R"("c":{"shape":[],"data_offsets":[80,82],"dtype":"BF16"}})";

TEST(HeaderScan, PlainHeadersGiveTheParsersEntries) {
  expect_same(kPlain);
  EXPECT_NE(outcome(kPlain, HeaderReader::kAny).find("a.weight@blocks I64 [3, 2] 32-80"), std::string::npos);
  expect_same("{}");
  expect_same(" { \"x\" : { \"dtype\" : \"F16\" ,\n\"shape\" : [ 1 , 3 ] , \"data_offsets\" : [ 0 , 6 ] } } \t\r\n");
  expect_same(R"({"x":{"dtype":"F32","shape":[0],"data_offsets":[7,7]},"y":{"dtype":"F32","shape":[0],)"
              R"("data_offsets":[7,7]}})");  // equal offsets: the sort by offset sees the same order
}

TEST(HeaderScan, WhatItHandsOverGivesTheParsersErrors) {
  const std::vector<std::string> cases = {
      R"({"x":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}})",  // a float
      R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})",   // a sign
      R"({"x":{"dtype":"F32","shape":[01],"data_offsets":[0,4]}})",   // a leading zero
      R"({"x":{"dtype":"F32","shape":[1e0],"data_offsets":[0,4]}})",  // an exponent
      R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
      R"({"x":{"dtype":"F32","dtype":"F16","shape":[1],"data_offsets":[0,4]}})",       // a repeated key
      R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"extra":1}})",           // another key
      R"({"x":{"dtype":"F32","shape":[1]}})",                                          // a missing key
      R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})",                   // three offsets
      R"({"x\u0041":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",               // an escape
      "{\"x\xc3\xa9\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",      // UTF-8
      R"({"x":{"dtype":"F32","shape":[99999999999999999999],"data_offsets":[0,4]}})",  // beyond int64
      R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,18446744073709551615]}})",
      R"({"__metadata__":{"a":1},"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
      R"({"__metadata__":[],"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
      R"({"__metadata__":{"a":"b","a":"c"}})",
      R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}} x)",  // trailing text
      R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},})",   // a trailing comma
      R"([1,2])",
      R"({"x":[]})",
      "",
  };
  for (const std::string& c : cases) expect_same(c);
}

TEST(HeaderScan, ValueErrorsAreTheParsers) {
  const std::vector<std::string> cases = {
      R"({"x":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})",                      // unknown dtype
      R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})",                      // end before begin
      R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})",                      // bytes against shape
      R"({"x":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,4]}})",  // too large
      R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
      R"({"z":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F64","shape":[2],"data_offsets":[0,8]}})",
  };
  for (const std::string& c : cases) expect_same(c);
  // Data past the end of the file.
  expect_same(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8 + 54 + 4);
}

// Random edits of JSON-significant bytes: whatever the scan takes must match the parser, and what it hands over
// still does. Deterministic (fixed seed).
TEST(HeaderScan, RandomMutationsAgree) {
  const std::string alphabet = "{}[],:\" 019-.eE\\a\n\x01\xc3";
  std::mt19937 rng(20261128);
  int plain = 0;
  for (int round = 0; round < 4000; ++round) {
    std::string text = kPlain;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < edits; ++k) {
      const std::size_t at = rng() % (text.size() + 1);
      const char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0:
          if (at < text.size()) text[at] = c;
          break;
        case 1:
          text.insert(text.begin() + static_cast<std::ptrdiff_t>(at), c);
          break;
        default:
          if (at < text.size()) text.erase(at, 1);
          break;
      }
    }
    const std::string any = outcome(text, HeaderReader::kAny);
    ASSERT_EQ(any, outcome(text, HeaderReader::kStrict)) << "mutation " << round << ": " << text;
    plain += any.rfind("start", 0) == 0 ? 1 : 0;
  }
  EXPECT_GT(plain, 100) << "some mutations stay valid headers (whitespace, digits)";
}

}  // namespace
}  // namespace edgc::traces
