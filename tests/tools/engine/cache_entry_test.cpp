// The run cache's entry claims (cache_entry.hpp): one process at a time computes an entry; another finds it claimed,
// waits for the claim to go and then reads what was written; an entry written meanwhile is not claimed again.
#include "cache_entry.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "trace_test_util.hpp"

namespace edgc::engine {
namespace {

namespace fs = std::filesystem;
using traces::test::TempDir;

TEST(EntryClaims, OneProcessComputesAnEntryAndTheOtherWaitsAndReadsIt) {
  TempDir tmp;
  const fs::path a = tmp.path() / "iteration-a.json";
  const fs::path b = tmp.path() / "iteration-b.json";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // claims a, says so, takes a while, writes it, and leaves (releasing the claim)
    EntryClaims claims({a});
    const char c = claims.mine().size() == 1 ? 'y' : 'n';
    if (::write(ready[1], &c, 1) != 1) std::_Exit(2);
    ::usleep(200'000);
    std::ofstream(a) << R"({"from": "child"})";
    std::_Exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  {
    EntryClaims claims({a, b});
    EXPECT_EQ(claims.mine(), std::vector<std::size_t>{1});    // b: absent and free
    EXPECT_EQ(claims.others(), std::vector<std::size_t>{0});  // a: the child's
    EntryClaims::wait_for(a);                                 // returns once the child is done
    const auto j = read_json_if_present(a);
    ASSERT_NE(j, nullptr);
    EXPECT_EQ((*j)["from"], "child");
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const EntryClaims again({a, b});  // a is written: not claimed; b's claim was released
  EXPECT_EQ(again.mine(), std::vector<std::size_t>{1});
  EXPECT_EQ(again.others(), std::vector<std::size_t>{0});
  ::close(ready[0]);
  ::close(ready[1]);
}

}  // namespace
}  // namespace edgc::engine
