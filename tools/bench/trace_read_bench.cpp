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
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "edgc/core/median.hpp"
#include "edgc/traces/traces.hpp"
#include "harness.hpp"

namespace fs = std::filesystem;
using edgc::bench::Clock;
using edgc::traces::IterationData;
using edgc::traces::TraceReader;

namespace {

struct Options {
  std::string trace;
  double gb = 1.0;
  int repeats = 5;
  std::string json_out;
  std::string dtype_name = "f32";
};

// What the timed passes saw.
struct ReadResult {
  std::vector<double> seconds;  // one per timed pass, sorted ascending (as the JSON has always listed them)
  std::uint64_t bytes = 0;      // file bytes of one pass
  std::uint64_t max_iter_bytes = 0;
  std::size_t decoded_bytes = 0;  // the last iteration as f32
  bool consistent = true;
};

// Removes the synthesised trace however the bench ends.
struct TempDir {
  fs::path path;
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

// Reads every iteration file whole with pread into one reused buffer; returns seconds.
double raw_read_seconds(const fs::path& dir, const edgc::traces::Manifest& m, std::vector<char>& buf) {
  const auto t0 = Clock::now();
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
  return edgc::bench::seconds_since(t0);
}

// Synthesises the trace in a child; returns false (after saying why) when that fails.
bool make_trace(const fs::path& dir, double gb, edgc::traces::Dtype dtype) {
  edgc::traces::SynthOptions o;
  o.dtype = dtype;
  o.layer_shapes = {{4096, 4096}};  // 64 MiB of f32 per tensor
  o.layers = 4;
  o.stages = 4;
  const double iter_bytes = static_cast<double>(edgc::traces::element_size(dtype)) * 4096 * 4096 * o.layers;
  o.iterations = std::max(1, static_cast<int>(std::ceil(gb * 1e9 / iter_bytes)));
  o.rank = 1;
  o.command = "edgc_bench_trace_read";
  try {
    edgc::bench::run_in_child("trace synthesis", [&] {
      edgc::traces::synthesize_trace(o, dir);
      return std::string();
    });
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "synthesis failed: %s\n", e.what());
    return false;
  }
}

// One untimed pass warms the page cache, then `repeats` timed passes. The iteration buffers are reused across
// passes as they are across iterations of one long stream.
ReadResult timed_passes(const fs::path& trace, int repeats) {
  ReadResult res;
  double checksum0 = 0.0;
  IterationData data;
  for (int r = -1; r < repeats; ++r) {
    TraceReader reader(trace);
    double checksum = 0.0;
    const auto t0 = Clock::now();
    std::uint64_t before = 0;
    while (reader.next(data)) {
      // Touch one value per 4 KiB page so the data is really there, at negligible cost.
      for (const auto& t : data.tensors)
        for (std::size_t i = 0; i < t.values.size(); i += 1024) checksum += t.values[i];
      res.max_iter_bytes = std::max<std::uint64_t>(res.max_iter_bytes, reader.bytes_read() - before);
      before = reader.bytes_read();
    }
    const double s = edgc::bench::seconds_since(t0);
    res.bytes = reader.bytes_read();
    if (r < 0) {
      checksum0 = checksum;
    } else {
      res.seconds.push_back(s);
      res.consistent = res.consistent && checksum == checksum0;
    }
  }
  for (const auto& t : data.tensors) res.decoded_bytes += t.values.size() * sizeof(float);
  std::sort(res.seconds.begin(), res.seconds.end());
  return res;
}

void report(const Options& opt, const ReadResult& res, double raw_median_s, double rss) {
  const double median = edgc::core::median(res.seconds);
  const auto bytes = static_cast<double>(res.bytes);
  const double raw_gbps = bytes / raw_median_s / 1e9;
  const double gbps = bytes / median / 1e9;
  const double decoded_mib = static_cast<double>(res.decoded_bytes) / (1024.0 * 1024.0);
  const double iter_mib = static_cast<double>(res.max_iter_bytes) / (1024.0 * 1024.0);

  std::printf("\n  %-28s %12s\n", "metric", "value");
  std::printf("  %-28s %12s\n", "dtype", opt.dtype_name.c_str());
  std::printf("  %-28s %12.3f\n", "trace size (GB)", bytes / 1e9);
  std::printf("  %-28s %12d\n", "timed repeats", opt.repeats);
  std::printf("  %-28s %12.3f\n", "median read time (s)", median);
  std::printf("  %-28s %12.2f\n", "median throughput (GB/s)", gbps);
  std::printf("  %-28s %12.2f\n", "best throughput (GB/s)", bytes / res.seconds.front() / 1e9);
  std::printf("  %-28s %12.2f\n", "baseline raw pread (GB/s)", raw_gbps);
  std::printf("  %-28s %12.2f\n", "reader / raw pread", gbps / raw_gbps);
  std::printf("  %-28s %12.1f\n", "largest iteration (MiB)", iter_mib);
  std::printf("  %-28s %12.1f\n", "peak RSS (MiB)", rss);
  std::printf("  %-28s %12.1f\n", "one iteration as f32 (MiB)", decoded_mib);
  std::printf("  %-28s %12.2f\n", "peak RSS / f32 iteration", rss / decoded_mib);
  std::printf("  %-28s %12s\n", "target", ">= 1 GB/s");
  std::printf("  %-28s %12s\n", "checksums consistent", res.consistent ? "yes" : "NO");

  edgc::bench::write_json(opt.json_out, {{"schema", "edgc.bench.trace_read/1"},
                                         {"trace_bytes", res.bytes},
                                         {"repeats", opt.repeats},
                                         {"seconds", res.seconds},
                                         {"dtype", opt.dtype_name},
                                         {"median_GBps", gbps},
                                         {"raw_pread_median_GBps", raw_gbps},
                                         {"largest_iteration_bytes", res.max_iter_bytes},
                                         {"peak_rss_MiB", rss},
                                         {"decoded_iteration_bytes", res.decoded_bytes},
                                         {"target_GBps", 1.0},
                                         {"consistent", res.consistent}});
}

int run(int argc, char** argv) {
  Options opt;
  edgc::bench::Args args("[--trace DIR] [--gb 1.0] [--dtype f32] [--repeats 5] [--json FILE]");
  args.text("--trace", opt.trace).real("--gb", opt.gb).text("--dtype", opt.dtype_name).repeats(opt.repeats);
  args.json_path("--json", opt.json_out);
  if (const auto code = args.parse(argc, argv)) return *code;
  const auto dtype = edgc::traces::parse_manifest_dtype(opt.dtype_name);
  if (!dtype || *dtype == edgc::traces::Dtype::kI64) {
    std::fprintf(stderr, "--dtype must be f32, f16 or bf16\n");
    return 2;
  }
  TempDir tmp;
  fs::path trace = opt.trace;
  if (trace.empty()) {
    tmp.path = fs::temp_directory_path() / ("edgc-bench-trace-" + std::to_string(getpid()));
    std::printf("synthesising a %.2f GB %s trace in %s ...\n", opt.gb, opt.dtype_name.c_str(), tmp.path.c_str());
    if (!make_trace(tmp.path, opt.gb, *dtype)) return 1;
    trace = tmp.path;
  }
  const ReadResult res = timed_passes(trace, opt.repeats);
  const double rss = edgc::bench::process_usage().peak_rss_mib;  // before the baseline allocates its own buffer
  std::vector<double> raw_seconds;
  std::vector<char> raw_buf;
  const TraceReader reader(trace);
  for (int r = 0; r < opt.repeats; ++r) raw_seconds.push_back(raw_read_seconds(trace, reader.manifest(), raw_buf));
  report(opt, res, edgc::core::median(raw_seconds), rss);
  return res.consistent ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return edgc::bench::run_main("edgc_bench_trace_read", [&] { return run(argc, argv); });
}
