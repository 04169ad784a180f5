#pragma once
// Long-lived worker processes that each serve many requests (a string in, a string out), so that what a worker
// has read, parsed or measured for one request stays warm for the next: a sweep's points share their scenario
// files, trace data and memoised results this way instead of starting each in a fresh process (isolated.hpp).
//
// A worker is a forked copy of the caller running a handler, or (where the caller must not fork workers that keep
// running its code, e.g. with MPI initialised) an exec'd program that calls serve_requests() on its stdin/stdout.
// Requests and replies travel over pipes as length-prefixed frames; the caller waits in poll(), so an idle pool
// takes no CPU. Workers die with the caller (PR_SET_PDEATHSIG); a worker that dies during a request (a crash, a
// signal) fails that request with ChildPool::kOtherFailure and is not replaced.
#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "edgc/core/isolated.hpp"

namespace edgc::core {

class WorkerPool {
 public:
  using Handler = std::function<std::string(const std::string& request)>;

  /// Forks `workers` (≥ 1) children, each serving requests with `handler` until the pool is destroyed.
  WorkerPool(int workers, const Handler& handler);
  /// Starts `workers` (≥ 1) children that each execute argv[0] with `argv`; the program must call
  /// serve_requests(STDIN_FILENO, STDOUT_FILENO, …). Their stderr is the caller's.
  WorkerPool(int workers, const std::vector<std::string>& argv);
  /// Closes the request pipes (idle workers leave), kills workers still busy, and reaps them all.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  /// Workers alive and waiting for a request.
  std::size_t idle() const noexcept;
  /// Requests sent and not yet answered.
  std::size_t running() const noexcept;
  /// Sends `request` to an idle worker; its answer comes back from wait_any() with `id`. Throws InternalError
  /// when no worker is idle.
  void submit(std::size_t id, const std::string& request);
  /// Blocks until one request is answered (nullopt when none runs; with `timeout_s` ≥ 0, also after that many
  /// seconds). The answer carries the handler's result with code 0, or a failure as ChildPool's children report
  /// it (ChildPool::rethrow() turns it into the exception).
  std::optional<ChildPool::Finished> wait_any(double timeout_s = -1.0);

 private:
  struct Worker {
    pid_t pid = -1;
    int to = -1;    ///< request pipe (write end)
    int from = -1;  ///< reply pipe (read end)
    bool busy = false;
    std::size_t id = 0;  ///< the request in progress
  };
  void start_forked(const Handler& handler);
  void start_exec(const std::vector<std::string>& argv);
  ChildPool::Finished lost(Worker& w);  ///< a worker that died during a request: reaped, its failure
  std::vector<Worker> workers_;
};

/// The worker side: reads request frames from `in` and answers each with `handler` on `out` (a failure is
/// answered as ChildPool::run_here() reports it), until `in` reaches its end. Returns normally then.
void serve_requests(int in, int out, const WorkerPool::Handler& handler);

}  // namespace edgc::core
