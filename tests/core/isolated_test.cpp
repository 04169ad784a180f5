// Jobs run in forked children (core/isolated.hpp): what a child throws comes back as the same kind of failure, so
// that a full disk in a child is the OS's refusal (IoError, exit 1 with the path and reason), not "a bug in edgc".
#include "edgc/core/isolated.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <system_error>
#include <vector>

#include "edgc/core/error.hpp"

namespace edgc::core {
namespace {

// The failure run_isolated rethrows for one job, as its type and message.
template <class Expected>
std::string failure_of(const std::function<std::string()>& job) {
  try {
    run_isolated({job}, 1);
  } catch (const Expected& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong type: " << e.what();
    return {};
  }
  ADD_FAILURE() << "nothing was thrown";
  return {};
}

TEST(Isolated, ResultsComeBackInJobOrder) {
  const std::vector<std::string> out =
      run_isolated({[] { return std::string("a"); }, [] { return std::string("b"); }}, 2);
  EXPECT_EQ(out, (std::vector<std::string>{"a", "b"}));
}

TEST(Isolated, AnInputErrorInAChildIsAConfigErrorWithTheSameFileAndField) {
  const std::string what = failure_of<ConfigError>([]() -> std::string { throw ConfigError("s.json", "k", "bad"); });
  EXPECT_EQ(what, "s.json: k: bad");
}

TEST(Isolated, TheOsRefusingAWriteInAChildIsAnIoErrorWithThePathAndReason) {
  const std::string io = failure_of<IoError>(
      []() -> std::string { throw IoError("/full/cache/x.json", "write failed: No space left on device"); });
  EXPECT_EQ(io, "/full/cache/x.json: write failed: No space left on device");
  const std::string fs = failure_of<IoError>([]() -> std::string {
    throw std::filesystem::filesystem_error("cannot create directories", std::filesystem::path("/full/cache"),
                                            std::make_error_code(std::errc::no_space_on_device));
  });
  EXPECT_NE(fs.find("/full/cache"), std::string::npos) << fs;
  EXPECT_NE(fs.find("No space left on device"), std::string::npos) << fs;
}

TEST(Isolated, AnythingElseIsAnInternalErrorNamingTheJob) {
  const std::string what = failure_of<InternalError>([]() -> std::string { throw std::logic_error("broken"); });
  EXPECT_NE(what.find("simulation job 0"), std::string::npos) << what;
  EXPECT_NE(what.find("broken"), std::string::npos) << what;
}

}  // namespace
}  // namespace edgc::core
