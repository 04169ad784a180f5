#include "cache_entry.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>

#include "edgc/core/atomic_file.hpp"
#include "edgc/core/memo.hpp"
#include "edgc/core/random.hpp"

namespace edgc::engine {

Digest& Digest::add(std::string_view text) {
  for (const unsigned char c : text) {
    a_ = mix64(a_ ^ c);
    b_ = mix64(b_ + c * 0x9e3779b97f4a7c15ULL);
  }
  size_ += text.size();
  return *this;
}

std::string Digest::hex() const {
  const std::uint64_t a = mix64(a_ ^ size_);
  const std::uint64_t b = mix64(b_ ^ (size_ * 31));
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b));
  return buf;
}

std::string hex_digest(const std::string& text) { return Digest(text).hex(); }

std::string trace_identity(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string abs = fs::absolute(dir).lexically_normal().string();
  std::error_code ec;
  const fs::path manifest = fs::path(abs) / "trace.json";
  const auto written = fs::last_write_time(manifest, ec).time_since_epoch().count();
  const std::uintmax_t size = fs::file_size(manifest, ec);
  return abs + '@' + std::to_string(written) + ':' + std::to_string(ec ? 0 : size);
}

namespace {

// The lock file of `entry`, opened (created when absent); -1 where it cannot be (then nothing is claimed).
int open_lock(const std::filesystem::path& entry) {
  const std::string path = entry.string() + ".lock";
  int fd = -1;
  do {
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

}  // namespace

EntryClaims::EntryClaims(const std::vector<std::filesystem::path>& entries) {
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const int fd = open_lock(entries[i]);
    if (fd < 0) {  // no lock file (a read-only directory, say): compute it here, as without claims
      mine_.push_back(i);
      continue;
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      others_.push_back(i);
      continue;
    }
    if (std::filesystem::exists(entries[i])) {  // written since it was looked for
      ::close(fd);
      others_.push_back(i);
      continue;
    }
    fds_.push_back(fd);
    mine_.push_back(i);
  }
}

EntryClaims::~EntryClaims() { release(); }

void EntryClaims::release() {
  for (const int fd : fds_) ::close(fd);
  fds_.clear();
}

void EntryClaims::wait_for(const std::filesystem::path& entry) {
  const int fd = open_lock(entry);
  if (fd < 0) return;
  while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
  }
  ::close(fd);
}

std::shared_ptr<const nlohmann::json> read_json_if_present(const std::filesystem::path& p, bool keep) {
  // Entries kept in memory, by path, with the size of their text: the budget counts text bytes (a parsed entry
  // takes several times that).
  constexpr std::size_t kKeptBytes = 32U << 20;
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const nlohmann::json>> kept;
  static std::size_t kept_bytes = 0;
  keep = keep && core::memo_enabled();
  if (keep) {
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = kept.find(p.string()); it != kept.end()) return it->second;
  }
  const std::optional<std::string> text = read_file_if_present(p);
  if (!text) return nullptr;
  auto j = std::make_shared<nlohmann::json>(nlohmann::json::parse(*text, nullptr, false));
  if (j->is_discarded()) return nullptr;
  if (keep) {
    const std::lock_guard<std::mutex> lock(mutex);
    if (kept_bytes + text->size() <= kKeptBytes && kept.emplace(p.string(), j).second) kept_bytes += text->size();
  }
  return j;
}

}  // namespace edgc::engine
