#include "edgc/results/json_reader.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "edgc/core/atomic_file.hpp"
#include "edgc/core/checked_int.hpp"
#include "edgc/core/error.hpp"
#include "edgc/core/json_depth.hpp"

namespace edgc::results {
namespace {

// nlohmann refuses a number that overflows a double (1e999) with out_of_range.406 and no hint of where it
// stands. This SAX pass over the same text follows the path of the value being read, so the complaint can
// name the field like any other bad value.
template <class Json>
class OverflowLocator : public nlohmann::json_sax<Json> {
 public:
  using Base = nlohmann::json_sax<Json>;

  bool null() override { return value(); }
  bool boolean(bool /*val*/) override { return value(); }
  bool number_integer(typename Base::number_integer_t /*val*/) override { return value(); }
  bool number_unsigned(typename Base::number_unsigned_t /*val*/) override { return value(); }
  bool number_float(typename Base::number_float_t /*val*/, const typename Base::string_t& /*s*/) override {
    return value();
  }
  bool string(typename Base::string_t& /*val*/) override { return value(); }
  bool binary(typename Base::binary_t& /*val*/) override { return value(); }
  bool start_object(std::size_t /*elements*/) override {
    frames_.push_back({false, 0, ""});
    return true;
  }
  bool key(typename Base::string_t& val) override {
    frames_.back().key = val;
    return true;
  }
  bool end_object() override { return end_container(); }
  bool start_array(std::size_t /*elements*/) override {
    frames_.push_back({true, 0, ""});
    return true;
  }
  bool end_array() override { return end_container(); }
  bool parse_error(std::size_t /*position*/, const std::string& last_token,
                   const nlohmann::detail::exception& /*ex*/) override {
    token_ = last_token;
    return false;
  }

  /// The dotted path of the value the parser stopped at ("runs[0].time_s"; "" for the document itself).
  std::string path() const {
    std::string out;
    for (const Frame& f : frames_)
      out += f.array ? "[" + std::to_string(f.index) + "]" : (out.empty() ? "" : ".") + f.key;
    return out;
  }
  const std::string& token() const noexcept { return token_; }

 private:
  struct Frame {
    bool array;
    std::size_t index;  // of the element being read, in an array
    std::string key;    // of the member being read, in an object
  };

  bool value() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
    return true;
  }
  bool end_container() {
    frames_.pop_back();
    return value();
  }

  std::vector<Frame> frames_;
  std::string token_;
};

std::string join_field(const std::string& line, const std::string& path) {
  if (line.empty()) return path;
  return path.empty() ? line : line + ": " + path;
}

// JSON text for messages; never throws, even on a string of invalid UTF-8 built in memory.
std::string json_text(const JsonNode::Json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string without_exception_id(const std::string& what) {
  const auto at = what.find("] ");
  return at == std::string::npos ? what : what.substr(at + 2);  // "[json.exception.parse_error.101] ..."
}

}  // namespace

nlohmann::ordered_json read_json_file(const std::filesystem::path& file) {
  const std::optional<std::string> text = read_file_bounded(file, "result document");
  if (!text) throw ConfigError(file.string(), "", "cannot be read");
  nlohmann::ordered_json j = parse_json(*text, file.string());
  reject_duplicate_keys(*text, file.string());
  return j;
}

void reject_duplicate_keys(const std::string& text, const std::string& file) {
  if (const DuplicateKey d = json_duplicate_key(text); !d.key.empty())
    throw ConfigError(file, d.key,
                      "given twice (lines " + std::to_string(d.first_line) + " and " + std::to_string(d.second_line) +
                          "): JSON keeps only the last silently; keep one");
}

std::string line_label(std::size_t line_number) { return "line " + std::to_string(line_number); }

template <class Json>
Json parse_json(const std::string& text, const std::string& file, const std::string& line,
                const std::string& not_json) {
  if (const std::string deep = json_depth_error(text); !deep.empty()) throw ConfigError(file, line, deep);
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::out_of_range& e) {
    if (e.id != 406) throw ConfigError(file, line, not_json + ": " + without_exception_id(e.what()));
    OverflowLocator<Json> locator;
    Json::sax_parse(text, &locator);
    throw ConfigError(file, join_field(line, locator.path()),
                      "expected a finite number, got " + locator.token() + " (too large for a double)");
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(file, line, not_json + ": " + without_exception_id(e.what()));
  }
}

template nlohmann::json parse_json<nlohmann::json>(const std::string&, const std::string&, const std::string&,
                                                   const std::string&);
template nlohmann::ordered_json parse_json<nlohmann::ordered_json>(const std::string&, const std::string&,
                                                                   const std::string&, const std::string&);

JsonNode::JsonNode(const Json& j, std::string file, std::string line, std::string path)
    : j_(&j), file_(std::move(file)), line_(std::move(line)), path_(std::move(path)) {}

void JsonNode::fail(const std::string& detail) const { throw ConfigError(file_, join_field(line_, path_), detail); }

void JsonNode::check_schema(const std::string& expected) const {
  require_object();
  const auto it = j_->find("schema");
  if (it == j_->end()) child("schema", *j_).fail("expected \"" + expected + "\", got nothing");
  if (!it->is_string() || it->get<std::string>() != expected)
    child("schema", *it).fail("expected \"" + expected + "\", got " + json_text(*it));
}

void JsonNode::keys(std::initializer_list<const char*> keys) const {
  require_object();
  const std::set<std::string> allowed(keys.begin(), keys.end());
  for (auto it = j_->begin(); it != j_->end(); ++it)
    if (allowed.count(it.key()) == 0U) child(it.key(), *it).fail("unknown key");
  for (const char* k : keys)
    if (!j_->contains(k)) child(k, *j_).fail("missing");
}

JsonNode JsonNode::at(const std::string& key) const {
  require_object();
  const auto it = j_->find(key);
  if (it == j_->end()) child(key, *j_).fail("missing");
  return child(key, *it);
}

std::optional<JsonNode> JsonNode::find(const std::string& key) const {
  require_object();
  const auto it = j_->find(key);
  if (it == j_->end() || it->is_null()) return std::nullopt;
  return child(key, *it);
}

std::vector<std::string> JsonNode::member_keys() const {
  require_object();
  std::vector<std::string> out;
  for (auto it = j_->begin(); it != j_->end(); ++it) out.push_back(it.key());
  return out;
}

std::size_t JsonNode::size() const {
  require_array();
  return j_->size();
}

JsonNode JsonNode::operator[](std::size_t i) const {
  const std::string path = path_ + "[" + std::to_string(i) + "]";
  if (i >= size()) JsonNode(*j_, file_, line_, path).fail("missing (the array has " + std::to_string(size()) + ")");
  return {(*j_)[i], file_, line_, path};
}

std::string JsonNode::string() const {
  if (!j_->is_string()) fail("expected a string, got " + describe());
  return j_->get<std::string>();
}

std::string JsonNode::one_of(std::initializer_list<const char*> choices) const {
  std::string s = string();
  std::string list;
  for (const char* c : choices) {
    if (s == c) return s;
    list += (list.empty() ? "" : ", ") + std::string(c);
  }
  fail("expected one of " + list + ", got \"" + s + "\"");
}

bool JsonNode::boolean() const {
  if (!j_->is_boolean()) fail("expected true or false, got " + describe());
  return j_->get<bool>();
}

double JsonNode::number() const {
  if (!j_->is_number()) fail("expected a number, got " + describe());
  const double v = j_->get<double>();
  // Not from parse_json (which refuses overflow), but a document built in memory may hold ±inf or NaN, which
  // dump() would print as null.
  if (!std::isfinite(v))
    fail(std::string("expected a finite number, got ") + (std::isnan(v) ? "NaN" : v > 0 ? "inf" : "-inf"));
  return v;
}

double JsonNode::non_negative() const {
  const double v = number();
  if (v < 0.0) fail("must be >= 0, got " + describe());
  return v;
}

double JsonNode::number_or_nan() const { return is_null() ? std::numeric_limits<double>::quiet_NaN() : number(); }

namespace {

// One reading rule for every integer of a typed document: doubles with an exact integral value count (writers that
// keep every number a double), and a value out of bounds names the bound it crossed.
constexpr IntegerRule kDocumentIntegers{.integral_doubles = true, .one_sided = true};

}  // namespace

template <typename Int>
Int JsonNode::checked(Int min, Int max) const {
  try {
    return json_integer<Int>(*j_, min, max, kDocumentIntegers);
  } catch (const IntegerError& e) {
    if (e.kind() == IntegerError::Kind::kNotInteger) fail("expected an integer, got " + describe());
    fail(e.what());
  }
}

std::int64_t JsonNode::integer(std::int64_t min, std::int64_t max) const { return checked<std::int64_t>(min, max); }

int JsonNode::int32(int min, int max) const { return checked<int>(min, max); }

double JsonNode::optional_number(const std::string& key) const {
  const auto n = find(key);
  return n ? n->number() : std::numeric_limits<double>::quiet_NaN();
}

std::string JsonNode::optional_string(const std::string& key) const {
  const auto n = find(key);
  return n ? n->string() : std::string();
}

std::int64_t JsonNode::optional_integer(const std::string& key) const {
  const auto n = find(key);
  return n ? n->integer() : 0;
}

void JsonNode::require_object() const {
  if (!j_->is_object()) fail("expected an object, got " + describe());
}

void JsonNode::require_array() const {
  if (!j_->is_array()) fail("expected an array, got " + describe());
}

JsonNode JsonNode::child(const std::string& key, const Json& j) const {
  return {j, file_, line_, path_.empty() ? key : path_ + "." + key};
}

std::string JsonNode::describe() const {
  std::string text = json_text(*j_);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return std::string(j_->type_name()) + " " + text;
}

}  // namespace edgc::results
