// The addition pass of project_batched with P = M·Q formed from the same read of M: M = G + E into E, ‖M‖² per CTA,
// and P's sums per column chunk, which project_reduce_kernel then adds in chunk order. Two kernels:
//
// * r ≤ kProjectRankMax: a warp per 4 rows × kProjectChunk columns, Q read through the read-only cache into
//   registers (4 rows × 4 columns × r products per 16-byte group).
// * kProjectRankMax < r ≤ kProjectWideRankMax: Q staged in shared memory per column chunk, so that a lane keeps only
//   one row's sums (r rounded up to 8, 16 or 32) in registers (a rank-8 layout with Q and four rows' sums in
//   registers spilled and lost to cuBLAS).
//
// Both read G and E in 16-byte vectors (8 bytes of four bf16): per warp instruction 512 (256) contiguous bytes of a
// row in the first, whole 128-byte (64-byte) segments of four rows in the second. Every sum runs in a fixed order, so
// P and the norms repeat bit for bit between runs; P's bits do not depend on the grid.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "cuda_common.cuh"
#include "cuda_elements.cuh"
#include "cuda_kernels.hpp"

namespace edgc::kernels::cuda {
namespace {

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

// ---- kProjectRankMax < r ≤ kProjectWideRankMax: Q in shared memory ----
//
// The sums are kept for KR ranks (8, 16 or 32; r rounded up, Q's missing ranks staged as zeros). A warp streams four
// rows at a time: lane l takes row l / 8 of the four and columns 4·(l % 8) .. + 3 of each 32-column step, so every
// 16-byte load instruction reads whole 128-byte lines of four rows (64-byte halves with 8-byte loads of bf16). A CTA
// stages Q's rows of one column chunk (kWideQFloats floats: 2048, 1024 or 512 columns) in shared memory as float4 in
// the order [step t][column c of a lane's four][rank quad][l % 8]: the warp's read of a quad is 8 consecutive float4,
// one conflict-free wavefront broadcast to the four rows. Each lane forms M = G + E (the next kAhead steps' loads in
// flight), writes E, adds ‖M‖², and sums M·Q for its row and the KR ranks over its columns in the order t, c. At the
// end of the chunk the eight lanes of a row add their sums by a transposing butterfly (warp_sum_scatter: 7·KR/8
// shuffles instead of 3 per rank), leaving ranks (KR/8)·(l % 8) .. + KR/8 − 1 on lane l, which go to pw[chunk][row][k]
// as in the kernel above.
//
// Work is cut into units (chunk, slab), a slab being kWarps · 4 rows (four per warp), numbered chunk by chunk; CTA x
// of matrix y takes a contiguous run of them (the grid is about one wave, so every CTA does the same work ± one
// unit) and restages Q when its run enters the next chunk.
inline constexpr int kWideQFloats = 16384;  // Q floats staged per chunk: 64 KiB of shared memory per CTA
inline constexpr int kWideRows = 4;         // rows per warp, one per eight lanes
inline constexpr int kAhead = 2;            // 32-column steps whose loads are in flight beyond the one computed

template <int KR>
struct Wide {
  static_assert(KR == 8 || KR == 16 || KR == 32);
  static constexpr int kCols = kWideQFloats / KR;  // columns per chunk
  static constexpr int kSteps = kCols / 32;
  static constexpr int kQuads = KR / 4;
  static constexpr int kKept = KR / 8;  // sums a lane holds after the butterfly
  // CTAs per SM the registers are capped for: on Hopper three at KR = 8 (80 registers without a spill; 3 × 64 KiB
  // of shared memory), two above (KR = 16 and 32 would spill at 80); before it two (an A100 SM holds two 64 KiB CTAs).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  static constexpr int kMinBlocks = 2;
#else
  static constexpr int kMinBlocks = KR == 8 ? 3 : 2;
#endif
};

int wide_rank(int r) { return r <= 8 ? 8 : (r <= 16 ? 16 : 32); }

__device__ __forceinline__ float part(float4 v, int c) { return c == 0 ? v.x : (c == 1 ? v.y : (c == 2 ? v.z : v.w)); }

// Q[c0 .. c0 + 32·steps)[0 .. KR) into s_q in the layout above, zero beyond n and r. Consecutive threads read
// consecutive elements of Q's rows.
template <int KR>
__device__ void stage_q(const float* qb, std::int64_t n, int r, std::int64_t c0, int steps, float* s_q) {
  for (int x = static_cast<int>(threadIdx.x); x < steps * 32 * KR; x += kThreads) {
    const int jj = x / KR;  // column in the chunk
    const int k = x % KR;
    const std::int64_t j = c0 + jj;
    const float v = k < r && j < n ? __ldg(qb + j * r + k) : 0.0F;
    s_q[((((jj / 32) * 4 + jj % 4) * Wide<KR>::kQuads + k / 4) * 8 + (jj / 4) % 8) * 4 + k % 4] = v;
  }
}

// Σ over each eight lanes 8q .. 8q + 7 of x[k] for every k < KR, in a fixed order: three halving steps, in each of
// which a lane keeps the half of its values that its lane bit (4, 2, 1) selects and adds its partner's copy of that
// half. Afterwards x[v] on lane l is the sum for k = (KR/8)·(l % 8) + v, v < KR/8. All 32 lanes must call it.
template <int Half, int Off, int N>
__device__ __forceinline__ void halve(float (&x)[N], int lane) {
  const bool upper = (lane & Off) != 0;
#pragma unroll
  for (int i = 0; i < Half; ++i) {
    const float send = upper ? x[i] : x[Half + i];
    const float keep = upper ? x[Half + i] : x[i];
    x[i] = keep + __shfl_xor_sync(0xffffffffU, send, Off);
  }
}
template <int KR>
__device__ __forceinline__ void warp_sum_scatter(float (&x)[KR], int lane) {
  halve<KR / 2, 4>(x, lane);
  halve<KR / 4, 2>(x, lane);
  halve<KR / 8, 1>(x, lane);
}

// Columns j .. j + 3 of G and E rows gi, ei (E may be null) when `in`, else zeros.
template <class G>
__device__ __forceinline__ void load_pair(const G* gi, const float* ei, bool in, std::int64_t j, float4& g, float4& e) {
  g = make_float4(0.0F, 0.0F, 0.0F, 0.0F);
  e = g;
  if (in) {
    g = load4(gi, j / 4);
    if (ei != nullptr) e = reinterpret_cast<const float4*>(ei)[j / 4];
  }
}

// One warp's rows i0 .. i0 + 3 (those below m) over the chunk's `steps` 32-column steps from column c0: the addition
// pass for them and pw_chunk[i·r + k] ← the chunk's Σ_j M[i][j]·Q[j][k].
template <class G, int KR>
__device__ __forceinline__ void project_rows(const G* gb, float* eb, std::int64_t m, std::int64_t n, int r,
                                             std::int64_t i0, std::int64_t c0, int steps, const float4* s_q,
                                             float* pw_chunk, double& s) {
  const auto lane = static_cast<int>(threadIdx.x % 32);
  const int p = lane % 8;
  const bool row = i0 + lane / 8 < m;
  const std::int64_t i = row ? i0 + lane / 8 : i0;
  const G* gi = gb + i * n;
  float* ei = eb != nullptr ? eb + i * n : nullptr;
  float acc[KR];
#pragma unroll
  for (int k = 0; k < KR; ++k) acc[k] = 0.0F;
  // The loads of the next kAhead steps stay in flight while a step is computed.
  float4 gn[kAhead];
  float4 en[kAhead];
#pragma unroll
  for (int d = 0; d < kAhead; ++d) {
    const std::int64_t j = c0 + 32 * d + 4 * p;
    load_pair(gi, ei, row && d < steps && j < n, j, gn[d], en[d]);
  }
#pragma unroll 1
  for (int t = 0; t < steps; ++t) {
    const std::int64_t j = c0 + 32 * t + 4 * p;
    float4 v = gn[0];
    const float4 w = en[0];
#pragma unroll
    for (int d = 0; d + 1 < kAhead; ++d) {
      gn[d] = gn[d + 1];
      en[d] = en[d + 1];
    }
    const std::int64_t jn = j + 32 * kAhead;
    load_pair(gi, ei, row && t + kAhead < steps && jn < n, jn, gn[kAhead - 1], en[kAhead - 1]);
    if (row && j < n) {
      if (ei != nullptr) {
        v.x += w.x;
        v.y += w.y;
        v.z += w.z;
        v.w += w.w;
        reinterpret_cast<float4*>(ei)[j / 4] = v;
      }
      s += squares(v);
    }
    const float4* qs = s_q + t * KR * 8 + p;
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const float x = part(v, c);
#pragma unroll
      for (int qd = 0; qd < Wide<KR>::kQuads; ++qd) {
        const float4 qv = qs[(c * Wide<KR>::kQuads + qd) * 8];
        acc[4 * qd] = fmaf(x, qv.x, acc[4 * qd]);
        acc[4 * qd + 1] = fmaf(x, qv.y, acc[4 * qd + 1]);
        acc[4 * qd + 2] = fmaf(x, qv.z, acc[4 * qd + 2]);
        acc[4 * qd + 3] = fmaf(x, qv.w, acc[4 * qd + 3]);
      }
    }
  }
  warp_sum_scatter<KR>(acc, lane);
#pragma unroll
  for (int v = 0; v < Wide<KR>::kKept; ++v) {
    const int k = Wide<KR>::kKept * p + v;
    if (row && k < r) pw_chunk[i * r + k] = acc[v];
  }
}

template <class G, int KR>
__global__ void __launch_bounds__(kThreads, Wide<KR>::kMinBlocks)
    add_project_wide_kernel(std::int64_t m, std::int64_t n, int r, int chunks, const G* const* g, float* const* e,
                            const float* const* q, float* pw, double* partials) {
  extern __shared__ float4 s_q[];
  const std::int64_t b = blockIdx.y;
  const G* gb = g[b];
  float* eb = e != nullptr ? e[b] : nullptr;
  const std::int64_t slabs = (m + kWarps * kWideRows - 1) / (kWarps * kWideRows);
  const std::int64_t units = slabs * chunks;
  std::int64_t u = units * blockIdx.x / gridDim.x;
  const std::int64_t u_end = units * (blockIdx.x + 1) / gridDim.x;
  const auto warp = static_cast<std::int64_t>(threadIdx.x / 32);
  double s = 0.0;
  while (u < u_end) {
    const std::int64_t chunk = u / slabs;
    const std::int64_t c0 = chunk * Wide<KR>::kCols;
    const auto steps = static_cast<int>(std::min<std::int64_t>(Wide<KR>::kSteps, (n - c0 + 31) / 32));
    __syncthreads();  // every warp is done with the previous chunk's Q
    stage_q<KR>(q[b], n, r, c0, steps, reinterpret_cast<float*>(s_q));
    __syncthreads();
    float* pw_chunk = pw + (b * chunks + chunk) * m * r;
    for (const std::int64_t end = std::min(u_end, (chunk + 1) * slabs); u < end; ++u) {
      const std::int64_t i0 = ((u % slabs) * kWarps + warp) * kWideRows;
      if (i0 < m) project_rows<G, KR>(gb, eb, m, n, r, i0, c0, steps, s_q, pw_chunk, s);
    }
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

// The wide kernel for G and KR with its shared memory allowed (over the 48 KiB default) and the SM's carveout at its
// largest, so that as many CTAs share an SM as the occupancy query counts in its wave (the grid is one wave: a CTA
// fewer per SM would leave a second, partial one). Per device, so set before every use (a driver call each).
template <class G, int KR>
auto wide_kernel() {
  const auto kernel = add_project_wide_kernel<G, KR>;
  (void)cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(kWideQFloats * sizeof(float)));
  (void)cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
  return kernel;
}

template <class G, int KR>
int wide_ctas(std::int64_t m, std::int64_t n, int batch) {
  const std::int64_t slabs = (m + kWarps * kWideRows - 1) / (kWarps * kWideRows);
  const std::int64_t units = slabs * project_chunks(n, KR);
  const int wave = one_wave(wide_kernel<G, KR>(), kWideQFloats * sizeof(float));
  return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(units, wave / std::max(1, batch))));
}

template <class G>
int ctas_of(std::int64_t m, std::int64_t n, int r, int batch) {
  if (r <= kProjectRankMax) {
    const std::int64_t warps = (m + 3) / 4 * project_chunks(n, r);
    return static_cast<int>((warps + kWarps - 1) / kWarps);
  }
  switch (wide_rank(r)) {
    case 8:
      return wide_ctas<G, 8>(m, n, batch);
    case 16:
      return wide_ctas<G, 16>(m, n, batch);
    default:
      return wide_ctas<G, 32>(m, n, batch);
  }
}

template <class G>
void launch_add_project_any(int batch, std::int64_t m, std::int64_t n, int r, const G* const* g, float* const* e,
                            const float* const* q, int ctas, float* pw, float* const* p, double* partials,
                            cudaStream_t stream) {
  const int chunks = project_chunks(n, r);
  const dim3 grid(static_cast<unsigned int>(ctas), static_cast<unsigned int>(batch));
  constexpr std::size_t shared = kWideQFloats * sizeof(float);
  if (r <= kProjectRankMax) {
    add_project_kernel<G, kProjectRankMax><<<grid, kThreads, 0, stream>>>(m, n, r, chunks, g, e, q, pw, partials);
  } else if (wide_rank(r) == 8) {
    wide_kernel<G, 8>()<<<grid, kThreads, shared, stream>>>(m, n, r, chunks, g, e, q, pw, partials);
  } else if (wide_rank(r) == 16) {
    wide_kernel<G, 16>()<<<grid, kThreads, shared, stream>>>(m, n, r, chunks, g, e, q, pw, partials);
  } else {
    wide_kernel<G, 32>()<<<grid, kThreads, shared, stream>>>(m, n, r, chunks, g, e, q, pw, partials);
  }
  const std::int64_t mr = m * r;
  const auto reduce_grid = static_cast<unsigned int>(std::min<std::int64_t>((mr + kThreads - 1) / kThreads, 1024));
  project_reduce_kernel<<<dim3(reduce_grid, static_cast<unsigned int>(batch)), kThreads, 0, stream>>>(m, r, chunks, pw,
                                                                                                      p);
}

}  // namespace

int project_chunks(std::int64_t n, int r) {
  const std::int64_t cols = r <= kProjectRankMax ? kProjectChunk : kWideQFloats / wide_rank(r);
  return static_cast<int>((n + cols - 1) / cols);
}

int project_ctas(std::int64_t m, std::int64_t n, int r, int batch, bool bf16) {
  return bf16 ? ctas_of<std::uint16_t>(m, n, r, batch) : ctas_of<float>(m, n, r, batch);
}

void launch_add_project(int batch, std::int64_t m, std::int64_t n, int r, const float* const* g, float* const* e,
                        const float* const* q, int ctas, float* pw, float* const* p, double* partials,
                        cudaStream_t stream) {
  launch_add_project_any(batch, m, n, r, g, e, q, ctas, pw, p, partials, stream);
}

void launch_add_project(int batch, std::int64_t m, std::int64_t n, int r, const std::uint16_t* const* g,
                        float* const* e, const float* const* q, int ctas, float* pw, float* const* p, double* partials,
                        cudaStream_t stream) {
  launch_add_project_any(batch, m, n, r, g, e, q, ctas, pw, p, partials, stream);
}

}  // namespace edgc::kernels::cuda
