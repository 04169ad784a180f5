// Device kernels of the CUDA backend: the streaming passes of the fused PowerSGD halves (with Ĝ beside the
// subtraction at small ranks), add_divide and the per-matrix sums of partials. The addition with P = M·Q beside it is
// in cuda_project.cu, the sampled statistics in cuda_statistics.cu, the orthogonalisation's small steps in
// cuda_orthogonalize.cu; the large products go through cuBLAS (backend).
//
// Streaming kernels read 16-byte vectors (8-byte ones of four bf16) when every pointer of a matrix is aligned to
// that (the usual case: cudaMalloc'd buffers of whole matrices) and fall back to single elements otherwise. Every
// reduction runs in double, per CTA, and is finished in a fixed order, so results repeat bit for bit between runs.
#include <cub/block/block_reduce.cuh>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cuda_common.cuh"
#include "cuda_elements.cuh"
#include "cuda_kernels.hpp"

namespace edgc::kernels::cuda {
namespace {

// One matrix per blockIdx.y; its CTAs (blockIdx.x) stride through it together. G is float32 or bf16.
template <class G>
__global__ void __launch_bounds__(kThreads)
    add_norm_kernel(std::int64_t count, const G* const* g, float* const* e, double* partials) {
  const G* gb = g[blockIdx.y];
  float* eb = e != nullptr ? e[blockIdx.y] : nullptr;
  const std::int64_t start = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  double s = 0.0;
  std::int64_t done = 0;
  if (aligned4(gb) && (eb == nullptr || aligned16(eb))) {
    const std::int64_t n4 = count / 4;
    auto* e4 = reinterpret_cast<float4*>(eb);
    for (std::int64_t i = start; i < n4; i += stride) {
      float4 v = load4(gb, i);
      if (eb != nullptr) {
        const float4 w = e4[i];
        v.x += w.x;
        v.y += w.y;
        v.z += w.z;
        v.w += w.w;
        e4[i] = v;
      }
      s += squares(v);
    }
    done = n4 * 4;
  }
  for (std::int64_t i = done + start; i < count; i += stride) {
    float v = load1(gb, i);
    if (eb != nullptr) {
      v += eb[i];
      eb[i] = v;
    }
    s += static_cast<double>(v) * v;
  }
  write_partial(s, partials);
}

// C, the storage Ĝ is copied to, is float32 or bf16.
template <class C>
__global__ void __launch_bounds__(kThreads)
    subtract_norm_kernel(std::int64_t count, const float* const* m, const float* const* gh, float* const* diff_out,
                         C* const* copy_to, double* partials) {
  const float* mb = m[blockIdx.y];
  const float* gb = gh[blockIdx.y];
  float* db = diff_out != nullptr ? diff_out[blockIdx.y] : nullptr;
  C* cb = copy_to != nullptr ? copy_to[blockIdx.y] : nullptr;
  const std::int64_t start = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  double s = 0.0;
  std::int64_t done = 0;
  if (aligned16(mb) && aligned16(gb) && (db == nullptr || aligned16(db)) && (cb == nullptr || aligned4(cb))) {
    const std::int64_t n4 = count / 4;
    for (std::int64_t i = start; i < n4; i += stride) {
      const float4 a = reinterpret_cast<const float4*>(mb)[i];
      const float4 b = __ldg(reinterpret_cast<const float4*>(gb) + i);
      const float4 d{a.x - b.x, a.y - b.y, a.z - b.z, a.w - b.w};
      if (db != nullptr) reinterpret_cast<float4*>(db)[i] = d;
      if (cb != nullptr) store4(cb, i, b);
      s += squares(d);
    }
    done = n4 * 4;
  }
  for (std::int64_t i = done + start; i < count; i += stride) {
    const float b = gb[i];
    const float d = mb[i] - b;
    if (db != nullptr) db[i] = d;
    if (cb != nullptr) store1(cb, i, b);
    s += static_cast<double>(d) * d;
  }
  write_partial(s, partials);
}

// Ĝ = P·Qᵀ computed tile by tile beside the pass that uses it: CTA (x, y) of matrix z covers rows 32y .. 32y + 31 and
// columns 128x .. 128x + 127; each thread four rows by four adjacent columns. P's and Q's rows for the tile are staged
// transposed in shared memory (k-major), so a thread reads its four P values as one broadcast and its four Q values
// as one 16-byte load per k; each output sums its r products in the order k = 0, 1, …. Then d = M − Ĝ into the
// norm, diff_out ← d (when given) and copy_to ← Ĝ, 16 bytes (8 for bf16) per access. Requires r ≤ kLowRankMax,
// n % 4 == 0 and aligned rows (the caller checks).
constexpr int kTileRows = 32;
constexpr int kTileCols = 128;

template <class C>
__global__ void __launch_bounds__(kThreads)
    lowrank_subtract_kernel(std::int64_t m, std::int64_t n, int r, const float* const* p, const float* const* q,
                            const float* const* mm, float* const* diff_out, C* const* copy_to, double* partials) {
  __shared__ float s_p[kLowRankMax][kTileRows];
  __shared__ __align__(16) float s_q[kLowRankMax][kTileCols];
  const std::int64_t z = blockIdx.z;
  const std::int64_t i0 = static_cast<std::int64_t>(blockIdx.y) * kTileRows;
  const std::int64_t j0 = static_cast<std::int64_t>(blockIdx.x) * kTileCols;
  const float* pb = p[z];
  const float* qb = q[z];
  for (int x = static_cast<int>(threadIdx.x); x < kTileRows * r; x += blockDim.x) {
    const int i = x / r;
    const int k = x % r;
    s_p[k][i] = i0 + i < m ? pb[(i0 + i) * r + k] : 0.0F;
  }
  for (int x = static_cast<int>(threadIdx.x); x < kTileCols * r; x += blockDim.x) {
    const int j = x / r;
    const int k = x % r;
    s_q[k][j] = j0 + j < n ? qb[(j0 + j) * r + k] : 0.0F;
  }
  __syncthreads();
  const int tx = static_cast<int>(threadIdx.x % 32);  // columns 4·tx .. 4·tx + 3 of the tile
  const int ty = static_cast<int>(threadIdx.x / 32);  // rows 4·ty .. 4·ty + 3
  float acc[4][4] = {};
  for (int k = 0; k < r; ++k) {
    const float4 qk = *reinterpret_cast<const float4*>(&s_q[k][4 * tx]);
    for (int a = 0; a < 4; ++a) {
      const float pk = s_p[k][4 * ty + a];
      acc[a][0] = fmaf(pk, qk.x, acc[a][0]);
      acc[a][1] = fmaf(pk, qk.y, acc[a][1]);
      acc[a][2] = fmaf(pk, qk.z, acc[a][2]);
      acc[a][3] = fmaf(pk, qk.w, acc[a][3]);
    }
  }
  const std::int64_t j = j0 + 4 * tx;
  const float* mb = mm[z];
  float* db = diff_out != nullptr ? diff_out[z] : nullptr;
  C* cb = copy_to != nullptr ? copy_to[z] : nullptr;
  double s = 0.0;
  if (j < n) {
    float4 mv[4];
    for (int a = 0; a < 4; ++a) {
      const std::int64_t i = i0 + 4 * ty + a;
      if (i < m) mv[a] = *reinterpret_cast<const float4*>(mb + i * n + j);
    }
    for (int a = 0; a < 4; ++a) {
      const std::int64_t i = i0 + 4 * ty + a;
      if (i >= m) continue;
      const float4 g{acc[a][0], acc[a][1], acc[a][2], acc[a][3]};
      const float4 d{mv[a].x - g.x, mv[a].y - g.y, mv[a].z - g.z, mv[a].w - g.w};
      if (db != nullptr) reinterpret_cast<float4*>(db + i * n)[j / 4] = d;
      if (cb != nullptr) store4(cb + i * n, j / 4, g);
      s += squares(d);
    }
  }
  write_partial(s, partials, (z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x);
}

// out = (a + b) / divisor, or a / divisor without b: one element per thread and grid stride (plain loads: `out`
// may alias `a` or `b`, so no read-only cache path).
template <class A, class O>
__global__ void __launch_bounds__(kThreads)
    add_divide_kernel(std::int64_t n, const A* a, const float* b, float divisor, O* out) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    float v;
    if constexpr (std::is_same_v<A, float>) {
      v = a[i];
    } else {
      v = widen(a[i]);
    }
    if (b != nullptr) v += b[i];
    store1(out, i, v / divisor);
  }
}

// out[b] = Σ_c partials[b·ctas + c], one CTA per matrix b, in a fixed order (as sum_moment_partials).
__global__ void __launch_bounds__(kThreads) sum_partials_kernel(int ctas, const double* partials, double* out) {
  const std::int64_t b = blockIdx.x;
  double s = 0.0;
  for (int c = static_cast<int>(threadIdx.x); c < ctas; c += blockDim.x) s += partials[b * ctas + c];
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  const double total = Reduce(tmp).Sum(s);
  if (threadIdx.x == 0) out[b] = total;
}

}  // namespace

void launch_add_norm(int batch, std::int64_t count, const float* const* g, float* const* e, int ctas, double* partials,
                     cudaStream_t stream) {
  add_norm_kernel<float><<<batch_grid(ctas, batch), kThreads, 0, stream>>>(count, g, e, partials);
}

void launch_add_norm(int batch, std::int64_t count, const std::uint16_t* const* g, float* const* e, int ctas,
                     double* partials, cudaStream_t stream) {
  add_norm_kernel<std::uint16_t><<<batch_grid(ctas, batch), kThreads, 0, stream>>>(count, g, e, partials);
}

void launch_subtract_norm(int batch, std::int64_t count, const float* const* m, const float* const* gh,
                          float* const* diff_out, float* const* copy_to, int ctas, double* partials,
                          cudaStream_t stream) {
  subtract_norm_kernel<float>
      <<<batch_grid(ctas, batch), kThreads, 0, stream>>>(count, m, gh, diff_out, copy_to, partials);
}

void launch_subtract_norm(int batch, std::int64_t count, const float* const* m, const float* const* gh,
                          float* const* diff_out, std::uint16_t* const* copy_to, int ctas, double* partials,
                          cudaStream_t stream) {
  subtract_norm_kernel<std::uint16_t>
      <<<batch_grid(ctas, batch), kThreads, 0, stream>>>(count, m, gh, diff_out, copy_to, partials);
}

int lowrank_ctas(std::int64_t m, std::int64_t n) {
  return static_cast<int>(((n + kTileCols - 1) / kTileCols) * ((m + kTileRows - 1) / kTileRows));
}

template <class C>
void launch_lowrank(int batch, std::int64_t m, std::int64_t n, int r, const float* const* p, const float* const* q,
                    const float* const* mm, float* const* diff_out, C* const* copy_to, double* partials,
                    cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned int>((n + kTileCols - 1) / kTileCols),
                  static_cast<unsigned int>((m + kTileRows - 1) / kTileRows), static_cast<unsigned int>(batch));
  lowrank_subtract_kernel<C><<<grid, kThreads, 0, stream>>>(m, n, r, p, q, mm, diff_out, copy_to, partials);
}

void launch_lowrank_subtract(int batch, std::int64_t m, std::int64_t n, int r, const float* const* p,
                             const float* const* q, const float* const* mm, float* const* diff_out,
                             float* const* copy_to, double* partials, cudaStream_t stream) {
  launch_lowrank(batch, m, n, r, p, q, mm, diff_out, copy_to, partials, stream);
}

void launch_lowrank_subtract(int batch, std::int64_t m, std::int64_t n, int r, const float* const* p,
                             const float* const* q, const float* const* mm, float* const* diff_out,
                             std::uint16_t* const* copy_to, double* partials, cudaStream_t stream) {
  launch_lowrank(batch, m, n, r, p, q, mm, diff_out, copy_to, partials, stream);
}

void launch_add_divide(std::int64_t n, const float* a, const float* b, float divisor, float* out, cudaStream_t stream) {
  add_divide_kernel<<<ctas_for(n), kThreads, 0, stream>>>(n, a, b, divisor, out);
}

void launch_add_divide(std::int64_t n, const std::uint16_t* a, const float* b, float divisor, float* out,
                       cudaStream_t stream) {
  add_divide_kernel<<<ctas_for(n), kThreads, 0, stream>>>(n, a, b, divisor, out);
}

void launch_add_divide(std::int64_t n, const float* a, const float* b, float divisor, std::uint16_t* out,
                       cudaStream_t stream) {
  add_divide_kernel<<<ctas_for(n), kThreads, 0, stream>>>(n, a, b, divisor, out);
}

void launch_sum_partials(int batch, int ctas, const double* partials, double* out, cudaStream_t stream) {
  sum_partials_kernel<<<batch, kThreads, 0, stream>>>(ctas, partials, out);
}

}  // namespace edgc::kernels::cuda
