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
//  * NaN and Inf inputs are counted by the statistics kernels; the linear-algebra kernels propagate them.
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "edgc/core/block_sampling.hpp"
#include "edgc/kernels/histogram.hpp"
#include "edgc/kernels/moments.hpp"

namespace edgc::kernels {

/// Whether a GEMM operand is used as stored or transposed.
enum class Transpose { kNo, kYes };

class Backend {
 public:
  virtual ~Backend() = default;

  /// Name the backend was created by ("cpu", "cpu-generic", "cpu-avx2", later "cuda").
  virtual std::string_view name() const noexcept = 0;
  /// Instruction set or device the kernels run on ("sse2", "avx2+fma", ...), for reports.
  virtual std::string_view isa() const noexcept = 0;
  /// Worker threads each primitive may use (1 unless asked for more when the backend was made).
  virtual int threads() const noexcept = 0;

  /// Where the tensor data of every primitive must live. false (CPU backends): host memory. true ("cuda"):
  /// device memory of the backend's GPU (cudaMalloc'd or managed) for `x`, every matrix a batch points at
  /// (A, B, C, P, Q, G, E); the spans themselves — the pointer arrays, `blocks`, `counts`, `tails`, the norm
  /// outputs — stay in host memory.
  virtual bool device_memory() const noexcept { return false; }
  /// Blocks until all work this backend has queued is done. Host backends finish every call before returning;
  /// a device backend returns from gemm_batched and orthogonalize_batched once the work is queued on its stream.
  virtual void synchronize() {}
  /// The stream a device backend queues its work on (a cudaStream_t for "cuda"), null for host backends. For
  /// ordering the caller's own work after the backend's (events), never for destroying it.
  virtual void* native_stream() const noexcept { return nullptr; }

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
};

/// Options of make_backend.
struct BackendOptions {
  /// Worker threads per primitive (≥ 1). Large GEMMs and fused passes are split by rows or columns; the
  /// statistics kernels stay on one thread (they are measured per core). Results may differ in the last bits
  /// between thread counts, never between runs with the same count.
  int threads = 1;
  /// CUDA device ordinal ("cuda" only; ≥ 0).
  int device = 0;
};

/// Creates a backend by name: "cpu" (the fastest CPU kernels this machine runs: AVX2+FMA when the build has
/// them and the CPU supports them, else portable SSE2), "cpu-generic" (always the portable ones), "cpu-avx2", or
/// "cuda" (builds with CUDA; the GPU `options.device`, see device_memory()).
/// Throws ConfigError for an unknown name, a variant this build, CPU or machine lacks (no CUDA device), or
/// threads < 1.
std::unique_ptr<Backend> make_backend(std::string_view name, const BackendOptions& options = {});

}  // namespace edgc::kernels
