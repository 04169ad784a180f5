#include "edgc/core/isolated.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include "edgc/core/error.hpp"

namespace edgc::core {
namespace {

constexpr int kOtherFailure = ChildPool::kOtherFailure;

void write_all(int fd, const std::string& text) {
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::_Exit(kOtherFailure);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

// In the child: run the job, write its outcome to `fd`, and leave without running the parent's destructors.
[[noreturn]] void child_main(const std::function<std::string()>& job, int fd) {
  const ChildPool::Finished f = ChildPool::run_here(0, job);
  write_all(fd, f.output);
  ::close(fd);
  std::_Exit(f.code);
}

// Everything written to `fd` (shared with the exited child), from the start.
std::string read_back(int fd) {
  std::string out;
  char buf[1 << 16];
  off_t at = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    at += n;
  }
  return out;
}

// The message of a child's InputError without its "where: field: " prefix, which ConfigError adds again.
std::string detail_of(const std::string& where, const std::string& field, const std::string& message) {
  std::string prefix;
  if (!where.empty()) prefix += where + ": ";
  if (!field.empty()) prefix += field + ": ";
  return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
}

}  // namespace

ChildPool::Finished ChildPool::run_here(std::size_t id, const std::function<std::string()>& job) {
  Finished f;
  f.id = id;
  try {
    f.output = job();
  } catch (const InputError& e) {
    // where \n field \n message: the parent rebuilds the error.
    f.output = e.where() + '\n' + e.field() + '\n' + e.what();
    f.code = kInputFailure;
  } catch (const IoError& e) {
    f.output = e.what();  // already "<path>: <what failed>: <OS reason>"
    f.code = kIoFailure;
  } catch (const std::filesystem::filesystem_error& e) {
    f.output = e.what();  // names the operation, the OS reason and the path(s)
    f.code = kIoFailure;
  } catch (const std::exception& e) {
    f.output = e.what();
    f.code = kOtherFailure;
  } catch (...) {
    f.output = "unknown exception";
    f.code = kOtherFailure;
  }
  return f;
}

ChildPool::~ChildPool() {
  for (const auto& [pid, child] : running_) {
    ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    ::close(child.fd);
  }
}

pid_t ChildPool::fork_child(int& fd) {
  // The result file is unlinked at once: the parent keeps its descriptor and reads it with pread() after the
  // child exited, so nothing is left behind when either side is killed.
  std::string pattern = (std::filesystem::temp_directory_path() / "edgc-job-XXXXXX").string();
  fd = ::mkstemp(pattern.data());
  if (fd < 0) throw IoError(pattern, std::string("cannot create a temporary file: ") + std::strerror(errno));
  ::unlink(pattern.c_str());
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fd);
    throw InternalError(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // Die with the parent (a killed sweep leaves no workers running on). Async-signal-safe calls only.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(kOtherFailure);
  }
  return pid;
}

void ChildPool::start(std::size_t id, const std::function<std::string()>& job) {
  int fd = -1;
  const pid_t pid = fork_child(fd);
  if (pid == 0) child_main(job, fd);
  running_[pid] = Child{id, fd};
}

void ChildPool::start_command(std::size_t id, const std::vector<std::string>& argv) {
  if (argv.empty()) throw InternalError("start_command: empty argv");
  // Everything the child needs is built before fork(): between fork and exec only async-signal-safe calls.
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  for (std::string& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  int fd = -1;
  const pid_t pid = fork_child(fd);
  if (pid == 0) {
    if (::dup2(fd, STDOUT_FILENO) < 0) ::_exit(kOtherFailure);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  running_[pid] = Child{id, fd};
}

std::optional<ChildPool::Finished> ChildPool::wait_any(double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(std::max(0.0, timeout_s));
  while (!running_.empty()) {
    int status = 0;
    pid_t pid = 0;
    bool found = false;
    // Only this pool's children: other children of the process (another pool, MPI's helpers) are left alone.
    // One child and no deadline: block in waitpid, so no polling wake-up takes CPU from the child (benchmarks
    // time it).
    const int flags = running_.size() == 1 && timeout_s < 0.0 ? 0 : WNOHANG;
    for (const auto& entry : running_) {
      pid = ::waitpid(entry.first, &status, flags);
      if (pid > 0) {
        found = true;
        break;
      }
      if (pid < 0 && errno != EINTR) throw InternalError(std::string("waitpid: ") + std::strerror(errno));
    }
    if (!found) {
      if (timeout_s >= 0.0 && std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      ::usleep(running_.size() > 1 ? 2000 : 500);
      continue;
    }
    const auto it = running_.find(pid);
    const Child c = it->second;
    running_.erase(it);
    Finished f;
    f.id = c.id;
    f.output = read_back(c.fd);
    ::close(c.fd);
    if (WIFEXITED(status)) {
      f.code = WEXITSTATUS(status);
    } else {
      f.code = kOtherFailure;
      f.output = "killed by signal " + std::to_string(WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    }
    return f;
  }
  return std::nullopt;
}

void ChildPool::rethrow(const Finished& f, const std::string& what) {
  if (f.code == 0) return;
  if (f.code == kInputFailure) {
    std::istringstream in(f.output);
    std::string where;
    std::string field;
    std::getline(in, where);
    std::getline(in, field);
    std::string message((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    throw ConfigError(where, field, detail_of(where, field, message));
  }
  if (f.code == kIoFailure) throw IoError("", f.output);
  throw InternalError(what + " failed: " + f.output);
}

std::vector<std::string> run_isolated(const std::vector<std::function<std::string()>>& jobs, int parallel) {
  if (parallel < 1) throw InternalError("run_isolated: parallel must be >= 1");
  std::vector<ChildPool::Finished> done(jobs.size());
  ChildPool pool;
  std::size_t next = 0;
  while (next < jobs.size() || pool.running() > 0) {
    while (next < jobs.size() && static_cast<int>(pool.running()) < parallel) {
      pool.start(next, jobs[next]);
      ++next;
    }
    if (std::optional<ChildPool::Finished> f = pool.wait_any()) done[f->id] = std::move(*f);
  }
  std::vector<std::string> results;
  results.reserve(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    ChildPool::rethrow(done[i], "simulation job " + std::to_string(i));
    results.push_back(std::move(done[i].output));
  }
  return results;
}

}  // namespace edgc::core
