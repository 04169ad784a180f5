// CudaBackend: the Backend interface on one GPU. Argument checks and results mirror the CPU backend
// (cpu_backend.cpp); tensor data lives in device memory (see Backend::device_memory), the small arguments and
// results in host memory.
//
// Ownership (see CUDA-NOTES.md): the backend owns one non-blocking stream, one cuBLAS handle bound to it, and
// its workspace — device buffers that grow to the largest call seen and are never shrunk (growing synchronises
// the stream first, since queued work may still read the old buffer), plus pinned host staging for the small
// arguments (pointer arrays, block lists) with one event per staging slot so that a slot is not rewritten
// before its copy to the device has run. Nothing is allocated once the shapes repeat.
//
// Synchronisation: moments, histogram, project_batched and reconstruct_batched return results in host memory,
// so they wait for the backend's stream before returning. gemm_batched and orthogonalize_batched only queue
// their work; synchronize() or an event on native_stream() orders the caller after it.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "cuda_kernels.hpp"
#include "cuda_workspace.hpp"
#include "edgc/core/error.hpp"
#include "impl/backend_checks.hpp"
#include "impl/statistics_plan.hpp"

namespace edgc::kernels {
namespace cuda {

void throw_cuda_error(const char* call, const char* file, int line, const std::string& what) {
  throw CudaError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " + what);
}

}  // namespace cuda

namespace impl {
namespace {

using cuda::MomentPartial;
using cuda::Piece;
static_assert(cuda::kPieceElems == kStatisticsPieceElems, "the plan's pieces are the kernels' pieces");
static_assert(sizeof(cuda::Tile) == 3 * sizeof(std::uint64_t) && sizeof(Piece) == 2 * sizeof(std::uint64_t),
              "Tile and Piece are read from the plan's words");

// cuBLAS takes int dimensions and leading dimensions.
void check_int_dims(const char* what, std::int64_t a, std::int64_t b, std::int64_t c) {
  if (a > INT_MAX || b > INT_MAX || c > INT_MAX)
    throw InternalError(std::string(what) + ": dimension beyond cuBLAS's int range (" + std::to_string(a) + ", " +
                        std::to_string(b) + ", " + std::to_string(c) + ")");
}

void check_batch_size(const char* what, std::size_t batch) {
  if (batch > 65535)  // one grid row per matrix in the streaming kernels
    throw InternalError(std::string(what) + ": batch of " + std::to_string(batch) + " exceeds 65535");
}

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const BackendOptions& options)
      : device_(options.device),
        fused_project_max_rank_(std::min(options.fused_project_max_rank, cuda::kProjectWideRankMax)),
        cholesky_spread_max_rank_(std::min(options.cholesky_spread_max_rank, cuda::kCholeskySpreadRankMax)) {
    EDGC_CUDA_CHECK(cudaSetDevice(device_));
    cudaDeviceProp prop{};
    EDGC_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
    sms_ = prop.multiProcessorCount;
    isa_ = "sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + " " + prop.name;
    EDGC_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    EDGC_CUBLAS_CHECK(cublasCreate(&blas_));
    EDGC_CUBLAS_CHECK(cublasSetStream(blas_, stream_));
    // Pointer mode host (alpha, beta from host); default math mode: exact float32, no TF32, so results match
    // the CPU twin to float rounding.
    EDGC_CUBLAS_CHECK(cublasSetPointerMode(blas_, CUBLAS_POINTER_MODE_HOST));
    EDGC_CUBLAS_CHECK(cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH));
    for (cudaEvent_t& ev : slot_free_) EDGC_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    EDGC_CUDA_CHECK(cudaEventCreate(&timer_start_));
    EDGC_CUDA_CHECK(cudaEventCreate(&timer_stop_));
  }

  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  ~CudaBackend() override {
    // Errors are ignored here: a destructor cannot report them, and the device may already be in an error state.
    cudaStreamSynchronize(stream_);
    for (cudaEvent_t ev : slot_free_) cudaEventDestroy(ev);
    cudaEventDestroy(timer_start_);
    cudaEventDestroy(timer_stop_);
    cublasDestroy(blas_);
    cudaStreamDestroy(stream_);
  }

  std::string_view name() const noexcept override { return "cuda"; }
  std::string_view isa() const noexcept override { return isa_; }
  int threads() const noexcept override { return 1; }
  bool device_memory() const noexcept override { return true; }
  void synchronize() override { EDGC_CUDA_CHECK(cudaStreamSynchronize(stream_)); }
  void* native_stream() const noexcept override { return stream_; }

  // ---- statistics ----

  MomentSums moments(std::span<const float> x, std::span<const Block> blocks) const override {
    MomentSums out;
    statistics("moments", x, blocks, &out, nullptr);
    return out;
  }

  void histogram(std::span<const float> x, std::span<const Block> blocks, double lo, double bin_width,
                 std::span<std::int64_t> counts, HistogramTails& tails) const override {
    check_histogram_layout(lo, bin_width);
    const HistogramOut h{lo, bin_width, static_cast<std::int64_t>(counts.size()), counts, {&tails, 1}};
    statistics("histogram", x, blocks, nullptr, &h);
  }

  // One kernel, one read of the sampled elements and one round trip for both.
  MomentSums moments_and_histogram(std::span<const float> x, std::span<const Block> blocks, double lo, double bin_width,
                                   std::span<std::int64_t> counts, HistogramTails& tails) const override {
    check_histogram_layout(lo, bin_width);
    MomentSums out;
    const HistogramOut h{lo, bin_width, static_cast<std::int64_t>(counts.size()), counts, {&tails, 1}};
    statistics("moments_and_histogram", x, blocks, &out, &h);
    return out;
  }

  // Every tensor's selection in one kernel and one round trip (see batched_statistics).
  void moments_batched(std::span<const SampledTensor> tensors, std::span<MomentSums> out) const override {
    check_batch("moments_batched", tensors.size(), out.size(), "out");
    batched_statistics("moments_batched", tensors, out, nullptr);
  }

  void moments_and_histogram_batched(std::span<const SampledTensor> tensors, double lo, double bin_width,
                                     std::int64_t bins, std::span<MomentSums> moments, std::span<std::int64_t> counts,
                                     std::span<HistogramTails> tails) const override {
    check_histogram_batch("moments_and_histogram_batched", tensors.size(), moments.size(), bins, counts.size(),
                          tails.size(), lo, bin_width);
    const HistogramOut h{lo, bin_width, bins, counts, tails};
    batched_statistics("moments_and_histogram_batched", tensors, moments, &h);
  }

  // ---- dense linear algebra ----

  void gemm_batched(Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                    std::span<const float* const> a, std::span<const float* const> b, float beta,
                    std::span<float* const> c) override {
    check_gemm_args(m, n, k, a, b, c);
    check_int_dims("gemm_batched", m, n, k);
    if (m == 0 || n == 0 || c.empty()) return;
    set_device();
    Operand oa = operand_of(a, nullptr);
    Operand ob = operand_of(b, nullptr);
    Operand oc = operand_of(c, nullptr);
    if (!(oa.strided && ob.strided && oc.strided)) {
      staging_.clear();
      const std::size_t ia = staging_.add(a);
      const std::size_t ib = staging_.add(b);
      const std::size_t ic = staging_.add(c);
      auto* d = upload();
      oa.d_array = d + ia;
      ob.d_array = d + ib;
      oc.d_array = d + ic;
    }
    gemm(trans_a == Transpose::kYes, trans_b == Transpose::kYes, m, n, k, alpha, oa, ob, beta, oc,
         static_cast<int>(c.size()));
  }

  void orthogonalize_batched(std::int64_t rows, std::int64_t cols, std::span<float* const> p, float eps) override {
    check_orthogonalize_args(rows, cols, p, eps);
    check_int_dims("orthogonalize_batched", rows, cols, 0);
    check_batch_size("orthogonalize_batched", p.size());
    if (p.empty()) return;
    set_device();
    const int batch = static_cast<int>(p.size());
    staging_.clear();
    const std::size_t ip = staging_.add(p);
    auto* d_words = upload();
    auto* const* d_p = reinterpret_cast<float* const*>(d_words + ip);
    if (cols <= 2) {
      cuda::launch_gram_schmidt(batch, rows, cols, d_p, eps, stream_);
      EDGC_CUDA_CHECK_LAUNCH();
      return;
    }
    // Workspace: the gathered input W0, the results of the passes W1, W2 (W1 is reused by the third pass), the
    // Gram matrices, R⁻¹, the double scratch of the factorisation and the status flags of each pass.
    const std::int64_t count = rows * cols;
    const std::int64_t rr = cols * cols;
    const std::size_t nf = static_cast<std::size_t>(batch) * static_cast<std::size_t>(3 * count + 2 * rr);
    const std::size_t nd = static_cast<std::size_t>(batch) * static_cast<std::size_t>(2 * rr + cols);
    auto* fwork = static_cast<float*>(fwork_.grow(nf * sizeof(float), stream_));
    auto* dwork = static_cast<double*>(dwork_.grow(nd * sizeof(double), stream_));
    auto* flags = static_cast<int*>(flags_.grow(5 * static_cast<std::size_t>(batch) * sizeof(int), stream_));
    float* w0 = fwork;
    float* w1 = w0 + batch * count;
    float* w2 = w1 + batch * count;
    float* gram = w2 + batch * count;
    float* rinv = gram + batch * rr;
    int* ok1 = flags;
    int* ok2 = ok1 + batch;
    int* ok3 = ok2 + batch;
    int* third = ok3 + batch;
    cuda::launch_gather(batch, count, reinterpret_cast<const float* const*>(d_p), w0, stream_);
    EDGC_CUDA_CHECK_LAUNCH();
    // CholeskyQR2 as in the CPU twin: W1 = pass(W0), W2 = pass(W1), and a third pass W1 = pass(W2) for the
    // matrices whose second pass started far from orthonormal. The third pass's products run for the whole
    // batch (deciding on the host would cost a synchronisation; they are small next to a PowerSGD step) and
    // its factorisation only for the matrices that need it.
    cholesky_qr_pass(batch, rows, cols, w0, w1, gram, rinv, dwork, eps, nullptr, ok1, nullptr);
    cholesky_qr_pass(batch, rows, cols, w1, w2, gram, rinv, dwork, eps, nullptr, ok2, third);
    cholesky_qr_pass(batch, rows, cols, w2, w1, gram, rinv, dwork, eps, third, ok3, nullptr);
    cuda::launch_commit(batch, count, d_p, w2, w1, ok1, ok2, third, ok3, stream_);
    EDGC_CUDA_CHECK_LAUNCH();
  }

  void project_batched(std::int64_t m, std::int64_t n, std::int64_t r, std::span<const float* const> g,
                       std::span<float* const> e, std::span<const float* const> q, std::span<float* const> p,
                       std::span<double> m_sqnorm) override {
    project(m, n, r, g, e, q, p, m_sqnorm);
  }

  void project_batched(std::int64_t m, std::int64_t n, std::int64_t r, std::span<const std::uint16_t* const> g,
                       std::span<float* const> e, std::span<const float* const> q, std::span<float* const> p,
                       std::span<double> m_sqnorm) override {
    check_bf16_feedback("project_batched", g.size(), e.size());
    project(m, n, r, g, e, q, p, m_sqnorm);
  }

  void reconstruct_batched(std::int64_t m, std::int64_t n, std::int64_t r, std::span<const float* const> p,
                           std::span<const float* const> q, std::span<float* const> e, std::span<float* const> g,
                           std::span<double> err_sqnorm) override {
    check_reconstruct_args(m, n, r, p, q, e, g, err_sqnorm);
    check_int_dims("reconstruct_batched", m, n, r);
    check_batch_size("reconstruct_batched", g.size());
    if (g.empty()) return;
    set_device();
    const int batch = static_cast<int>(g.size());
    const std::int64_t count = m * n;
    const bool fused = count > 0 && m <= cuda::kLowRankMaxRows && fusable(n, r, cuda::kLowRankMax, g, e);
    const Staged d = stage_reconstruct(count, p, q, e, g, fused);
    const int ctas = fused ? cuda::lowrank_ctas(m, n) : ctas_per_matrix(count, batch);
    double* partials = nullptr;
    double* norms = norm_workspace(batch, ctas, partials);
    if (count == 0) {
      EDGC_CUDA_CHECK(cudaMemsetAsync(norms, 0, sizeof(double) * batch, stream_));
    } else if (fused) {
      // Ĝ = P·Qᵀ tile by tile beside one pass: with error feedback E ← E − Ĝ with ‖E‖² and G ← Ĝ; without, G − Ĝ into
      // the norm and G ← Ĝ.
      const float* const* d_m = e.empty() ? reinterpret_cast<const float* const*>(d.g) : d.e_in();
      reconstruct_in_tiles(batch, m, n, r, d, d_m, e.empty() ? nullptr : d.e_out(),
                           reinterpret_cast<float* const*>(d.g), ctas, partials, norms);
    } else if (!e.empty()) {
      // Ĝ = P·Qᵀ straight into G (k = r; r = 0 gives zeros), then E = M − Ĝ with ‖E‖² in one pass over E and G.
      gemm_or_zero(m, n, r, operand_of(p, d.p), operand_of(q, d.q), operand_of(g, d.g), g, batch);
      cuda::launch_subtract_norm(batch, count, d.e_in(), reinterpret_cast<const float* const*>(d.g), d.e_out(),
                                 static_cast<float* const*>(nullptr), ctas, partials, stream_);
      EDGC_CUDA_CHECK_LAUNCH();
      cuda::launch_sum_partials(batch, ctas, partials, norms, stream_);
      EDGC_CUDA_CHECK_LAUNCH();
    } else {
      // Without error feedback M is G itself: G − Ĝ into the norm, then G = Ĝ.
      reconstruct_through_workspace(m, n, r, p, q, d, reinterpret_cast<const float* const*>(d.g), nullptr,
                                    reinterpret_cast<float* const*>(d.g), partials, norms);
    }
    read_norms(norms, err_sqnorm);
  }

  void reconstruct_batched(std::int64_t m, std::int64_t n, std::int64_t r, std::span<const float* const> p,
                           std::span<const float* const> q, std::span<float* const> e,
                           std::span<std::uint16_t* const> g, std::span<double> err_sqnorm) override {
    check_reconstruct_args(m, n, r, p, q, e, g, err_sqnorm);
    check_bf16_feedback("reconstruct_batched", g.size(), e.size());
    check_int_dims("reconstruct_batched", m, n, r);
    check_batch_size("reconstruct_batched", g.size());
    if (g.empty()) return;
    set_device();
    const int batch = static_cast<int>(g.size());
    const std::int64_t count = m * n;
    const bool fused = count > 0 && m <= cuda::kLowRankMaxRows && fusable(n, r, cuda::kLowRankMax, g, e);
    const Staged d = stage_reconstruct(count, p, q, e, g, fused);
    const int ctas = fused ? cuda::lowrank_ctas(m, n) : ctas_per_matrix(count, batch);
    double* partials = nullptr;
    double* norms = norm_workspace(batch, ctas, partials);
    if (count == 0) {
      EDGC_CUDA_CHECK(cudaMemsetAsync(norms, 0, sizeof(double) * batch, stream_));
    } else if (fused) {
      // Ĝ = P·Qᵀ tile by tile beside one pass: E ← E − Ĝ with ‖E‖², G ← bf16(Ĝ).
      reconstruct_in_tiles(batch, m, n, r, d, d.e_in(), d.e_out(), reinterpret_cast<std::uint16_t* const*>(d.g), ctas,
                           partials, norms);
    } else {
      // Ĝ in float32 through workspace, then E = M − Ĝ with ‖E‖² and G = bf16(Ĝ) in one pass.
      reconstruct_through_workspace(m, n, r, p, q, d, d.e_in(), d.e_out(), reinterpret_cast<std::uint16_t* const*>(d.g),
                                    partials, norms);
    }
    read_norms(norms, err_sqnorm);
  }

  // ---- memory, timing, element-wise ----

  void* allocate(std::size_t bytes) override {
    if (bytes == 0) return nullptr;
    set_device();
    void* p = nullptr;
    EDGC_CUDA_CHECK(cudaMalloc(&p, bytes));
    return p;
  }
  void deallocate(void* p) noexcept override {
    if (p == nullptr) return;
    (void)cudaSetDevice(device_);
    (void)cudaFree(p);  // waits for the device; an error here cannot be handled by a destructor anyway
  }
  void copy_to_device(void* dst, const void* src, std::size_t bytes) override {
    if (bytes == 0) return;
    set_device();
    EDGC_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
    EDGC_CUDA_CHECK(cudaStreamSynchronize(stream_));  // `src` (pageable) may be reused on return
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    if (bytes == 0) return;
    set_device();
    EDGC_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
    EDGC_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (bytes == 0) return;
    set_device();
    EDGC_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
  }
  void memset(void* dst, int value, std::size_t bytes) override {
    if (bytes == 0) return;
    set_device();
    EDGC_CUDA_CHECK(cudaMemsetAsync(dst, value, bytes, stream_));
  }

  void start_timer() override {
    set_device();
    EDGC_CUDA_CHECK(cudaEventRecord(timer_start_, stream_));
    timing_ = true;
  }
  std::optional<double> stop_timer() override {
    if (!timing_) throw InternalError("cuda stop_timer: no start_timer before it");
    timing_ = false;
    EDGC_CUDA_CHECK(cudaEventRecord(timer_stop_, stream_));
    EDGC_CUDA_CHECK(cudaEventSynchronize(timer_stop_));
    float ms = 0.0F;
    EDGC_CUDA_CHECK(cudaEventElapsedTime(&ms, timer_start_, timer_stop_));
    return static_cast<double>(ms) * 1e-3;
  }

  void add_divide(std::int64_t n, const float* a, const float* b, float divisor, float* out) override {
    add_divide_impl(n, a, b, divisor, out);
  }
  void add_divide(std::int64_t n, const std::uint16_t* a, const float* b, float divisor, float* out) override {
    add_divide_impl(n, a, b, divisor, out);
  }
  void add_divide(std::int64_t n, const float* a, const float* b, float divisor, std::uint16_t* out) override {
    add_divide_impl(n, a, b, divisor, out);
  }

 private:
  void set_device() const { EDGC_CUDA_CHECK(cudaSetDevice(device_)); }

  // Where a call's histograms go: per tensor a row of `bins` counts and one tails entry, added to.
  struct HistogramOut {
    double lo, bin_width;
    std::int64_t bins;
    std::span<std::int64_t> counts;  // tensors × bins
    std::span<HistogramTails> tails;
  };

  // Device room for a statistics call's results (in partials_): `partials` partial sums (per CTA or tile), then what
  // comes back in one copy from `out` on: `tensors` sums, then with `h` every tensor's three tails and its bins,
  // zeroed on the stream. `back` ← the bytes of that copy.
  cuda::StatisticsResults device_results(std::size_t partials, std::size_t tensors, const HistogramOut* h,
                                         std::size_t& back) const {
    const std::size_t slots = h != nullptr ? tensors * (3 + static_cast<std::size_t>(h->bins)) : 0;
    back = sizeof(MomentPartial) * tensors + slots * sizeof(unsigned long long);
    const std::size_t room = sizeof(MomentPartial) * std::max<std::size_t>(partials, 1);
    auto* base = static_cast<unsigned char*>(partials_.grow(room + back, stream_));
    cuda::StatisticsResults r;
    r.partials = reinterpret_cast<MomentPartial*>(base);
    r.out = reinterpret_cast<MomentPartial*>(base + room);
    if (h != nullptr) {
      r.tails = reinterpret_cast<unsigned long long*>(base + room + sizeof(MomentPartial) * tensors);
      EDGC_CUDA_CHECK(cudaMemsetAsync(r.tails, 0, slots * sizeof(unsigned long long), stream_));
      r.counts = r.tails + 3 * tensors;
      r.num_bins = h->bins;
      r.lo = h->lo;
      r.bin_width = h->bin_width;
    }
    return r;
  }

  // Copies device_results' `back` bytes from `d_out` to the host (the first `skip` left out: sums not computed), waits,
  // and unpacks them: `moments` (one per tensor, or empty), and with `h` the histograms added to its rows.
  void read_results(const void* d_out, std::size_t back, std::size_t skip, std::size_t tensors,
                    std::span<MomentSums> moments, const HistogramOut* h) const {
    auto* host = static_cast<unsigned char*>(host_result_.grow(back));
    EDGC_CUDA_CHECK(cudaMemcpyAsync(host + skip, static_cast<const unsigned char*>(d_out) + skip, back - skip,
                                    cudaMemcpyDeviceToHost, stream_));
    EDGC_CUDA_CHECK(cudaStreamSynchronize(stream_));
    const auto* sums = reinterpret_cast<const MomentPartial*>(host);
    for (std::size_t t = 0; t < moments.size(); ++t) moments[t] = moment_sums_of(sums[t]);
    if (h != nullptr)
      add_histograms(reinterpret_cast<const unsigned long long*>(host + sizeof(MomentPartial) * tensors), h->counts,
                     h->tails);
  }

  // The sampled blocks (after the CPU backend's checks) as pieces of at most kPieceElems, uploaded; returns their
  // number and device copy. Blocks no longer than a piece (the sampled 4 KiB blocks) go up as they are, in one copy.
  std::pair<std::int64_t, const Piece*> upload_pieces(const char* what, std::span<const float> x,
                                                      std::span<const Block> blocks) const {
    static_assert(sizeof(Block) == sizeof(Piece) && offsetof(Block, offset) == offsetof(Piece, offset) &&
                  offsetof(Block, length) == offsetof(Piece, length));
    Block whole{};
    const std::span<const Block> sel = selection_of(SampledTensor{x, blocks}, whole);
    check_blocks(what, x.size(), sel);
    const std::int64_t pieces = pieces_of(sel);
    if (pieces == 0) return {0, nullptr};
    if (x.data() == nullptr) throw InternalError(std::string(what) + ": x is null");
    if (pieces == static_cast<std::int64_t>(sel.size()) &&
        std::none_of(sel.begin(), sel.end(), [](const Block& b) { return b.length == 0; }))
      return {pieces, reinterpret_cast<const Piece*>(upload(sel.data(), sel.size_bytes()))};
    staging_.clear();
    add_pieces(sel, staging_.mutable_words());
    return {pieces, reinterpret_cast<const Piece*>(upload())};
  }

  // Moments into `out` (and with `h` the histograms) of every tensor's selection, from one upload of their pieces,
  // one statistics kernel, one summing kernel and one result copy. The pieces are grouped into tiles of one tensor
  // each, of about as many pieces as make two tiles per CTA of a wave, so a stage of many small tensors still fills
  // the GPU; the same call gives the same bits (cuda_kernels.hpp, BatchedStatistics).
  void batched_statistics(const char* what, std::span<const SampledTensor> tensors, std::span<MomentSums> out,
                          const HistogramOut* h) const {
    if (tensors.empty()) return;
    if (tensors.size() > static_cast<std::size_t>(INT_MAX))
      throw InternalError(std::string(what) + ": " + std::to_string(tensors.size()) + " tensors exceed a grid");
    set_device();
    const BatchedPlan plan = plan_batched_statistics(
        what, tensors, 2 * static_cast<std::int64_t>(cuda::batched_statistics_wave()), cuda::kThreads / 32);
    const std::uint64_t* d_words = upload(plan.words.data(), plan.words.size() * sizeof(std::uint64_t));
    cuda::BatchedStatistics st;
    st.x = reinterpret_cast<const float* const*>(d_words);
    st.tile_begin = reinterpret_cast<const std::int64_t*>(d_words + plan.tile_begin_at());
    st.tiles = reinterpret_cast<const cuda::Tile*>(d_words + plan.tiles_at());
    st.pieces = reinterpret_cast<const Piece*>(d_words + plan.pieces_at());
    st.num_tiles = plan.tiles;
    st.num_tensors = static_cast<int>(tensors.size());
    std::size_t back = 0;
    st.results = device_results(static_cast<std::size_t>(plan.tiles), tensors.size(), h, back);
    cuda::launch_batched_statistics(st, stream_);
    EDGC_CUDA_CHECK_LAUNCH();
    read_results(st.results.out, back, 0, tensors.size(), out, h);
  }

  // Moments into `m` and/or the histogram into `h` of the sampled elements, from one kernel and one result copy.
  void statistics(const char* what, std::span<const float> x, std::span<const Block> blocks, MomentSums* m,
                  const HistogramOut* h) const {
    set_device();
    const auto [pieces, d_pieces] = upload_pieces(what, x, blocks);
    if (pieces == 0) return;
    const int grid = cuda::statistics_grid(pieces);
    cuda::Statistics st;
    st.x = x.data();
    st.pieces = d_pieces;
    st.num_pieces = pieces;
    st.grid = grid;
    std::size_t back = 0;
    st.results = device_results(static_cast<std::size_t>(grid), 1, h, back);
    const MomentPartial* d_out = st.results.out;
    if (m == nullptr) st.results.partials = st.results.out = nullptr;  // no moments: the histogram kernel alone
    cuda::launch_statistics(st, stream_);
    EDGC_CUDA_CHECK_LAUNCH();
    // Without moments only the histogram comes back.
    read_results(d_out, back, m != nullptr ? 0 : sizeof(MomentPartial), 1,
                 m != nullptr ? std::span(m, 1) : std::span<MomentSums>(), h);
  }

  // The per-matrix part of project_batched for float32 or bf16 gradients (the overloads check what differs).
  template <class G>
  void project(std::int64_t m, std::int64_t n, std::int64_t r, std::span<const G* const> g, std::span<float* const> e,
               std::span<const float* const> q, std::span<float* const> p, std::span<double> m_sqnorm) {
    check_project_args(m, n, r, g, e, q, p, m_sqnorm);
    check_int_dims("project_batched", m, n, r);
    check_batch_size("project_batched", g.size());
    if (g.empty()) return;
    set_device();
    const int batch = static_cast<int>(g.size());
    staging_.clear();
    const std::size_t ig = staging_.add(g);
    const std::size_t ie = e.empty() ? 0 : staging_.add(e);
    const std::size_t iq = staging_.add(q);
    const std::size_t ip = staging_.add(p);
    auto* d = upload();
    const auto* d_g = reinterpret_cast<const G* const*>(d + ig);
    auto* const* d_e = e.empty() ? nullptr : reinterpret_cast<float* const*>(d + ie);
    const std::int64_t count = m * n;
    if (count > 0 && r > 0 && fusable(n, r, fused_project_max_rank_, g, e)) {
      // One pass: M = G + E in place in E with ‖M‖², and P = M·Q from the same read of M (chunk sums, then P).
      const auto ri = static_cast<int>(r);
      const int ctas = cuda::project_ctas(m, n, ri, batch, !std::is_same_v<G, float>);
      double* partials = nullptr;
      double* norms = norm_workspace(batch, ctas, partials);
      const auto words = static_cast<std::size_t>(batch) * static_cast<std::size_t>(cuda::project_chunks(n, ri)) *
                         static_cast<std::size_t>(m * r);
      auto* pw = static_cast<float*>(pwork_.grow(words * sizeof(float), stream_));
      cuda::launch_add_project(batch, m, n, ri, d_g, d_e, reinterpret_cast<const float* const*>(d + iq), ctas, pw,
                               reinterpret_cast<float* const*>(d + ip), partials, stream_);
      EDGC_CUDA_CHECK_LAUNCH();
      cuda::launch_sum_partials(batch, ctas, partials, norms, stream_);
      EDGC_CUDA_CHECK_LAUNCH();
      read_norms(norms, m_sqnorm);
      return;
    }
    // Pass 1: M = G + E in place in E, with ‖M‖² (reads G and E, writes E).
    const int ctas = ctas_per_matrix(count, batch);
    double* partials = nullptr;
    double* norms = norm_workspace(batch, ctas, partials);
    if (count > 0) {
      cuda::launch_add_norm(batch, count, d_g, d_e, ctas, partials, stream_);
      EDGC_CUDA_CHECK_LAUNCH();
      cuda::launch_sum_partials(batch, ctas, partials, norms, stream_);
      EDGC_CUDA_CHECK_LAUNCH();
    } else {
      EDGC_CUDA_CHECK(cudaMemsetAsync(norms, 0, sizeof(double) * batch, stream_));
    }
    // Pass 2: P = M·Q through cuBLAS (reads M once more; at PowerSGD ranks the product is bound by that read).
    if (m > 0 && r > 0) {
      if (n == 0) {
        for (float* pb : p) EDGC_CUDA_CHECK(cudaMemsetAsync(pb, 0, sizeof(float) * m * r, stream_));
      } else {
        Operand om = operand_of<float>(e, d + ie);  // bf16: E holds M (required)
        if constexpr (std::is_same_v<G, float>) {
          if (e.empty()) om = operand_of(g, d + ig);
        }
        gemm(false, false, m, r, n, 1.0F, om, operand_of(q, d + iq), 0.0F, operand_of(p, d + ip), batch);
      }
    }
    read_norms(norms, m_sqnorm);
  }

  // Device copies of one reconstruct call's pointer arrays (word offsets into the uploaded staging), and the Ĝ
  // workspace of one matrix when the call needs it.
  struct Staged {
    std::uint64_t* p = nullptr;
    std::uint64_t* q = nullptr;
    std::uint64_t* e = nullptr;  // null without error feedback
    std::uint64_t* g = nullptr;  // float* or std::uint16_t* entries
    std::uint64_t* h = nullptr;  // one entry: ghat
    float* ghat = nullptr;
    const float* const* e_in() const { return reinterpret_cast<const float* const*>(e); }
    float* const* e_out() const { return reinterpret_cast<float* const*>(e); }
  };

  // Ĝ goes through workspace, one matrix at a time, unless it can go straight into float32 G while E holds M.
  template <class G>
  Staged stage_reconstruct(std::int64_t count, std::span<const float* const> p, std::span<const float* const> q,
                           std::span<float* const> e, std::span<G* const> g, bool in_tiles) {
    const bool workspace = !in_tiles && count > 0 && (!std::is_same_v<G, float> || e.empty());
    Staged s;
    if (workspace) s.ghat = static_cast<float*>(ghat_.grow(sizeof(float) * static_cast<std::size_t>(count), stream_));
    float* const one[1] = {s.ghat};
    staging_.clear();
    const std::size_t ip = staging_.add(p);
    const std::size_t iq = staging_.add(q);
    const std::size_t ie = e.empty() ? 0 : staging_.add(e);
    const std::size_t ig = staging_.add(g);
    const std::size_t ih = staging_.add(std::span<float* const>(one, workspace ? 1 : 0));
    std::uint64_t* d = upload();
    s.p = d + ip;
    s.q = d + iq;
    s.e = e.empty() ? nullptr : d + ie;
    s.g = d + ig;
    s.h = d + ih;
    return s;
  }

  // Whether a product can be computed beside the streaming pass over the m×n matrices: a rank up to max_r, and rows of
  // whole 4-element vectors on aligned matrices (true of cudaMalloc'd buffers of whole matrices with n % 4 == 0).
  template <class G>
  static bool fusable(std::int64_t n, std::int64_t r, int max_r, std::span<G* const> g, std::span<float* const> e) {
    if (r > max_r || n % 4 != 0) return false;
    const auto aligned = [](const void* x, std::size_t to) { return reinterpret_cast<std::uintptr_t>(x) % to == 0; };
    return std::all_of(g.begin(), g.end(), [&](G* x) { return aligned(x, 4 * sizeof(G)); }) &&
           std::all_of(e.begin(), e.end(), [&](float* x) { return aligned(x, 16); });
  }

  template <class C>
  void reconstruct_in_tiles(int batch, std::int64_t m, std::int64_t n, std::int64_t r, const Staged& d,
                            const float* const* d_m, float* const* d_diff, C* const* d_copy, int ctas, double* partials,
                            double* norms) {
    cuda::launch_lowrank_subtract(batch, m, n, static_cast<int>(r), reinterpret_cast<const float* const*>(d.p),
                                  reinterpret_cast<const float* const*>(d.q), d_m, d_diff, d_copy, partials, stream_);
    EDGC_CUDA_CHECK_LAUNCH();
    cuda::launch_sum_partials(batch, ctas, partials, norms, stream_);
    EDGC_CUDA_CHECK_LAUNCH();
  }

  // Per matrix b: Ĝ = P_b·Q_bᵀ into the workspace, then one pass d = M_b − Ĝ into the norm, diff_out_b ← d (when
  // given) and copy_to_b ← Ĝ (float32 or rounded to bf16).
  template <class C>
  void reconstruct_through_workspace(std::int64_t m, std::int64_t n, std::int64_t r, std::span<const float* const> p,
                                     std::span<const float* const> q, const Staged& d, const float* const* d_m,
                                     float* const* d_diff, C* const* d_copy, double* partials, double* norms) {
    const std::int64_t count = m * n;
    const int one_ctas = ctas_per_matrix(count, 1);
    float* const ghat_ptrs[1] = {d.ghat};
    for (std::size_t b = 0; b < p.size(); ++b) {
      gemm_or_zero(m, n, r, operand_of(p.subspan(b, 1), d.p + b), operand_of(q.subspan(b, 1), d.q + b),
                   strided_operand(d.ghat, 0), std::span<float* const>(ghat_ptrs), 1);
      cuda::launch_subtract_norm(1, count, d_m + b, reinterpret_cast<const float* const*>(d.h),
                                 d_diff == nullptr ? nullptr : d_diff + b, d_copy + b, one_ctas, partials, stream_);
      EDGC_CUDA_CHECK_LAUNCH();
      cuda::launch_sum_partials(1, one_ctas, partials, norms + b, stream_);
      EDGC_CUDA_CHECK_LAUNCH();
    }
  }

  // Per-CTA partial sums (batch × ctas) and the batch's norms after them, in one growing device buffer.
  double* norm_workspace(int batch, int ctas, double*& partials) {
    const std::size_t per = static_cast<std::size_t>(batch) * static_cast<std::size_t>(ctas);
    partials = static_cast<double*>(partials_.grow(sizeof(double) * (per + static_cast<std::size_t>(batch)), stream_));
    return partials + per;
  }

  template <class A, class O>
  void add_divide_impl(std::int64_t n, const A* a, const float* b, float divisor, O* out) {
    check_add_divide_args(n, a, out, divisor);
    if (n == 0) return;
    set_device();
    cuda::launch_add_divide(n, a, b, divisor, out, stream_);
    EDGC_CUDA_CHECK_LAUNCH();
  }

  // CTAs per matrix of a streaming pass: enough for about 8 CTAs per SM over the whole batch, none idle.
  int ctas_per_matrix(std::int64_t count, int batch) const {
    const std::int64_t by_size = std::max<std::int64_t>(1, count / (cuda::kThreads * 16));
    const std::int64_t by_gpu = std::max<std::int64_t>(1, (static_cast<std::int64_t>(sms_) * 8 + batch - 1) / batch);
    return static_cast<int>(std::min(by_size, by_gpu));
  }

  // Copies this call's staged words into a pinned slot and from there to the device; returns their device copy.
  std::uint64_t* upload() const {
    const std::vector<std::uint64_t>& w = staging_.words();
    return upload(w.data(), w.size() * sizeof(std::uint64_t));
  }

  // The same for `bytes` bytes of host memory (8-byte words).
  std::uint64_t* upload(const void* src, std::size_t bytes) const {
    const std::size_t room = std::max<std::size_t>(bytes, sizeof(std::uint64_t));
    const std::size_t s = next_slot_;
    next_slot_ = (next_slot_ + 1) % kSlots;
    // The slot's previous copy must have left before the slot is rewritten.
    EDGC_CUDA_CHECK(cudaEventSynchronize(slot_free_[s]));
    auto* h = static_cast<std::uint64_t*>(slots_[s].grow(room));
    if (bytes > 0) std::memcpy(h, src, bytes);
    auto* d = static_cast<std::uint64_t*>(args_.grow(room, stream_));
    EDGC_CUDA_CHECK(cudaMemcpyAsync(d, h, room, cudaMemcpyHostToDevice, stream_));
    EDGC_CUDA_CHECK(cudaEventRecord(slot_free_[s], stream_));
    return d;
  }

  void read_norms(const double* d_norms, std::span<double> out) const {
    auto* h = static_cast<double*>(host_result_.grow(sizeof(double) * out.size()));
    EDGC_CUDA_CHECK(cudaMemcpyAsync(h, d_norms, sizeof(double) * out.size(), cudaMemcpyDeviceToHost, stream_));
    EDGC_CUDA_CHECK(cudaStreamSynchronize(stream_));
    std::copy(h, h + out.size(), out.begin());
  }

  // Row-major C = alpha·op(A)·op(B) + beta·C as the column-major product Cᵀ = op(B)ᵀ·op(A)ᵀ.
  void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const Operand& a,
            const Operand& b, float beta, const Operand& c, int batch) {
    const auto im = static_cast<int>(m);
    const auto in = static_cast<int>(n);
    const auto ik = static_cast<int>(k);
    const int lda = std::max(1, ta ? im : ik);
    const int ldb = std::max(1, tb ? ik : in);
    const cublasOperation_t op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (a.strided && b.strided && c.strided) {
      EDGC_CUBLAS_CHECK(cublasSgemmStridedBatched(blas_, op_b, op_a, in, im, ik, &alpha, b.base, ldb, b.stride, a.base,
                                                  lda, a.stride, &beta, const_cast<float*>(c.base), in, c.stride,
                                                  batch));
    } else {
      if (a.d_array == nullptr || b.d_array == nullptr || c.d_array == nullptr)
        throw InternalError("cuda gemm: a batch that is not equally strided needs device pointer arrays");
      EDGC_CUBLAS_CHECK(cublasSgemmBatched(blas_, op_b, op_a, in, im, ik, &alpha,
                                           static_cast<const float* const*>(b.d_array), ldb,
                                           static_cast<const float* const*>(a.d_array), lda, &beta,
                                           static_cast<float* const*>(const_cast<void*>(c.d_array)), in, batch));
    }
  }

  // Ĝ = P·Qᵀ (m×n from m×r and n×r); r = 0 leaves zeros.
  void gemm_or_zero(std::int64_t m, std::int64_t n, std::int64_t r, const Operand& p, const Operand& q,
                    const Operand& out, std::span<float* const> out_ptrs, int batch) {
    if (r == 0) {
      for (float* o : out_ptrs) EDGC_CUDA_CHECK(cudaMemsetAsync(o, 0, sizeof(float) * m * n, stream_));
      return;
    }
    gemm(false, true, m, n, r, 1.0F, p, q, 0.0F, out, batch);
  }

  // One CholeskyQR pass over the gathered batch: dst = src·R⁻¹ with RᵀR = srcᵀsrc, equilibrated and shifted.
  void cholesky_qr_pass(int batch, std::int64_t rows, std::int64_t r, const float* src, float* dst, float* gram,
                        float* rinv, double* dwork, float eps, const int* gate, int* ok, int* third) {
    const long long stride = rows * r;
    gemm(true, false, r, r, rows, 1.0F, strided_operand(src, stride), strided_operand(src, stride), 0.0F,
         strided_operand(gram, r * r), batch);
    cuda::launch_cholesky_rinv(batch, r, gram, eps, gate, dwork, rinv, ok, third, cholesky_spread_max_rank_, stream_);
    EDGC_CUDA_CHECK_LAUNCH();
    gemm(false, false, rows, r, r, 1.0F, strided_operand(src, stride), strided_operand(rinv, r * r), 0.0F,
         strided_operand(dst, stride), batch);
  }

  static constexpr std::size_t kSlots = 4;

  int device_;
  int fused_project_max_rank_;    // BackendOptions::fused_project_max_rank, at most kProjectWideRankMax
  int cholesky_spread_max_rank_;  // BackendOptions::cholesky_spread_max_rank, at most kCholeskySpreadRankMax
  int sms_ = 1;
  std::string isa_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  // Workspace (mutable: the const statistics entries use it too; one thread at a time, as for the CPU backend).
  mutable Staging staging_;
  mutable std::array<PinnedBuffer, kSlots> slots_;
  mutable std::array<cudaEvent_t, kSlots> slot_free_{};
  mutable std::size_t next_slot_ = 0;
  mutable DeviceBuffer args_;
  mutable DeviceBuffer partials_;
  mutable PinnedBuffer host_result_;
  cudaEvent_t timer_start_ = nullptr;  // start_timer / stop_timer
  cudaEvent_t timer_stop_ = nullptr;
  bool timing_ = false;
  DeviceBuffer fwork_;
  DeviceBuffer dwork_;
  DeviceBuffer pwork_;  // the fused projection's per-chunk sums of P
  DeviceBuffer flags_;
  DeviceBuffer ghat_;
};

}  // namespace

std::string cuda_unavailable_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);  // initialises the driver, creates no context
  if (status != cudaSuccess) {
    cudaGetLastError();
    return std::string("no usable CUDA device (") + cudaGetErrorName(status) + ": " + cudaGetErrorString(status) + ")";
  }
  return count > 0 ? "" : "no CUDA device";
}

std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later runtime calls are not confused by it
    throw ConfigError("", "backend",
                      std::string("cuda: no usable CUDA device (") + cudaGetErrorName(status) + ": " +
                          cudaGetErrorString(status) + ")");
  }
  if (options.device < 0 || options.device >= count)
    throw ConfigError("", "device",
                      "cuda: device " + std::to_string(options.device) + " does not exist (" + std::to_string(count) +
                          " CUDA device(s))");
  return std::make_unique<CudaBackend>(options);
}

}  // namespace impl
}  // namespace edgc::kernels
