#include "edgc/core/json_depth.hpp"

#include <cstddef>

namespace edgc {

std::string json_depth_error(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  std::size_t line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        const std::string column = "column " + std::to_string(i - line_start + 1);
        return "arrays and objects nested deeper than " + std::to_string(kMaxJsonDepth) + " levels (" +
               (line > 1 ? "line " + std::to_string(line) + ", " + column : column) + ")";
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
    if (c == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return "";
}

}  // namespace edgc
