#pragma once
// The one checked reader of untrusted integers: a count, index, rank, shape dimension or iteration number taken from
// a file or a command line is read through here, into the type the program keeps it in and within bounds that
// follow from what the program can hold, so that no later narrowing, product or allocation can wrap. A value out
// of bounds is an IntegerError whose message is the detail alone; each reader rethrows it as its own error type
// (ConfigError, TraceFormatError, UsageError) naming the file and the field.
//
// The JSON reader is a template over the value type (nlohmann::json and nlohmann::ordered_json alike), so that the
// core library does not depend on a JSON library.
#include <charconv>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "edgc/core/error.hpp"
#include "edgc/core/json_depth.hpp"

namespace edgc {

/// Why a value is not an integer within bounds. An InputError without file or field, so what() is the detail
/// alone ("must be in [0, 65535], got 4294967295"): readers catch it and rethrow their own error naming both.
class IntegerError : public InputError {
 public:
  enum class Kind {
    kNotInteger,  ///< not an integer at all (a string, 1.5, "12abc"); the detail is "expected an integer, got …"
    kBelow,       ///< an integer below the lower bound
    kAbove,       ///< an integer above the upper bound (a value past 64 bits included)
  };
  IntegerError(Kind kind, const std::string& detail) : InputError("", "", detail), kind_(kind) {}
  Kind kind() const noexcept { return kind_; }

 private:
  Kind kind_;
};

/// How a reader accepts and words integers. The defaults are the strictest and the clearest.
struct IntegerRule {
  /// A JSON double with an exact integral value no larger than 2^53 in magnitude (1e6, 2.0, from writers that keep
  /// every number a double) counts as an integer.
  bool integral_doubles = false;
  /// Out of bounds reads "must be >= MIN, got V" or "must be <= MAX, got V" (the bound crossed) instead of
  /// "must be in [MIN, MAX], got V".
  bool one_sided = false;
};

namespace detail {

template <std::integral Int>
[[noreturn]] void integer_out_of_range(bool below, const std::string& value, Int min, Int max,
                                       const IntegerRule& rule) {
  const auto kind = below ? IntegerError::Kind::kBelow : IntegerError::Kind::kAbove;
  const std::string got = ", got " + value;
  if (!rule.one_sided)
    throw IntegerError(kind, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "]" + got);
  throw IntegerError(kind,
                     below ? "must be >= " + std::to_string(min) + got : "must be <= " + std::to_string(max) + got);
}

}  // namespace detail

/// `v` as an Int in [min, max] (the comparison is exact across signedness: 2^64−1 is never −1). Throws
/// IntegerError (kBelow / kAbove) otherwise. Requires min <= max.
template <std::integral Int, std::integral V>
Int checked_integer(V v, std::type_identity_t<Int> min, std::type_identity_t<Int> max, const IntegerRule& rule = {}) {
  if (std::cmp_less(v, min) || std::cmp_greater(v, max))
    detail::integer_out_of_range<Int>(std::cmp_less(v, min), std::to_string(v), min, max, rule);
  return static_cast<Int>(v);
}

/// The JSON value `v` (nlohmann::json or ordered_json) as an Int in [min, max]. Integers of either sign and of any
/// size the parser keeps (int64 and uint64) are compared exactly, so 2^31, 2^32−1 and 2^63 are refused by bounds,
/// never wrapped; doubles count only under rule.integral_doubles. Throws IntegerError: kNotInteger ("expected an
/// integer, got <JSON text>") for a string, bool, null, array, object or non-integral number, else kBelow/kAbove.
template <std::integral Int, class Json>
Int json_integer(const Json& v, std::type_identity_t<Int> min, std::type_identity_t<Int> max,
                 const IntegerRule& rule = {}) {
  if (v.is_number_unsigned()) return checked_integer<Int>(v.template get<std::uint64_t>(), min, max, rule);
  if (v.is_number_integer()) return checked_integer<Int>(v.template get<std::int64_t>(), min, max, rule);
  if (rule.integral_doubles && v.is_number_float()) {
    const double d = v.template get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::abs(d) <= kJsonExactIntegerLimit)
      return checked_integer<Int>(static_cast<std::int64_t>(d), min, max, rule);
  }
  throw IntegerError(IntegerError::Kind::kNotInteger, "expected an integer, got " + v.dump());
}

/// json_integer() for optional, free-form fields: the value when `v` is an integer (never a double) within
/// [min, max], nullopt otherwise.
template <std::integral Int, class Json>
std::optional<Int> json_integer_if(const Json& v, std::type_identity_t<Int> min, std::type_identity_t<Int> max) {
  if (v.is_number_unsigned()) {
    const auto u = v.template get<std::uint64_t>();
    if (std::cmp_less(u, min) || std::cmp_greater(u, max)) return std::nullopt;
    return static_cast<Int>(u);
  }
  if (!v.is_number_integer()) return std::nullopt;
  const auto i = v.template get<std::int64_t>();
  if (std::cmp_less(i, min) || std::cmp_greater(i, max)) return std::nullopt;
  return static_cast<Int>(i);
}

/// Decimal `text` (an optional '-', then digits, nothing else: no sign '+', no spaces, no "1e3", no "0x") as an Int
/// in [min, max]. Throws IntegerError: kNotInteger ("expected an integer, got 'TEXT'") when the text is not one,
/// kAbove / kBelow when it is out of bounds (digits past 64 bits included).
template <std::integral Int>
Int parse_integer(std::string_view text, std::type_identity_t<Int> min, std::type_identity_t<Int> max,
                  const IntegerRule& rule = {}) {
  const char* end = text.data() + text.size();
  const bool negative = !text.empty() && text.front() == '-';
  if (negative) {
    std::int64_t v = 0;
    const auto [p, ec] = std::from_chars(text.data(), end, v);
    if (ec == std::errc() && p == end) return checked_integer<Int>(v, min, max, rule);
    if (ec == std::errc::result_out_of_range && p == end)  // below −2^63: below any bound
      detail::integer_out_of_range<Int>(true, std::string(text), min, max, rule);
  } else if (!text.empty() && text.front() != '+') {
    std::uint64_t v = 0;
    const auto [p, ec] = std::from_chars(text.data(), end, v);
    if (ec == std::errc() && p == end) return checked_integer<Int>(v, min, max, rule);
    if (ec == std::errc::result_out_of_range && p == end)  // past 2^64−1: above any bound
      detail::integer_out_of_range<Int>(false, std::string(text), min, max, rule);
  }
  throw IntegerError(IntegerError::Kind::kNotInteger, "expected an integer, got '" + std::string(text) + "'");
}

/// Π dims (1 for no dimensions) when every dimension is >= 0 and every partial product, taken left to right, is at
/// most `max` (so that code multiplying the dimensions in order never overflows, even where a later dimension is
/// 0); nullopt otherwise. `max` is what the caller can hold: the elements a tensor may have, or the bytes a file
/// has left divided by the element size.
std::optional<std::int64_t> checked_product(std::span<const std::int64_t> dims, std::int64_t max) noexcept;

/// a · b when both are >= 0 and the product is at most `max`; nullopt otherwise (an element count times an
/// element size, checked against the bytes there are).
std::optional<std::int64_t> checked_multiply(std::int64_t a, std::int64_t b, std::int64_t max) noexcept;

/// a + b when both are >= 0 and the sum is at most `max`; nullopt otherwise (a running total of elements).
std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b, std::int64_t max) noexcept;

}  // namespace edgc
