// The one catch at the edge (tools/cli/src/failure.hpp): which exceptions are the user's (exit 2, one line), the
// system's (exit 1, one line) and edgc's own bugs (exit 1, "internal error" and what to put in a bug report).
#include "failure.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <new>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>

#include "edgc/core/error.hpp"

namespace {

using edgc::cli::report_failure;

struct Reported {
  int code = 0;
  std::string text;
};

template <class Throw>
Reported report(const Throw& thrower) {
  std::ostringstream err;
  try {
    thrower();
  } catch (...) {
    return {report_failure(std::current_exception(), "edgc simulate --scenario s.json", err), err.str()};
  }
  ADD_FAILURE() << "nothing was thrown";
  return {};
}

int lines(const std::string& s) {
  int n = 0;
  for (const char c : s) n += c == '\n';
  return n;
}

TEST(Failure, InputErrorsAreExitTwoOnOneLineNamingFileAndField) {
  const Reported config = report([] { throw edgc::ConfigError("s.json", "cluster.nodes", "must be >= 1"); });
  EXPECT_EQ(config.code, 2);
  EXPECT_EQ(config.text, "edgc: error: s.json: cluster.nodes: must be >= 1\n");
  const Reported usage = report([] { throw edgc::UsageError("--jobs", "must be >= 1"); });
  EXPECT_EQ(usage.code, 2);
  EXPECT_EQ(usage.text, "edgc: error: --jobs: must be >= 1\n");
  EXPECT_EQ(report([] { throw edgc::TraceFormatError("t/trace.json", "tensors", "empty"); }).code, 2);
}

TEST(Failure, SystemFailuresAreExitOneOnOneLineWithoutTheBugHint) {
  const Reported io = report([] { throw edgc::IoError("/x/result.json", "write failed: No space left on device"); });
  EXPECT_EQ(io.code, 1);
  EXPECT_EQ(io.text, "edgc: error: /x/result.json: write failed: No space left on device\n");
  const Reported memory = report([] { throw std::bad_alloc(); });
  EXPECT_EQ(memory.code, 1);
  EXPECT_EQ(lines(memory.text), 1) << memory.text;
  EXPECT_EQ(memory.text.rfind("edgc: error: out of memory", 0), 0U) << memory.text;
  EXPECT_EQ(report([] { throw edgc::CudaError("cudaMalloc: out of memory"); }).code, 1);
}

TEST(Failure, ARefusedDirectoryOperationIsASystemFailureNamingPathAndReason) {
  // std::filesystem throws its own type (create_directories on a full disk or a read-only mount): the OS's
  // refusal, exit 1 on one line with the path and the reason, never "a bug in edgc".
  const Reported fs = report([] {
    throw std::filesystem::filesystem_error("cannot create directories", std::filesystem::path("/full/sweep/cache"),
                                            std::make_error_code(std::errc::no_space_on_device));
  });
  EXPECT_EQ(fs.code, 1);
  EXPECT_EQ(lines(fs.text), 1) << fs.text;
  EXPECT_EQ(fs.text.rfind("edgc: error: ", 0), 0U) << fs.text;
  EXPECT_NE(fs.text.find("/full/sweep/cache"), std::string::npos) << fs.text;
  EXPECT_NE(fs.text.find("No space left on device"), std::string::npos) << fs.text;
  EXPECT_EQ(fs.text.find("bug"), std::string::npos) << fs.text;
}

TEST(Failure, BugsAndForeignExceptionsAreExitOneWithABugReportHint) {
  const Reported internal = report([] { throw edgc::InternalError("ranks disagree"); });
  const Reported library = report([] { (void)nlohmann::json::parse("{").at("x"); });
  const Reported standard = report([] { throw std::out_of_range("vector::at"); });
  const Reported foreign = report([] { throw 42; });
  EXPECT_EQ(internal.text.rfind("edgc: internal error: ranks disagree\n", 0), 0U) << internal.text;
  EXPECT_EQ(standard.text.rfind("edgc: internal error: vector::at\n", 0), 0U) << standard.text;
  EXPECT_EQ(foreign.text.rfind("edgc: internal error: an exception of unknown type\n", 0), 0U) << foreign.text;
  for (const Reported& r : {internal, library, standard, foreign}) {
    EXPECT_EQ(r.code, 1) << r.text;
    EXPECT_EQ(lines(r.text), 2) << r.text;
    EXPECT_NE(r.text.find("\nedgc: this is a bug in edgc"), std::string::npos) << r.text;
    EXPECT_NE(r.text.find("(edgc simulate --scenario s.json)"), std::string::npos) << r.text;
    EXPECT_NE(r.text.find("'edgc version --json'"), std::string::npos) << r.text;
  }
}

}  // namespace
