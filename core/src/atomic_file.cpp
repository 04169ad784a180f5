#include "edgc/core/atomic_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "edgc/core/error.hpp"

namespace fs = std::filesystem;

namespace edgc {
namespace {

std::string unique_suffix() {
  static unsigned counter = 0;
  return ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

// ---- unfinished output removed on SIGINT, SIGTERM and SIGHUP ----
// A staging directory is registered here while it exists; the handler removes every one this process registered,
// then lets the signal end the process as it would have (default action re-raised), so Ctrl-C, `kill` and a closed
// terminal leave nothing hidden beside --out. What a SIGKILL or a crash leaves is removed by the next StagingDir on
// the same output (remove_stale_staging). Only async-signal-safe calls run in the handler: no allocation, no locks.

constexpr std::size_t kCleanupSlots = 8;       // staging directories alive at once in one process
constexpr std::size_t kCleanupPathMax = 4096;  // PATH_MAX
struct CleanupSlot {
  std::atomic<bool> used{false};
  pid_t owner = 0;  // forked children inherit the table; only the process that made the directory removes it
  std::array<char, kCleanupPathMax> path{};
};
std::array<CleanupSlot, kCleanupSlots> g_cleanup;
constexpr std::array<int, 3> kCleanupSignals = {SIGINT, SIGTERM, SIGHUP};

// Removes `name` (relative to `dir_fd`) and everything under it, with syscalls only. Depth-limited: our staging
// directories hold files and a cache folder or two, nothing deep.
void remove_tree_signal_safe(int dir_fd, const char* name, int depth) {
  if (::unlinkat(dir_fd, name, 0) == 0 || (errno != EISDIR && errno != EPERM) || depth > 16) return;
  const int fd = ::openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  alignas(8) char buf[2048];
  for (;;) {
    const long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
    if (n <= 0) break;
    for (long at = 0; at < n;) {
      // struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name
      unsigned short reclen = 0;
      std::memcpy(&reclen, buf + at + 16, sizeof reclen);
      const char* entry = buf + at + 19;
      if (std::strcmp(entry, ".") != 0 && std::strcmp(entry, "..") != 0) remove_tree_signal_safe(fd, entry, depth + 1);
      at += reclen;
    }
  }
  ::close(fd);
  ::unlinkat(dir_fd, name, AT_REMOVEDIR);
}

extern "C" void remove_staging_on_signal(int sig) {
  const int saved = errno;
  const pid_t self = ::getpid();
  for (CleanupSlot& slot : g_cleanup)
    if (slot.used.load() && slot.owner == self) remove_tree_signal_safe(AT_FDCWD, slot.path.data(), 0);
  errno = saved;
  ::signal(sig, SIG_DFL);  // the signal's own ending: exit status "killed by SIGINT", as without this handler
  ::raise(sig);
}

// Installs the handler for the signals whose action is still the default: one a program set up (ignored under
// nohup, Python's KeyboardInterrupt in the edgc_torch module) is left alone.
void install_cleanup_handler() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  for (const int sig : kCleanupSignals) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO) != 0) continue;
    struct sigaction act {};
    act.sa_handler = remove_staging_on_signal;
    sigemptyset(&act.sa_mask);
    for (const int other : kCleanupSignals) sigaddset(&act.sa_mask, other);  // one cleanup at a time
    ::sigaction(sig, &act, nullptr);
  }
}

// The slot now holding `path` (absolute), or -1 when every slot is taken (then a signal leaves it behind, as before).
int register_cleanup(const fs::path& path) {
  install_cleanup_handler();
  const std::string p = fs::absolute(path).string();
  if (p.size() >= kCleanupPathMax) return -1;
  for (std::size_t i = 0; i < g_cleanup.size(); ++i) {
    CleanupSlot& slot = g_cleanup[i];
    if (slot.used.load()) continue;
    slot.owner = ::getpid();
    std::memcpy(slot.path.data(), p.c_str(), p.size() + 1);
    slot.used.store(true);  // published after the path: the handler never reads a half-written one
    return static_cast<int>(i);
  }
  return -1;
}

void unregister_cleanup(int slot) {
  if (slot >= 0) g_cleanup[static_cast<std::size_t>(slot)].used.store(false);
}

// Removes staging folders named `prefix`<pid>-<n> in `dir` whose process no longer exists: what a run killed by
// SIGKILL (or a crash) left. A folder of a live process, even an unrelated one that reused the PID, is kept.
void remove_stale_staging(const fs::path& dir, const std::string& prefix) {
  std::error_code ec;
  std::vector<fs::path> stale;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    const auto dash = rest.find('-');
    if (dash == std::string::npos || dash == 0 || dash > 9 ||
        rest.find_first_not_of("0123456789-") != std::string::npos)
      continue;
    const pid_t pid = static_cast<pid_t>(std::stol(rest.substr(0, dash)));
    if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH && e.is_directory(ec)) stale.push_back(e.path());
  }
  for (const fs::path& p : stale) fs::remove_all(p, ec);
}

}  // namespace

void check_output_file(const fs::path& path, const std::string& option) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw InputError(path.string(), "", "is a directory (" + option + " names a file)");
  const std::string probe = path.string() + unique_suffix();
  std::FILE* f = std::fopen(probe.c_str(), "wb");
  if (f == nullptr)
    throw InputError(path.string(), "",
                     "cannot be written (" + option + "): " + std::generic_category().message(errno));
  std::fclose(f);
  fs::remove(probe, ec);
}

AtomicFileWriter::AtomicFileWriter(fs::path path) : path_(std::move(path)) {
  tmp_ = path_.string() + unique_suffix();
  file_ = std::fopen(tmp_.c_str(), "wb");
  if (file_ == nullptr) throw IoError(path_.string(), "cannot create file: " + std::generic_category().message(errno));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (file_ != nullptr) {
    std::fclose(file_);
    std::error_code ec;
    fs::remove(tmp_, ec);
  }
}

void AtomicFileWriter::write(const void* data, std::size_t bytes) {
  errno = 0;
  if (bytes != 0 && std::fwrite(data, 1, bytes, file_) != bytes)
    throw IoError(path_.string(), "write failed: " + std::generic_category().message(errno != 0 ? errno : EIO));
}

void AtomicFileWriter::commit() {
  errno = 0;
  const bool closed = std::fclose(file_) == 0;
  const int close_errno = errno != 0 ? errno : EIO;
  file_ = nullptr;
  std::error_code ec;
  if (!closed) {
    fs::remove(tmp_, ec);
    throw IoError(path_.string(), "write failed: " + std::generic_category().message(close_errno));
  }
  fs::rename(tmp_, path_, ec);
  if (ec) {
    fs::remove(tmp_, ec);
    throw IoError(path_.string(), "cannot rename temporary file into place: " + ec.message());
  }
}

void write_file_atomic(const fs::path& path, std::string_view contents) {
  AtomicFileWriter w(path);
  w.write(contents.data(), contents.size());
  w.commit();
}

StagingDir::StagingDir(fs::path final_path) : final_(std::move(final_path)) {
  std::error_code ec;
  if (fs::exists(final_, ec)) {
    if (!fs::is_directory(final_, ec)) throw InputError(final_.string(), "", "exists and is not a directory");
    remove_stale_staging(final_, ".edgc-staging.tmp-");
    if (!fs::is_empty(final_, ec)) throw InputError(final_.string(), "", "output directory exists and is not empty");
    // An existing directory may be a mount point, which no rename can replace: stage inside it.
    in_place_ = true;
    tmp_ = final_ / (".edgc-staging" + unique_suffix());
    fs::create_directory(tmp_, ec);
    if (ec) throw InputError(final_.string(), "", "cannot write into the output directory: " + ec.message());
    cleanup_slot_ = register_cleanup(tmp_);
    return;
  }
  fs::path parent = final_.has_parent_path() ? final_.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  if (ec) throw InputError(final_.string(), "", "cannot create the output directory: " + ec.message());
  remove_stale_staging(parent, "." + final_.filename().string() + ".tmp-");
  tmp_ = parent / ("." + final_.filename().string() + unique_suffix());
  fs::create_directory(tmp_, ec);
  if (ec) throw InputError(final_.string(), "", "cannot create the output directory: " + ec.message());
  cleanup_slot_ = register_cleanup(tmp_);
}

StagingDir::~StagingDir() {
  unregister_cleanup(cleanup_slot_);
  if (!committed_) {
    std::error_code ec;
    fs::remove_all(tmp_, ec);
  }
}

void StagingDir::commit() {
  std::error_code ec;
  if (in_place_) {
    std::vector<fs::path> entries;
    for (const fs::directory_entry& e : fs::directory_iterator(tmp_, ec)) entries.push_back(e.path());
    if (ec) throw IoError(tmp_.string(), "cannot list the finished output: " + ec.message());
    for (const fs::path& e : entries) {
      fs::rename(e, final_ / e.filename(), ec);
      if (ec)
        throw IoError((final_ / e.filename()).string(), "cannot move finished output into place: " + ec.message());
    }
    fs::remove(tmp_, ec);
    committed_ = true;
    unregister_cleanup(cleanup_slot_);
    cleanup_slot_ = -1;
    return;
  }
  if (fs::exists(final_, ec)) fs::remove(final_, ec);  // an empty directory, checked in the constructor
  fs::rename(tmp_, final_, ec);
  if (ec) throw IoError(final_.string(), "cannot move finished output into place: " + ec.message());
  committed_ = true;
  unregister_cleanup(cleanup_slot_);  // the path now names nothing of ours: the output lives at final_
  cleanup_slot_ = -1;
}

std::optional<std::string> read_file_if_present(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) throw IoError(path.string(), "read failed");
  return out.str();
}

std::optional<std::string> read_file_bounded(const fs::path& path, const std::string& kind, std::size_t max_bytes) {
  const auto too_large = [&] {
    return ConfigError(
        path.string(), "",
        "larger than " + std::to_string(max_bytes >> 20) + " MiB, more than any " + kind + " holds: check the path");
  };
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  // A regular file's size says it up front; a device or pipe is read up to the bound.
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    const std::uintmax_t size = fs::file_size(path, ec);
    if (!ec && size > max_bytes) throw too_large();
  }
  std::string text;
  std::vector<char> chunk(std::size_t{1} << 16);
  while (text.size() <= max_bytes && in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())).gcount() > 0)
    text.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
  if (in.bad())
    throw IoError(path.string(), "read failed: " + std::generic_category().message(errno != 0 ? errno : EIO));
  if (text.size() > max_bytes) throw too_large();
  return text;
}

}  // namespace edgc
