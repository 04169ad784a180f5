#pragma once
// Helpers for trace tests: temporary directories and hand-made (possibly broken) safetensors files.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace edgc::traces::test {

/// A fresh directory under the system temp dir, removed on destruction.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("edgc-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& s) const { return path_ / s; }

 private:
  std::filesystem::path path_;
};

/// Writes a safetensors-like file: header length (default: the header's size), header text, then `data`.
inline void write_raw_safetensors(const std::filesystem::path& p, const std::string& header, const std::string& data,
                                  std::int64_t header_len = -1) {
  const std::uint64_t n = header_len < 0 ? header.size() : static_cast<std::uint64_t>(header_len);
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << header << data;
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void write_file(const std::filesystem::path& p, const std::string& s) {
  std::ofstream(p, std::ios::binary) << s;
}

}  // namespace edgc::traces::test
