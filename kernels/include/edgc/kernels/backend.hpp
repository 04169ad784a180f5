#pragma once
// The kernel primitives edgc needs — sampled statistics of gradients and the dense linear algebra of PowerSGD —
// behind one interface, implemented for the CPU (Eigen) and, with the same signatures, for CUDA.
//
// Conventions of every primitive (CUB/cuBLAS style):
//  * sizes are in elements; matrices are row-major float32 and tightly packed (leading dimension = columns);
//  * all buffers are owned by the caller; a batch is a span of pointers to same-shape matrices (like
//    cublasSgemmBatched), so the matrices of one batch may live anywhere;
//  * no allocation on the hot path beyond scratch the backend object owns and reuses (it grows to the largest
//    shape seen), so one Backend object is used by one thread at a time; its const members are thread-safe;
//  * a violated precondition (mismatched batch spans, a block outside the data) is a caller bug and throws
//    edgc::InternalError; the kernels themselves never throw;
//  * NaN and Inf inputs are counted by the statistics kernels; the linear-algebra kernels propagate them;
//  * bf16 gradients are std::uint16_t bit patterns (the high half of a float32): converted exactly on load,
//    rounded to nearest even on store; factors (P, Q), error buffers and norms stay float32/double.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "edgc/core/block_sampling.hpp"
#include "edgc/kernels/histogram.hpp"
#include "edgc/kernels/moments.hpp"

namespace edgc::kernels {

/// One tensor of a batched statistics call: its values and the blocks selected from it (empty: all of them).
struct SampledTensor {
  std::span<const float> values;
  std::span<const Block> blocks;
};

/// Whether a GEMM operand is used as stored or transposed.
enum class Transpose { kNo, kYes };

class Backend {
 public:
  virtual ~Backend() = default;

  /// Name the backend was created by ("cpu", "cpu-generic", "cpu-avx2", "cpu-avx512", "cuda").
  virtual std::string_view name() const noexcept = 0;
  /// Instruction set or device the kernels run on ("sse2", "avx2+fma", "avx512", ...), for reports.
  virtual std::string_view isa() const noexcept = 0;
  /// Worker threads each primitive may use (1 unless asked for more when the backend was made).
  virtual int threads() const noexcept = 0;

  /// Where the tensor data of every primitive must live. false (CPU backends): host memory. true ("cuda"):
  /// device memory of the backend's GPU (cudaMalloc'd or managed) for `x`, every matrix a batch points at
  /// (A, B, C, P, Q, G, E); the spans themselves — the pointer arrays, `blocks`, `counts`, `tails`, the norm
  /// outputs — stay in host memory.
  virtual bool device_memory() const noexcept { return false; }
  /// Blocks until all work this backend has queued is done. Host backends finish every call before returning;
  /// a device backend returns from gemm_batched, orthogonalize_batched, copy, memset and add_divide once the work
  /// is queued on its stream.
  virtual void synchronize() {}
  /// The stream a device backend queues its work on (a cudaStream_t for "cuda"), null for host backends. For
  /// ordering the caller's own work after the backend's (events), never for destroying it.
  virtual void* native_stream() const noexcept { return nullptr; }

  // ---- memory of the kind device_memory() names (Buffer in buffer.hpp owns it) ----

  /// `bytes` of backend memory, 256-byte aligned, contents undefined; nullptr for 0 bytes. Host backends: host
  /// memory. Device backends: device memory of the backend's GPU (cudaMalloc). Throws std::bad_alloc (host) or
  /// CudaError (device) when none is left.
  virtual void* allocate(std::size_t bytes) = 0;
  /// Frees what allocate() returned (null is ignored). A device backend's free waits for the work using it.
  virtual void deallocate(void* p) noexcept = 0;
  /// Copies `bytes` from host memory `src` into backend memory `dst`, after the work queued before it; `src` may be
  /// reused on return (a device backend waits for the copy).
  virtual void copy_to_device(void* dst, const void* src, std::size_t bytes) = 0;
  /// Copies `bytes` from backend memory `src` into host memory `dst`, after the work queued before it; the data is
  /// in `dst` on return (a device backend waits for its stream).
  virtual void copy_to_host(void* dst, const void* src, std::size_t bytes) = 0;
  /// Copies `bytes` within backend memory (queued on a device backend's stream). No overlap.
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  /// Sets `bytes` of backend memory to the byte `value` (queued on a device backend's stream).
  virtual void memset(void* dst, int value, std::size_t bytes) = 0;

  // ---- timing ----

  /// Device-side timing of the work this backend queues between the two calls: start_timer() marks the backend's
  /// stream, stop_timer() marks it again, waits for that mark and returns the seconds between the marks (CUDA
  /// events). Host backends return nullopt: their work is done when a call returns, so the caller's clock is
  /// the measure. Not nested: a start_timer() replaces the previous one.
  virtual void start_timer() {}
  virtual std::optional<double> stop_timer() { return std::nullopt; }

  // ---- element-wise (the uncompressed path of PowerSGD) ----

  /// out[k] = (a[k] + b[k]) / divisor for k < n in float32, or a[k] / divisor when `b` is null (no addition, so
  /// −0 stays −0; a divisor of 1 is exact). All three in backend memory; `out` may be `a` or `b`, no other
  /// overlap. Queued on a device backend's stream. The overloads read a bf16 `a` or write a bf16 `out`.
  virtual void add_divide(std::int64_t n, const float* a, const float* b, float divisor, float* out) = 0;
  virtual void add_divide(std::int64_t n, const std::uint16_t* a, const float* b, float divisor, float* out) = 0;
  virtual void add_divide(std::int64_t n, const float* a, const float* b, float divisor, std::uint16_t* out) = 0;

  // ---- sampled statistics ----

  /// Power sums and non-finite counts over the elements of `x` inside `blocks` (offsets and lengths in
  /// elements, each block inside `x`; they need not be sorted; overlapping blocks count twice). Empty `blocks`
  /// means all of `x`.
  virtual MomentSums moments(std::span<const float> x, std::span<const Block> blocks) const = 0;

  /// Fixed-width histogram over the same selection of elements: bin i (0 ≤ i < counts.size()) counts the finite
  /// values with floor((x − lo) / bin_width) == i, computed in double. Values below `lo` go to tails.below, values
  /// at or past lo + counts.size()·bin_width to tails.above, NaN/Inf to tails.non_finite. Adds to `counts` and
  /// `tails` (zero them first for a fresh histogram). Requires bin_width > 0 and finite `lo`.
  virtual void histogram(std::span<const float> x, std::span<const Block> blocks, double lo, double bin_width,
                         std::span<std::int64_t> counts, HistogramTails& tails) const = 0;

  /// moments() and histogram() of the same selection, with the same results; a backend may compute both from one
  /// read of the elements (CUDA: one kernel and one round trip to the host). The default calls the two.
  virtual MomentSums moments_and_histogram(std::span<const float> x, std::span<const Block> blocks, double lo,
                                           double bin_width, std::span<std::int64_t> counts,
                                           HistogramTails& tails) const {
    const MomentSums m = moments(x, blocks);
    histogram(x, blocks, lo, bin_width, counts, tails);
    return m;
  }

  /// moments() of every tensor from one call: out[i] = moments(tensors[i].values, tensors[i].blocks). What a
  /// pipeline stage's entropy measurement makes per sampled iteration (stage_entropy.hpp): a device backend reads
  /// all the tensors' selections in one kernel and returns in one round trip, instead of one of each per tensor.
  /// Host backends give the single calls' bits; a device backend may sum in another order (the last bits of the
  /// double sums). `out` has one entry per tensor; its entries are overwritten.
  virtual void moments_batched(std::span<const SampledTensor> tensors, std::span<MomentSums> out) const;

  /// moments_and_histogram() of every tensor from one call, each tensor's histogram in its own row: row i of
  /// `counts` (tensors.size() rows of `bins` counts, row-major) and tails[i] get tensor i's bins and tails added,
  /// moments[i] its moments (overwritten). The same bins as the single calls; moments as moments_batched.
  virtual void moments_and_histogram_batched(std::span<const SampledTensor> tensors, double lo, double bin_width,
                                             std::int64_t bins, std::span<MomentSums> moments,
                                             std::span<std::int64_t> counts, std::span<HistogramTails> tails) const;

  // ---- dense linear algebra over batches of same-shape row-major matrices ----

  /// For each b: C_b = alpha·op(A_b)·op(B_b) + beta·C_b, with op(A_b) m×k, op(B_b) k×n and C_b m×n. A_b is
  /// stored m×k (kNo) or k×m (kYes), likewise B_b. With beta == 0, C_b is not read (may hold garbage).
  virtual void gemm_batched(Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                            float alpha, std::span<const float* const> a, std::span<const float* const> b, float beta,
                            std::span<float* const> c) = 0;

  /// Orthonormalises the columns of each rows×cols matrix P_b in place (rows ≥ cols ≥ 1), keeping their span:
  /// Gram–Schmidt (the second column projected out twice) for cols ≤ 2, CholeskyQR2 otherwise, in float32 with
  /// the Cholesky factor of the small Gram matrix in double. The Gram matrix is equilibrated (scaled to unit
  /// diagonal) so columns of very different length — a warm-started P holds σ_i·u_i — cost no accuracy, and
  /// shifted by `eps` (≥ 0, relative: Gram–Schmidt divides each column by √(‖col‖² + eps·‖original col‖²)).
  /// The shift keeps all-zero and linearly dependent columns finite (they come out zero or short, never NaN) at
  /// the price of a deviation of about eps from orthonormality; a third pass runs when the second one starts
  /// far from orthonormal.
  virtual void orthogonalize_batched(std::int64_t rows, std::int64_t cols, std::span<float* const> p, float eps) = 0;

  // ---- the fused halves of a PowerSGD step with error feedback (m×n gradients, rank r) ----

  /// Projection: with error feedback (`e` not empty) first E_b += G_b, so E_b holds M_b = G_b + E_b; without it
  /// M_b = G_b. Then P_b = M_b·Q_b (Q_b n×r, P_b m×r) and m_sqnorm[b] = ‖M_b‖²_F (double accumulation).
  /// The addition and the norm take one pass over G and E; at small r the product rides along row by row, at
  /// larger r it reads M once more (a GEMM is then compute-bound anyway).
  virtual void project_batched(std::int64_t m, std::int64_t n, std::int64_t r, std::span<const float* const> g,
                               std::span<float* const> e, std::span<const float* const> q, std::span<float* const> p,
                               std::span<double> m_sqnorm) = 0;

  /// Reconstruction: Ĝ_b = P_b·Q_bᵀ; with error feedback (`e` not empty, E_b holding M_b from project_batched)
  /// E_b = M_b − Ĝ_b, otherwise M_b is read from G_b. Then G_b = Ĝ_b and err_sqnorm[b] = ‖M_b − Ĝ_b‖²_F.
  /// Ĝ is formed tile by tile in cache, so M is read once and G and E written once (G with streaming stores).
  virtual void reconstruct_batched(std::int64_t m, std::int64_t n, std::int64_t r, std::span<const float* const> p,
                                   std::span<const float* const> q, std::span<float* const> e,
                                   std::span<float* const> g, std::span<double> err_sqnorm) = 0;

  /// project_batched with bf16 gradients G (converted exactly on load) and float32 E, Q, P. Error feedback
  /// storage is required (`e` has one float32 matrix per gradient): M = G + E must be float32 for the products
  /// (PowerSgd without error feedback passes zeroed buffers). Otherwise as the float32 overload.
  virtual void project_batched(std::int64_t m, std::int64_t n, std::int64_t r, std::span<const std::uint16_t* const> g,
                               std::span<float* const> e, std::span<const float* const> q, std::span<float* const> p,
                               std::span<double> m_sqnorm) = 0;

  /// reconstruct_batched into bf16 gradients: Ĝ_b = P_b·Q_bᵀ in float32, E_b = M_b − Ĝ_b (float32, `e` required
  /// as above), G_b = Ĝ_b rounded to nearest even, err_sqnorm[b] = ‖M_b − Ĝ_b‖²_F of the unrounded Ĝ (the
  /// rounding is the gradient's own storage precision and is not fed back into E).
  virtual void reconstruct_batched(std::int64_t m, std::int64_t n, std::int64_t r, std::span<const float* const> p,
                                   std::span<const float* const> q, std::span<float* const> e,
                                   std::span<std::uint16_t* const> g, std::span<double> err_sqnorm) = 0;
};

/// Options of make_backend.
struct BackendOptions {
  /// Worker threads per primitive (≥ 1). Large GEMMs and fused passes are split by rows or columns; the
  /// statistics kernels stay on one thread (they are measured per core). Results may differ in the last bits
  /// between thread counts, never between runs with the same count.
  int threads = 1;
  /// CUDA device ordinal ("cuda" only; ≥ 0).
  int device = 0;
  /// Largest rank at which "cuda"'s project_batched forms P = M·Q inside the pass that adds G to E (one read of M
  /// instead of two); above it that pass runs alone and P comes from cuBLAS. ≥ 0; values above 32, the largest rank
  /// the fused kernels take, act as 32; 4 keeps only the register kernel of r ≤ 4, 0 never fuses. Results agree to
  /// float rounding either way; the CPU backends ignore it. Meant for timing one path against the other.
  int fused_project_max_rank = 32;
  /// Largest rank at which "cuda"'s orthogonalisation factorises each Gram matrix with every thread of its CTA on
  /// the trailing update (one barrier per column) instead of a row of the update per warp. ≥ 0; values above 128
  /// act as 128; 0 keeps the row-per-warp schedule. Both schedules give the same bits; the CPU backends ignore it.
  /// Meant for timing one schedule against the other.
  int cholesky_spread_max_rank = 0;
};

/// Creates a backend by name: "cpu" (the fastest CPU kernels this machine runs: AVX-512, else AVX2+FMA, where the
/// build has them and the CPU supports them, else portable SSE2), "cpu-generic" (always the portable ones),
/// "cpu-avx2", "cpu-avx512", or
/// "cuda" (builds with CUDA; the GPU `options.device`, see device_memory()).
/// Throws ConfigError for an unknown name, a variant this build, CPU or machine lacks (no CUDA device), or
/// threads < 1.
std::unique_ptr<Backend> make_backend(std::string_view name, const BackendOptions& options = {});

/// Why make_backend(name) cannot work in this program on this machine, or an empty string when it can (as far
/// as can be told without creating it): "cuda" in a program that does not link edgc::kernels_cuda, or on a
/// machine without a usable CUDA device; "cpu-avx2" or "cpu-avx512" without that instruction set; an unknown name.
/// Creates no CUDA context.
std::string backend_unavailable_reason(std::string_view name);

}  // namespace edgc::kernels
