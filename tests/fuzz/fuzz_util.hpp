#pragma once
// What every fuzz target shares: a private scratch directory that mirrors the repository's scenario and test-data
// folders (so that inputs may include or name other files by the same relative paths as the bundled ones), and
// the one rule every reader must keep: an input either reads or is refused with the project's typed error naming
// the file. Anything else — a foreign exception (nlohmann, std::out_of_range, bad_alloc), an InternalError, an
// error that names no file — aborts, which libFuzzer records as a crash with the input that caused it.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <typeinfo>
#include <vector>

#include "edgc/core/error.hpp"

namespace edgc::fuzz {

namespace fs = std::filesystem;

[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "\n==edgc-fuzz== FINDING: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

/// Runs `read` on one input: success and InputError (or IoError) naming a file pass; everything else is a finding.
template <class F>
void expect_typed(F&& read) {
  try {
    read();
  } catch (const InputError& e) {
    if (e.where().empty()) finding(std::string("InputError that names no file: ") + e.what());
  } catch (const IoError&) {
    // The OS refused a read: not the input's fault, and typed.
  } catch (const std::exception& e) {
    finding(std::string("foreign exception ") + typeid(e).name() + ": " + e.what());
  } catch (...) {
    finding("an exception of unknown type");
  }
}

/// The scratch directory of one fuzz process (under $TMPDIR, else /dev/shm, else /tmp), removed at exit:
///   ROOT/<name> -> REPO/scenarios/<name> and REPO/tests/data/<name> for every folder there (scenarios first);
///   ROOT/home/   a real folder holding links to every file of `home_folders` (repository-relative) and the input,
///                so that a seed's "../clusters/x.json" and "sibling.json" resolve as they do in the repository.
class Sandbox {
 public:
  explicit Sandbox(const std::vector<std::string>& home_folders) {
    std::string base = "/tmp";
    if (const char* t = std::getenv("TMPDIR"); t != nullptr && *t != '\0')
      base = t;
    else if (fs::is_directory("/dev/shm"))
      base = "/dev/shm";
    std::string templ = base + "/edgc-fuzz-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) finding("cannot create a scratch directory under " + base);
    root_ = templ;
    home_ = root_ / "home";
    fs::create_directory(home_);
    const fs::path repo(EDGC_SOURCE_DIR);
    for (const fs::path& parent : {repo / "scenarios", repo / "tests" / "data"}) {
      for (const auto& entry : fs::directory_iterator(parent)) {
        const fs::path link = root_ / entry.path().filename();
        if (entry.is_directory() && !fs::exists(fs::symlink_status(link)) && link != home_)
          fs::create_directory_symlink(entry.path(), link);
      }
    }
    for (const std::string& folder : home_folders) {
      for (const auto& entry : fs::directory_iterator(repo / folder)) {
        const fs::path link = home_ / entry.path().filename();
        if (entry.is_regular_file() && !fs::exists(fs::symlink_status(link))) fs::create_symlink(entry.path(), link);
      }
    }
  }
  ~Sandbox() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  const fs::path& root() const noexcept { return root_; }
  const fs::path& home() const noexcept { return home_; }

  /// Writes `size` bytes to home/`name` and returns its path. What was there is removed first, so that a link to
  /// a repository file is replaced, never written through.
  fs::path write(const std::string& name, const std::uint8_t* data, std::size_t size) const {
    const fs::path p = home_ / name;
    std::error_code ec;
    fs::remove(p, ec);
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    out.close();
    if (!out) finding("cannot write the input to " + p.string());
    return p;
  }
  fs::path write(const std::string& name, const std::string& text) const {
    return write(name, reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
  }

 private:
  fs::path root_;
  fs::path home_;
};

}  // namespace edgc::fuzz
