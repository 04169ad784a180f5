// The addition pass of project_batched with P = M·Q formed from the same read of M (r ≤ kProjectRankMax): M = G + E
// into E, ‖M‖² per CTA, and P's sums per column chunk, which project_reduce_kernel then adds in chunk order. G and E
// are read in 16-byte vectors (8 bytes of four bf16); every sum runs in a fixed order, so P and the norms repeat bit
// for bit between runs.
#include <algorithm>
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

template <class G>
void launch_add_project_any(int batch, std::int64_t m, std::int64_t n, int r, const G* const* g, float* const* e,
                            const float* const* q, float* pw, float* const* p, double* partials, cudaStream_t stream) {
  const int chunks = project_chunks(n);
  const dim3 grid(static_cast<unsigned int>(project_ctas(m, n)), static_cast<unsigned int>(batch));
  add_project_kernel<G, kProjectRankMax><<<grid, kThreads, 0, stream>>>(m, n, r, chunks, g, e, q, pw, partials);
  const std::int64_t mr = m * r;
  const auto reduce_grid = static_cast<unsigned int>(std::min<std::int64_t>((mr + kThreads - 1) / kThreads, 1024));
  project_reduce_kernel<<<dim3(reduce_grid, static_cast<unsigned int>(batch)), kThreads, 0, stream>>>(m, r, chunks, pw,
                                                                                                      p);
}

}  // namespace

int project_chunks(std::int64_t n) { return static_cast<int>((n + kProjectChunk - 1) / kProjectChunk); }

int project_ctas(std::int64_t m, std::int64_t n) {
  const std::int64_t warps = (m + 3) / 4 * project_chunks(n);
  return static_cast<int>((warps + kWarps - 1) / kWarps);
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

}  // namespace edgc::kernels::cuda
