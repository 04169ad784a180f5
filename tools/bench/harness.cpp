#include "harness.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <sstream>
#include <utility>

#include "edgc/core/atomic_file.hpp"
#include "edgc/core/error.hpp"
#include "edgc/core/isolated.hpp"

namespace edgc::bench {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

Args& Args::text(const std::string& name, std::string& out) {
  options_.push_back({name, true, [&out](const std::string& v) { out = v; }});
  return *this;
}

Args& Args::integer(const std::string& name, int& out, int min) {
  options_.push_back({name, true, [&out, min](const std::string& v) { out = std::max(min, std::stoi(v)); }});
  return *this;
}

Args& Args::integer(const std::string& name, std::int64_t& out, std::int64_t min) {
  options_.push_back(
      {name, true, [&out, min](const std::string& v) { out = std::max<std::int64_t>(min, std::stoll(v)); }});
  return *this;
}

Args& Args::real(const std::string& name, double& out) {
  options_.push_back({name, true, [&out](const std::string& v) { out = std::stod(v); }});
  return *this;
}

Args& Args::repeated(const std::string& name, std::vector<std::string>& out) {
  options_.push_back({name, true, [&out](const std::string& v) { out.push_back(v); }});
  return *this;
}

Args& Args::flag(const std::string& name, bool& out, bool value) {
  options_.push_back({name, false, [&out, value](const std::string&) { out = value; }});
  return *this;
}

std::optional<int> Args::parse(int argc, char** argv) const {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf("usage: %s %s\n", argv[0], usage_.c_str());
      return 0;
    }
    const auto it = std::find_if(options_.begin(), options_.end(), [&a](const Option& o) { return o.name == a; });
    if (it == options_.end() || (it->takes_value && i + 1 >= argc)) {
      std::fprintf(stderr, "usage: %s %s\n", argv[0], usage_.c_str());
      return 2;
    }
    const std::string value = it->takes_value ? argv[++i] : "";
    try {
      it->store(value);
    } catch (const std::exception&) {  // std::stoi and friends: not a number, or out of range
      std::fprintf(stderr, "%s: %s: not a valid value: '%s'\nusage: %s %s\n", argv[0], a.c_str(), value.c_str(),
                   argv[0], usage_.c_str());
      return 2;
    }
  }
  return std::nullopt;
}

int run_main(const char* name, const std::function<int()>& body) {
  try {
    return body();
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 1;
  }
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<int> int_list(const std::string& flag, const std::string& text) {
  std::vector<int> out;
  for (const std::string& item : split(text, ',')) {
    try {
      out.push_back(std::stoi(item));
    } catch (const std::exception&) {
      throw UsageError(flag, "not a comma-separated list of integers: '" + text + "'");
    }
  }
  return out;
}

ProcessUsage process_usage() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  ProcessUsage u;
  u.peak_rss_mib = static_cast<double>(ru.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
  u.cpu_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
            static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
  return u;
}

std::string run_in_child(const std::string& what, const std::function<std::string()>& job) {
  core::ChildPool pool;
  pool.start(0, job);
  std::optional<core::ChildPool::Finished> done = pool.wait_any();  // blocks without polling: one child
  if (!done) throw InternalError(what + ": the child process was lost");
  core::ChildPool::rethrow(*done, what);
  return std::move(done->output);
}

void check_record_size(std::size_t got, std::size_t want) {
  if (got != want)
    throw InternalError("a child reported " + std::to_string(got) + " bytes, expected " + std::to_string(want));
}

void write_json(const std::string& path, const nlohmann::ordered_json& j) {
  if (!path.empty()) write_file_atomic(path, j.dump(2) + "\n");
}

}  // namespace edgc::bench
