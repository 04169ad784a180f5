#pragma once
// The nesting limit of every JSON document edgc reads. nlohmann's parser keeps its own stack, but dump(), copies
// and comparisons recurse once per level: a file of a million '[' parses and then overflows the stack in the
// first error message that prints a value. Every reader checks the text against this limit before parsing it.
#include <cstddef>
#include <string>
#include <string_view>

namespace edgc {

/// Deepest nesting of arrays and objects accepted. The documents edgc reads and writes stay under ten levels.
inline constexpr int kMaxJsonDepth = 64;

/// 2^53: a JSON number read as a double holds every integer up to this magnitude exactly; readers of integers
/// refuse larger ones (beyond it the value in the file is not the value read, and int64 casts may overflow).
inline constexpr double kJsonExactIntegerLimit = 9007199254740992.0;

/// "" when JSON `text` nests arrays and objects at most kMaxJsonDepth deep; else the detail of the error, naming
/// where the first bracket past the limit stands: "arrays and objects nested deeper than 64 levels (line 3,
/// column 17)". Brackets inside strings do not count; text that is not JSON is left to the parser to reject.
std::string json_depth_error(std::string_view text);

/// A key given twice in one object (nlohmann keeps the last silently): its dotted path ("compression.window") and
/// the lines of both; `key` empty when there is none. Scans the text as json_depth_error does (strings and escapes
/// respected); meant for text that parsed, or is about to be parsed, as JSON.
struct DuplicateKey {
  std::string key;
  std::size_t first_line = 0;
  std::size_t second_line = 0;
};
DuplicateKey json_duplicate_key(std::string_view text);

}  // namespace edgc
