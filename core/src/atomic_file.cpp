#include "edgc/core/atomic_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
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
    if (!fs::is_empty(final_, ec)) throw InputError(final_.string(), "", "output directory exists and is not empty");
    // An existing directory may be a mount point, which no rename can replace: stage inside it.
    in_place_ = true;
    tmp_ = final_ / (".edgc-staging" + unique_suffix());
    fs::create_directory(tmp_, ec);
    if (ec) throw InputError(final_.string(), "", "cannot write into the output directory: " + ec.message());
    return;
  }
  fs::path parent = final_.has_parent_path() ? final_.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  if (ec) throw InputError(final_.string(), "", "cannot create the output directory: " + ec.message());
  tmp_ = parent / ("." + final_.filename().string() + unique_suffix());
  fs::create_directory(tmp_, ec);
  if (ec) throw InputError(final_.string(), "", "cannot create the output directory: " + ec.message());
}

StagingDir::~StagingDir() {
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
    return;
  }
  if (fs::exists(final_, ec)) fs::remove(final_, ec);  // an empty directory, checked in the constructor
  fs::rename(tmp_, final_, ec);
  if (ec) throw IoError(final_.string(), "cannot move finished output into place: " + ec.message());
  committed_ = true;
}

std::optional<std::string> read_file_if_present(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) throw IoError(path.string(), "read failed");
  return out.str();
}

}  // namespace edgc
