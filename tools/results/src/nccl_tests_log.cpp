#include "edgc/results/nccl_tests_log.hpp"

#include <cmath>
#include <optional>
#include <sstream>

#include "edgc/core/atomic_file.hpp"
#include "edgc/core/error.hpp"

namespace edgc::results {
namespace {

// "host:pid:tid [rank] NCCL INFO …" and "… NCCL WARN …": what NCCL_DEBUG=INFO interleaves with the table.
bool nccl_debug_line(const std::string& line) {
  return line.find(" NCCL INFO ") != std::string::npos || line.find(" NCCL WARN ") != std::string::npos;
}

bool number(const std::string& s, double& out) {
  std::istringstream in(s);
  in >> out;
  return !in.fail() && in.eof() && std::isfinite(out);
}

}  // namespace

NcclTestsLog read_nccl_tests_log(const std::string& path) {
  // Bounded: a path naming a device or a huge file is refused (kMaxWholeFileBytes), not read line by endless line.
  const std::optional<std::string> text = read_file_bounded(path, "nccl-tests log");
  if (!text) throw ConfigError(path, "", "cannot open the nccl-tests log");
  std::istringstream in(*text);
  NcclTestsLog log;
  log.path = path;
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    if (w.empty()) continue;
    if (w[0][0] == '#') {
      if (w.size() >= 2 && w[0] == "#" && w[1] == "Rank") ++log.ranks;
      continue;
    }
    if (nccl_debug_line(line)) {
      ++log.skipped;
      continue;
    }
    const std::string at = path + ":" + std::to_string(no);
    if (w.size() != 13)
      throw ConfigError(at, "", "expected 13 columns of an all_reduce_perf row, got " + std::to_string(w.size()));
    NcclTestsRow r;
    double wrong = 0;
    if (!number(w[0], r.bytes) || !(r.bytes > 0))
      throw ConfigError(at, "size", "not a positive number: '" + w[0] + "'");
    if (!number(w[5], r.time_us) || !(r.time_us > 0))
      throw ConfigError(at, "time", "not a positive number: '" + w[5] + "'");
    if (!number(w[7], r.busbw_GBps) || r.busbw_GBps < 0) throw ConfigError(at, "busbw", "not a number: '" + w[7] + "'");
    if (w[8] != "N/A" && (!number(w[8], wrong) || wrong != 0))
      throw ConfigError(at, "#wrong", "the run reported wrong results ('" + w[8] + "')");
    if (!log.rows.empty() && r.bytes <= log.rows.back().bytes)
      throw ConfigError(at, "size", "sizes must increase down the log");
    log.rows.push_back(r);
  }
  if (log.rows.empty()) throw ConfigError(path, "", "no all_reduce_perf data rows");
  return log;
}

}  // namespace edgc::results
