#include "json_strict.hpp"

#include <set>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/core/json_depth.hpp"

namespace edgc::traces::detail {

nlohmann::json parse_json_strict(std::string_view text, const std::string& where, const std::string& field) {
  using nlohmann::json;
  if (const std::string deep = json_depth_error(text); !deep.empty()) throw TraceFormatError(where, field, deep);
  std::vector<std::set<std::string>> keys;  // one key set per open object
  std::string duplicate;
  auto callback = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        keys.emplace_back();
        break;
      case json::parse_event_t::object_end:
        keys.pop_back();
        break;
      case json::parse_event_t::key:
        if (!keys.back().insert(parsed.get<std::string>()).second && duplicate.empty())
          duplicate = parsed.get<std::string>();
        break;
      default:
        break;
    }
    return true;
  };
  json j;
  try {
    j = json::parse(text.begin(), text.end(), callback);
  } catch (const json::exception& e) {
    std::string msg = e.what();
    if (auto pos = msg.find("] "); pos != std::string::npos) msg = msg.substr(pos + 2);
    throw TraceFormatError(where, field, "invalid JSON: " + msg);
  }
  if (!duplicate.empty()) {
    // The same wording as every other JSON reader's (scenario files, result documents): key and both lines.
    if (const DuplicateKey d = json_duplicate_key(text); !d.key.empty())
      throw TraceFormatError(where, field.empty() ? d.key : field + "." + d.key,
                             "duplicate key '" + duplicate + "' given twice (lines " + std::to_string(d.first_line) +
                                 " and " + std::to_string(d.second_line) + "): JSON keeps only the last silently");
    throw TraceFormatError(where, field, "duplicate key '" + duplicate + "'");
  }
  return j;
}

std::string json_type_name(const nlohmann::json& j) { return j.type_name(); }

}  // namespace edgc::traces::detail
