#pragma once
// The one strict reader of edgc's typed JSON documents (measurements.json, result.json, sweep.json,
// results.jsonl lines, plan.json): a JsonNode is one value with its place in the input, so that every
// complaint is a ConfigError naming the file, the line (JSON lines) and the field, as in
// "out/results.jsonl: line 3: runs[0].speedup_vs_none: expected a number".
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace edgc::results {

/// "line N", the label of a JSON lines record in messages (N from 1).
std::string line_label(std::size_t line_number);

/// Parses `text` (the whole of `file`, or its line labelled `line`). Text that is not JSON throws
/// ConfigError(file, line, "<not_json>: <parser message>"); a number too large for a double (1e999) throws
/// ConfigError naming the field it stands in; nesting deeper than kMaxJsonDepth (core/json_depth.hpp) throws
/// ConfigError(file, line, ...) naming where. `Json` is nlohmann::json or nlohmann::ordered_json.
template <class Json = nlohmann::ordered_json>
Json parse_json(const std::string& text, const std::string& file, const std::string& line = "",
                const std::string& not_json = "not valid JSON");

extern template nlohmann::json parse_json<nlohmann::json>(const std::string&, const std::string&, const std::string&,
                                                          const std::string&);
extern template nlohmann::ordered_json parse_json<nlohmann::ordered_json>(const std::string&, const std::string&,
                                                                          const std::string&, const std::string&);

/// The whole of `file` parsed (ordered); ConfigError(file, "", "cannot be read") when it cannot be opened, and
/// ConfigError naming the file when it is larger than kMaxWholeFileBytes (core/atomic_file.hpp) or gives a key twice
/// in one object (see reject_duplicate_keys).
nlohmann::ordered_json read_json_file(const std::filesystem::path& file);

/// Throws ConfigError(file, "<dotted.key>", "given twice (lines A and B) ...") when JSON `text` gives a key twice in
/// one object: nlohmann keeps the last silently, so an edited file would be read as other than it reads.
void reject_duplicate_keys(const std::string& text, const std::string& file);

/// One JSON value with its file, line label and dotted path ("runs[2].breakdown.compute_s"). Cheap to copy;
/// it points into the document, which must outlive it. Ordered, so that objects read in the order of the file.
class JsonNode {
 public:
  using Json = nlohmann::ordered_json;

  JsonNode(const Json& j, std::string file, std::string line = "", std::string path = "");
  // A node into a temporary (say, an nlohmann::json converted on the fly) would dangle.
  JsonNode(Json&& j, std::string file, std::string line = "", std::string path = "") = delete;

  /// Throws ConfigError(file, "<line>: <path>", detail).
  [[noreturn]] void fail(const std::string& detail) const;
  const Json& raw() const noexcept { return *j_; }
  const std::string& path() const noexcept { return path_; }
  bool is_null() const noexcept { return j_->is_null(); }

  // ---- objects ----
  /// Checks that this is an object whose "schema" is `expected`: the first check of every document, so that
  /// a file of another kind is named as such rather than by its first odd field.
  void check_schema(const std::string& expected) const;
  /// This object's members must be exactly `keys` (strict documents: a typo or a field from a newer writer
  /// fails loudly instead of being ignored). Unknown keys are named first, then missing ones.
  void keys(std::initializer_list<const char*> keys) const;
  /// The member `key`; "missing" when absent.
  JsonNode at(const std::string& key) const;
  /// The member `key`, or nothing when it is absent or null.
  std::optional<JsonNode> find(const std::string& key) const;
  /// The member names of this object, in the order of the file.
  std::vector<std::string> member_keys() const;

  // ---- arrays ----
  std::size_t size() const;
  /// Element `i` (path "...[i]"); fails when `i` is past the end.
  JsonNode operator[](std::size_t i) const;

  // ---- scalars ----
  std::string string() const;
  /// A string that is one of `choices`.
  std::string one_of(std::initializer_list<const char*> choices) const;
  bool boolean() const;
  /// A finite number (integers included).
  double number() const;
  /// A finite number >= 0 (times, rates).
  double non_negative() const;
  /// A number, or NaN for null (arrays with gaps).
  double number_or_nan() const;
  /// An integer in [min, max] (core/checked_int.hpp: compared exactly, a value past 64 bits included); a double with
  /// an exact integral value up to 2^53 (1e6 from writers that keep every number a double) counts as one.
  std::int64_t integer(std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                       std::int64_t max = std::numeric_limits<std::int64_t>::max()) const;
  /// integer() read straight into an int within [min, max].
  int int32(int min, int max = std::numeric_limits<int>::max()) const;

  // ---- members of this object, required or optional (absent or null) ----
  double number_at(const std::string& key) const { return at(key).number(); }
  /// NaN when absent.
  double optional_number(const std::string& key) const;
  /// "" when absent.
  std::string optional_string(const std::string& key) const;
  /// 0 when absent.
  std::int64_t optional_integer(const std::string& key) const;

 private:
  void require_object() const;
  void require_array() const;
  JsonNode child(const std::string& key, const Json& j) const;
  /// This value as an Int in [min, max] (core/checked_int.hpp), failing with the reader's wording.
  template <typename Int>
  Int checked(Int min, Int max) const;
  /// The value for messages: its type and JSON text, cut to 40 characters.
  std::string describe() const;

  const Json* j_;
  std::string file_;
  std::string line_;
  std::string path_;
};

}  // namespace edgc::results
