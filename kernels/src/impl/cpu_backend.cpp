// CpuBackend: argument checks, scratch and threading around the CPU kernel table of the chosen instruction set.
#include "cpu_backend.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "../cpu/cpu_kernels.hpp"
#include "../thread_pool.hpp"
#include "backend_checks.hpp"
#include "edgc/core/error.hpp"
#include "edgc/kernels/buffer.hpp"

namespace edgc::kernels::impl {
namespace {

constexpr std::align_val_t kAlign{256};
// bf16 rows are widened into float32 chunks of about this many floats per thread (L2-resident), then go through
// the float32 kernels.
constexpr std::int64_t kConvertFloats = std::int64_t{1} << 16;

void widen(const std::uint16_t* src, std::int64_t n, float* dst) {
  for (std::int64_t k = 0; k < n; ++k) dst[k] = bf16_to_float(src[k]);
}
void narrow(const float* src, std::int64_t n, std::uint16_t* dst) {
  for (std::int64_t k = 0; k < n; ++k) dst[k] = float_to_bf16(src[k]);
}

// out = (a + b) / divisor, or a / divisor without b; A and O are float or bf16 storage.
float load(const float* p, std::int64_t k) { return p[k]; }
float load(const std::uint16_t* p, std::int64_t k) { return bf16_to_float(p[k]); }
void store(float* p, std::int64_t k, float v) { p[k] = v; }
void store(std::uint16_t* p, std::int64_t k, float v) { p[k] = float_to_bf16(v); }
template <class A, class O>
void add_divide_loop(std::int64_t n, const A* a, const float* b, float divisor, O* out) {
  if (b == nullptr) {
    for (std::int64_t k = 0; k < n; ++k) store(out, k, load(a, k) / divisor);
  } else {
    for (std::int64_t k = 0; k < n; ++k) store(out, k, (load(a, k) + b[k]) / divisor);
  }
}

// The kernels of a SIMD variant ("cpu-avx2", "cpu-avx512") when this build has them and the CPU and OS run them
// (__builtin_cpu_supports also checks that the OS saves the wider registers); nullptr otherwise.
const cpu::KernelTable* simd_table(std::string_view name) {
#if EDGC_KERNELS_HAVE_SIMD
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (name == "cpu-avx2") return avx2 ? edgc_kernels_cpu_avx2() : nullptr;
  if (name == "cpu-avx512") {
    const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
                        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                        __builtin_cpu_supports("avx512bw");
    return avx2 && avx512 ? edgc_kernels_cpu_avx512() : nullptr;
  }
#else
  static_cast<void>(name);
#endif
  return nullptr;
}

class CpuBackend final : public Backend {
 public:
  CpuBackend(std::string name, const cpu::KernelTable* table, int threads)
      : name_(std::move(name)), k_(table), pool_(threads) {}

  std::string_view name() const noexcept override { return name_; }
  std::string_view isa() const noexcept override { return k_->isa; }
  int threads() const noexcept override { return pool_.size(); }

  // Host memory: the "device" is the host.
  void* allocate(std::size_t bytes) override { return bytes == 0 ? nullptr : ::operator new(bytes, kAlign); }
  void deallocate(void* p) noexcept override {
    if (p != nullptr) ::operator delete(p, kAlign);
  }
  void copy_to_device(void* dst, const void* src, std::size_t bytes) override { copy(dst, src, bytes); }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override { copy(dst, src, bytes); }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (bytes > 0) std::memcpy(dst, src, bytes);
  }
  void memset(void* dst, int value, std::size_t bytes) override {
    if (bytes > 0) std::memset(dst, value, bytes);
  }

  void add_divide(std::int64_t n, const float* a, const float* b, float divisor, float* out) override {
    check_add_divide_args(n, a, out, divisor);
    add_divide_loop(n, a, b, divisor, out);
  }
  void add_divide(std::int64_t n, const std::uint16_t* a, const float* b, float divisor, float* out) override {
    check_add_divide_args(n, a, out, divisor);
    add_divide_loop(n, a, b, divisor, out);
  }
  void add_divide(std::int64_t n, const float* a, const float* b, float divisor, std::uint16_t* out) override {
    check_add_divide_args(n, a, out, divisor);
    add_divide_loop(n, a, b, divisor, out);
  }

  MomentSums moments(std::span<const float> x, std::span<const Block> blocks) const override {
    const Block whole{0, static_cast<std::int64_t>(x.size())};
    const std::span<const Block> sel = blocks.empty() ? std::span<const Block>(&whole, 1) : blocks;
    check_blocks("moments", x.size(), sel);
    return k_->moments(x.data(), sel.data(), static_cast<std::int64_t>(sel.size()));
  }

  void histogram(std::span<const float> x, std::span<const Block> blocks, double lo, double bin_width,
                 std::span<std::int64_t> counts, HistogramTails& tails) const override {
    check_histogram_layout(lo, bin_width);
    const Block whole{0, static_cast<std::int64_t>(x.size())};
    const std::span<const Block> sel = blocks.empty() ? std::span<const Block>(&whole, 1) : blocks;
    check_blocks("histogram", x.size(), sel);
    k_->histogram(x.data(), sel.data(), static_cast<std::int64_t>(sel.size()), lo, bin_width, counts.data(),
                  static_cast<std::int64_t>(counts.size()), &tails);
  }

  void gemm_batched(Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                    std::span<const float* const> a, std::span<const float* const> b, float beta,
                    std::span<float* const> c) override {
    check_gemm_args(m, n, k, a, b, c);
    if (m == 0 || n == 0) return;
    const bool ta = trans_a == Transpose::kYes;
    const bool tb = trans_b == Transpose::kYes;
    grow(scratch_, cpu::kScratchFloats * pool_.size());
    // Each thread takes the same band of rows of C in every matrix of the batch.
    pool_.run([&](int part) {
      const auto [row0, row1] = split_range(m, pool_.size(), part);
      if (row0 == row1) return;
      for (std::size_t i = 0; i < c.size(); ++i) {
        cpu::GemmArgs g;
        g.trans_a = ta;
        g.trans_b = tb;
        g.m = row1 - row0;
        g.n = n;
        g.k = k;
        g.alpha = alpha;
        g.a = ta ? a[i] + row0 : a[i] + row0 * k;  // op(A) rows are columns of a transposed A
        g.lda = ta ? m : k;
        g.b = b[i];
        g.ldb = tb ? k : n;
        g.beta = beta;
        g.c = c[i] + row0 * n;
        g.ldc = n;
        g.scratch = scratch_.data() + part * cpu::kScratchFloats;
        k_->gemm(g);
      }
    });
  }

  void orthogonalize_batched(std::int64_t rows, std::int64_t cols, std::span<float* const> p, float eps) override {
    check_orthogonalize_args(rows, cols, p, eps);
    const std::int64_t nf = cpu::orthogonalize_work_floats(rows, cols);
    const std::int64_t nd = cpu::orthogonalize_work_doubles(cols);
    const int parts = static_cast<int>(std::min<std::size_t>(p.size(), static_cast<std::size_t>(pool_.size())));
    grow(fwork_, nf * parts);
    grow(dwork_, nd * parts);
    // Matrices are dealt to threads round-robin; each thread has its own slice of scratch.
    pool_.run([&](int part) {
      for (std::size_t i = static_cast<std::size_t>(part); i < p.size(); i += static_cast<std::size_t>(pool_.size()))
        k_->orthogonalize(p[i], rows, cols, eps, fwork_.data() + part * nf, dwork_.data() + part * nd);
    });
  }

  void project_batched(std::int64_t m, std::int64_t n, std::int64_t r, std::span<const float* const> g,
                       std::span<float* const> e, std::span<const float* const> q, std::span<float* const> p,
                       std::span<double> m_sqnorm) override {
    check_project_args(m, n, r, g, e, q, p, m_sqnorm);
    const int parts = pool_.size();
    grow(partial_, static_cast<std::int64_t>(g.size()) * parts);
    grow(scratch_, cpu::kScratchFloats * parts);
    pool_.run([&](int part) {
      const auto [row0, row1] = split_range(m, parts, part);
      for (std::size_t i = 0; i < g.size(); ++i) {
        cpu::ProjectArgs a;
        a.scratch = scratch_.data() + part * cpu::kScratchFloats;
        a.rows = row1 - row0;
        a.n = n;
        a.r = r;
        a.g = g[i] + row0 * n;
        a.e = e.empty() ? nullptr : e[i] + row0 * n;
        a.q = q[i];
        a.p = p[i] + row0 * r;
        a.m_sqnorm = &partial_[i * static_cast<std::size_t>(parts) + static_cast<std::size_t>(part)];
        *a.m_sqnorm = 0.0;
        if (a.rows > 0) k_->project(a);
      }
    });
    sum_partials(m_sqnorm, parts);
  }

  void reconstruct_batched(std::int64_t m, std::int64_t n, std::int64_t r, std::span<const float* const> p,
                           std::span<const float* const> q, std::span<float* const> e, std::span<float* const> g,
                           std::span<double> err_sqnorm) override {
    check_reconstruct_args(m, n, r, p, q, e, g, err_sqnorm);
    const int parts = pool_.size();
    grow(partial_, static_cast<std::int64_t>(g.size()) * parts);
    grow(scratch_, cpu::kScratchFloats * parts);
    pool_.run([&](int part) {
      const auto [row0, row1] = split_range(m, parts, part);
      for (std::size_t i = 0; i < g.size(); ++i) {
        cpu::ReconstructArgs a;
        a.rows = row1 - row0;
        a.n = n;
        a.r = r;
        a.p = p[i] + row0 * r;
        a.q = q[i];
        a.e = e.empty() ? nullptr : e[i] + row0 * n;
        a.g = g[i] + row0 * n;
        a.scratch = scratch_.data() + part * cpu::kScratchFloats;
        a.err_sqnorm = &partial_[i * static_cast<std::size_t>(parts) + static_cast<std::size_t>(part)];
        *a.err_sqnorm = 0.0;
        if (a.rows > 0) k_->reconstruct(a);
      }
    });
    sum_partials(err_sqnorm, parts);
  }

  // bf16: each thread's band of rows goes through the float32 kernels in chunks widened into (or narrowed from)
  // a float32 buffer.
  void project_batched(std::int64_t m, std::int64_t n, std::int64_t r, std::span<const std::uint16_t* const> g,
                       std::span<float* const> e, std::span<const float* const> q, std::span<float* const> p,
                       std::span<double> m_sqnorm) override {
    check_project_args(m, n, r, g, e, q, p, m_sqnorm);
    check_bf16_feedback("project_batched", g.size(), e.size());
    for_each_bf16_chunk(m, n, m_sqnorm,
                        [&](std::size_t i, std::int64_t row, std::int64_t rows, float* tmp, float* scratch) {
                          widen(g[i] + row * n, rows * n, tmp);
                          cpu::ProjectArgs a;
                          a.scratch = scratch;
                          a.rows = rows;
                          a.n = n;
                          a.r = r;
                          a.g = tmp;
                          a.e = e[i] + row * n;
                          a.q = q[i];
                          a.p = p[i] + row * r;
                          double s = 0.0;
                          a.m_sqnorm = &s;
                          k_->project(a);
                          return s;
                        });
  }

  void reconstruct_batched(std::int64_t m, std::int64_t n, std::int64_t r, std::span<const float* const> p,
                           std::span<const float* const> q, std::span<float* const> e,
                           std::span<std::uint16_t* const> g, std::span<double> err_sqnorm) override {
    check_reconstruct_args(m, n, r, p, q, e, g, err_sqnorm);
    check_bf16_feedback("reconstruct_batched", g.size(), e.size());
    for_each_bf16_chunk(m, n, err_sqnorm,
                        [&](std::size_t i, std::int64_t row, std::int64_t rows, float* tmp, float* scratch) {
                          cpu::ReconstructArgs a;
                          a.rows = rows;
                          a.n = n;
                          a.r = r;
                          a.p = p[i] + row * r;
                          a.q = q[i];
                          a.e = e[i] + row * n;
                          a.g = tmp;  // receives Ĝ in float32, then rounded into G
                          a.scratch = scratch;
                          double s = 0.0;
                          a.err_sqnorm = &s;
                          k_->reconstruct(a);
                          narrow(tmp, rows * n, g[i] + row * n);
                          return s;
                        });
  }

 private:
  static std::int64_t chunk_rows(std::int64_t n) {
    return std::max<std::int64_t>(1, kConvertFloats / std::max<std::int64_t>(n, 1));
  }

  // Runs `chunk(i, row, rows, tmp, scratch) -> norm` over every matrix i of the batch in chunks of each thread's
  // band of rows (tmp: that thread's float32 conversion buffer), and adds the norms per matrix into `norms` in band
  // order.
  template <class Chunk>
  void for_each_bf16_chunk(std::int64_t m, std::int64_t n, std::span<double> norms, Chunk&& chunk) {
    const int parts = pool_.size();
    const std::int64_t rows_per_chunk = chunk_rows(n);
    grow(partial_, static_cast<std::int64_t>(norms.size()) * parts);
    grow(scratch_, cpu::kScratchFloats * parts);
    grow(convert_, rows_per_chunk * n * parts);
    pool_.run([&](int part) {
      const auto [row0, row1] = split_range(m, parts, part);
      float* tmp = convert_.data() + part * rows_per_chunk * n;
      float* scratch = scratch_.data() + part * cpu::kScratchFloats;
      for (std::size_t i = 0; i < norms.size(); ++i) {
        double sum = 0.0;
        for (std::int64_t row = row0; row < row1; row += rows_per_chunk)
          sum += chunk(i, row, std::min(rows_per_chunk, row1 - row), tmp, scratch);
        partial_[i * static_cast<std::size_t>(parts) + static_cast<std::size_t>(part)] = sum;
      }
    });
    sum_partials(norms, parts);
  }

  template <class T>
  static void grow(std::vector<T>& v, std::int64_t n) {
    if (static_cast<std::int64_t>(v.size()) < n) v.resize(static_cast<std::size_t>(n));
  }

  // Partial norms of the row bands, added in band order so the result does not depend on thread timing.
  void sum_partials(std::span<double> out, int parts) const {
    for (std::size_t i = 0; i < out.size(); ++i) {
      double s = 0.0;
      for (int t = 0; t < parts; ++t) s += partial_[i * static_cast<std::size_t>(parts) + static_cast<std::size_t>(t)];
      out[i] = s;
    }
  }

  std::string name_;
  const cpu::KernelTable* k_;
  ThreadPool pool_;
  std::vector<float> fwork_;
  std::vector<double> dwork_;
  std::vector<float> scratch_;  // kScratchFloats per thread
  std::vector<double> partial_;
  std::vector<float> convert_;  // bf16 rows widened, per thread
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(std::string_view name, const BackendOptions& options) {
  const cpu::KernelTable* table = nullptr;
  if (name == "cpu") {
    table = simd_table("cpu-avx512");
    if (table == nullptr) table = simd_table("cpu-avx2");
    if (table == nullptr) table = edgc_kernels_cpu_generic();
  } else if (name == "cpu-generic") {
    table = edgc_kernels_cpu_generic();
  } else if (name == "cpu-avx2" || name == "cpu-avx512") {
    table = simd_table(name);
    if (table == nullptr)
      throw ConfigError("", "backend", std::string(name) + " " + cpu_variant_unavailable_reason(name) + "; use cpu");
  } else {
    throw InternalError("make_cpu_backend: not a CPU backend name: " + std::string(name));
  }
  return std::make_unique<CpuBackend>(std::string(name), table, options.threads);
}

std::string cpu_variant_unavailable_reason(std::string_view name) {
  if (name == "cpu" || name == "cpu-generic" || simd_table(name) != nullptr) return "";
  if (name == "cpu-avx2") return "needs a build with the AVX2 kernels and a CPU with AVX2 and FMA";
  return "needs a build with the AVX-512 kernels and a CPU with AVX-512 F, CD, VL, DQ and BW (x86-64-v4)";
}

}  // namespace edgc::kernels::impl
