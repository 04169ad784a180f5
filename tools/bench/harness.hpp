#pragma once
// What the benchmarks share (nccl-tests style: one harness, one short file per benchmark): the command line,
// the exit-code policy, timing, resource usage of a process, fork isolation and atomic JSON output. Medians are
// edgc::core::median (a true median: the mean of the two middle values of an even count).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace edgc::bench {

using Clock = std::chrono::steady_clock;

/// Wall seconds since `t0`.
double seconds_since(Clock::time_point t0);

/// The command line of one benchmark. Each flag is bound to the variable that holds its default; parse() stores
/// what the command line gives. Integer flags clamp to their minimum (a bench never runs zero repeats) instead of
/// failing, as the benchmarks always did.
class Args {
 public:
  /// `usage` follows "usage: <program> " on a bad command line and after --help.
  explicit Args(std::string usage) : usage_(std::move(usage)) {}

  Args& text(const std::string& name, std::string& out);
  Args& integer(const std::string& name, int& out, int min);
  Args& integer(const std::string& name, std::int64_t& out, std::int64_t min);
  Args& real(const std::string& name, double& out);
  /// A flag that may be given many times; every value is appended.
  Args& repeated(const std::string& name, std::vector<std::string>& out);
  /// A flag without a value: sets `out` to `value`.
  Args& flag(const std::string& name, bool& out, bool value = true);

  /// The flags all benchmarks have, under the names they have always had.
  Args& repeats(int& out) { return integer("--repeats", out, 1); }
  Args& json_path(const std::string& name, std::string& out) { return text(name, out); }

  /// nullopt: go on with the stored values. Otherwise the bench's exit status: 0 after --help (usage on stdout),
  /// 2 after an unknown flag, a missing value or a value that is not a number (usage on stderr).
  std::optional<int> parse(int argc, char** argv) const;

 private:
  struct Option {
    std::string name;
    bool takes_value = true;
    std::function<void(const std::string&)> store;  ///< throws std::exception on a bad value
  };
  std::string usage_;
  std::vector<Option> options_;
};

/// Runs a benchmark's body under the project's exit-code policy: an InputError (bad flag value, malformed
/// scenario or trace) prints "<name>: <message>" and gives 2, any other exception gives 1.
int run_main(const char* name, const std::function<int()>& body);

/// The non-empty items of `text` between `sep`s.
std::vector<std::string> split(const std::string& text, char sep);
/// A comma-separated list of integers; throws UsageError naming `flag` when an item is not one.
std::vector<int> int_list(const std::string& flag, const std::string& text);

/// Peak resident set and CPU time (user + system) of the calling process so far.
struct ProcessUsage {
  double peak_rss_mib = 0.0;
  double cpu_s = 0.0;
};
ProcessUsage process_usage();

/// Runs `job` in a forked child (edgc::core::ChildPool) and returns its result: SimGrid's engine cannot be reset,
/// and memory a job allocates must not count toward the parent's peak RSS. A failure in the child is rethrown
/// here (see ChildPool::rethrow), named `what`. The parent sleeps until the child exits (no polling), so `job` must
/// not leave processes of its own running.
std::string run_in_child(const std::string& what, const std::function<std::string()>& job);

/// Throws InternalError when a record read back holds `got` bytes instead of `want` (a child that died half-way).
void check_record_size(std::size_t got, std::size_t want);

/// A trivially copyable record as the string run_in_child() carries back, and the record again.
template <typename T>
std::string to_bytes(const T& value) {
  static_assert(std::is_trivially_copyable_v<T>);
  return std::string(reinterpret_cast<const char*>(&value), sizeof value);
}
template <typename T>
T from_bytes(const std::string& bytes) {
  static_assert(std::is_trivially_copyable_v<T>);
  check_record_size(bytes.size(), sizeof(T));
  T value;
  std::memcpy(&value, bytes.data(), sizeof value);
  return value;
}

/// Writes `j` (indented by 2, with a final newline) to `path` atomically; nothing when `path` is empty.
void write_json(const std::string& path, const nlohmann::ordered_json& j);

}  // namespace edgc::bench
