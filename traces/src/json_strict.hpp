#pragma once
// JSON parsing for trace files: rejects duplicate object keys (nlohmann keeps the last one silently) and turns
// parse errors into TraceFormatError naming the file.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace edgc::traces::detail {

/// Parses `text`; `where` and `field` name the file and the part of it in errors.
nlohmann::json parse_json_strict(std::string_view text, const std::string& where, const std::string& field);

/// Human-readable JSON type name for error messages.
std::string json_type_name(const nlohmann::json& j);

}  // namespace edgc::traces::detail
