#pragma once
// Helpers of the iteration tests that need several simulations in one test: SimGrid allows one simulation per
// process, so each runs in a forked child that sends its IterationResult back as text (hex floats: exact).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "edgc/sim/iteration.hpp"
#include "edgc/sim/spec.hpp"

namespace edgc::sim::test {

/// Runs `simulate` in a forked child and returns the text it returned; nullopt when the child threw or died.
inline std::optional<std::string> in_child(const std::function<std::string()>& simulate) {
  int fds[2];
  if (pipe(fds) != 0) return std::nullopt;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string out;
    try {
      out = simulate();
    } catch (...) {
      _exit(1);
    }
    std::size_t done = 0;
    while (done < out.size()) {
      const ssize_t n = write(fds[1], out.data() + done, out.size() - done);
      if (n <= 0) _exit(1);
      done += static_cast<std::size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return out;
}

inline std::string hex(double x) {
  char text[64];
  std::snprintf(text, sizeof text, "%a", x);
  return text;
}

/// Every figure of `r`, the timeline included (tab-separated, one record per line), plus `extra` numbers.
inline std::string to_text(const IterationResult& r, const std::vector<double>& extra = {}) {
  std::ostringstream out;
  out << "R\t" << hex(r.iteration_s) << "\t" << hex(r.pipeline_end_s) << "\n";
  for (const StageResult& s : r.stages)
    out << "S\t" << s.powersgd_rank << "\t" << hex(s.last_backward_end_s) << "\t" << hex(s.dp_sync_s) << "\t"
        << hex(s.dp_comm_s) << "\t" << hex(s.exposed_comm_s) << "\t" << hex(s.compression_s) << "\t" << hex(s.compute_s)
        << "\t" << hex(s.tp_comm_s) << "\t" << hex(s.bubble_s) << "\t" << hex(s.bubble_fraction) << "\t" << s.pp_rank
        << "\t" << hex(s.pp_send_bytes) << "\t" << hex(s.pp_comm_s) << "\t" << hex(s.pp_compression_s) << "\t"
        << hex(s.embedding_sync_s) << "\t" << hex(s.sync_end_s) << "\t" << hex(s.optimizer_s) << "\t"
        << hex(s.param_gather_wait_s) << "\t" << hex(s.all_to_all_s) << "\t" << hex(s.expert_sync_s) << "\t"
        << hex(s.expert_param_gather_s) << "\t" << s.expert_rank << "\n";
  for (const TimelineEvent& e : r.timeline)
    out << "E\t" << e.rank << "\t" << e.name << "\t" << e.category << "\t" << hex(e.start_s) << "\t" << hex(e.end_s)
        << "\n";
  for (double x : extra) out << "X\t" << hex(x) << "\n";
  return out.str();
}

/// A result parsed back from to_text(), with its extra numbers.
struct ChildResult {
  IterationResult result;
  std::vector<double> extra;
};

inline ChildResult from_text(const std::string& text) {
  ChildResult c;
  std::istringstream in(text);
  std::string line;
  const auto num = [](const std::string& f) { return std::strtod(f.c_str(), nullptr); };
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string x; std::getline(fields, x, '\t');) f.push_back(x);
    if (f.empty()) continue;
    if (f[0] == "R" && f.size() == 3) {
      c.result.iteration_s = num(f[1]);
      c.result.pipeline_end_s = num(f[2]);
    } else if (f[0] == "S" && f.size() == 23) {
      StageResult s;
      s.powersgd_rank = std::stoi(f[1]);
      s.last_backward_end_s = num(f[2]);
      s.dp_sync_s = num(f[3]);
      s.dp_comm_s = num(f[4]);
      s.exposed_comm_s = num(f[5]);
      s.compression_s = num(f[6]);
      s.compute_s = num(f[7]);
      s.tp_comm_s = num(f[8]);
      s.bubble_s = num(f[9]);
      s.bubble_fraction = num(f[10]);
      s.pp_rank = std::stoi(f[11]);
      s.pp_send_bytes = num(f[12]);
      s.pp_comm_s = num(f[13]);
      s.pp_compression_s = num(f[14]);
      s.embedding_sync_s = num(f[15]);
      s.sync_end_s = num(f[16]);
      s.optimizer_s = num(f[17]);
      s.param_gather_wait_s = num(f[18]);
      s.all_to_all_s = num(f[19]);
      s.expert_sync_s = num(f[20]);
      s.expert_param_gather_s = num(f[21]);
      s.expert_rank = std::stoi(f[22]);
      c.result.stages.push_back(s);
    } else if (f[0] == "E" && f.size() == 6) {
      c.result.timeline.push_back({std::stoi(f[1]), f[2], f[3], num(f[4]), num(f[5])});
    } else if (f[0] == "X" && f.size() == 2) {
      c.extra.push_back(num(f[1]));
    }
  }
  return c;
}

/// Simulates in a child; fails the test (and returns an empty result) when the child did not succeed.
inline ChildResult simulate_in_child(const std::function<std::string()>& simulate) {
  const std::optional<std::string> text = in_child(simulate);
  EXPECT_TRUE(text.has_value()) << "the simulating child failed";
  return text ? from_text(*text) : ChildResult{};
}

/// |a − b| ≤ 1e-9 · max(|a|, |b|), or ≤ 1 ps for figures at zero.
inline bool same_time(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)) + 1e-12;
}

/// Every figure of `a` and `b` equal within same_time(), the timelines event by event.
inline void expect_same_result(const IterationResult& a, const IterationResult& b) {
  EXPECT_TRUE(same_time(a.iteration_s, b.iteration_s)) << a.iteration_s << " vs " << b.iteration_s;
  EXPECT_TRUE(same_time(a.pipeline_end_s, b.pipeline_end_s)) << a.pipeline_end_s << " vs " << b.pipeline_end_s;
  ASSERT_EQ(a.stages.size(), b.stages.size());
  for (std::size_t i = 0; i < a.stages.size(); ++i) {
    const StageResult& x = a.stages[i];
    const StageResult& y = b.stages[i];
    EXPECT_EQ(x.powersgd_rank, y.powersgd_rank);
    EXPECT_EQ(x.pp_rank, y.pp_rank);
    EXPECT_EQ(x.expert_rank, y.expert_rank);
    const std::vector<std::pair<const char*, std::pair<double, double>>> fields = {
        {"last_backward_end_s", {x.last_backward_end_s, y.last_backward_end_s}},
        {"dp_sync_s", {x.dp_sync_s, y.dp_sync_s}},
        {"dp_comm_s", {x.dp_comm_s, y.dp_comm_s}},
        {"pp_send_bytes", {x.pp_send_bytes, y.pp_send_bytes}},
        {"pp_comm_s", {x.pp_comm_s, y.pp_comm_s}},
        {"pp_compression_s", {x.pp_compression_s, y.pp_compression_s}},
        {"embedding_sync_s", {x.embedding_sync_s, y.embedding_sync_s}},
        {"exposed_comm_s", {x.exposed_comm_s, y.exposed_comm_s}},
        {"compression_s", {x.compression_s, y.compression_s}},
        {"compute_s", {x.compute_s, y.compute_s}},
        {"tp_comm_s", {x.tp_comm_s, y.tp_comm_s}},
        {"bubble_s", {x.bubble_s, y.bubble_s}},
        {"bubble_fraction", {x.bubble_fraction, y.bubble_fraction}},
        {"sync_end_s", {x.sync_end_s, y.sync_end_s}},
        {"optimizer_s", {x.optimizer_s, y.optimizer_s}},
        {"param_gather_wait_s", {x.param_gather_wait_s, y.param_gather_wait_s}},
        {"all_to_all_s", {x.all_to_all_s, y.all_to_all_s}},
        {"expert_sync_s", {x.expert_sync_s, y.expert_sync_s}},
        {"expert_param_gather_s", {x.expert_param_gather_s, y.expert_param_gather_s}}};
    for (const auto& [name, v] : fields)
      EXPECT_TRUE(same_time(v.first, v.second))
          << "stage " << i << " " << name << ": " << v.first << " vs " << v.second;
  }
  ASSERT_EQ(a.timeline.size(), b.timeline.size());
  for (std::size_t i = 0; i < a.timeline.size(); ++i) {
    const TimelineEvent& x = a.timeline[i];
    const TimelineEvent& y = b.timeline[i];
    ASSERT_EQ(x.rank, y.rank) << "event " << i;
    ASSERT_EQ(x.name, y.name) << "event " << i;
    ASSERT_EQ(x.category, y.category) << "event " << i;
    EXPECT_TRUE(same_time(x.start_s, y.start_s) && same_time(x.end_s, y.end_s))
        << "event " << i << " (" << x.name << " of rank " << x.rank << ")";
  }
}

/// The nccl-tests logs under tests/data/nccl fitted by `edgc calibrate --nccl-tests h100-1node-8gpu.log
/// --nccl-tests h100-2node-16gpu.log --cluster scenarios/clusters/dgx-h100.json` (efficiencies rounded).
inline NetworkProfile h100_calibrated() {
  NetworkProfile p;
  p.kind = NetworkProfileKind::kCalibrated;
  p.intra.points = {{4096, 1.0},        {131072, 0.68077}, {524288, 0.57293}, {2097152, 0.69766},
                    {8388608, 0.87304}, {33554432, 1.0},   {134217728, 1.0},  {2147483648.0, 1.0}};
  p.intra.latency_factor = 4.7619;
  p.inter.points = {{0.5, 1.0},         {65536, 0.061679},   {1048576, 0.092096},
                    {8388608, 0.41050}, {67108864, 0.75881}, {536870912, 0.84970}};
  p.inter.latency_factor = 1.5185;
  return p;
}

}  // namespace edgc::sim::test
