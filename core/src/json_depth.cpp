#include "edgc/core/json_depth.hpp"

#include <cstddef>
#include <map>
#include <utility>
#include <vector>

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

namespace {

// One open array or object while scanning: an object's keys with the line each first appeared on.
struct Frame {
  bool object = false;
  bool expect_key = false;
  std::string key;  // the object's current key (for the dotted path)
  std::map<std::string, std::size_t> keys;
};

std::string dotted_path(const std::vector<Frame>& frames, const std::string& last) {
  std::string out;
  for (std::size_t i = 0; i + 1 < frames.size(); ++i)
    if (frames[i].object) out += frames[i].key + ".";
  return out + last;
}

}  // namespace

DuplicateKey json_duplicate_key(std::string_view text) {
  std::vector<Frame> frames;
  bool in_string = false, escaped = false;
  std::string current;
  std::size_t line = 1, string_line = 1;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
        current += c;
      } else if (c == '\\') {
        escaped = true;
        current += c;
      } else if (c == '"') {
        in_string = false;
        if (!frames.empty() && frames.back().object && frames.back().expect_key) {
          Frame& f = frames.back();
          f.expect_key = false;
          const auto [it, fresh] = f.keys.emplace(current, string_line);
          if (!fresh) return {dotted_path(frames, current), it->second, string_line};
          f.key = current;
        }
      } else {
        current += c;
      }
    } else if (c == '"') {
      in_string = true;
      current.clear();
      string_line = line;
    } else if (c == '{' || c == '[') {
      Frame f;
      f.object = f.expect_key = c == '{';
      frames.push_back(std::move(f));
    } else if ((c == '}' || c == ']') && !frames.empty()) {
      frames.pop_back();
    } else if (c == ',' && !frames.empty() && frames.back().object) {
      frames.back().expect_key = true;
    }
    if (c == '\n') ++line;
  }
  return {};
}

}  // namespace edgc
