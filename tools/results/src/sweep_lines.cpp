#include "edgc/results/sweep_lines.hpp"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

#include "edgc/core/atomic_file.hpp"
#include "edgc/core/checked_int.hpp"
#include "edgc/core/error.hpp"
#include "edgc/results/json_reader.hpp"

namespace edgc::results {

using nlohmann::json;

SweepLines read_sweep_lines(const std::filesystem::path& file) {
  SweepLines out;
  std::error_code ec;  // not the throwing overload: a name too long for the OS is an input error like any other
  if (!std::filesystem::exists(file, ec)) {
    if (!ec) return out;
    throw ConfigError(file.string(), "", "cannot be read: " + ec.message());
  }
  const std::string text =
      read_file_bounded(file, "sweep's results.jsonl", kMaxSweepResultsBytes).value_or(std::string());
  std::set<std::int64_t> seen;
  std::vector<std::pair<std::int64_t, std::size_t>> order;  // (point, index in out.lines)
  std::size_t pos = 0;
  for (int line_no = 1; pos < text.size(); ++line_no) {
    const auto nl = text.find('\n', pos);
    if (nl == std::string::npos) {
      out.truncated_last_line = true;
      break;
    }
    const std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    const std::string where = file.string();
    const std::string at = line_label(static_cast<std::size_t>(line_no));
    json j = parse_json<json>(line, where, at);
    if (!j.is_object()) throw ConfigError(where, at, "not a JSON object");
    if (!j.contains("point")) throw ConfigError(where, at + ": point", "missing or not an integer");
    std::int64_t point = 0;
    try {
      point = json_integer<std::int64_t>(j["point"], 0, std::numeric_limits<std::int64_t>::max());
    } catch (const IntegerError& e) {
      throw ConfigError(where, at + ": point",
                        e.kind() == IntegerError::Kind::kNotInteger ? "missing or not an integer" : e.what());
    }
    if (!j.contains("params") || !j["params"].is_object())
      throw ConfigError(where, at + ": params", "missing or not an object");
    if (!j.contains("runs") && !j.contains("error")) throw ConfigError(where, at + ": runs", "missing (and no error)");
    if (!seen.insert(point).second)
      throw ConfigError(where, at + ": point", "point " + j["point"].dump() + " appears twice");
    order.emplace_back(point, out.lines.size());
    out.line_numbers.push_back(line_no);
    out.lines.push_back(std::move(j));
  }
  // By point, carrying each line's number along.
  std::sort(order.begin(), order.end());
  SweepLines sorted;
  sorted.truncated_last_line = out.truncated_last_line;
  for (const auto& [point, i] : order) {
    sorted.lines.push_back(std::move(out.lines[i]));
    sorted.line_numbers.push_back(out.line_numbers[i]);
  }
  return sorted;
}

namespace {

template <class Json>
std::string csv_cell_of(const Json& v) {
  if (v.is_null()) return "";
  std::string s = v.is_string() ? v.template get<std::string>() : v.dump();
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (const char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

std::string csv_cell(const json& v) { return csv_cell_of(v); }
std::string csv_cell(const nlohmann::ordered_json& v) { return csv_cell_of(v); }

}  // namespace edgc::results
