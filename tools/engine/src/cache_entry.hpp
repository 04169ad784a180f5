#pragma once
// Private to the engine: the files of a run cache (SimulateRequest::cache_dir). An entry is one JSON file named by a
// digest of what determines it, written atomically (renamed into place), so that concurrent sweep workers can share
// the directory.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace edgc::engine {

/// 128-bit digest (two independently seeded 64-bit mixes over the bytes) as 32 hex digits: a cache file name.
std::string hex_digest(const std::string& text);

/// hex_digest one piece at a time: Digest(a).add(b).hex() == hex_digest(a + b), so a long prefix that many keys share
/// (a run's setup key) is mixed once and copied.
class Digest {
 public:
  explicit Digest(std::string_view text = {}) { add(text); }
  Digest& add(std::string_view text);
  std::string hex() const;

 private:
  std::uint64_t a_ = 0x243f6a8885a308d3ULL;
  std::uint64_t b_ = 0x13198a2e03707344ULL;
  std::uint64_t size_ = 0;
};

/// A trace directory's identity for keys: its absolute path and its manifest's (trace.json's) size and modification
/// time, so that a trace rewritten in place keys anew.
std::string trace_identity(const std::string& dir);

/// Claims on cache entries about to be computed, so that processes sharing a cache directory (a sweep's workers, all
/// starting on points that need the same simulations) compute each entry once: an entry's claim is an exclusive
/// flock() of "<entry>.lock", released when this object goes (or its process dies, however it dies).
class EntryClaims {
 public:
  /// Claims each of `entries` that is absent and not claimed by another process: mine(). The others, claimed
  /// elsewhere or written meanwhile, are others(): wait_for() each, then read it.
  explicit EntryClaims(const std::vector<std::filesystem::path>& entries);
  ~EntryClaims();
  EntryClaims(const EntryClaims&) = delete;
  EntryClaims& operator=(const EntryClaims&) = delete;
  const std::vector<std::size_t>& mine() const noexcept { return mine_; }
  const std::vector<std::size_t>& others() const noexcept { return others_; }
  /// Releases this object's claims (after writing their entries).
  void release();
  /// Blocks until no process claims `entry`.
  static void wait_for(const std::filesystem::path& entry);

 private:
  std::vector<int> fds_;
  std::vector<std::size_t> mine_, others_;
};

/// Values by key kept for the process (a sweep worker's later points reuse them; whether to use one at all, by
/// core::memo_enabled, is the caller's): at most `max_kept`, a value made once the table is full is returned unkept.
/// Safe to share between threads; `make` runs outside the lock.
template <class V>
class ProcessTable {
 public:
  explicit ProcessTable(std::size_t max_kept) : max_kept_(max_kept) {}
  template <class Make>
  std::shared_ptr<const V> get(const std::string& key, Make&& make) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (const auto it = kept_.find(key); it != kept_.end()) return it->second;
    }
    auto value = std::make_shared<const V>(make());
    const std::lock_guard<std::mutex> lock(mutex_);
    if (kept_.size() < max_kept_) kept_.emplace(key, value);
    return value;
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const V>> kept_;
  std::size_t max_kept_;
};

/// A cache entry, or null when absent. An entry that does not parse (it cannot be half-written: entries are
/// renamed into place) is treated as absent and rewritten. With `keep` (and core::memo_enabled) the parsed entry
/// stays in memory for the process, up to a budget, and is not read again: an entry never changes once written
/// (its name is the digest of what determines it), so a sweep worker parses each entry its points share once.
std::shared_ptr<const nlohmann::json> read_json_if_present(const std::filesystem::path& p, bool keep = false);

}  // namespace edgc::engine
