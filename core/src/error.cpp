#include "edgc/core/error.hpp"

namespace edgc {
namespace {

std::string join_message(const std::string& where, const std::string& field, const std::string& detail) {
  std::string msg;
  if (!where.empty()) msg += where + ": ";
  if (!field.empty()) msg += field + ": ";
  return msg + detail;
}

}  // namespace

InputError::InputError(const std::string& where, const std::string& field, const std::string& detail)
    : Error(join_message(where, field, detail)), where_(where), field_(field) {}

IoError::IoError(const std::string& path, const std::string& detail) : Error(join_message(path, "", detail)) {}

}  // namespace edgc
