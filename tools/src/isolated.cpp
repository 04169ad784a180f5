#include "isolated.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "edgc/core/error.hpp"

namespace edgc::cli {
namespace {

constexpr int kInputFailure = 3;
constexpr int kOtherFailure = 4;

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
  int code = 0;
  std::string out;
  try {
    out = job();
  } catch (const InputError& e) {
    // where \n field \n message: the parent rebuilds the error.
    out = e.where() + '\n' + e.field() + '\n' + e.what();
    code = kInputFailure;
  } catch (const std::exception& e) {
    out = e.what();
    code = kOtherFailure;
  } catch (...) {
    out = "unknown exception";
    code = kOtherFailure;
  }
  write_all(fd, out);
  ::close(fd);
  std::_Exit(code);
}

struct Child {
  std::size_t job = 0;
  std::filesystem::path file;
};

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// The message of a child's InputError without its "where: field: " prefix, which ConfigError adds again.
std::string detail_of(const std::string& where, const std::string& field, const std::string& message) {
  std::string prefix;
  if (!where.empty()) prefix += where + ": ";
  if (!field.empty()) prefix += field + ": ";
  return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
}

}  // namespace

std::vector<std::string> run_isolated(const std::vector<std::function<std::string()>>& jobs, int parallel) {
  if (parallel < 1) throw InternalError("run_isolated: parallel must be >= 1");
  std::vector<std::string> results(jobs.size());
  std::vector<int> codes(jobs.size(), 0);
  std::map<pid_t, Child> running;
  const std::filesystem::path tmp = std::filesystem::temp_directory_path();
  std::size_t next = 0;

  auto reap_one = [&]() {
    int status = 0;
    pid_t pid = 0;
    do {
      pid = ::waitpid(-1, &status, 0);
    } while (pid < 0 && errno == EINTR);
    if (pid < 0) throw InternalError(std::string("run_isolated: waitpid: ") + std::strerror(errno));
    const auto it = running.find(pid);
    if (it == running.end()) return;  // not ours
    const Child c = it->second;
    running.erase(it);
    results[c.job] = slurp(c.file);
    std::error_code ignored;
    std::filesystem::remove(c.file, ignored);
    if (WIFEXITED(status)) {
      codes[c.job] = WEXITSTATUS(status);
    } else {
      codes[c.job] = kOtherFailure;
      results[c.job] = "killed by signal " + std::to_string(WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    }
  };

  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  while (next < jobs.size() || !running.empty()) {
    while (next < jobs.size() && static_cast<int>(running.size()) < parallel) {
      std::string pattern = (tmp / "edgc-job-XXXXXX").string();
      const int fd = ::mkstemp(pattern.data());
      if (fd < 0) throw IoError(pattern, std::string("cannot create a temporary file: ") + std::strerror(errno));
      const pid_t pid = ::fork();
      if (pid < 0) {
        ::close(fd);
        throw InternalError(std::string("run_isolated: fork: ") + std::strerror(errno));
      }
      if (pid == 0) child_main(jobs[next], fd);
      ::close(fd);
      running[pid] = Child{next, pattern};
      ++next;
    }
    if (!running.empty()) reap_one();
  }

  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (codes[i] == 0) continue;
    if (codes[i] == kInputFailure) {
      std::istringstream in(results[i]);
      std::string where;
      std::string field;
      std::getline(in, where);
      std::getline(in, field);
      std::string message((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      throw ConfigError(where, field, detail_of(where, field, message));
    }
    throw InternalError("simulation job " + std::to_string(i) + " failed: " + results[i]);
  }
  return results;
}

}  // namespace edgc::cli
