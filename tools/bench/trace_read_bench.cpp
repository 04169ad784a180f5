// Benchmark: streaming read of a large trace from the page cache. Reports GB/s (median of repeats) and peak RSS
// against the size of one iteration, and checks its own result (every repeat must see the same values).
//
//   edgc_bench_trace_read [--trace DIR] [--gb 1.0] [--dtype f32|f16|bf16] [--repeats 5] [--json FILE]
//
// Baseline measured in the same run: plain pread() of the same files into one reused buffer (what the page
// cache can deliver to one core with no parsing or conversion).
//
// Without --trace it synthesises a trace of about --gb gigabytes (f32, 64 MiB per tensor) in a temporary
// directory, in a child process so its memory does not count toward the reader's peak RSS.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "edgc/traces/traces.hpp"

namespace fs = std::filesystem;
using edgc::traces::IterationData;
using edgc::traces::TraceReader;

namespace {

double peak_rss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// Reads every iteration file whole with pread into one reused buffer; returns seconds.
double raw_read_seconds(const fs::path& dir, const edgc::traces::Manifest& m, std::vector<char>& buf) {
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& it : m.iterations) {
    const fs::path p = dir / it.file;
    const auto size = static_cast<std::size_t>(fs::file_size(p));
    buf.resize(size);
    const int fd = ::open(p.c_str(), O_RDONLY);
    std::size_t done = 0;
    while (done < size) {
      const ssize_t got = ::pread(fd, buf.data() + done, size - done, static_cast<off_t>(done));
      if (got <= 0) break;
      done += static_cast<std::size_t>(got);
    }
    ::close(fd);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int make_trace(const fs::path& dir, double gb, edgc::traces::Dtype dtype) {
  edgc::traces::SynthOptions o;
  o.dtype = dtype;
  o.layer_shapes = {{4096, 4096}};  // 64 MiB of f32 per tensor
  o.layers = 4;
  o.stages = 4;
  const double iter_bytes = static_cast<double>(edgc::traces::element_size(dtype)) * 4096 * 4096 * o.layers;
  o.iterations = std::max(1, static_cast<int>(std::ceil(gb * 1e9 / iter_bytes)));
  o.rank = 1;
  o.command = "edgc_bench_trace_read";
  const pid_t pid = fork();
  if (pid == 0) {
    try {
      edgc::traces::synthesize_trace(o, dir);
      _exit(0);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "synthesis failed: %s\n", e.what());
      _exit(1);
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace

int main(int argc, char** argv) {
  fs::path trace;
  double gb = 1.0;
  int repeats = 5;
  std::string json_out;
  std::string dtype_name = "f32";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--trace" && has_value) {
      trace = argv[++i];
    } else if (a == "--gb" && has_value) {
      gb = std::stod(argv[++i]);
    } else if (a == "--dtype" && has_value) {
      dtype_name = argv[++i];
    } else if (a == "--repeats" && has_value) {
      repeats = std::max(1, std::stoi(argv[++i]));
    } else if (a == "--json" && has_value) {
      json_out = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--trace DIR] [--gb 1.0] [--dtype f32] [--repeats 5] [--json FILE]\n", argv[0]);
      return 2;
    }
  }
  const auto dtype = edgc::traces::parse_manifest_dtype(dtype_name);
  if (!dtype || *dtype == edgc::traces::Dtype::kI64) {
    std::fprintf(stderr, "--dtype must be f32, f16 or bf16\n");
    return 2;
  }
  fs::path tmp;
  if (trace.empty()) {
    tmp = fs::temp_directory_path() / ("edgc-bench-trace-" + std::to_string(getpid()));
    std::printf("synthesising a %.2f GB %s trace in %s ...\n", gb, dtype_name.c_str(), tmp.c_str());
    if (make_trace(tmp, gb, *dtype) != 0) return 1;
    trace = tmp;
  }

  std::vector<double> seconds;
  std::vector<double> raw_seconds;
  std::vector<char> raw_buf;
  std::uint64_t bytes = 0;
  std::uint64_t max_iter_bytes = 0;
  double checksum0 = 0.0;
  bool consistent = true;
  // One untimed pass warms the page cache, then `repeats` timed passes. The iteration buffers are reused
  // across passes as they are across iterations of one long stream.
  IterationData data;
  for (int r = -1; r < repeats; ++r) {
    TraceReader reader(trace);
    double checksum = 0.0;
    const auto t0 = std::chrono::steady_clock::now();
    std::uint64_t before = 0;
    while (reader.next(data)) {
      // Touch one value per 4 KiB page so the data is really there, at negligible cost.
      for (const auto& t : data.tensors)
        for (std::size_t i = 0; i < t.values.size(); i += 1024) checksum += t.values[i];
      max_iter_bytes = std::max<std::uint64_t>(max_iter_bytes, reader.bytes_read() - before);
      before = reader.bytes_read();
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    bytes = reader.bytes_read();
    if (r < 0) {
      checksum0 = checksum;
    } else {
      seconds.push_back(s);
      consistent = consistent && checksum == checksum0;
    }
  }
  std::size_t decoded_bytes = 0;
  for (const auto& t : data.tensors) decoded_bytes += t.values.size() * sizeof(float);
  const double rss = peak_rss_mib();  // before the baseline allocates its own buffer
  {
    const TraceReader reader(trace);
    for (int r = 0; r < repeats; ++r) raw_seconds.push_back(raw_read_seconds(trace, reader.manifest(), raw_buf));
  }
  std::sort(seconds.begin(), seconds.end());
  std::sort(raw_seconds.begin(), raw_seconds.end());
  const double median = seconds[seconds.size() / 2];
  const double raw_gbps = static_cast<double>(bytes) / raw_seconds[raw_seconds.size() / 2] / 1e9;
  const double gbps = static_cast<double>(bytes) / median / 1e9;
  const double decoded_mib = static_cast<double>(decoded_bytes) / (1024.0 * 1024.0);
  const double iter_mib = static_cast<double>(max_iter_bytes) / (1024.0 * 1024.0);

  std::printf("\n  %-28s %12s\n", "metric", "value");
  std::printf("  %-28s %12s\n", "dtype", dtype_name.c_str());
  std::printf("  %-28s %12.3f\n", "trace size (GB)", static_cast<double>(bytes) / 1e9);
  std::printf("  %-28s %12d\n", "timed repeats", repeats);
  std::printf("  %-28s %12.3f\n", "median read time (s)", median);
  std::printf("  %-28s %12.2f\n", "median throughput (GB/s)", gbps);
  std::printf("  %-28s %12.2f\n", "best throughput (GB/s)", static_cast<double>(bytes) / seconds.front() / 1e9);
  std::printf("  %-28s %12.2f\n", "baseline raw pread (GB/s)", raw_gbps);
  std::printf("  %-28s %12.2f\n", "reader / raw pread", gbps / raw_gbps);
  std::printf("  %-28s %12.1f\n", "largest iteration (MiB)", iter_mib);
  std::printf("  %-28s %12.1f\n", "peak RSS (MiB)", rss);
  std::printf("  %-28s %12.1f\n", "one iteration as f32 (MiB)", decoded_mib);
  std::printf("  %-28s %12.2f\n", "peak RSS / f32 iteration", rss / decoded_mib);
  std::printf("  %-28s %12s\n", "target", ">= 1 GB/s");
  std::printf("  %-28s %12s\n", "checksums consistent", consistent ? "yes" : "NO");

  if (!json_out.empty()) {
    nlohmann::ordered_json j = {{"schema", "edgc.bench.trace_read/1"},
                                {"trace_bytes", bytes},
                                {"repeats", repeats},
                                {"seconds", seconds},
                                {"dtype", dtype_name},
                                {"median_GBps", gbps},
                                {"raw_pread_median_GBps", raw_gbps},
                                {"largest_iteration_bytes", max_iter_bytes},
                                {"peak_rss_MiB", rss},
                                {"decoded_iteration_bytes", decoded_bytes},
                                {"target_GBps", 1.0},
                                {"consistent", consistent}};
    std::ofstream(json_out) << j.dump(2) << "\n";
  }
  if (!tmp.empty()) fs::remove_all(tmp);
  return consistent ? 0 : 1;
}
