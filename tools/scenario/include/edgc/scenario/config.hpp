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

namespace edgc::scenario {

class Scenario {
 public:
  /// Empty scenario (defaults only), named `where` in errors.
  Scenario() = default;
  /// Reads `path`; throws ConfigError naming the file when it is missing, a directory, unreadable, larger than
  /// kMaxWholeFileBytes (core/atomic_file.hpp: a device or a wrong path), invalid JSON, nested too deep, not a JSON
  /// object at the top level, or gives a key twice in one object. `kind` names the file in those messages
  /// ("cannot open the calibration file"); the same reader serves every JSON file a user writes.
  static Scenario load(const std::string& path, const std::string& kind = "scenario file");

  /// Applies "a.b.c=value" (value parsed as JSON when it is valid JSON, else taken as a string).
  /// Throws UsageError on a malformed override.
  void set(const std::string& assignment);

  const std::string& where() const noexcept { return where_; }
  bool has(const std::string& key) const;

  /// A path given inside the scenario, made relative to the scenario file's folder (absolute paths and the
  /// defaults-only scenario leave it as it is).
  std::string resolve(const std::string& path) const;

  /// Replaces section `key` given as a file path ("cluster": "clusters/x.json") or as {"include": path, ...local
  /// keys} by the named file's `key` object (local keys patched over it), so later reads and `--set key.x=…`
  /// see one plain object. Does nothing when the section is absent or an object without "include". Throws
  /// ConfigError naming the included file when it cannot be read or holds no `key` object, or naming `key` /
  /// `key.include` when the value has the wrong type. An included file's `key` section may include another file
  /// in turn (followed the same way, relative to that file); a cycle or more than kMaxIncludeDepth levels is a
  /// ConfigError naming the chain.
  void splice_include(const std::string& key);
  static constexpr int kMaxIncludeDepth = 8;

  double number(const std::string& key, double fallback);
  /// An integer (core/checked_int.hpp: never a double, never wrapped); a value past int64 is a ConfigError.
  std::int64_t integer(const std::string& key, std::int64_t fallback);
  /// integer() read straight into an int; values past int's range are a ConfigError naming the range.
  int int32(const std::string& key, int fallback);
  /// A random seed: an integer in [0, 2^64 - 1] (a negative seed is a ConfigError, not wrapped).
  std::uint64_t seed(const std::string& key, std::uint64_t fallback);
  bool boolean(const std::string& key, bool fallback);
  std::string string(const std::string& key, const std::string& fallback);
  /// The JSON value at `key` as it is (an array or object the typed readers do not cover), marked as read; nullptr
  /// when absent.
  const nlohmann::json* raw(const std::string& key);

  /// Throws ConfigError for any leaf under one of `prefixes` that no read asked for.
  void reject_unknown(const std::vector<std::string>& prefixes) const;
  /// Throws ConfigError for a top-level key that is neither one of `sections` (what the command reads) nor a note
  /// no command reads (kNoteKeys): a misspelt section would otherwise be ignored with all its keys.
  void reject_unknown_sections(const std::vector<std::string>& sections) const;
  /// Top-level keys that document a scenario and are never read as settings.
  static const std::vector<std::string> kNoteKeys;

  /// The effective document (file plus overrides), for echoing into results.
  const nlohmann::json& json() const noexcept { return doc_; }

 private:
  const nlohmann::json* find(const std::string& key) const;
  template <typename Int>
  Int checked(const std::string& key, Int fallback);
  void splice_include(const std::string& key, std::vector<std::string>& chain);
  std::string where_ = "(defaults)";
  nlohmann::json doc_ = nlohmann::json::object();
  std::set<std::string> read_;
};

/// Scenario::load(path), the included `cluster` and `model` files spliced in, then the `--set` overrides (so
/// `--set cluster.nodes=2` also edits an included cluster; `--set cluster=other.json` splices that file, resolved
/// against the scenario's folder, at that point). Throws ConfigError naming the file.
Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides);

/// trace.path (a captured trace's directory) resolved against the scenario's folder and lexically normal; empty
/// when the scenario gives none. Marks the key as read.
std::string read_trace_path(Scenario& sc);

}  // namespace edgc::scenario
