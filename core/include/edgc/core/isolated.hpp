#pragma once
// Runs work in forked child processes. SimGrid's engine cannot be reset (one simulation per process), so
// `simulate` gives every distinct simulation its own child; the child's result (a string) comes back through
// a private unlinked temporary file, read after the child exited; children die with their parent.
#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace edgc::core {

/// Forked children that each run one job and hand back a string, reaped as they finish (for callers that
/// stream results, such as `sweep`). Not thread-safe; one pool per process at a time.
class ChildPool {
 public:
  struct Finished {
    std::size_t id = 0;  ///< the id given to start()
    int code = 0;        ///< 0 = success
    std::string output;  ///< the job's result, or the failure's text (see rethrow())
  };
  /// Finished::code of a job that threw an InputError (output: where, field and message on three lines) and of
  /// any other failure (output: its text).
  static constexpr int kInputFailure = 3;
  static constexpr int kOtherFailure = 4;
  /// The OS refused a read or write (disk full, permissions): an IoError or filesystem_error, output its text;
  /// rethrow() raises an IoError (exit 1 with the path and the reason), not an internal error.
  static constexpr int kIoFailure = 5;
  /// Runs job() as a child does: its result and code 0, or the failure's output and code (the two above).
  static Finished run_here(std::size_t id, const std::function<std::string()>& job);

  ChildPool() = default;
  ChildPool(const ChildPool&) = delete;
  ChildPool& operator=(const ChildPool&) = delete;
  /// Kills (SIGKILL) and reaps children still running: nothing outlives a failed parent.
  ~ChildPool();

  /// Forks a child running job(); its return value (or failure) comes back from wait_any().
  void start(std::size_t id, const std::function<std::string()>& job);
  /// Forks a child that at once executes argv[0] with `argv` (a fresh process image: safe where the parent holds
  /// threads or libraries that do not survive fork(), e.g. an initialised MPI). Its stdout comes back as the
  /// output and its exit status as the code; its stderr is the parent's.
  void start_command(std::size_t id, const std::vector<std::string>& argv);
  std::size_t running() const noexcept { return running_.size(); }
  /// Blocks until one of this pool's children exits (nullopt when none runs). With `timeout_s` ≥ 0 gives up
  /// after that many seconds and returns nullopt.
  std::optional<Finished> wait_any(double timeout_s = -1.0);
  /// Throws the failure a Finished with code != 0 carries: an InputError in the child comes back as ConfigError
  /// with the same where, field and message; an IoError or std::filesystem::filesystem_error (the OS refused a read
  /// or write: disk full, permissions) as IoError with the same message; anything else as InternalError naming
  /// `what`.
  static void rethrow(const Finished& f, const std::string& what);

 private:
  struct Child {
    std::size_t id = 0;
    int fd = -1;  ///< the child's (unlinked) result file
  };
  /// Forks with an unlinked result file in `fd`; in the child (return 0) it has already arranged to die with
  /// the parent.
  static pid_t fork_child(int& fd);
  std::map<pid_t, Child> running_;
};

/// Runs jobs[i]() each in its own forked child, at most `parallel` (≥ 1) at once, and returns their results in
/// job order. A ConfigError/TraceFormatError/UsageError (any InputError) thrown in a child is rethrown here as
/// a ConfigError with the same where, field and message, an IoError or filesystem_error as IoError; any other failure
/// (exception, crash, signal) as InternalError naming the job. The first failing job in job order wins; the others
/// still run to completion.
std::vector<std::string> run_isolated(const std::vector<std::function<std::string()>>& jobs, int parallel);

}  // namespace edgc::core
