#pragma once
// Expected errors in one call: run something that must throw an edgc error naming a file (where()) and a field,
// whose message says certain things. Replaces the hand-written try / FAIL / catch / EXPECT_EQ blocks; returns the
// error for any further check of a test's own.
//
//   expect_config_error([&] { make_controller(c, "s.json"); }, "s.json", "compression.r_max", {"exceeds the rank"});
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "edgc/core/error.hpp"

namespace edgc::test {

/// The caller's file and line, as a default argument captures them. std::source_location needs Clang 15 with
/// libstdc++ (Debian 12's Clang 14 lacks __builtin_source_location); __builtin_FILE/__builtin_LINE work in GCC and
/// Clang alike, evaluated where the function with this default argument is called.
class CallerLine {
 public:
  static CallerLine current(const char* file = __builtin_FILE(), int line = __builtin_LINE()) noexcept {
    return CallerLine(file, line);
  }
  const char* file_name() const noexcept { return file_; }
  int line() const noexcept { return line_; }

 private:
  CallerLine(const char* file, int line) noexcept : file_(file), line_(line) {}
  const char* file_;
  int line_;
};

/// Runs `call`, which must throw an `E`. Checks that its where() equals `where` and its field() equals `field`
/// (std::nullopt: that part is not checked) and that its what() contains each of `says`. Every miss is a test
/// failure reported at the caller's line. Returns the error, or std::nullopt when nothing was thrown; an exception
/// of another type propagates (the test fails on it).
template <typename E, typename Call>
std::optional<E> expect_error(Call&& call, const std::optional<std::string>& where,
                              const std::optional<std::string>& field, const std::vector<std::string>& says = {},
                              CallerLine caller = CallerLine::current()) {
  const ::testing::ScopedTrace trace(caller.file_name(), caller.line(), "expected error");
  try {
    call();
  } catch (const E& e) {
    if (where) {
      EXPECT_EQ(e.where(), *where) << e.what();
    }
    if (field) {
      EXPECT_EQ(e.field(), *field) << e.what();
    }
    for (const std::string& part : says) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << "'" << part << "' not in: " << e.what();
    }
    return e;
  }
  ADD_FAILURE() << "nothing was thrown";
  return std::nullopt;
}

/// expect_error for the most common case, a ConfigError (a malformed scenario, spec or option value).
template <typename Call>
std::optional<ConfigError> expect_config_error(Call&& call, const std::optional<std::string>& where,
                                               const std::optional<std::string>& field,
                                               const std::vector<std::string>& says = {},
                                               CallerLine caller = CallerLine::current()) {
  return expect_error<ConfigError>(std::forward<Call>(call), where, field, says, caller);
}

}  // namespace edgc::test
