#include "edgc/core/worker_pool.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "edgc/core/error.hpp"

namespace edgc::core {
namespace {

// Writes all of `data`; false when the other end is gone (EPIPE, with SIGPIPE held back so the caller lives on).
bool write_all(int fd, const void* data, std::size_t size) {
  sigset_t pipe_signal;
  sigset_t old;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_signal, &old);
  const auto* p = static_cast<const char*>(data);
  bool ok = true;
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ok = false;
      break;
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  if (!ok) {  // a SIGPIPE raised by the failed write is pending: take it before unblocking
    const timespec none{};
    while (::sigtimedwait(&pipe_signal, nullptr, &none) == SIGPIPE) {
    }
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

// Reads exactly `size` bytes; false at the end of the stream or on an error before that.
bool read_exact(int fd, void* data, std::size_t size) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = ::read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

bool write_frame(int fd, const std::string& body) {
  const std::uint64_t n = body.size();
  return write_all(fd, &n, sizeof n) && write_all(fd, body.data(), body.size());
}

std::optional<std::string> read_frame(int fd) {
  std::uint64_t n = 0;
  if (!read_exact(fd, &n, sizeof n)) return std::nullopt;
  std::string body(n, '\0');
  if (!read_exact(fd, body.data(), body.size())) return std::nullopt;
  return body;
}

struct Pipe {
  int read = -1;
  int write = -1;
};

Pipe make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw InternalError(std::string("pipe: ") + std::strerror(errno));
  return {fds[0], fds[1]};
}

// fork() for a worker: flushed streams, and in the child, death with the parent. Returns the pid (0 in the child).
pid_t fork_worker() {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw InternalError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(ChildPool::kOtherFailure);
  }
  return pid;
}

}  // namespace

void serve_requests(int in, int out, const WorkerPool::Handler& handler) {
  while (std::optional<std::string> request = read_frame(in)) {
    const ChildPool::Finished f = ChildPool::run_here(0, [&] { return handler(*request); });
    const std::int32_t code = f.code;
    if (!write_all(out, &code, sizeof code) || !write_frame(out, f.output)) return;
  }
}

WorkerPool::WorkerPool(int workers, const Handler& handler) {
  if (workers < 1) throw InternalError("WorkerPool: workers must be >= 1");
  for (int i = 0; i < workers; ++i) start_forked(handler);
}

WorkerPool::WorkerPool(int workers, const std::vector<std::string>& argv) {
  if (workers < 1) throw InternalError("WorkerPool: workers must be >= 1");
  if (argv.empty()) throw InternalError("WorkerPool: empty argv");
  for (int i = 0; i < workers; ++i) start_exec(argv);
}

void WorkerPool::start_forked(const Handler& handler) {
  const Pipe request = make_pipe();
  const Pipe reply = make_pipe();
  const pid_t pid = fork_worker();
  if (pid == 0) {
    // The other workers' pipe ends stay with the parent: a worker holding them would keep them from closing.
    for (const Worker& w : workers_) {
      ::close(w.to);
      ::close(w.from);
    }
    ::close(request.write);
    ::close(reply.read);
    serve_requests(request.read, reply.write, handler);
    std::_Exit(0);  // no destructors of the parent's objects in the worker
  }
  ::close(request.read);
  ::close(reply.write);
  workers_.push_back({pid, request.write, reply.read, false, 0});
}

void WorkerPool::start_exec(const std::vector<std::string>& argv) {
  // Everything the child needs is built before fork(): between fork and exec only async-signal-safe calls.
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  for (std::string& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  const Pipe request = make_pipe();
  const Pipe reply = make_pipe();
  const pid_t pid = fork_worker();
  if (pid == 0) {
    // dup2 clears close-on-exec on 0 and 1; every other pipe end here closes at exec.
    if (::dup2(request.read, STDIN_FILENO) < 0 || ::dup2(reply.write, STDOUT_FILENO) < 0)
      ::_exit(ChildPool::kOtherFailure);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(request.read);
  ::close(reply.write);
  workers_.push_back({pid, request.write, reply.read, false, 0});
}

WorkerPool::~WorkerPool() {
  for (Worker& w : workers_) {
    if (w.pid < 0) continue;
    ::close(w.to);  // an idle worker reads the end of its requests and leaves
    if (w.busy) ::kill(w.pid, SIGKILL);
  }
  for (Worker& w : workers_) {
    if (w.pid < 0) continue;
    int status = 0;
    while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
    }
    ::close(w.from);
  }
}

std::size_t WorkerPool::idle() const noexcept {
  std::size_t n = 0;
  for (const Worker& w : workers_) n += w.pid >= 0 && !w.busy ? 1 : 0;
  return n;
}

std::size_t WorkerPool::running() const noexcept {
  std::size_t n = 0;
  for (const Worker& w : workers_) n += w.busy ? 1 : 0;
  return n;
}

void WorkerPool::submit(std::size_t id, const std::string& request) {
  for (Worker& w : workers_) {
    if (w.pid < 0 || w.busy) continue;
    w.busy = true;
    w.id = id;
    // A worker that died while idle cannot take it: its reply pipe reads as ended, and wait_any() reports the
    // request as failed with the worker's exit status.
    static_cast<void>(write_frame(w.to, request));
    return;
  }
  throw InternalError("WorkerPool::submit: no idle worker");
}

ChildPool::Finished WorkerPool::lost(Worker& w) {
  int status = 0;
  while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
  }
  ChildPool::Finished f;
  f.id = w.id;
  f.code = ChildPool::kOtherFailure;
  f.output = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                 : "worker exited with status " + std::to_string(WEXITSTATUS(status));
  ::close(w.to);
  ::close(w.from);
  w = Worker{};
  return f;
}

std::optional<ChildPool::Finished> WorkerPool::wait_any(double timeout_s) {
  std::vector<pollfd> fds;
  std::vector<Worker*> owners;
  for (Worker& w : workers_)
    if (w.busy) {
      fds.push_back({w.from, POLLIN, 0});
      owners.push_back(&w);
    }
  if (fds.empty()) return std::nullopt;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(std::max(0.0, timeout_s));
  for (;;) {
    int wait_ms = -1;
    if (timeout_s >= 0.0) {
      const auto left = std::chrono::duration<double, std::milli>(deadline - std::chrono::steady_clock::now());
      wait_ms = static_cast<int>(std::max(0.0, std::ceil(left.count())));
    }
    const int n = ::poll(fds.data(), fds.size(), wait_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InternalError(std::string("poll: ") + std::strerror(errno));
    if (n == 0) return std::nullopt;
    break;
  }
  for (std::size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    Worker& w = *owners[i];
    std::int32_t code = 0;
    std::optional<std::string> output;
    if (read_exact(w.from, &code, sizeof code)) output = read_frame(w.from);
    if (!output) return lost(w);
    w.busy = false;
    return ChildPool::Finished{w.id, code, std::move(*output)};
  }
  return std::nullopt;
}

}  // namespace edgc::core
