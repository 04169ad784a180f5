#pragma once
// The device kernels behind CudaBackend, as plain launch functions on raw device pointers. Nothing here throws
// or checks arguments: the backend validates them and checks each launch (EDGC_CUDA_CHECK_LAUNCH).
#include <cuda_runtime.h>

#include <cstdint>

namespace edgc::kernels::cuda {

/// A contiguous run of elements of the statistics' input; a sampled block is cut into pieces of at most
/// kPieceElems so that one large block (the whole tensor) still spreads over the whole GPU, a warp per piece.
struct Piece {
  std::int64_t offset;
  std::int64_t length;
};
inline constexpr std::int64_t kPieceElems = std::int64_t{1} << 13;

/// Per-CTA partial power sums and counts (moments), reduced in a fixed order so results repeat bit for bit.
struct MomentPartial {
  double s1, s2, s3, s4;
  long long count, nan, inf;
};

inline constexpr int kThreads = 256;  // threads per CTA of the streaming kernels

/// Bins in shared memory up to kSharedBins (one copy per warp while the copies fit in as much), in global memory
/// beyond.
inline constexpr std::int64_t kSharedBins = 8192;

/// Where a statistics kernel puts what it computes. Moments when `partials` is not null: partial sums (per CTA or per
/// tile) into `partials`, then `out` ← their sum per tensor in a fixed order. Histogram when `counts` is not null:
/// each tensor's row of `num_bins` counts and its three tails (below, above, non_finite) += its elements' histogram
/// (both zeroed by the caller), bins as the CPU twin computes them.
struct StatisticsResults {
  MomentPartial* partials = nullptr;
  MomentPartial* out = nullptr;
  unsigned long long* counts = nullptr;
  std::int64_t num_bins = 0;
  unsigned long long* tails = nullptr;
  double lo = 0.0;
  double bin_width = 1.0;
};

/// One read of the elements in `pieces` (one warp per piece, `grid` CTAs) for their moments, their histogram, or
/// both (one tensor's results; per-CTA partials, so the same grid gives the same bits with or without the
/// histogram).
struct Statistics {
  const float* x = nullptr;
  const Piece* pieces = nullptr;
  std::int64_t num_pieces = 0;
  int grid = 1;
  StatisticsResults results;
};
void launch_statistics(const Statistics& st, cudaStream_t stream);
/// The statistics kernels' grid for `num_pieces`: a warp per piece, at most one wave of the current device (the
/// CTAs then stride over the pieces). The same for all three kinds, so that the moments' bits do not depend on
/// whether the histogram came along.
int statistics_grid(std::int64_t num_pieces);

/// A run of pieces of one tensor of a batched statistics call: pieces [first, end) of the piece list, all of tensor
/// `tensor`.
struct Tile {
  std::int64_t first;
  std::int64_t end;
  std::int64_t tensor;
};

/// Moments (and with results.counts a histogram) of each of `num_tensors` tensors from one read of their pieces:
/// tensor t's elements are x[t] + piece.offset .. + piece.length for the pieces of its tiles, tile_begin[t] ..
/// tile_begin[t + 1) (tiles in tensor order, each a run of its tensor's pieces). One CTA per tile at a time (at most
/// one wave, striding over the tiles), a warp per piece: per-tile partials, then each tensor's sum in a fixed order,
/// so results repeat bit for bit and do not depend on the grid. x, pieces, tiles, tile_begin in device memory.
struct BatchedStatistics {
  const float* const* x = nullptr;
  const Piece* pieces = nullptr;
  const Tile* tiles = nullptr;
  std::int64_t num_tiles = 0;
  const std::int64_t* tile_begin = nullptr;
  int num_tensors = 0;
  StatisticsResults results;
};
void launch_batched_statistics(const BatchedStatistics& st, cudaStream_t stream);
/// The CTAs one wave of the batched statistics kernel holds on the current device (what the backend sizes its tiles
/// by: about two tiles per CTA of a wave).
int batched_statistics_wave();

/// For each matrix b of `count` elements: with `e`, e[b] += g[b] and partials ← ‖e[b]‖²; without, partials ←
/// ‖g[b]‖². partials is batch × ctas, CTA-major per matrix.
void launch_add_norm(int batch, std::int64_t count, const float* const* g, float* const* e, int ctas, double* partials,
                     cudaStream_t stream);
/// The same with bf16 gradients (widened exactly on load).
void launch_add_norm(int batch, std::int64_t count, const std::uint16_t* const* g, float* const* e, int ctas,
                     double* partials, cudaStream_t stream);

/// For each matrix b: d = m[b] − gh[b]; partials ← ‖d‖²; diff_out[b] ← d when diff_out is not null; copy_to[b]
/// ← gh[b] when copy_to is not null. (m and diff_out may alias.)
void launch_subtract_norm(int batch, std::int64_t count, const float* const* m, const float* const* gh,
                          float* const* diff_out, float* const* copy_to, int ctas, double* partials,
                          cudaStream_t stream);
/// The same copying Ĝ into bf16 gradients (rounded to nearest even).
void launch_subtract_norm(int batch, std::int64_t count, const float* const* m, const float* const* gh,
                          float* const* diff_out, std::uint16_t* const* copy_to, int ctas, double* partials,
                          cudaStream_t stream);

/// For each matrix b (m×n): M = G_b + E_b into E_b (M = G_b without E) with partials ← ‖M‖² (batch × ctas,
/// CTA-major per matrix, ctas = project_ctas(m, n, r, batch, bf16)), and P_b = M·Q_b (Q n×r, r ≤ kProjectWideRankMax)
/// from the same read of M: per column chunk into the workspace pw (batch × project_chunks(n, r) × m × r floats), then
/// added in chunk order into P_b. Requires n % 4 == 0 and G, E rows aligned to 4 elements. r ≤ kProjectRankMax: Q
/// through registers, a warp per 4 rows × kProjectChunk columns; above: Q staged in shared memory per chunk (64 KiB
/// per CTA), about one wave of CTAs shared by the batch (cuda_project.cu).
inline constexpr int kProjectRankMax = 4;
inline constexpr int kProjectWideRankMax = 32;
inline constexpr std::int64_t kProjectChunk = 2048;  // columns per warp at r ≤ kProjectRankMax
int project_chunks(std::int64_t n, int r);
int project_ctas(std::int64_t m, std::int64_t n, int r, int batch, bool bf16);
void launch_add_project(int batch, std::int64_t m, std::int64_t n, int r, const float* const* g, float* const* e,
                        const float* const* q, int ctas, float* pw, float* const* p, double* partials,
                        cudaStream_t stream);
void launch_add_project(int batch, std::int64_t m, std::int64_t n, int r, const std::uint16_t* const* g,
                        float* const* e, const float* const* q, int ctas, float* pw, float* const* p, double* partials,
                        cudaStream_t stream);

/// For each matrix b (m×n): Ĝ = P_b·Q_bᵀ (P m×r, Q n×r, r ≤ kLowRankMax) computed in tiles beside one pass d = M_b − Ĝ
/// into partials (batch × lowrank_ctas(m, n), CTA-major per matrix), diff_out_b ← d when given, copy_to_b ← Ĝ when
/// given (float32 or bf16). Ĝ never goes through memory. Requires n % 4 == 0 and M, diff_out and copy_to rows aligned
/// to 4 elements (16 bytes; 8 for bf16). M and diff_out may alias, and so may M and copy_to.
inline constexpr int kLowRankMax = 16;
inline constexpr std::int64_t kLowRankMaxRows = 65535LL * 32;  // one grid row of tiles per 32 rows
int lowrank_ctas(std::int64_t m, std::int64_t n);
void launch_lowrank_subtract(int batch, std::int64_t m, std::int64_t n, int r, const float* const* p,
                             const float* const* q, const float* const* mm, float* const* diff_out,
                             float* const* copy_to, double* partials, cudaStream_t stream);
void launch_lowrank_subtract(int batch, std::int64_t m, std::int64_t n, int r, const float* const* p,
                             const float* const* q, const float* const* mm, float* const* diff_out,
                             std::uint16_t* const* copy_to, double* partials, cudaStream_t stream);

/// out[k] ← (a[k] + b[k]) / divisor, or a[k] / divisor when b is null (Backend::add_divide); float32 or bf16 `a`
/// and `out`; `out` may alias `a` or `b`.
void launch_add_divide(std::int64_t n, const float* a, const float* b, float divisor, float* out, cudaStream_t stream);
void launch_add_divide(std::int64_t n, const std::uint16_t* a, const float* b, float divisor, float* out,
                       cudaStream_t stream);
void launch_add_divide(std::int64_t n, const float* a, const float* b, float divisor, std::uint16_t* out,
                       cudaStream_t stream);

/// out[b] ← Σ_c partials[b·ctas + c] in order c = 0, 1, …
void launch_sum_partials(int batch, int ctas, const double* partials, double* out, cudaStream_t stream);

/// Gram–Schmidt of the CPU twin for cols ≤ 2, in place, one CTA per matrix.
void launch_gram_schmidt(int batch, std::int64_t rows, std::int64_t cols, float* const* p, float eps,
                         cudaStream_t stream);

/// dst[b] (rows×cols, stride rows·cols) ← src[b] for b < batch (gather of the batch into workspace).
void launch_gather(int batch, std::int64_t count, const float* const* src, float* dst, cudaStream_t stream);

/// The small step of one CholeskyQR pass, one CTA per matrix: from the Gram matrix gram[b] (r×r, symmetric)
/// the equilibrated, shifted Cholesky factor in double (dwork: 2r² + r doubles per matrix) and R⁻¹ = D⁻¹·L⁻ᵀ in
/// float into rinv[b] (upper triangle, the rest zero). ok[b] ← 1 on success, 0 when the Gram matrix is not
/// finite or no shift made it positive definite. With `gate`, matrices with gate[b] == 0 are skipped (ok 0).
/// With `third`, third[b] ← whether another pass is needed (the input was far from orthonormal or the shift
/// had to grow). r ≤ min(spread_max_rank, kCholeskySpreadRankMax) takes the spread schedule (every thread on the
/// trailing update, one barrier per column), else a row of the update per warp; both give the same bits.
void launch_cholesky_rinv(int batch, std::int64_t r, const float* gram, float eps, const int* gate, double* dwork,
                          float* rinv, int* ok, int* third, int spread_max_rank, cudaStream_t stream);

/// The largest rank the spread Cholesky schedule takes (its entries per thread are fixed at compile time).
inline constexpr int kCholeskySpreadRankMax = 128;

/// p[b] ← the CholeskyQR2 result chosen as the CPU twin chooses it: untouched unless passes 1 and 2 worked;
/// then w3[b] when a third pass was needed and worked, else w2[b].
void launch_commit(int batch, std::int64_t count, float* const* p, const float* w2, const float* w3, const int* ok1,
                   const int* ok2, const int* third, const int* ok3, cudaStream_t stream);

}  // namespace edgc::kernels::cuda
