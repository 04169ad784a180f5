// Device kernels of the CUDA backend: the streaming passes of the fused PowerSGD halves (with the products beside
// them at small ranks), add_divide and the per-matrix sums of partials. The sampled statistics are in
// cuda_statistics.cu, the orthogonalisation's small steps in cuda_orthogonalize.cu; the large products go through
// cuBLAS (backend).
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
#include "cuda_kernels.hpp"

namespace edgc::kernels::cuda {
namespace {

__device__ __forceinline__ bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15U) == 0; }

// The CTA's sum of `s` to partials[at] (by default blockIdx.y · gridDim.x + blockIdx.x: CTA-major per matrix).
__device__ __forceinline__ void write_partial(double s, double* partials,
                                              std::int64_t at = blockIdx.y * gridDim.x + blockIdx.x) {
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  const double total = Reduce(tmp).Sum(s);
  if (threadIdx.x == 0) partials[at] = total;
}

// Σ v² of four floats, in double, in the order x, y, z, w.
__device__ __forceinline__ double squares(float4 v) {
  return static_cast<double>(v.x) * v.x + static_cast<double>(v.y) * v.y + static_cast<double>(v.z) * v.z +
         static_cast<double>(v.w) * v.w;
}

// Element access for float32 and bf16 (std::uint16_t bit patterns) storage: bf16 widens exactly on load and
// rounds to nearest even on store, as the CPU twin (buffer.hpp) does. Vector loads take four elements (16 bytes of
// float, 8 of bf16) when the pointer is aligned to that.
__device__ __forceinline__ float widen(std::uint16_t h) { return __uint_as_float(static_cast<unsigned int>(h) << 16); }
__device__ __forceinline__ std::uint16_t narrow(float f) {
  const unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffU) > 0x7f800000U) return static_cast<std::uint16_t>((u >> 16) | 0x0040U);
  return static_cast<std::uint16_t>((u + 0x7fffU + ((u >> 16) & 1U)) >> 16);
}
__device__ __forceinline__ float load1(const float* p, std::int64_t i) { return __ldg(p + i); }
__device__ __forceinline__ float load1(const std::uint16_t* p, std::int64_t i) { return widen(__ldg(p + i)); }
__device__ __forceinline__ void store1(float* p, std::int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void store1(std::uint16_t* p, std::int64_t i, float v) { p[i] = narrow(v); }
__device__ __forceinline__ float4 load4(const float* p, std::int64_t i) {
  return __ldg(reinterpret_cast<const float4*>(p) + i);
}
__device__ __forceinline__ float4 load4(const std::uint16_t* p, std::int64_t i) {
  const uint2 v = __ldg(reinterpret_cast<const uint2*>(p) + i);
  return {__uint_as_float(v.x << 16), __uint_as_float(v.x & 0xffff0000U), __uint_as_float(v.y << 16),
          __uint_as_float(v.y & 0xffff0000U)};
}
__device__ __forceinline__ void store4(float* p, std::int64_t i, float4 v) { reinterpret_cast<float4*>(p)[i] = v; }
__device__ __forceinline__ void store4(std::uint16_t* p, std::int64_t i, float4 v) {
  const uint2 w{static_cast<unsigned int>(narrow(v.x)) | (static_cast<unsigned int>(narrow(v.y)) << 16),
                static_cast<unsigned int>(narrow(v.z)) | (static_cast<unsigned int>(narrow(v.w)) << 16)};
  reinterpret_cast<uint2*>(p)[i] = w;
}
template <class T>
__device__ __forceinline__ bool aligned4(const T* p) {
  return (reinterpret_cast<std::uintptr_t>(p) % (4 * sizeof(T))) == 0;
}

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

// M = G + E (into E when given; else M is G) with ‖M‖² and the partial products of P = M·Q in one pass: warp w of
// matrix blockIdx.y takes rows 4·(w / chunks) .. + 3 and the column chunk w % chunks (kProjectChunk columns); each
// lane 16-byte groups of four columns 128 apart, reading the four Q rows of a group once for the four rows of M. A
// lane sums its products per (row, k) in column order, the warp adds the lanes in a fixed tree, and the chunk's sums
// go to pw[chunk][row][k] for project_reduce_kernel, which adds the chunks in order. Requires r ≤ KR, n % 4 == 0
// and aligned rows (the caller checks).
template <class G, int KR>
__global__ void __launch_bounds__(kThreads, 2)
    add_project_kernel(std::int64_t m, std::int64_t n, int r, int chunks, const G* const* g, float* const* e,
                       const float* const* q, float* pw, double* partials) {
  const std::int64_t b = blockIdx.y;
  const G* gb = g[b];
  float* eb = e != nullptr ? e[b] : nullptr;
  const float* qb = q[b];
  const auto lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t warp = static_cast<std::int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  const std::int64_t i0 = 4 * (warp / chunks);
  const std::int64_t chunk = warp % chunks;
  const std::int64_t rows = i0 < m ? std::min<std::int64_t>(4, m - i0) : 0;
  double s = 0.0;
  float acc[4][KR] = {};
  const std::int64_t jend = std::min(n, (chunk + 1) * kProjectChunk);
  for (std::int64_t j = chunk * kProjectChunk + 4 * lane; rows > 0 && j < jend; j += 128) {
    // The four rows' loads first, all in flight together.
    float4 v[4];
    float4 w[4];
#pragma unroll
    for (int a = 0; a < 4; ++a) {
      if (a < rows) {
        v[a] = load4(gb + (i0 + a) * n, j / 4);
        if (eb != nullptr) w[a] = reinterpret_cast<const float4*>(eb + (i0 + a) * n)[j / 4];
      }
    }
    float qv[4][KR];
#pragma unroll
    for (int c = 0; c < 4; ++c)
#pragma unroll
      for (int k = 0; k < KR; ++k) qv[c][k] = k < r ? __ldg(qb + (j + c) * r + k) : 0.0F;
#pragma unroll
    for (int a = 0; a < 4; ++a) {
      if (a < rows) {
        if (eb != nullptr) {
          v[a].x += w[a].x;
          v[a].y += w[a].y;
          v[a].z += w[a].z;
          v[a].w += w[a].w;
          reinterpret_cast<float4*>(eb + (i0 + a) * n)[j / 4] = v[a];
        }
        s += squares(v[a]);
#pragma unroll
        for (int k = 0; k < KR; ++k) {
          float t = acc[a][k];
          t = fmaf(v[a].x, qv[0][k], t);
          t = fmaf(v[a].y, qv[1][k], t);
          t = fmaf(v[a].z, qv[2][k], t);
          acc[a][k] = fmaf(v[a].w, qv[3][k], t);
        }
      }
    }
  }
#pragma unroll
  for (int a = 0; a < 4; ++a)
#pragma unroll
    for (int k = 0; k < KR; ++k) {
      float t = acc[a][k];
      for (int off = 16; off > 0; off /= 2) t += __shfl_xor_sync(0xffffffffU, t, off);
      if (lane == 0 && k < r && a < rows) pw[((b * chunks + chunk) * m + i0 + a) * r + k] = t;
    }
  write_partial(s, partials);
}

// p[b][i·r + k] = Σ_c pw[b][c][i][k], chunks in order.
__global__ void __launch_bounds__(kThreads)
    project_reduce_kernel(std::int64_t m, int r, int chunks, const float* pw, float* const* p) {
  const std::int64_t b = blockIdx.y;
  const std::int64_t mr = m * r;
  float* pb = p[b];
  for (std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; x < mr;
       x += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    float t = 0.0F;
    for (int c = 0; c < chunks; ++c) t += pw[(b * chunks + c) * mr + x];
    pb[x] = t;
  }
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

int project_chunks(std::int64_t n) { return static_cast<int>((n + kProjectChunk - 1) / kProjectChunk); }

int project_ctas(std::int64_t m, std::int64_t n) {
  const std::int64_t warps = (m + 3) / 4 * project_chunks(n);
  return static_cast<int>((warps + kWarps - 1) / kWarps);
}

template <class G, int KR>
void launch_add_project_r(int batch, std::int64_t m, std::int64_t n, int r, const G* const* g, float* const* e,
                          const float* const* q, float* pw, float* const* p, double* partials, cudaStream_t stream) {
  const int chunks = project_chunks(n);
  add_project_kernel<G, KR>
      <<<dim3(static_cast<unsigned int>(project_ctas(m, n)), static_cast<unsigned int>(batch)), kThreads, 0, stream>>>(
          m, n, r, chunks, g, e, q, pw, partials);
  const std::int64_t mr = m * r;
  const auto grid = static_cast<unsigned int>(std::min<std::int64_t>((mr + kThreads - 1) / kThreads, 1024));
  project_reduce_kernel<<<dim3(grid, static_cast<unsigned int>(batch)), kThreads, 0, stream>>>(m, r, chunks, pw, p);
}

template <class G>
void launch_add_project_any(int batch, std::int64_t m, std::int64_t n, int r, const G* const* g, float* const* e,
                            const float* const* q, float* pw, float* const* p, double* partials, cudaStream_t stream) {
  launch_add_project_r<G, kProjectRankMax>(batch, m, n, r, g, e, q, pw, p, partials, stream);
}

void launch_add_project(int batch, std::int64_t m, std::int64_t n, int r, const float* const* g, float* const* e,
                        const float* const* q, float* pw, float* const* p, double* partials, cudaStream_t stream) {
  launch_add_project_any(batch, m, n, r, g, e, q, pw, p, partials, stream);
}

void launch_add_project(int batch, std::int64_t m, std::int64_t n, int r, const std::uint16_t* const* g,
                        float* const* e, const float* const* q, float* pw, float* const* p, double* partials,
                        cudaStream_t stream) {
  launch_add_project_any(batch, m, n, r, g, e, q, pw, p, partials, stream);
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
