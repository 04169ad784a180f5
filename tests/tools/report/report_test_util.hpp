#pragma once
// Helpers shared by the report tests.
#include <cstddef>
#include <string>

namespace edgc::report::test {

/// Non-overlapping occurrences of `what` in `text`: data marks in a chart, e.g. `<rect class="mark cell"`.
inline std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

}  // namespace edgc::report::test
