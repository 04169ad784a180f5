#pragma once
// Scenario files at the edge: a JSON scenario (with `--set dotted.key=value` overrides applied) read into typed
// values. Every read names the file and the dotted key in its error; keys nobody read are reported as unknown,
// so a typo in a scenario or an override fails loudly instead of being ignored.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace edgc::cli {

class Scenario {
 public:
  /// Empty scenario (defaults only), named `where` in errors.
  Scenario() = default;
  /// Reads `path`; throws ConfigError naming the file on unreadable or invalid JSON, or a non-object top level.
  static Scenario load(const std::string& path);

  /// Applies "a.b.c=value" (value parsed as JSON when it is valid JSON, else taken as a string).
  /// Throws UsageError on a malformed override.
  void set(const std::string& assignment);

  const std::string& where() const noexcept { return where_; }
  bool has(const std::string& key) const;

  double number(const std::string& key, double fallback);
  std::int64_t integer(const std::string& key, std::int64_t fallback);
  bool boolean(const std::string& key, bool fallback);
  std::string string(const std::string& key, const std::string& fallback);

  /// Throws ConfigError for any leaf under one of `prefixes` that no read asked for.
  void reject_unknown(const std::vector<std::string>& prefixes) const;

  /// The effective document (file plus overrides), for echoing into results.
  const nlohmann::json& json() const noexcept { return doc_; }

 private:
  const nlohmann::json* find(const std::string& key) const;
  std::string where_ = "(defaults)";
  nlohmann::json doc_ = nlohmann::json::object();
  std::set<std::string> read_;
};

}  // namespace edgc::cli
