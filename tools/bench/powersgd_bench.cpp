// Benchmark: one single-rank PowerSGD step with error feedback and warm start (M = G + E, P = M·Q, orthogonalise
// P, Q = Mᵀ·P, Ĝ = P·Qᵀ, E = M − Ĝ) on GPT2-2.5B-like shapes, edgc's CPU backend against the same math in
// PyTorch (powersgd_bench_torch.py, launched from here so both are measured in the same run and on the same
// thread count); and the throughput of the sampled-moments kernel against a plain sum of the same bytes, of the
// 1024-bin histogram, of both as two calls and of moments_and_histogram (which must give the same results).
//
//   edgc_bench_powersgd [--threads 1,2] [--shapes 1920x5760,1920x7680,7680x1920] [--ranks 4,16,64,128]
//                       [--repeats 5] [--warmup 2] [--python /usr/bin/python3] [--no-torch]
//                       [--moments-mib 256] [--json powersgd_bench.json]
//
// Times are medians over --repeats steps after --warmup untimed ones; the gradient is refreshed outside the
// timed region. Every case checks its own result: a finite reconstruction, a relative error in (0, 1], and
// conservation Ĝ + E_new = G + E_old on one extra step. Moments: β = 0.25 of a --moments-mib tensor in 4 KiB
// blocks, one core, with a pass over a buffer twice the size of the last-level cache before each timed run so
// the sampled bytes come from DRAM.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "edgc/core/block_sampling.hpp"
#include "edgc/core/median.hpp"
#include "edgc/core/random.hpp"
#include "edgc/kernels/kernels.hpp"
#include "harness.hpp"

namespace {

namespace ek = edgc::kernels;
using edgc::bench::Clock;
using edgc::bench::seconds_since;
using edgc::core::median;

struct Options {
  std::string threads_arg = "1,2";
  std::string shapes_arg = "1920x5760,1920x7680,7680x1920";
  std::string ranks_arg = "4,16,64,128";
  std::string python = EDGC_BENCH_PYTHON;
  std::string json_out = "powersgd_bench.json";
  std::string backend_name = "cpu";
  int repeats = 5;
  int warmup = 2;
  std::int64_t moments_mib = 256;
  bool torch = true;
};

// The lists of --threads, --shapes and --ranks, parsed.
struct Grid {
  std::vector<int> thread_counts;
  std::vector<std::pair<std::int64_t, std::int64_t>> shapes;
  std::vector<int> ranks;
};

struct Case {
  std::int64_t m = 0;
  std::int64_t n = 0;
  int r = 0;
  int threads = 1;
  std::vector<double> edgc_ms;
  double torch_ms = NAN;
  double torch_hook_ms = NAN;
  double relative_error = NAN;
  bool ok = false;
};

// Runs one (shape, rank) case on `backend`; returns false if the self-check fails.
bool run_case(ek::Backend& backend, Case& c, int warmup, int repeats) {
  const auto numel = static_cast<std::size_t>(c.m * c.n);
  std::vector<float> g(numel);
  edgc::Rng rng(static_cast<std::uint64_t>(c.m * 131 + c.n), 1);
  for (float& v : g) v = static_cast<float>(rng.normal() * 1e-3);
  std::vector<float> grad(numel);
  ek::PowerSgd psgd(backend, {{c.m, c.n}}, {.rank = c.r, .seed = 1});
  ek::LocalCommunicator comm;
  for (int step = 0; step < warmup + repeats; ++step) {
    std::copy(g.begin(), g.end(), grad.begin());
    std::span<float> view(grad);
    const auto t0 = Clock::now();
    const ek::StepStats st = psgd.step({&view, 1}, comm);
    const double ms = seconds_since(t0) * 1e3;
    if (step >= warmup) c.edgc_ms.push_back(ms);
    c.relative_error = st.tensors[0].relative_error;
    if (!st.tensors[0].compressed) return false;
  }
  // Self-check on one more step: conservation of the error-feedback identity and a finite result.
  const std::vector<float> e_old(psgd.error(0).begin(), psgd.error(0).end());
  std::copy(g.begin(), g.end(), grad.begin());
  std::span<float> view(grad);
  psgd.step({&view, 1}, comm);
  const std::span<const float> e_new = psgd.error(0);
  double num = 0.0;
  double den = 0.0;
  bool finite = true;
  for (std::size_t i = 0; i < numel; ++i) {
    finite = finite && std::isfinite(grad[i]);
    const double want = static_cast<double>(g[i]) + e_old[i];
    const double d = static_cast<double>(grad[i]) + e_new[i] - want;
    num += d * d;
    den += want * want;
  }
  c.ok = finite && c.relative_error > 0.0 && c.relative_error <= 1.0 && std::sqrt(num / den) < 1e-5;
  return c.ok;
}

// Runs the PyTorch script and returns its JSON (null on failure).
nlohmann::json run_torch(const std::string& python, int threads, const std::string& shapes, const std::string& ranks,
                         int repeats, int warmup) {
  const std::string cmd = "'" + python + "' '" + EDGC_TORCH_BENCH_SCRIPT + "' --threads " + std::to_string(threads) +
                          " --shapes " + shapes + " --ranks " + ranks + " --repeats " + std::to_string(repeats) +
                          " --warmup " + std::to_string(warmup);
  std::FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) return nullptr;
  std::string out;
  char buf[4096];
  while (const std::size_t got = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, got);
  if (::pclose(pipe) != 0) return nullptr;
  try {
    return nlohmann::json::parse(out);
  } catch (const nlohmann::json::exception&) {
    return nullptr;
  }
}

struct MomentsResult {
  double sampled_mib = 0.0;
  double kernel_GBps = 0.0;
  double histogram_GBps = 0.0;  // a 1024-bin histogram of the same blocks (the stage entropy's default layout)
  double separate_GBps = 0.0;   // moments() then histogram(): the sampled bytes over both calls' time
  double fused_GBps = 0.0;      // moments_and_histogram(), the same results from one call
  double accumulate_GBps = 0.0;
  double lanes_GBps = 0.0;
  bool ok = false;
};

// Plain sums of the same blocks: std::accumulate into a double (what straightforward code does), and a float sum
// over 16 independent lanes (about the most a core reads when it only adds).
double accumulate_sum(const float* x, const std::vector<edgc::Block>& blocks) {
  double s = 0.0;
  for (const edgc::Block& b : blocks) s = std::accumulate(x + b.offset, x + b.offset + b.length, s);
  return s;
}

double lanes_sum(const float* x, const std::vector<edgc::Block>& blocks) {
  float acc[16] = {};
  double s = 0.0;
  for (const edgc::Block& b : blocks) {
    const float* p = x + b.offset;
    std::int64_t i = 0;
    for (; i + 16 <= b.length; i += 16)
      for (int j = 0; j < 16; ++j) acc[j] += p[i + j];
    for (; i < b.length; ++i) s += p[i];
  }
  for (const float a : acc) s += a;
  return s;
}

MomentsResult bench_moments(const ek::Backend& backend, std::int64_t mib, int repeats) {
  const std::int64_t numel = mib * 1024 * 1024 / 4;
  std::vector<float> x(static_cast<std::size_t>(numel));
  edgc::Rng rng(7, 0);
  for (float& v : x) v = static_cast<float>(rng.uniform() - 0.5) * 1e-3F;
  // Twice the tensor size, to push the tensor out of a large last-level cache between runs.
  std::vector<float> evict(static_cast<std::size_t>(2 * numel), 1.0F);
  float sink = 0.0F;
  const auto flush = [&] {
    for (std::size_t i = 0; i < evict.size(); i += 16) {
      evict[i] += 1.0F;
      sink += evict[i];
    }
  };
  std::vector<double> t_kernel;
  std::vector<double> t_hist;
  std::vector<double> t_separate;
  std::vector<double> t_fused;
  std::vector<double> t_acc;
  std::vector<double> t_lanes;
  MomentsResult res;
  res.ok = true;
  for (int rep = 0; rep < repeats; ++rep) {
    const std::vector<edgc::Block> blocks = edgc::choose_blocks(numel, 0.25, 1024, 11, static_cast<std::uint64_t>(rep));
    const auto bytes = static_cast<double>(edgc::total_length(blocks)) * 4.0;
    res.sampled_mib = bytes / (1024.0 * 1024.0);
    flush();
    auto t0 = Clock::now();
    const ek::MomentSums s = backend.moments(x, blocks);
    t_kernel.push_back(bytes / seconds_since(t0) / 1e9);
    // The histogram, alone, after the moments, and fused with them (±8 σ of the uniform values in 1024 bins).
    std::vector<std::int64_t> counts(1024), fused_counts(1024);
    ek::HistogramTails tails, fused_tails;
    flush();
    t0 = Clock::now();
    backend.histogram(x, blocks, -6e-4, 1.2e-3 / 1024, counts, tails);
    t_hist.push_back(bytes / seconds_since(t0) / 1e9);
    flush();
    std::fill(counts.begin(), counts.end(), 0);
    tails = {};
    t0 = Clock::now();
    const ek::MomentSums s2 = backend.moments(x, blocks);
    backend.histogram(x, blocks, -6e-4, 1.2e-3 / 1024, counts, tails);
    t_separate.push_back(bytes / seconds_since(t0) / 1e9);
    flush();
    t0 = Clock::now();
    const ek::MomentSums sf = backend.moments_and_histogram(x, blocks, -6e-4, 1.2e-3 / 1024, fused_counts, fused_tails);
    t_fused.push_back(bytes / seconds_since(t0) / 1e9);
    res.ok = res.ok && sf.sum == s2.sum && sf.sum_quad == s2.sum_quad && sf.count == s2.count &&
             fused_counts == counts && fused_tails.below == tails.below && fused_tails.above == tails.above;
    flush();
    t0 = Clock::now();
    const double acc = accumulate_sum(x.data(), blocks);
    t_acc.push_back(bytes / seconds_since(t0) / 1e9);
    flush();
    t0 = Clock::now();
    const double lanes = lanes_sum(x.data(), blocks);
    t_lanes.push_back(bytes / seconds_since(t0) / 1e9);
    res.ok = res.ok && s.count == edgc::total_length(blocks) && std::abs(s.sum - acc) <= 1e-6 * std::sqrt(s.sum_sq) &&
             std::abs(lanes - acc) <= 1e-3 * std::sqrt(s.sum_sq) * std::sqrt(static_cast<double>(s.count));
  }
  if (sink == 0.5F) std::printf(" ");  // keeps the eviction passes from being optimised away
  res.kernel_GBps = median(t_kernel);
  res.histogram_GBps = median(t_hist);
  res.separate_GBps = median(t_separate);
  res.fused_GBps = median(t_fused);
  res.accumulate_GBps = median(t_acc);
  res.lanes_GBps = median(t_lanes);
  return res;
}

// Parses --threads, --shapes and --ranks; throws on an item that is not a number or not MxN.
Grid parse_grid(const Options& opt) {
  Grid g;
  for (const auto& t : edgc::bench::split(opt.threads_arg, ',')) g.thread_counts.push_back(std::max(1, std::stoi(t)));
  for (const auto& s : edgc::bench::split(opt.shapes_arg, ',')) {
    const auto mn = edgc::bench::split(s, 'x');
    if (mn.size() != 2) throw std::invalid_argument(s);
    g.shapes.emplace_back(std::stoll(mn[0]), std::stoll(mn[1]));
  }
  for (const auto& r : edgc::bench::split(opt.ranks_arg, ',')) g.ranks.push_back(std::stoi(r));
  return g;
}

// Fills the torch columns of this thread count's cases from the PyTorch script; false when the script failed.
bool add_torch(const Options& opt, int threads, std::vector<Case>& cases, std::string& torch_version) {
  std::printf("torch, %d thread(s): running...\n", threads);
  std::fflush(stdout);
  const nlohmann::json tj = run_torch(opt.python, threads, opt.shapes_arg, opt.ranks_arg, opt.repeats, opt.warmup);
  if (tj.is_null()) {
    std::fprintf(stderr, "the PyTorch side failed (interpreter %s); use --python or --no-torch\n", opt.python.c_str());
    return false;
  }
  torch_version = tj.value("torch", "");
  for (const auto& row : tj.at("rows"))
    for (Case& c : cases)
      if (c.threads == threads && c.m == row.at("m").get<std::int64_t>() && c.n == row.at("n").get<std::int64_t>() &&
          c.r == row.at("r").get<int>()) {
        c.torch_ms = row.at("ms_median").get<double>();
        c.torch_hook_ms = row.at("ms_hook_median").get<double>();
      }
  return true;
}

void print_cases(const std::vector<Case>& cases) {
  std::printf("\n  %-11s %4s %3s %10s %10s %8s %12s %8s %9s %5s\n", "shape", "r", "thr", "edgc ms", "torch ms", "ratio",
              "torch-hook", "ratio", "rel.err", "check");
  for (const Case& c : cases) {
    const double e = median(c.edgc_ms);
    const std::string shape = std::to_string(c.m) + "x" + std::to_string(c.n);
    std::printf("  %-11s %4d %3d %10.2f %10.2f %8.2f %12.2f %8.2f %9.4f %5s\n", shape.c_str(), c.r, c.threads, e,
                c.torch_ms, c.torch_ms / e, c.torch_hook_ms, c.torch_hook_ms / e, c.relative_error,
                c.ok ? "ok" : "FAIL");
  }
  std::printf(
      "  ratio = torch ms / edgc ms (> 1: edgc faster). torch-hook adds the hook's re-orthogonalisation "
      "of the warm-started Q.\n");
}

void print_moments(const MomentsResult& mr, std::int64_t moments_mib, bool all_ok) {
  std::printf("\n  sampled moments, %lld MiB tensor, beta 0.25 in 4 KiB blocks (%.1f MiB read), one core:\n",
              static_cast<long long>(moments_mib), mr.sampled_mib);
  std::printf("  %-44s %8.2f GB/s\n", "edgc moments (sum, sum^2, ^3, ^4, NaN/Inf)", mr.kernel_GBps);
  std::printf("  %-44s %8.2f GB/s\n", "edgc histogram (1024 bins)", mr.histogram_GBps);
  std::printf("  %-44s %8.2f GB/s\n", "edgc moments, then histogram", mr.separate_GBps);
  std::printf("  %-44s %8.2f GB/s\n", "edgc moments_and_histogram (same results)", mr.fused_GBps);
  std::printf("  %-44s %8.2f GB/s\n", "baseline: std::accumulate into double", mr.accumulate_GBps);
  std::printf("  %-44s %8.2f GB/s\n", "baseline: 16-lane float sum (read speed)", mr.lanes_GBps);
  std::printf("  %-44s %8s\n", "target", ">= 5 GB/s");
  std::printf("  %-44s %8s\n", "checks", all_ok ? "ok" : "FAIL");
}

// A finite value, or JSON null for a torch column the run did not fill.
nlohmann::ordered_json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::ordered_json(v) : nullptr; }

nlohmann::ordered_json to_json(const Options& opt, const std::vector<Case>& cases, const MomentsResult& mr,
                               const std::string& isa, const std::string& torch_version, bool all_ok) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const Case& c : cases) {
    const double e = median(c.edgc_ms);
    rows.push_back({{"m", c.m},
                    {"n", c.n},
                    {"r", c.r},
                    {"threads", c.threads},
                    {"edgc_ms_median", e},
                    {"edgc_ms", c.edgc_ms},
                    {"torch_ms_median", finite_or_null(c.torch_ms)},
                    {"torch_hook_ms_median", finite_or_null(c.torch_hook_ms)},
                    {"ratio_torch_over_edgc", finite_or_null(c.torch_ms / e)},
                    {"relative_error", c.relative_error},
                    {"ok", c.ok}});
  }
  return {{"schema", "edgc.bench.powersgd/1"},
          {"backend", opt.backend_name},
          {"isa", isa},
          {"torch_version", torch_version},
          {"torch_same_run", opt.torch},
          {"repeats", opt.repeats},
          {"warmup", opt.warmup},
          {"powersgd", rows},
          {"moments",
           {{"tensor_MiB", opt.moments_mib},
            {"beta", 0.25},
            {"block_bytes", 4096},
            {"sampled_MiB", mr.sampled_mib},
            {"kernel_GBps", mr.kernel_GBps},
            {"histogram_GBps", mr.histogram_GBps},
            {"moments_then_histogram_GBps", mr.separate_GBps},
            {"moments_and_histogram_GBps", mr.fused_GBps},
            {"accumulate_GBps", mr.accumulate_GBps},
            {"lanes_sum_GBps", mr.lanes_GBps},
            {"target_GBps", 5.0}}},
          {"ok", all_ok}};
}

int run(int argc, char** argv) {
  Options opt;
  edgc::bench::Args args(
      "[--threads 1,2] [--shapes MxN,...] [--ranks 4,16,...] [--repeats 5] [--warmup 2]\n"
      "          [--python /usr/bin/python3] [--no-torch] [--backend cpu] [--moments-mib 256]\n"
      "          [--json FILE]");
  args.text("--threads", opt.threads_arg).text("--shapes", opt.shapes_arg).text("--ranks", opt.ranks_arg);
  args.repeats(opt.repeats).integer("--warmup", opt.warmup, 0).text("--python", opt.python);
  args.text("--backend", opt.backend_name).integer("--moments-mib", opt.moments_mib, 1);
  args.json_path("--json", opt.json_out).flag("--no-torch", opt.torch, false);
  if (const auto code = args.parse(argc, argv)) return *code;
  Grid grid;
  try {
    grid = parse_grid(opt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bad list argument: %s\n", e.what());
    return 2;
  }

  bool all_ok = true;
  std::vector<Case> cases;
  std::string isa;
  std::string torch_version;
  for (const int threads : grid.thread_counts) {
    const auto backend = ek::make_backend(opt.backend_name, {.threads = threads});
    isa = std::string(backend->isa());
    std::printf("edgc %s (%s), %d thread(s): running...\n", opt.backend_name.c_str(), isa.c_str(), threads);
    std::fflush(stdout);
    for (const auto& [m, n] : grid.shapes)
      for (const int r : grid.ranks) {
        Case c;
        c.m = m;
        c.n = n;
        c.r = r;
        c.threads = threads;
        all_ok = run_case(*backend, c, opt.warmup, opt.repeats) && all_ok;
        cases.push_back(std::move(c));
      }
    if (opt.torch) all_ok = add_torch(opt, threads, cases, torch_version) && all_ok;
  }
  print_cases(cases);

  const auto backend = ek::make_backend(opt.backend_name);
  const MomentsResult mr = bench_moments(*backend, opt.moments_mib, std::max(opt.repeats, 5));
  all_ok = all_ok && mr.ok;
  print_moments(mr, opt.moments_mib, all_ok);
  edgc::bench::write_json(opt.json_out, to_json(opt, cases, mr, isa, torch_version, all_ok));
  return all_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return edgc::bench::run_main("edgc_bench_powersgd", [&] { return run(argc, argv); });
}
