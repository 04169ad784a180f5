#include "cache_entry.hpp"

#include <cstdint>
#include <cstdio>

#include "edgc/core/atomic_file.hpp"
#include "edgc/core/random.hpp"

namespace edgc::engine {

std::string hex_digest(const std::string& text) {
  std::uint64_t a = 0x243f6a8885a308d3ULL;
  std::uint64_t b = 0x13198a2e03707344ULL;
  for (const unsigned char c : text) {
    a = mix64(a ^ c);
    b = mix64(b + c * 0x9e3779b97f4a7c15ULL);
  }
  a = mix64(a ^ text.size());
  b = mix64(b ^ (text.size() * 31));
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b));
  return buf;
}

std::optional<nlohmann::json> read_json_if_present(const std::filesystem::path& p) {
  const std::optional<std::string> text = read_file_if_present(p);
  if (!text) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

}  // namespace edgc::engine
