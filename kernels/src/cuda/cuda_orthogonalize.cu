// The small per-matrix steps of the orthogonalisation on the device (Backend::orthogonalize_batched): Gram–Schmidt
// for up to two columns, and for CholeskyQR2 the gather, the equilibrated and shifted Cholesky with R⁻¹ in double,
// one CTA per matrix, and the commit of what the CPU twin would keep. The Gram matrices and the products with R⁻¹
// go through cuBLAS (backend).
#include <cub/block/block_reduce.cuh>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "cuda_common.cuh"
#include "cuda_kernels.hpp"
#include "impl/triangle_order.hpp"

namespace edgc::kernels::cuda {
namespace {

struct MaxOp {
  __device__ double operator()(double a, double b) const { return fmax(a, b); }
};

// Σ_i p[i·cols + c1]·p[i·cols + c2] in double over the CTA, broadcast to every thread.
__device__ double column_dot(const float* p, std::int64_t rows, std::int64_t cols, int c1, int c2) {
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  __shared__ double result;
  double s = 0.0;
  for (std::int64_t i = threadIdx.x; i < rows; i += blockDim.x)
    s += static_cast<double>(p[i * cols + c1]) * p[i * cols + c2];
  const double total = Reduce(tmp).Sum(s);
  if (threadIdx.x == 0) result = total;
  __syncthreads();
  const double r = result;
  __syncthreads();  // `tmp` and `result` are reused by the next call
  return r;
}

__device__ void scale_column(float* p, std::int64_t rows, std::int64_t cols, int c, double factor) {
  const auto f = static_cast<float>(factor);
  for (std::int64_t i = threadIdx.x; i < rows; i += blockDim.x) p[i * cols + c] *= f;
  __syncthreads();
}

__global__ void __launch_bounds__(kThreads)
    gram_schmidt_kernel(std::int64_t rows, std::int64_t cols, float* const* pp, float eps) {
  float* p = pp[blockIdx.x];
  const auto e = static_cast<double>(eps);
  const double n0 = column_dot(p, rows, cols, 0, 0);
  scale_column(p, rows, cols, 0, 1.0 / sqrt(n0 * (1.0 + e) + FLT_MIN));
  if (cols < 2) return;
  const double n1 = column_dot(p, rows, cols, 1, 1);
  for (int pass = 0; pass < 2; ++pass) {
    const auto dot = static_cast<float>(column_dot(p, rows, cols, 0, 1));
    for (std::int64_t i = threadIdx.x; i < rows; i += blockDim.x) p[i * 2 + 1] -= dot * p[i * 2];
    __syncthreads();
  }
  scale_column(p, rows, cols, 1, 1.0 / sqrt(column_dot(p, rows, cols, 1, 1) + e * n1 + FLT_MIN));
}

__global__ void __launch_bounds__(kThreads) gather_kernel(std::int64_t count, const float* const* src, float* dst) {
  const float* s = src[blockIdx.y];
  float* d = dst + static_cast<std::int64_t>(blockIdx.y) * count;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    d[i] = s[i];
}

constexpr int kSmallThreads = 512;

// The lower triangle of w (leading dimension ld) ← D⁻¹·G·D⁻¹ + shift·I from the lower triangle of the r×r Gram
// matrix, a row per warp; then a barrier. Both Cholesky schedules start here.
__device__ void load_scaled_gram(const float* gram, const double* d, std::int64_t r, std::int64_t ld, double shift,
                                 double* w) {
  const auto warp = static_cast<std::int64_t>(threadIdx.x / 32);
  const auto lane = static_cast<std::int64_t>(threadIdx.x % 32);
  const std::int64_t warps = blockDim.x / 32;
  for (std::int64_t i = warp; i < r; i += warps)
    for (std::int64_t k = lane; k <= i; k += 32) {
      const double v = static_cast<double>(gram[i * r + k]) / (d[i] * d[k]);
      w[i * ld + k] = i == k ? v + shift : v;
    }
  __syncthreads();
}

// Zeroes the strict lower triangle of w (where both L⁻¹ schedules build up their sums); then a barrier.
__device__ void clear_strict_lower(std::int64_t r, std::int64_t ld, double* w) {
  const auto warp = static_cast<std::int64_t>(threadIdx.x / 32);
  const auto lane = static_cast<std::int64_t>(threadIdx.x % 32);
  const std::int64_t warps = blockDim.x / 32;
  for (std::int64_t i = warp; i < r; i += warps)
    for (std::int64_t j = lane; j < i; j += 32) w[i * ld + j] = 0.0;
  __syncthreads();
}

// The CPU twin's cholesky() of D⁻¹·G·D⁻¹ + shift·I = L·Lᵀ, computed right-looking in w (leading dimension ld): the
// lower triangle starts as the scaled, shifted Gram matrix; at step j every thread takes the square root of the
// pivot (the same bits everywhere, so every thread sees the same failure), column j is divided by it into row j of
// the upper triangle, and after a barrier every entry to the right of column j and below row j takes its term
// −L[i][j]·L[k][j]. Each entry thus takes its terms in the order k = 0, 1, … and its division last: the CPU's
// (left-looking) arithmetic per entry, in a parallel schedule. On return L[i][j] (i > j) is w[j][i] and L[j][j] is
// diag[j]. (A chain of r² dependent multiply-adds, one thread per column, took 185 µs at r = 64 on an H100.)
__device__ bool cholesky(const float* gram, const double* d, std::int64_t r, std::int64_t ld, double shift, double* w,
                         double* diag) {
  const auto warp = static_cast<std::int64_t>(threadIdx.x / 32);
  const auto lane = static_cast<std::int64_t>(threadIdx.x % 32);
  const std::int64_t warps = blockDim.x / 32;
  load_scaled_gram(gram, d, r, ld, shift, w);
  for (std::int64_t j = 0; j < r; ++j) {
    const double v = w[j * ld + j];
    if (!(v > 0.0) || !isfinite(v)) {
      __syncthreads();  // everyone has read the pivot before a retry rewrites w
      return false;
    }
    const double ljj = sqrt(v);
    if (threadIdx.x == 0) diag[j] = ljj;
    for (std::int64_t i = j + 1 + threadIdx.x; i < r; i += blockDim.x) w[j * ld + i] = w[i * ld + j] / ljj;
    __syncthreads();
    const double* lj = w + j * ld;  // row j of the upper triangle: L[·][j]
    for (std::int64_t i = j + 1 + warp; i < r; i += warps) {
      const double lij = lj[i];
      double* wi = w + i * ld;
      for (std::int64_t k = j + 1 + lane; k <= i; k += 32) wi[k] = fma(-lij, lj[k], wi[k]);
    }
    __syncthreads();
  }
  return true;
}

// X = L⁻¹ (L as cholesky() leaves it) with the CPU twin's arithmetic: X[i][i] = 1 / L[i][i], and for j < i, X[i][j] =
// −(Σ_{k=j}^{i−1} L[i][k]·X[k][j]) / L[i][i] summed in that order. Right-looking: at step k row k of X is final (every
// warp derives X[k][j] from its sum, the same bits everywhere) and every row below adds its term L[i][k]·X[k][j].
// The sums build up in the lower triangle of w; X[k][j] (j < k) is kept at w[j][k], where L[k][j] was read for the
// last time at step j, and X's diagonal in xd.
__device__ void invert_lower(std::int64_t r, std::int64_t ld, double* w, const double* diag, double* xd) {
  const auto warp = static_cast<std::int64_t>(threadIdx.x / 32);
  const auto lane = static_cast<std::int64_t>(threadIdx.x % 32);
  const std::int64_t warps = blockDim.x / 32;
  clear_strict_lower(r, ld, w);
  for (std::int64_t k = 0; k < r; ++k) {
    const double lkk = diag[k];
    const double* lk = w + k * ld;  // L[i][k] for i > k
    for (std::int64_t j = warp; j <= k; j += warps) {
      const double xkj = j == k ? 1.0 / lkk : -w[k * ld + j] / lkk;
      for (std::int64_t i = k + 1 + lane; i < r; i += 32) w[i * ld + j] = fma(lk[i], xkj, w[i * ld + j]);
      if (lane == 0) {
        if (j == k) {
          xd[k] = xkj;
        } else {
          w[j * ld + k] = xkj;
        }
      }
    }
    __syncthreads();
  }
}

// The spread schedule of the same two factorisations (BackendOptions::cholesky_spread_max_rank, r ≤
// kCholeskySpreadRankMax): the row-per-warp schedule above leaves each warp a few rows of the trailing update, one
// dependent shared-memory read-modify-write after another, and spends a second barrier per column on the division.
// Here every thread of the CTA takes its own entries of the trailing triangle (at most ⌈r(r − 1)/2 / 512⌉, fixed for
// the whole factorisation), reads them (up to kSpreadChunk at a time), then writes them, and divides the two L entries
// it needs itself (IEEE division, so every thread gets the bits the row-per-warp schedule stores): one barrier per
// column. Each entry still takes its terms in the order k = 0, 1, … with the same expressions, so both schedules give
// the same bits. The updates are written as explicit fma in both schedules: ptxas fuses a − b·c anyway, but a driver
// compiling the embedded PTX for a newer GPU would then be free to decide differently for the two kernels.

// Entries a thread keeps in flight at once (a bound on registers at r > 64: 16 entries per thread).
constexpr int kSpreadChunk = 8;

template <int kPer>
__device__ bool cholesky_spread(const float* gram, const double* d, int r, int ld, double shift, double* w,
                                double* diag) {
  const int t = static_cast<int>(threadIdx.x);
  int cell[kPer];
#pragma unroll
  for (int s = 0; s < kPer; ++s) {
    const int e = t + s * kSmallThreads;
    const impl::TriangleCell c =
        e < impl::trailing_entries(0, r) ? impl::trailing_cell(e, r) : impl::TriangleCell{0, 0};
    cell[s] = c.row << 16 | c.col;  // row · 2¹⁶ + column
  }
  load_scaled_gram(gram, d, r, ld, shift, w);
  for (int j = 0; j < r; ++j) {
    const double v = w[j * ld + j];
    if (!(v > 0.0) || !isfinite(v)) {
      __syncthreads();  // everyone has read the pivot before a retry rewrites w
      return false;
    }
    const double ljj = sqrt(v);
    if (t == 0) diag[j] = ljj;
    if (j + 1 + t < r) w[j * ld + j + 1 + t] = w[(j + 1 + t) * ld + j] / ljj;  // L[·][j] into row j
    // A thread's entries in chunks of kSpreadChunk: all reads of a chunk in flight together, then its writes.
    const int live = impl::trailing_entries(j, r);
#pragma unroll
    for (int s0 = 0; s0 < kPer; s0 += kSpreadChunk) {
      double next[kSpreadChunk];
#pragma unroll
      for (int s = s0; s < s0 + kSpreadChunk; ++s) {
        next[s - s0] = 0.0;
        if (s < kPer && t + s * kSmallThreads < live) {
          const int i = cell[s] >> 16;
          const int k = cell[s] & 0xffff;
          const double lij = w[i * ld + j] / ljj;
          const double lkj = w[k * ld + j] / ljj;
          next[s - s0] = fma(-lij, lkj, w[i * ld + k]);
        }
      }
#pragma unroll
      for (int s = s0; s < s0 + kSpreadChunk; ++s)
        if (s < kPer && t + s * kSmallThreads < live) w[(cell[s] >> 16) * ld + (cell[s] & 0xffff)] = next[s - s0];
    }
    __syncthreads();
  }
  return true;
}

// invert_lower's sums, spread: at step k the rectangle of entries (i > k, j ≤ k) that take a term, at most
// ⌈⌊r²/4⌋ / 512⌉ per thread, each thread deriving X[k][j] itself; thread j stores X[k][j].
template <int kPer>
__device__ void invert_lower_spread(int r, int ld, double* w, const double* diag, double* xd) {
  const int t = static_cast<int>(threadIdx.x);
  clear_strict_lower(r, ld, w);
  for (int k = 0; k < r; ++k) {
    const double lkk = diag[k];
    const int width = k + 1;
    const int live = (r - 1 - k) * width;
    if (t <= k) {
      const double xkj = t == k ? 1.0 / lkk : -w[k * ld + t] / lkk;
      if (t == k) {
        xd[k] = xkj;
      } else {
        w[t * ld + k] = xkj;
      }
    }
#pragma unroll
    for (int s0 = 0; s0 < kPer; s0 += kSpreadChunk) {
      double next[kSpreadChunk];
      int at[kSpreadChunk];
#pragma unroll
      for (int s = s0; s < s0 + kSpreadChunk; ++s) {
        const int e = t + s * kSmallThreads;
        next[s - s0] = 0.0;
        at[s - s0] = 0;
        if (s < kPer && e < live) {
          const int i = k + 1 + e / width;
          const int j = e - (i - k - 1) * width;
          const double xkj = j == k ? 1.0 / lkk : -w[k * ld + j] / lkk;
          at[s - s0] = i * ld + j;
          next[s - s0] = fma(w[k * ld + i], xkj, w[at[s - s0]]);
        }
      }
#pragma unroll
      for (int s = s0; s < s0 + kSpreadChunk; ++s)
        if (s < kPer && t + s * kSmallThreads < live) w[at[s - s0]] = next[s - s0];
    }
    __syncthreads();
  }
}

// kPer, kPerInv: the spread schedule's entries per thread (cholesky_spread, invert_lower_spread); 0: row per warp.
// Two CTAs per SM (64 registers) where that spills nothing, for batches of more matrices than SMs; one above.
template <int kPer, int kPerInv>
__global__ void __launch_bounds__(kSmallThreads, kPer > 1 ? 1 : 2)
    cholesky_rinv_kernel(std::int64_t r, const float* grams, float eps, const int* gate, double* dworks, float* rinvs,
                         int* ok, int* third, bool w_in_shared) {
  const int b = blockIdx.x;
  if (gate != nullptr && gate[b] == 0) {
    if (threadIdx.x == 0) ok[b] = 0;
    return;
  }
  const float* gram = grams + static_cast<std::int64_t>(b) * r * r;
  // Per matrix 2r² + r doubles (r ≥ 3): the factor W (r rows of ld = r + 1, odd, so that a column read by the lanes
  // of a warp spreads over the shared-memory banks), the diagonals of X and L, and D at the end.
  const std::int64_t ld = r + 1;
  double* const work = dworks + static_cast<std::int64_t>(b) * (2 * r * r + r);
  double* const xd = work + r * ld;
  double* const diag = xd + r;
  double* const d = work + 2 * r * r;
  // W lives in dynamic shared memory when the launch gave room for it (r·(r + 1) doubles, up to r = 128 on an A100
  // or H100), else in its global workspace.
  extern __shared__ double s_w[];
  double* const w = w_in_shared ? s_w : work;
  float* rinv = rinvs + static_cast<std::int64_t>(b) * r * r;
  // The Gram matrix from cuBLAS is symmetric up to rounding; like the CPU twin, read its lower triangle only.
  double trace_part = 0.0;
  double dev_part = 0.0;
  for (std::int64_t i = threadIdx.x; i < r; i += blockDim.x) {
    const double gii = gram[i * r + i];
    trace_part += gii;
    d[i] = gii > 0.0 ? sqrt(gii) : 1.0;  // an all-zero column stays zero
    for (std::int64_t j = 0; j <= i; ++j)
      dev_part = fmax(dev_part, fabs(static_cast<double>(gram[i * r + j]) - (i == j ? 1.0 : 0.0)));
  }
  using Reduce = cub::BlockReduce<double, kSmallThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  __shared__ double trace;
  __shared__ double deviation;
  const double t = Reduce(tmp).Sum(trace_part);
  __syncthreads();
  const double dv = Reduce(tmp).Reduce(dev_part, MaxOp{});
  if (threadIdx.x == 0) {
    trace = t;
    deviation = dv;
  }
  __syncthreads();
  // A NaN in the input makes the trace NaN, but fmax drops NaN: the deviation of a non-finite matrix does not
  // matter because it fails here.
  if (!isfinite(trace)) {
    if (threadIdx.x == 0) ok[b] = 0;
    return;
  }
  double shift = static_cast<double>(eps) + FLT_MIN;
  bool grew = false;
  const auto factorise = [&] {
    if constexpr (kPer > 0) {
      return cholesky_spread<kPer>(gram, d, static_cast<int>(r), static_cast<int>(ld), shift, w, diag);
    } else {
      return cholesky(gram, d, r, ld, shift, w, diag);
    }
  };
  for (int attempt = 0; !factorise(); ++attempt) {
    if (attempt == 40) {
      if (threadIdx.x == 0) ok[b] = 0;
      return;
    }
    shift = fmax(shift * 10.0, 1e-7);
    grew = true;
  }
  if constexpr (kPerInv > 0) {
    invert_lower_spread<kPerInv>(static_cast<int>(r), static_cast<int>(ld), w, diag, xd);
  } else {
    invert_lower(r, ld, w, diag, xd);
  }
  // R⁻¹ = D⁻¹·L⁻ᵀ: entry (i, j ≥ i) is X[j][i] / D[i].
  for (std::int64_t x = threadIdx.x; x < r * r; x += blockDim.x) {
    const std::int64_t i = x / r;
    const std::int64_t j = x % r;
    rinv[x] = j > i ? static_cast<float>(w[i * ld + j] / d[i]) : (j == i ? static_cast<float>(xd[i] / d[i]) : 0.0F);
  }
  if (threadIdx.x == 0) {
    ok[b] = 1;
    if (third != nullptr) third[b] = deviation > 0.5 || grew ? 1 : 0;
  }
}

__global__ void __launch_bounds__(kThreads)
    commit_kernel(std::int64_t count, float* const* p, const float* w2, const float* w3, const int* ok1, const int* ok2,
                  const int* third, const int* ok3) {
  const int b = blockIdx.y;
  if (ok1[b] == 0 || ok2[b] == 0) return;
  const float* src = (third[b] != 0 && ok3[b] != 0 ? w3 : w2) + static_cast<std::int64_t>(b) * count;
  float* dst = p[b];
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

}  // namespace

void launch_gram_schmidt(int batch, std::int64_t rows, std::int64_t cols, float* const* p, float eps,
                         cudaStream_t stream) {
  gram_schmidt_kernel<<<batch, kThreads, 0, stream>>>(rows, cols, p, eps);
}

void launch_gather(int batch, std::int64_t count, const float* const* src, float* dst, cudaStream_t stream) {
  gather_kernel<<<dim3(ctas_for(count), static_cast<unsigned int>(batch)), kThreads, 0, stream>>>(count, src, dst);
}

namespace {

// Room for W in shared memory for one instantiation: the device's opt-in limit per block, less the kernel's static
// shared memory (0: W stays in global memory).
template <int kPer, int kPerInv>
std::size_t shared_room() {
  static const std::size_t room = [] {
    int device = 0;
    int optin = 0;
    cudaFuncAttributes attr{};
    const auto kernel = cholesky_rinv_kernel<kPer, kPerInv>;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess ||
        cudaFuncGetAttributes(&attr, kernel) != cudaSuccess ||
        static_cast<std::size_t>(optin) <= attr.sharedSizeBytes ||
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             optin - static_cast<int>(attr.sharedSizeBytes)) != cudaSuccess) {
      (void)cudaGetLastError();
      return std::size_t{0};
    }
    return static_cast<std::size_t>(optin) - attr.sharedSizeBytes;
  }();
  return room;
}

template <int kPer, int kPerInv>
void launch_cholesky(int batch, std::int64_t r, const float* gram, float eps, const int* gate, double* dwork,
                     float* rinv, int* ok, int* third, cudaStream_t stream) {
  const auto bytes = static_cast<std::size_t>(r * (r + 1)) * sizeof(double);
  const bool shared = bytes <= shared_room<kPer, kPerInv>();
  cholesky_rinv_kernel<kPer, kPerInv>
      <<<batch, kSmallThreads, shared ? bytes : 0, stream>>>(r, gram, eps, gate, dwork, rinv, ok, third, shared);
}

}  // namespace

void launch_cholesky_rinv(int batch, std::int64_t r, const float* gram, float eps, const int* gate, double* dwork,
                          float* rinv, int* ok, int* third, int spread_max_rank, cudaStream_t stream) {
  // Entries per thread of the spread schedule: ⌈r(r − 1)/2 / 512⌉ for the factorisation, ⌈⌊r²/4⌋ / 512⌉ for L⁻¹.
  static_assert(kSmallThreads == 512 && kCholeskySpreadRankMax == 128);
  if (r > std::min<std::int64_t>(spread_max_rank, kCholeskySpreadRankMax)) {
    launch_cholesky<0, 0>(batch, r, gram, eps, gate, dwork, rinv, ok, third, stream);
  } else if (r <= 32) {
    launch_cholesky<1, 1>(batch, r, gram, eps, gate, dwork, rinv, ok, third, stream);
  } else if (r <= 64) {
    launch_cholesky<4, 2>(batch, r, gram, eps, gate, dwork, rinv, ok, third, stream);
  } else {
    launch_cholesky<16, 8>(batch, r, gram, eps, gate, dwork, rinv, ok, third, stream);
  }
}

void launch_commit(int batch, std::int64_t count, float* const* p, const float* w2, const float* w3, const int* ok1,
                   const int* ok2, const int* third, const int* ok3, cudaStream_t stream) {
  commit_kernel<<<dim3(ctas_for(count), static_cast<unsigned int>(batch)), kThreads, 0, stream>>>(count, p, w2, w3, ok1,
                                                                                                  ok2, third, ok3);
}

}  // namespace edgc::kernels::cuda
