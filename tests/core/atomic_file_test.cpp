// Whole files and whole output directories (core/atomic_file.hpp): contents land complete or not at all, an existing
// (perhaps mounted) output directory receives its files one by one, and a failed write names the file and the OS
// reason.
#include "edgc/core/atomic_file.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>

#include "edgc/core/error.hpp"

namespace edgc {
namespace {

namespace fs = std::filesystem;

class AtomicFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("edgc_atomic_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Names in `d`, sorted.
  static std::string listing(const fs::path& d) {
    std::string out;
    for (const auto& e : fs::directory_iterator(d)) out += e.path().filename().string() + " ";
    return out;
  }
  fs::path dir_;
};

TEST_F(AtomicFile, AFreshOutputDirectoryAppearsWholeOnCommit) {
  {
    StagingDir s(dir_ / "out");
    EXPECT_FALSE(s.in_place());
    write_file_atomic(s.path() / "a.json", "{}\n");
    EXPECT_FALSE(fs::exists(dir_ / "out"));  // nothing visible before the commit
    s.commit();
  }
  EXPECT_EQ(read_file_if_present(dir_ / "out" / "a.json").value_or(""), "{}\n");
  EXPECT_EQ(listing(dir_), "out ");  // no staging folder left beside it
}

TEST_F(AtomicFile, AnExistingEmptyDirectoryReceivesTheFilesOneByOne) {
  fs::create_directories(dir_ / "mount");
  {
    StagingDir s(dir_ / "mount");
    EXPECT_TRUE(s.in_place());
    write_file_atomic(s.path() / "a.json", "1");
    write_file_atomic(s.path() / "b.csv", "2");
    s.commit();
  }
  EXPECT_EQ(listing(dir_ / "mount").size(), std::string("a.json b.csv ").size());
  EXPECT_EQ(read_file_if_present(dir_ / "mount" / "b.csv").value_or(""), "2");
  {  // not committed: the directory is left as it was, empty
    fs::remove(dir_ / "mount" / "a.json");
    fs::remove(dir_ / "mount" / "b.csv");
    StagingDir s(dir_ / "mount");
    write_file_atomic(s.path() / "a.json", "1");
  }
  EXPECT_TRUE(fs::is_empty(dir_ / "mount"));
}

TEST_F(AtomicFile, ANonEmptyOrNonDirectoryOutputIsRefusedBeforeAnyWork) {
  fs::create_directories(dir_ / "full");
  write_file_atomic(dir_ / "full" / "x", "x");
  EXPECT_THROW(StagingDir(dir_ / "full"), InputError);
  EXPECT_THROW(StagingDir(dir_ / "full" / "x"), InputError);
}

// A write that the OS refuses (here the file-size limit, EFBIG; disk full is ENOSPC) names the file and the reason,
// and leaves no temporary file. Run in a child: the limit must not touch the test process.
TEST_F(AtomicFile, AFailedWriteNamesTheFileAndTheOsReason) {
  const fs::path target = dir_ / "big.json";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    try {
      write_file_atomic(target, std::string(1 << 20, 'x'));
    } catch (const IoError& e) {
      const std::string what = e.what();
      const bool named = what.find(target.string()) != std::string::npos;
      const bool reason = what.find("write failed: File too large") != std::string::npos;
      ::_exit(named && reason ? 0 : 3);
    }
    ::_exit(2);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: no error; 3: the message lacks the file or the reason";
  EXPECT_EQ(listing(dir_), "");  // the temporary file was removed
}

// A child that stages an output and waits; the test sends it a real signal. What the child staged is gone after the
// signal ended it, and it ended by that signal (the handler re-raises it), not by an exit code of ours.
void expect_signal_removes_staging(const fs::path& out, int sig) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[0]);
    StagingDir s(out);
    write_file_atomic(s.path() / "result.json", "{}\n");
    fs::create_directories(s.path() / "cache" / "iterations");
    write_file_atomic(s.path() / "cache" / "iterations" / "a.json", "{}\n");
    const std::string p = s.path().string() + "\n";
    if (::write(fds[1], p.data(), p.size()) != static_cast<ssize_t>(p.size())) ::_exit(3);
    for (;;) ::pause();
  }
  ::close(fds[1]);
  std::string staged;
  char c = 0;
  while (::read(fds[0], &c, 1) == 1 && c != '\n') staged += c;
  ::close(fds[0]);
  ASSERT_FALSE(staged.empty());
  EXPECT_TRUE(fs::exists(staged));
  ASSERT_EQ(::kill(pid, sig), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << status;
  EXPECT_EQ(WTERMSIG(status), sig);
  EXPECT_FALSE(fs::exists(staged)) << staged << " was left behind by signal " << sig;
}

TEST_F(AtomicFile, SigintAndSigtermRemoveTheStagingDirectory) {
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    expect_signal_removes_staging(dir_ / "out", sig);
    EXPECT_EQ(listing(dir_), "") << "signal " << sig;  // no hidden .out.tmp-PID-0 beside --out
  }
  fs::create_directories(dir_ / "mount");  // an existing (mounted) output directory: staged inside it
  expect_signal_removes_staging(dir_ / "mount", SIGINT);
  EXPECT_TRUE(fs::is_empty(dir_ / "mount"));
}

// SIGKILL and crashes run no handler: the next run on the same output removes what a process that no longer exists
// staged, and keeps what a live process (here this one) is staging.
TEST_F(AtomicFile, StagingLeftByADeadProcessIsRemovedByTheNextRun) {
  const pid_t dead = ::fork();
  ASSERT_GE(dead, 0);
  if (dead == 0) ::_exit(0);
  int status = 0;
  ASSERT_EQ(::waitpid(dead, &status, 0), dead);
  ASSERT_NE(::kill(dead, 0), 0);
  ASSERT_EQ(errno, ESRCH);
  const std::string d = std::to_string(dead);
  const std::string live = ".out.tmp-" + std::to_string(::getpid()) + "-99";
  fs::create_directories(dir_ / (".out.tmp-" + d + "-0") / "cache");
  write_file_atomic(dir_ / (".out.tmp-" + d + "-0") / "cache" / "x.json", "{}");
  fs::create_directories(dir_ / live);
  {
    StagingDir s(dir_ / "out");
    s.commit();
  }
  EXPECT_EQ(listing(dir_).size(), ("out " + live + " ").size()) << listing(dir_);
  EXPECT_TRUE(fs::exists(dir_ / live));
  EXPECT_FALSE(fs::exists(dir_ / (".out.tmp-" + d + "-0")));

  fs::create_directories(dir_ / "mount" / (".edgc-staging.tmp-" + d + "-3"));  // in a mounted output: not "not empty"
  {
    StagingDir s(dir_ / "mount");
    EXPECT_TRUE(s.in_place());
    write_file_atomic(s.path() / "a.json", "1");
    s.commit();
  }
  EXPECT_EQ(listing(dir_ / "mount"), "a.json ");
}

}  // namespace
}  // namespace edgc
