// Times the CUDA backend's PowerSGD step (project, orthogonalise, Qᵀ = Mᵀ·P, reconstruct, with error feedback)
// and its sampled-entropy kernels (moments + histogram) on GPT2-2.5B and GPT2-12.1B layer shapes, next to a
// device-to-device copy measured in the same run, and writes a kernel-time profile JSON.
//
//   edgc_bench_powersgd_cuda [--ranks 4,16,64,128] [--repeats 10] [--fraction 0.25] [--shape MxN] [--batch 1]
//                            [--fused-project-max-rank 32[,4,...]] [--cholesky-spread-max-rank 0]
//                            [--stage-layers 4] [--out kernel_profile.json]
//
// --batch B: each step takes B same-shape matrices at once, as a stage's bucket calls it (one launch per pass for
// the whole batch); rows report the time per matrix, and the profile entry the batch's time with "count": B.
// --fused-project-max-rank: BackendOptions::fused_project_max_rank of the backend that is timed; with several values
// every step is timed on one backend per value in the same run (e.g. "32,4": P beside the addition up to r = 32
// against the register kernel up to r = 4 and cuBLAS above); the first value's rows are the profile's entries, the
// others go to its "variants". --cholesky-spread-max-rank: BackendOptions::cholesky_spread_max_rank of every timed
// backend.
//
// Roofline bytes (see kernels/CUDA-NOTES.md): a step streams 8 passes of m·n floats (read G, E; write E; read M
// for Q; read M, write E and G in the reconstruction, plus the P product's read of M) — reported as achieved
// bandwidth over those 8 passes against the copy bandwidth. The entropy kernels read β·m·n floats each: moments and
// histogram as two calls (host-timed, two reads), and both from one moments_and_histogram call (host-timed, and
// device-timed between two events on the backend's stream over its one read).
// Then the orthogonalisation alone (CholeskyQR2 of a batch of 4096×r panels, P of the GPT2-12.1B shapes), device-timed
// on both Cholesky schedules in the same run (cholesky_spread_max_rank 0 and 128), which must give the same bits.
// Then a stage's entropy measurement (--stage-layers GPT2-2.5B layers, 12 tensors each): one call per tensor against
// one moments_and_histogram_batched call, host- and device-timed, over the stage's sampled bytes.
// Each case checks its own result: the step's error norm must not exceed ‖M‖ (Ĝ is a projection of M).
// Exits with status 1 and a message when no CUDA device exists.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "edgc/core/block_sampling.hpp"
#include "edgc/core/error.hpp"
#include "edgc/core/median.hpp"
#include "edgc/kernels/backend.hpp"
#include "harness.hpp"

namespace ek = edgc::kernels;

namespace {

#define BENCH_CUDA(call)                                                                                \
  do {                                                                                                  \
    const cudaError_t st_ = (call);                                                                     \
    if (st_ != cudaSuccess) throw edgc::CudaError(std::string(#call) + ": " + cudaGetErrorString(st_)); \
  } while (0)

struct Shape {
  const char* model;
  std::int64_t m, n;
};

// Layer shapes: GPT2-2.5B (hidden 1920) and GPT2-12.1B (hidden 4096): QKV, attention out, MLP up, MLP down.
const Shape kShapes[] = {{"gpt2-2.5b", 1920, 5760},   {"gpt2-2.5b", 1920, 1920},   {"gpt2-2.5b", 1920, 7680},
                         {"gpt2-2.5b", 7680, 1920},   {"gpt2-12.1b", 4096, 12288}, {"gpt2-12.1b", 4096, 4096},
                         {"gpt2-12.1b", 4096, 16384}, {"gpt2-12.1b", 16384, 4096}};

struct Options {
  std::vector<int> ranks{4, 16, 64, 128};
  std::vector<int> fused_ranks{ek::BackendOptions{}.fused_project_max_rank};
  int cholesky_spread = ek::BackendOptions{}.cholesky_spread_max_rank;
  int batch = 1;
  int repeats = 10;
  double fraction = 0.25;
  std::string out_path = "kernel_profile.json";
  std::string only;      // "MxN": time only that shape (for a profiler), else every shape
  int stage_layers = 4;  // layers of the stage-entropy measurement
};

class Timer {
 public:
  explicit Timer(cudaStream_t s) : s_(s) {
    BENCH_CUDA(cudaEventCreate(&a_));
    BENCH_CUDA(cudaEventCreate(&b_));
  }
  ~Timer() {
    cudaEventDestroy(a_);
    cudaEventDestroy(b_);
  }
  void start() { BENCH_CUDA(cudaEventRecord(a_, s_)); }
  double stop_s() {
    BENCH_CUDA(cudaEventRecord(b_, s_));
    BENCH_CUDA(cudaEventSynchronize(b_));
    float ms = 0.0F;
    BENCH_CUDA(cudaEventElapsedTime(&ms, a_, b_));
    return ms * 1e-3;
  }

 private:
  cudaStream_t s_;
  cudaEvent_t a_{}, b_{};
};

void fill(float* d, std::size_t n, float scale) {
  std::vector<float> h(n);
  std::uint64_t x = 88172645463325252ULL;
  for (float& v : h) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v = scale * (static_cast<float>(x >> 40) / 16777216.0F - 0.5F);
  }
  BENCH_CUDA(cudaMemcpy(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
}

// Device memory of `n` floats, freed however the bench ends.
class DeviceFloats {
 public:
  explicit DeviceFloats(std::int64_t n) { BENCH_CUDA(cudaMalloc(&p_, static_cast<std::size_t>(n) * sizeof(float))); }
  ~DeviceFloats() { cudaFree(p_); }
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;
  float* get() const { return p_; }

 private:
  float* p_ = nullptr;
};

// One shape's buffers for a batch of `batch` matrices, each contiguous after the previous one: gradients and errors
// (m·n each), P and Q at the largest rank, and a pristine pseudo-random gradient (filled once on the host) that
// restores every gradient between steps by device copies.
struct ShapeBuffers {
  std::int64_t batch, mn;
  DeviceFloats g, e, p, q, g0;
  ShapeBuffers(const Shape& s, int rmax, int b)
      : batch(b), mn(s.m * s.n), g(b * mn), e(b * mn), p(b * s.m * rmax), q(b * s.n * rmax), g0(mn) {
    fill(g0.get(), static_cast<std::size_t>(mn), 1e-3F);
    restore(nullptr);
  }
  void restore(cudaStream_t stream) const {
    for (std::int64_t b = 0; b < batch; ++b)
      BENCH_CUDA(cudaMemcpyAsync(g.get() + b * mn, g0.get(), static_cast<std::size_t>(mn) * sizeof(float),
                                 cudaMemcpyDeviceToDevice, stream));
    BENCH_CUDA(cudaStreamSynchronize(stream));
  }
};

// A backend timed in this run (BackendOptions::fused_project_max_rank = fused_rank) with a timer on its stream.
struct Timed {
  int fused_rank;
  std::unique_ptr<ek::Backend> backend;
  cudaStream_t stream;
  Timer timer;
  Timed(int fused, int cholesky_spread)
      : fused_rank(fused),
        backend(
            ek::make_backend("cuda", {.fused_project_max_rank = fused, .cholesky_spread_max_rank = cholesky_spread})),
        stream(static_cast<cudaStream_t>(backend->native_stream())),
        timer(stream) {}
};

struct EntropyTime {
  double seconds = 0.0;         // moments() then histogram(), host-timed: median of the repeats after one warm-up
  double GBps = 0.0;            // over their two reads of the sampled bytes
  double fused_s = 0.0;         // moments_and_histogram(), host-timed
  double fused_device_s = 0.0;  // the same call between two events on the backend's stream
  double fused_GBps = 0.0;      // device-timed, over its one read of the sampled bytes
  bool ok = true;
};

struct StepTime {
  double seconds = 0.0;  // the whole batch's step: median of the repeats after one warm-up
  int batch = 1;
  int fused_rank = 0;  // the backend's fused_project_max_rank
  bool ok = false;
};

// Device-to-device copy bandwidth on the largest gradient (bytes read + written), median of the repeats after two
// warm-ups, on pseudo-random data.
double copy_bandwidth_GBps(cudaStream_t stream, Timer& timer, int repeats) {
  const std::int64_t max_mn = 4096LL * 16384;
  const DeviceFloats a(max_mn);
  const DeviceFloats b(max_mn);
  fill(a.get(), static_cast<std::size_t>(max_mn), 1.0F);
  std::vector<double> ts;
  for (int i = 0; i < repeats + 2; ++i) {
    timer.start();
    BENCH_CUDA(cudaMemcpyAsync(b.get(), a.get(), max_mn * sizeof(float), cudaMemcpyDeviceToDevice, stream));
    const double t = timer.stop_s();
    if (i >= 2) ts.push_back(t);
  }
  return 2.0 * max_mn * sizeof(float) / edgc::core::median(ts) * 1e-9;
}

// Entropy kernels over β of the gradient in 4 KiB blocks: moments and a 256-bin histogram as two calls (two reads,
// two round trips), and as one moments_and_histogram call, which the stage entropy makes once the layout is fixed.
// The fused call must count what the separate ones count.
EntropyTime time_entropy(ek::Backend& backend, const float* g, std::int64_t mn, double fraction, int repeats) {
  const std::vector<edgc::Block> blocks = edgc::choose_blocks(mn, fraction, 1024, 1, 0);
  const double sampled_bytes = static_cast<double>(edgc::total_length(blocks)) * sizeof(float);
  const std::span<const float> x{g, static_cast<std::size_t>(mn)};
  std::vector<std::int64_t> counts(256);
  std::vector<std::int64_t> fused_counts(256);
  EntropyTime res;
  std::vector<double> ts, tf, td;
  for (int i = 0; i < repeats + 1; ++i) {
    edgc::kernels::HistogramTails tails;
    std::fill(counts.begin(), counts.end(), 0);
    auto t0 = edgc::bench::Clock::now();
    const ek::MomentSums ms = backend.moments(x, blocks);
    backend.histogram(x, blocks, -5e-4, 1e-3 / 256, counts, tails);
    const double t = edgc::bench::seconds_since(t0);
    edgc::kernels::HistogramTails fused_tails;
    std::fill(fused_counts.begin(), fused_counts.end(), 0);
    t0 = edgc::bench::Clock::now();
    backend.start_timer();
    const ek::MomentSums mf = backend.moments_and_histogram(x, blocks, -5e-4, 1e-3 / 256, fused_counts, fused_tails);
    const std::optional<double> dev = backend.stop_timer();
    const double f = edgc::bench::seconds_since(t0);
    if (i > 0) {
      ts.push_back(t);
      tf.push_back(f);
      td.push_back(dev.value_or(f));
    }
    if (ms.count != edgc::total_length(blocks) || mf.count != ms.count || mf.sum != ms.sum || fused_counts != counts ||
        fused_tails.below != tails.below || fused_tails.above != tails.above)
      res.ok = false;
  }
  res.seconds = edgc::core::median(ts);
  res.GBps = 2.0 * sampled_bytes / res.seconds * 1e-9;
  res.fused_s = edgc::core::median(tf);
  res.fused_device_s = edgc::core::median(td);
  res.fused_GBps = sampled_bytes / res.fused_device_s * 1e-9;
  return res;
}

// A pipeline stage's entropy measurement as edgc's controller makes it once the histogram layout is fixed: every
// tensor of `layers` GPT2-2.5B layers (the four matrices and the biases and LayerNorm vectors, 12 tensors a layer),
// β of each in 4 KiB blocks, moments and a 256-bin histogram per tensor. Timed as one moments_and_histogram call per
// tensor (a round trip each, what stage_entropy made before the batched call) and as one
// moments_and_histogram_batched call (one kernel, one round trip), each host-timed and device-timed. The batched
// call must count what the per-tensor calls count.
struct StageEntropyTime {
  int tensors = 0;
  double sampled_bytes = 0.0;
  double per_tensor_s = 0.0, per_tensor_device_s = 0.0;
  double batched_s = 0.0, batched_device_s = 0.0;
  bool ok = true;
};

StageEntropyTime time_stage_entropy(ek::Backend& backend, int layers, double fraction, int repeats) {
  const std::int64_t h = 1920;
  const std::vector<std::int64_t> layer = {h * 3 * h, 3 * h, h * h, h, h, h, h * 4 * h, 4 * h, 4 * h * h, h, h, h};
  std::vector<std::int64_t> sizes;
  for (int l = 0; l < layers; ++l) sizes.insert(sizes.end(), layer.begin(), layer.end());
  std::int64_t total = 0;
  for (const std::int64_t n : sizes) total += n;
  const DeviceFloats all(total);
  fill(all.get(), static_cast<std::size_t>(total), 2e-3F);
  std::vector<std::vector<edgc::Block>> blocks(sizes.size());
  std::vector<ek::SampledTensor> tensors(sizes.size());
  StageEntropyTime res;
  res.tensors = static_cast<int>(sizes.size());
  std::int64_t at = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    blocks[i] = edgc::choose_blocks(sizes[i], fraction, 1024, 1, i);
    tensors[i] = {{all.get() + at, static_cast<std::size_t>(sizes[i])}, blocks[i]};
    res.sampled_bytes += static_cast<double>(edgc::total_length(blocks[i])) * sizeof(float);
    at += sizes[i];
  }
  const std::int64_t bins = 256;
  const double lo = -1e-3, width = 2e-3 / 256;
  const std::size_t cells = sizes.size() * static_cast<std::size_t>(bins);
  std::vector<std::int64_t> one(cells), batched(cells);
  std::vector<ek::HistogramTails> one_tails(sizes.size()), batched_tails(sizes.size());
  std::vector<ek::MomentSums> one_m(sizes.size()), batched_m(sizes.size());
  std::vector<double> tp, tpd, tb, tbd;
  for (int i = 0; i < repeats + 1; ++i) {
    std::fill(one.begin(), one.end(), 0);
    std::fill(batched.begin(), batched.end(), 0);
    std::fill(one_tails.begin(), one_tails.end(), ek::HistogramTails{});
    std::fill(batched_tails.begin(), batched_tails.end(), ek::HistogramTails{});
    auto t0 = edgc::bench::Clock::now();
    backend.start_timer();
    for (std::size_t k = 0; k < sizes.size(); ++k)
      one_m[k] = backend.moments_and_histogram(tensors[k].values, tensors[k].blocks, lo, width,
                                               std::span<std::int64_t>(one).subspan(k * bins, bins), one_tails[k]);
    const std::optional<double> dev_one = backend.stop_timer();
    const double t_one = edgc::bench::seconds_since(t0);
    t0 = edgc::bench::Clock::now();
    backend.start_timer();
    backend.moments_and_histogram_batched(tensors, lo, width, bins, batched_m, batched, batched_tails);
    const std::optional<double> dev_batched = backend.stop_timer();
    const double t_batched = edgc::bench::seconds_since(t0);
    if (i > 0) {
      tp.push_back(t_one);
      tpd.push_back(dev_one.value_or(t_one));
      tb.push_back(t_batched);
      tbd.push_back(dev_batched.value_or(t_batched));
    }
    res.ok = res.ok && one == batched;
    for (std::size_t k = 0; k < sizes.size(); ++k)
      res.ok = res.ok && one_m[k].count == batched_m[k].count && one_tails[k].below == batched_tails[k].below &&
               one_tails[k].above == batched_tails[k].above &&
               std::abs(one_m[k].sum_sq - batched_m[k].sum_sq) <= 1e-9 * std::abs(one_m[k].sum_sq);
  }
  res.per_tensor_s = edgc::core::median(tp);
  res.per_tensor_device_s = edgc::core::median(tpd);
  res.batched_s = edgc::core::median(tb);
  res.batched_device_s = edgc::core::median(tbd);
  return res;
}

// The orthogonalisation of a batch of `batch` rows×r panels (pseudo-random, restored before each call, untimed),
// device-timed on a backend with the row-per-warp Cholesky schedule and one with the spread schedule; the medians
// after one warm-up, and whether both left the same bits.
struct OrthTime {
  std::int64_t rows = 0;
  int r = 0, batch = 1;
  double per_warp_s = 0.0, spread_s = 0.0;
  bool same_bits = false;
};

OrthTime time_orthogonalize(std::int64_t rows, int r, int batch, int repeats) {
  OrthTime res{rows, r, batch};
  const std::int64_t count = rows * r;
  const DeviceFloats pristine(count * batch);
  fill(pristine.get(), static_cast<std::size_t>(count * batch), 1.0F);
  std::vector<float> out[2];
  double* medians[2] = {&res.per_warp_s, &res.spread_s};
  for (int v = 0; v < 2; ++v) {
    const auto backend = ek::make_backend("cuda", {.cholesky_spread_max_rank = v == 0 ? 0 : 128});
    const auto stream = static_cast<cudaStream_t>(backend->native_stream());
    const DeviceFloats p(count * batch);
    std::vector<float*> panels;
    for (int b = 0; b < batch; ++b) panels.push_back(p.get() + b * count);
    std::vector<double> ts;
    for (int i = 0; i < repeats + 1; ++i) {
      BENCH_CUDA(cudaMemcpyAsync(p.get(), pristine.get(), static_cast<std::size_t>(count * batch) * sizeof(float),
                                 cudaMemcpyDeviceToDevice, stream));
      backend->start_timer();
      backend->orthogonalize_batched(rows, r, panels, 1e-8F);
      const std::optional<double> t = backend->stop_timer();
      if (i > 0) ts.push_back(t.value_or(0.0));
    }
    *medians[v] = edgc::core::median(ts);
    out[v].resize(static_cast<std::size_t>(count * batch));
    BENCH_CUDA(cudaMemcpy(out[v].data(), p.get(), out[v].size() * sizeof(float), cudaMemcpyDeviceToHost));
  }
  res.same_bits = std::memcmp(out[0].data(), out[1].data(), out[0].size() * sizeof(float)) == 0;
  return res;
}

// One PowerSGD step at rank r with error feedback over the batch (one call per pass); a fresh gradient before each
// step (untimed). No matrix's step may leave an error larger than its ‖M‖ (Ĝ is a projection of M).
StepTime time_step(Timed& t, const Shape& s, int r, const ShapeBuffers& buf, int repeats) {
  const auto nb = static_cast<std::size_t>(buf.batch);
  std::vector<float*> g(nb), e(nb), p(nb), q(nb);
  std::vector<const float*> cg(nb), ce(nb), cp(nb), cq(nb);
  for (std::size_t b = 0; b < nb; ++b) {
    const auto ib = static_cast<std::int64_t>(b);
    g[b] = buf.g.get() + ib * buf.mn;
    e[b] = buf.e.get() + ib * buf.mn;
    p[b] = buf.p.get() + ib * s.m * r;
    q[b] = buf.q.get() + ib * s.n * r;
    cg[b] = g[b];
    ce[b] = e[b];
    cp[b] = p[b];
    cq[b] = q[b];
  }
  BENCH_CUDA(cudaMemsetAsync(buf.e.get(), 0, static_cast<std::size_t>(buf.batch * buf.mn) * sizeof(float), t.stream));
  fill(buf.q.get(), nb * static_cast<std::size_t>(s.n * r), 1.0F);
  buf.restore(t.stream);
  StepTime res{0.0, static_cast<int>(buf.batch), t.fused_rank, true};
  std::vector<double> ts;
  std::vector<double> m_sq(nb), err_sq(nb);
  ek::Backend& backend = *t.backend;
  for (int i = 0; i < repeats + 1; ++i) {
    t.timer.start();
    backend.project_batched(s.m, s.n, r, cg, e, cq, p, m_sq);
    backend.orthogonalize_batched(s.m, r, p, 1e-8F);
    backend.gemm_batched(ek::Transpose::kYes, ek::Transpose::kNo, s.n, r, s.m, 1.0F, ce, cp, 0.0F, q);
    backend.reconstruct_batched(s.m, s.n, r, cp, cq, e, g, err_sq);
    const double dt = t.timer.stop_s();
    if (i > 0) ts.push_back(dt);
    buf.restore(t.stream);
  }
  res.seconds = edgc::core::median(ts);
  for (std::size_t b = 0; b < nb; ++b)
    res.ok = res.ok && std::isfinite(err_sq[b]) && err_sq[b] <= m_sq[b] * (1.0 + 1e-4) && m_sq[b] > 0.0;
  return res;
}

// Prints one table row (time and bandwidth per matrix) and returns its JSON entry (the batch's time, with its size
// as "count" when over one matrix: the simulator's kernel_profile reader takes step_s as the time of `count`
// matrices).
nlohmann::ordered_json report(const Shape& s, int r, const StepTime& step, const EntropyTime& ent, double copy_GBps,
                              double fraction) {
  const auto dmn = static_cast<double>(s.m * s.n);
  const auto dm = static_cast<double>(s.m);
  const double per_matrix_s = step.seconds / step.batch;
  const double bytes = 8.0 * dmn * sizeof(float);
  const double flops = 2.0 * dmn * r * 3.0 + 4.0 * dm * r * r * 3.0;  // P, Q, Ĝ products + CholeskyQR
  const double step_GBps = bytes / per_matrix_s * 1e-9;
  std::printf("  %-11s %6lld %6lld %4d %5d %5d %10.3f %9.0f %5.0f%% %9.2f %10.3f %5.0f%% %9.3f %9.3f %5.0f%% %4s\n",
              s.model, static_cast<long long>(s.m), static_cast<long long>(s.n), r, step.batch, step.fused_rank,
              per_matrix_s * 1e3, step_GBps, 100.0 * step_GBps / copy_GBps, flops / per_matrix_s * 1e-12,
              ent.seconds * 1e3, 100.0 * ent.GBps / copy_GBps, ent.fused_s * 1e3, ent.fused_device_s * 1e3,
              100.0 * ent.fused_GBps / copy_GBps, step.ok && ent.ok ? "yes" : "NO");
  nlohmann::ordered_json j = {{"model", s.model},
                              {"m", s.m},
                              {"n", s.n},
                              {"r", r},
                              {"step_s", step.seconds},
                              {"step_GBps", step_GBps},
                              {"step_tflops", flops / per_matrix_s * 1e-12},
                              {"entropy_s", ent.seconds},
                              {"entropy_GBps", ent.GBps},
                              {"entropy_fused_s", ent.fused_s},
                              {"entropy_fused_device_s", ent.fused_device_s},
                              {"entropy_fused_GBps", ent.fused_GBps},
                              {"sampled_fraction", fraction},
                              {"ok", step.ok}};
  if (step.batch > 1) {
    j["count"] = step.batch;
    j["step_per_matrix_s"] = per_matrix_s;
  }
  return j;
}

// All ranks of one shape, each timed on every backend; appends their JSON entries (the first backend's to `entries`,
// the others' with their fused_project_max_rank to `variants`) and returns false when a self-check failed.
bool bench_shape(std::vector<std::unique_ptr<Timed>>& timed, const Options& opt, const Shape& s, double copy_GBps,
                 nlohmann::ordered_json& entries, nlohmann::ordered_json& variants) {
  const ShapeBuffers buf(s, *std::max_element(opt.ranks.begin(), opt.ranks.end()), opt.batch);
  const EntropyTime ent = time_entropy(*timed.front()->backend, buf.g.get(), buf.mn, opt.fraction, opt.repeats);
  bool ok = ent.ok;
  for (const int r : opt.ranks) {
    if (r > std::min(s.m, s.n)) continue;
    for (std::size_t v = 0; v < timed.size(); ++v) {
      const StepTime step = time_step(*timed[v], s, r, buf, opt.repeats);
      ok = ok && step.ok;
      nlohmann::ordered_json j = report(s, r, step, ent, copy_GBps, opt.fraction);
      if (v == 0) {
        entries.push_back(std::move(j));
      } else {
        j["fused_project_max_rank"] = step.fused_rank;
        variants.push_back(std::move(j));
      }
    }
  }
  return ok;
}

bool selected(const Options& opt, const Shape& s) {
  return opt.only.empty() || opt.only == std::to_string(s.m) + "x" + std::to_string(s.n);
}

Options parse(int argc, char** argv, std::optional<int>& exit_code) {
  Options opt;
  std::string ranks_text, fused_text;
  edgc::bench::Args args(
      "[--ranks 4,16,64,128] [--repeats 10] [--fraction 0.25] [--shape MxN] [--batch 1] "
      "[--fused-project-max-rank 32[,4,...]] [--cholesky-spread-max-rank 0] [--stage-layers 4] [--out FILE]");
  args.text("--ranks", ranks_text).text("--shape", opt.only).repeats(opt.repeats).real("--fraction", opt.fraction);
  args.integer("--batch", opt.batch, 1).text("--fused-project-max-rank", fused_text);
  args.integer("--stage-layers", opt.stage_layers, 1).integer("--cholesky-spread-max-rank", opt.cholesky_spread, 0);
  args.json_path("--out", opt.out_path);
  exit_code = args.parse(argc, argv);
  if (exit_code) return opt;
  if (!ranks_text.empty()) opt.ranks = edgc::bench::int_list("--ranks", ranks_text);
  if (opt.ranks.empty()) throw edgc::UsageError("--ranks", "no rank given");
  if (!fused_text.empty()) opt.fused_ranks = edgc::bench::int_list("--fused-project-max-rank", fused_text);
  if (opt.fused_ranks.empty() || *std::min_element(opt.fused_ranks.begin(), opt.fused_ranks.end()) < 0)
    throw edgc::UsageError("--fused-project-max-rank", "expected ranks ≥ 0");
  if (opt.batch > 65535) throw edgc::UsageError("--batch", "at most 65535 matrices");
  if (std::none_of(std::begin(kShapes), std::end(kShapes), [&](const Shape& s) { return selected(opt, s); }))
    throw edgc::UsageError("--shape", opt.only + " is none of the benchmark's shapes");
  return opt;
}

int run(int argc, char** argv) {
  std::optional<int> exit_code;
  const Options opt = parse(argc, argv, exit_code);
  if (exit_code) return *exit_code;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // rows appear as they are measured, also through a pipe
  int devices = 0;
  const cudaError_t st = cudaGetDeviceCount(&devices);
  if (st != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "edgc_bench_powersgd_cuda: no CUDA device (%s); nothing to measure\n",
                 st != cudaSuccess ? cudaGetErrorString(st) : "device count 0");
    return 1;
  }
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::vector<std::unique_ptr<Timed>> timed;
  for (const int f : opt.fused_ranks) timed.push_back(std::make_unique<Timed>(f, opt.cholesky_spread));

  const double copy_GBps = copy_bandwidth_GBps(timed.front()->stream, timed.front()->timer, opt.repeats);
  std::printf("device: %s (sm_%d%d), d2d copy %.0f GB/s (read + write); step ms, GB/s and TFLOP/s per matrix\n",
              prop.name, prop.major, prop.minor, copy_GBps);
  std::printf("\n  %-11s %6s %6s %4s %5s %5s %10s %9s %6s %9s %10s %6s %9s %9s %6s %4s\n", "model", "m", "n", "r",
              "batch", "fuse", "step ms", "step GB/s", "%copy", "TFLOP/s", "entropy ms", "%copy", "fused ms",
              "device ms", "%copy", "ok");
  nlohmann::ordered_json entries = nlohmann::ordered_json::array();
  nlohmann::ordered_json variants = nlohmann::ordered_json::array();
  bool all_ok = true;
  for (const Shape& s : kShapes)
    if (selected(opt, s)) all_ok = bench_shape(timed, opt, s, copy_GBps, entries, variants) && all_ok;

  std::printf(
      "\northogonalisation: CholeskyQR2 of %d panels of 4096×r per call, device ms; Cholesky a row of the update per "
      "warp against spread over the CTA\n",
      opt.batch);
  std::printf("  %4s %14s %10s %7s %10s\n", "r", "row/warp ms", "spread ms", "ratio", "same bits");
  nlohmann::ordered_json orth_json = nlohmann::ordered_json::array();
  for (const int r : opt.ranks) {
    if (r < 3) continue;  // one or two columns take Gram–Schmidt
    const OrthTime o = time_orthogonalize(4096, r, opt.batch, opt.repeats);
    all_ok = all_ok && o.same_bits;
    std::printf("  %4d %14.3f %10.3f %6.2fx %10s\n", r, o.per_warp_s * 1e3, o.spread_s * 1e3, o.per_warp_s / o.spread_s,
                o.same_bits ? "yes" : "NO");
    orth_json.push_back({{"rows", o.rows},
                         {"r", o.r},
                         {"batch", o.batch},
                         {"row_per_warp_s", o.per_warp_s},
                         {"spread_s", o.spread_s},
                         {"same_bits", o.same_bits}});
  }

  const StageEntropyTime stage =
      time_stage_entropy(*timed.front()->backend, opt.stage_layers, opt.fraction, opt.repeats);
  all_ok = all_ok && stage.ok;
  const auto pct = [&](double seconds) { return 100.0 * stage.sampled_bytes / seconds * 1e-9 / copy_GBps; };
  std::printf(
      "\nstage entropy: %d layers of GPT2-2.5B, %d tensors, %.1f MB sampled (fraction %.2f), moments and a "
      "256-bin histogram per tensor\n",
      opt.stage_layers, stage.tensors, stage.sampled_bytes * 1e-6, opt.fraction);
  std::printf("  %-30s %10s %10s %6s\n", "calls", "host ms", "device ms", "%copy");
  std::printf("  %-30s %10.3f %10.3f %5.0f%%\n", "one per tensor", stage.per_tensor_s * 1e3,
              stage.per_tensor_device_s * 1e3, pct(stage.per_tensor_device_s));
  std::printf("  %-30s %10.3f %10.3f %5.0f%%   (host-timed %.0f%%) %s\n", "one batched call", stage.batched_s * 1e3,
              stage.batched_device_s * 1e3, pct(stage.batched_device_s), pct(stage.batched_s),
              stage.ok ? "same counts" : "COUNTS DIFFER");
  const nlohmann::ordered_json stage_json = {{"layers", opt.stage_layers},
                                             {"tensors", stage.tensors},
                                             {"sampled_bytes", stage.sampled_bytes},
                                             {"sampled_fraction", opt.fraction},
                                             {"per_tensor_s", stage.per_tensor_s},
                                             {"per_tensor_device_s", stage.per_tensor_device_s},
                                             {"batched_s", stage.batched_s},
                                             {"batched_device_s", stage.batched_device_s},
                                             {"batched_device_copy_fraction", pct(stage.batched_device_s) / 100.0},
                                             {"ok", stage.ok}};

  nlohmann::ordered_json profile = {
      {"schema", "edgc.kernel_profile/1"},
      {"device", prop.name},
      {"compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)},
      {"backend", std::string(timed.front()->backend->name())},
      {"copy_GBps", copy_GBps},
      {"repeats", opt.repeats},
      {"batch", opt.batch},
      {"fused_project_max_rank", opt.fused_ranks.front()},
      {"cholesky_spread_max_rank", opt.cholesky_spread},
      {"step_bytes_model", "8 passes of m*n float32 per matrix"},
      {"entropy_bytes_model", "2 reads of the sampled bytes (moments, histogram); fused: 1 read, device-timed"},
      {"entries", entries},
      {"orthogonalize", orth_json},
      {"stage_entropy", stage_json}};
  if (!variants.empty()) profile["variants"] = variants;
  edgc::bench::write_json(opt.out_path, profile);
  std::printf("\nprofile written to %s; self-checks %s\n", opt.out_path.c_str(), all_ok ? "passed" : "FAILED");
  return all_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return edgc::bench::run_main("edgc_bench_powersgd_cuda", [&] { return run(argc, argv); });
}
