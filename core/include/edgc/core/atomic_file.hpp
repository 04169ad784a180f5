#pragma once
// Results are written atomically: into a temporary name beside the target, then renamed over it, so a reader
// (or a killed run) never sees half a file.
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace edgc {

/// Streams a file into a temporary name beside `path`; commit() renames it into place, destruction without
/// commit() removes it. Throws IoError on any failed write.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::filesystem::path path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, std::size_t bytes);
  void commit();

 private:
  std::filesystem::path path_;
  std::filesystem::path tmp_;
  std::FILE* file_ = nullptr;
};

/// Writes `contents` to `path` atomically (temp file in the same directory, fsync-free rename).
/// Throws IoError when the directory cannot be written.
void write_file_atomic(const std::filesystem::path& path, std::string_view contents);

/// Checks, before any work, that a file can be written at `path` the way write_file_atomic writes it (a
/// temporary file beside it, created and removed here). Throws InputError naming `path`, the option the user gave
/// it with (`option`, e.g. "--timeline") and the OS reason when `path` is a directory or its folder is missing or
/// not writable.
void check_output_file(const std::filesystem::path& path, const std::string& option);

/// The whole contents of `path`, or nullopt when it cannot be opened (absent). Throws IoError when a read fails.
std::optional<std::string> read_file_if_present(const std::filesystem::path& path);

/// Most bytes of a file edgc reads whole to parse it (scenarios, sweep and plan specs, cluster, model, calibration
/// and kernel-profile files, result documents): real ones are a few kB to a few MB; a path that names a device
/// (/dev/zero) or a huge file by mistake must be refused before it fills the memory.
inline constexpr std::size_t kMaxWholeFileBytes = std::size_t{256} << 20;

/// read_file_if_present() that reads at most `max_bytes` + 1 bytes: throws ConfigError(path, "", "larger than
/// <N> MiB, more than any <kind> holds: check the path") when there are more, so a device or a huge file is refused
/// without being read. `kind` names what the file should be ("scenario file").
std::optional<std::string> read_file_bounded(const std::filesystem::path& path, const std::string& kind,
                                             std::size_t max_bytes = kMaxWholeFileBytes);

/// A directory built under a temporary sibling name and renamed into place by commit(); removed on destruction
/// when not committed. Gives "no partial output" to commands that write a whole directory. When the final directory
/// already exists (it must be empty) it cannot be replaced by a rename if it is a mount point (a Docker volume, a
/// Kubernetes emptyDir, an NFS mount: EBUSY), so then, decided up front, the staging directory is a hidden folder
/// inside it and commit() moves each finished entry into it by its own rename (each file atomic, the set not).
/// SIGINT, SIGTERM and SIGHUP (where their action is the default) remove the staging directory before the signal
/// ends the process; one left by a process that no longer exists (SIGKILL, a crash) is removed by the next
/// StagingDir for the same output.
class StagingDir {
 public:
  /// Throws InputError when `final_path` exists and is not an empty directory, or when it cannot be made there
  /// (a missing or read-only parent; the message names the path and the OS reason): it is made before any work.
  explicit StagingDir(std::filesystem::path final_path);
  ~StagingDir();
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;

  /// Where to write the files now.
  const std::filesystem::path& path() const noexcept { return tmp_; }
  const std::filesystem::path& final_path() const noexcept { return final_; }
  /// Moves the finished directory to its final name (entry by entry when in_place()). Throws IoError naming the
  /// path and the OS reason.
  void commit();
  /// True when the final directory existed (empty) and the outputs are moved into it one entry at a time.
  bool in_place() const noexcept { return in_place_; }

 private:
  std::filesystem::path final_;
  std::filesystem::path tmp_;
  bool committed_ = false;
  bool in_place_ = false;
  int cleanup_slot_ = -1;  ///< where tmp_ is registered for removal on a signal; -1: not registered
};

}  // namespace edgc
