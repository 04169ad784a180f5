#include "edgc/core/checked_int.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace edgc {
namespace {

using nlohmann::json;

constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kI64Min = std::numeric_limits<std::int64_t>::min();
constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();
constexpr int kIntMax = std::numeric_limits<int>::max();
constexpr int kIntMin = std::numeric_limits<int>::min();

// The detail of the IntegerError `read` throws, with its kind checked; "" when it throws none.
template <typename F>
std::string refusal(F read, IntegerError::Kind kind) {
  try {
    read();
  } catch (const IntegerError& e) {
    EXPECT_EQ(static_cast<int>(e.kind()), static_cast<int>(kind)) << e.what();
    EXPECT_TRUE(e.where().empty() && e.field().empty()) << "the reader adds file and field, not the facility";
    return e.what();
  }
  ADD_FAILURE() << "no IntegerError";
  return "";
}

// Each bound is inclusive: min and max are read, min − 1 and max + 1 are refused naming the interval.
TEST(CheckedInteger, BoundsAreInclusive) {
  EXPECT_EQ(json_integer<int>(json(0), 0, 65535), 0);
  EXPECT_EQ(json_integer<int>(json(65535), 0, 65535), 65535);
  EXPECT_EQ(refusal([] { json_integer<int>(json(-1), 0, 65535); }, IntegerError::Kind::kBelow),
            "must be in [0, 65535], got -1");
  EXPECT_EQ(refusal([] { json_integer<int>(json(65536), 0, 65535); }, IntegerError::Kind::kAbove),
            "must be in [0, 65535], got 65536");
  EXPECT_EQ(json_integer<std::int64_t>(json(-1), -1, 16), -1);
}

// The values that wrap when narrowed: 2^31 − 1, 2^31, 2^32 − 1, 2^63 − 1, 2^64 − 1, −1 and −2^63, read into int,
// int64 and uint64. A value is returned exactly when it fits both the type and the bounds; otherwise refused.
TEST(CheckedInteger, WrappingValuesAreRefusedNotNarrowed) {
  const json i31m1 = json::parse("2147483647");
  const json i31 = json::parse("2147483648");
  const json u32m1 = json::parse("4294967295");
  const json i63m1 = json::parse("9223372036854775807");
  const json i63 = json::parse("9223372036854775808");
  const json u64m1 = json::parse("18446744073709551615");
  const json minus1 = json::parse("-1");
  const json i64min = json::parse("-9223372036854775808");

  EXPECT_EQ(json_integer<int>(i31m1, kIntMin, kIntMax), kIntMax);
  EXPECT_EQ(refusal([&] { json_integer<int>(i31, kIntMin, kIntMax); }, IntegerError::Kind::kAbove),
            "must be in [-2147483648, 2147483647], got 2147483648");
  EXPECT_EQ(refusal([&] { json_integer<int>(u32m1, 0, 65535); }, IntegerError::Kind::kAbove),
            "must be in [0, 65535], got 4294967295");
  EXPECT_EQ(refusal([&] { json_integer<int>(i63m1, 0, 65535); }, IntegerError::Kind::kAbove),
            "must be in [0, 65535], got 9223372036854775807");
  EXPECT_EQ(refusal([&] { json_integer<int>(u64m1, 0, 65535); }, IntegerError::Kind::kAbove),
            "must be in [0, 65535], got 18446744073709551615");
  EXPECT_EQ(refusal([&] { json_integer<int>(minus1, 0, 65535); }, IntegerError::Kind::kBelow),
            "must be in [0, 65535], got -1");

  EXPECT_EQ(json_integer<std::int64_t>(i63m1, kI64Min, kI64Max), kI64Max);
  EXPECT_EQ(json_integer<std::int64_t>(i64min, kI64Min, kI64Max), kI64Min);
  EXPECT_EQ(json_integer<std::int64_t>(u32m1, 0, kI64Max), 4294967295);
  EXPECT_EQ(refusal([&] { json_integer<std::int64_t>(i63, kI64Min, kI64Max); }, IntegerError::Kind::kAbove),
            "must be in [-9223372036854775808, 9223372036854775807], got 9223372036854775808");
  EXPECT_EQ(refusal([&] { json_integer<std::int64_t>(u64m1, 0, kI64Max); }, IntegerError::Kind::kAbove),
            "must be in [0, 9223372036854775807], got 18446744073709551615");

  // Unsigned targets: 2^64 − 1 is read as itself, −1 is below 0 (never 2^64 − 1).
  EXPECT_EQ(json_integer<std::uint64_t>(u64m1, 0, kU64Max), kU64Max);
  EXPECT_EQ(json_integer<std::uint64_t>(i63, 0, kU64Max), std::uint64_t{1} << 63);
  EXPECT_EQ(refusal([&] { json_integer<std::uint64_t>(minus1, 0, kU64Max); }, IntegerError::Kind::kBelow),
            "must be in [0, 18446744073709551615], got -1");
  EXPECT_EQ(refusal([&] { json_integer<std::uint32_t>(json::parse("4294967296"), 0, 4294967295U); },
                    IntegerError::Kind::kAbove),
            "must be in [0, 4294967295], got 4294967296");
}

// Anything but an integer is refused as such, whatever the bounds: 1.5, "1", true, null, [1], {}.
TEST(CheckedInteger, NonIntegersAreRefused) {
  for (const char* text : {"1.5", "\"1\"", "true", "null", "[1]", "{}", "1.0", "1e6"}) {
    const json v = json::parse(text);
    EXPECT_EQ(refusal([&] { json_integer<int>(v, kIntMin, kIntMax); }, IntegerError::Kind::kNotInteger),
              "expected an integer, got " + v.dump())
        << text;
  }
}

// Under rule.integral_doubles an exact integral double up to 2^53 counts; 1.5, 2^53 + 2 and inf do not.
TEST(CheckedInteger, IntegralDoublesOnlyWhenAsked) {
  const IntegerRule doubles{.integral_doubles = true};
  EXPECT_EQ(json_integer<std::int64_t>(json::parse("1e6"), 0, kI64Max, doubles), 1000000);
  EXPECT_EQ(json_integer<std::int64_t>(json(-2.0), kI64Min, kI64Max, doubles), -2);
  EXPECT_EQ(json_integer<std::int64_t>(json(9007199254740992.0), 0, kI64Max, doubles), std::int64_t{1} << 53);
  for (const double d : {1.5, 9007199254740994.0, std::numeric_limits<double>::infinity(), 1e300}) {
    refusal([&] { json_integer<std::int64_t>(json(d), kI64Min, kI64Max, doubles); }, IntegerError::Kind::kNotInteger);
  }
  EXPECT_EQ(refusal([&] { json_integer<int>(json(3e9), 0, kIntMax, doubles); }, IntegerError::Kind::kAbove),
            "must be in [0, 2147483647], got 3000000000");
}

// The non-throwing form for optional fields: the value within bounds, else nothing.
TEST(CheckedInteger, JsonIntegerIf) {
  EXPECT_EQ(json_integer_if<int>(json(3), 0, 10), 3);
  EXPECT_EQ(json_integer_if<std::int64_t>(json::parse("-1"), -1, 10), -1);
  EXPECT_FALSE(json_integer_if<int>(json::parse("18446744073709551615"), 0, kIntMax));
  EXPECT_FALSE(json_integer_if<std::int64_t>(json::parse("9223372036854775808"), 0, kI64Max));
  EXPECT_FALSE(json_integer_if<int>(json::parse("-1"), 0, kIntMax));
  EXPECT_FALSE(json_integer_if<int>(json(1.0), 0, kIntMax));
  EXPECT_FALSE(json_integer_if<int>(json("1"), 0, kIntMax));
}

// One-sided wording names the bound that was crossed.
TEST(CheckedInteger, OneSidedWording) {
  const IntegerRule one_sided{.one_sided = true};
  EXPECT_EQ(refusal([] { json_integer<int>(json(7), 0, 6, {.one_sided = true}); }, IntegerError::Kind::kAbove),
            "must be <= 6, got 7");
  EXPECT_EQ(refusal([&] { json_integer<int>(json(7), 8, kIntMax, one_sided); }, IntegerError::Kind::kBelow),
            "must be >= 8, got 7");
  EXPECT_EQ(
      refusal([&] { checked_integer<int>(std::uint64_t{1} << 63, 0, kIntMax, one_sided); }, IntegerError::Kind::kAbove),
      "must be <= 2147483647, got 9223372036854775808");
}

// Already-parsed integers of any type are compared exactly across signedness.
TEST(CheckedInteger, CheckedIntegerComparesAcrossSignedness) {
  EXPECT_EQ(checked_integer<int>(std::int64_t{-5}, -5, 5), -5);
  EXPECT_EQ(checked_integer<std::size_t>(std::int64_t{7}, 0, 10), 7U);
  refusal([] { checked_integer<std::size_t>(std::int64_t{-1}, 0, 10); }, IntegerError::Kind::kBelow);
  refusal([] { checked_integer<std::int64_t>(kU64Max, kI64Min, kI64Max); }, IntegerError::Kind::kAbove);
  refusal([] { checked_integer<int>(std::int64_t{1} << 31, kIntMin, kIntMax); }, IntegerError::Kind::kAbove);
}

// Text: plain decimal only; 64-bit overflow is out of bounds, not garbage.
TEST(CheckedInteger, ParseIntegerText) {
  EXPECT_EQ(parse_integer<int>("0", 0, 10), 0);
  EXPECT_EQ(parse_integer<int>("-1", -1, 10), -1);
  EXPECT_EQ(parse_integer<int>("2147483647", 0, kIntMax), kIntMax);
  EXPECT_EQ(parse_integer<std::int64_t>("9223372036854775807", 0, kI64Max), kI64Max);
  EXPECT_EQ(parse_integer<std::int64_t>("-9223372036854775808", kI64Min, 0), kI64Min);
  EXPECT_EQ(parse_integer<std::uint64_t>("18446744073709551615", 0, kU64Max), kU64Max);
  EXPECT_EQ(refusal([] { parse_integer<int>("2147483648", 0, kIntMax); }, IntegerError::Kind::kAbove),
            "must be in [0, 2147483647], got 2147483648");
  EXPECT_EQ(refusal([] { parse_integer<int>("4294967295", 0, kIntMax); }, IntegerError::Kind::kAbove),
            "must be in [0, 2147483647], got 4294967295");
  EXPECT_EQ(refusal([] { parse_integer<int>("-1", 0, kIntMax); }, IntegerError::Kind::kBelow),
            "must be in [0, 2147483647], got -1");
  EXPECT_EQ(
      refusal([] { parse_integer<std::int64_t>("18446744073709551616", 0, kI64Max); }, IntegerError::Kind::kAbove),
      "must be in [0, 9223372036854775807], got 18446744073709551616");
  EXPECT_EQ(refusal([] { parse_integer<std::int64_t>("-9223372036854775809", kI64Min, kI64Max); },
                    IntegerError::Kind::kBelow),
            "must be in [-9223372036854775808, 9223372036854775807], got -9223372036854775809");
  for (const char* text : {"", "-", "+1", " 1", "1 ", "1.5", "1e3", "0x10", "12abc", "--1", "abc"}) {
    EXPECT_EQ(refusal([&] { parse_integer<int>(text, kIntMin, kIntMax); }, IntegerError::Kind::kNotInteger),
              "expected an integer, got '" + std::string(text) + "'")
        << text;
  }
}

// Products: every partial product, left to right, within max; a later 0 does not excuse an earlier overflow.
TEST(CheckedProduct, ElementCounts) {
  using V = std::vector<std::int64_t>;
  EXPECT_EQ(checked_product(V{}, 10), 1);
  EXPECT_EQ(checked_product(V{2, 3, 4}, 24), 24);
  EXPECT_FALSE(checked_product(V{2, 3, 4}, 23));
  EXPECT_EQ(checked_product(V{0, kI64Max, kI64Max}, kI64Max), 0);
  EXPECT_FALSE(checked_product(V{kI64Max, 2, 0}, kI64Max)) << "the partial product overflows before the 0";
  EXPECT_FALSE(checked_product(V{std::int64_t{1} << 32, std::int64_t{1} << 32}, kI64Max));
  EXPECT_EQ(checked_product(V{std::int64_t{1} << 31, std::int64_t{1} << 31}, kI64Max), std::int64_t{1} << 62);
  EXPECT_EQ(checked_product(V{kI64Max, 1}, kI64Max), kI64Max);
  EXPECT_FALSE(checked_product(V{3, -1}, kI64Max)) << "negative dimension";
  EXPECT_FALSE(checked_product(V{}, 0)) << "the empty product 1 is above max 0";
  const std::int64_t cap = std::int64_t{1} << 42;
  EXPECT_EQ(checked_product(V{std::int64_t{1} << 21, std::int64_t{1} << 21}, cap), cap);
  EXPECT_FALSE(checked_product(V{(std::int64_t{1} << 21) + 1, std::int64_t{1} << 21}, cap));
}

TEST(CheckedProduct, BytesAndSums) {
  EXPECT_EQ(checked_multiply(std::int64_t{1} << 40, 4, std::int64_t{1} << 42), std::int64_t{1} << 42);
  EXPECT_FALSE(checked_multiply((std::int64_t{1} << 40) + 1, 4, std::int64_t{1} << 42));
  EXPECT_FALSE(checked_multiply(kI64Max, 2, kI64Max));
  EXPECT_EQ(checked_multiply(0, kI64Max, 0), 0);
  EXPECT_FALSE(checked_multiply(-1, 1, kI64Max));
  EXPECT_EQ(checked_add(kI64Max - 1, 1, kI64Max), kI64Max);
  EXPECT_FALSE(checked_add(kI64Max, 1, kI64Max));
  EXPECT_FALSE(checked_add(5, 6, 10));
  EXPECT_FALSE(checked_add(-1, 6, 10));
}

}  // namespace
}  // namespace edgc
