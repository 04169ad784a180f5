#pragma once
// Runs the edgc binary (path from the EDGC_BINARY compile definition) as a user would and captures what it did.
#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "trace_test_util.hpp"

namespace edgc::cli::test {

struct CliRun {
  int code = -1;    ///< exit code, -1 when killed by a signal
  std::string out;  ///< stdout
  std::string err;  ///< stderr
};

/// `edgc ARGS` with stdout and stderr captured through files in `tmp`.
inline CliRun edgc(const std::string& args, const traces::test::TempDir& tmp) {
  const auto out = tmp / "stdout.txt";
  const auto err = tmp / "stderr.txt";
  const std::string cmd = std::string(EDGC_BINARY) + " " + args + " >" + out.string() + " 2>" + err.string();
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, traces::test::read_file(out), traces::test::read_file(err)};
}

}  // namespace edgc::cli::test
