// Device kernels of the CUDA backend: sampled statistics, the streaming passes of the fused PowerSGD halves,
// and the small per-matrix steps of the orthogonalisation. The large products go through cuBLAS (backend).
//
// Streaming kernels read 16-byte vectors (8-byte ones of four bf16) when every pointer of a matrix is aligned to
// that (the usual case: cudaMalloc'd buffers of whole matrices) and fall back to single elements otherwise. Every
// reduction runs in double, per CTA, and is finished in a fixed order, so results repeat bit for bit between runs.
#include <cub/block/block_reduce.cuh>

#include <cfloat>
#include <cstdint>
#include <type_traits>

#include "cuda_kernels.hpp"

namespace edgc::kernels::cuda {
namespace {

struct AddPartial {
  __device__ MomentPartial operator()(const MomentPartial& a, const MomentPartial& b) const {
    return {a.s1 + b.s1, a.s2 + b.s2, a.s3 + b.s3, a.s4 + b.s4, a.count + b.count, a.nan + b.nan, a.inf + b.inf};
  }
};

struct MaxOp {
  __device__ double operator()(double a, double b) const { return fmax(a, b); }
};

__device__ __forceinline__ void accumulate(MomentPartial& acc, float f) {
  if (isfinite(f)) {
    const double v = f;
    const double v2 = v * v;
    acc.s1 += v;
    acc.s2 += v2;
    acc.s3 += v2 * v;
    acc.s4 += v2 * v2;
    ++acc.count;
  } else if (isnan(f)) {
    ++acc.nan;
  } else {
    ++acc.inf;
  }
}

__device__ __forceinline__ bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15U) == 0; }

// Calls f(value) for every element of one piece, threads of the CTA striding through it with 16-byte loads
// after a scalar head that reaches the next 16-byte boundary.
template <class F>
__device__ __forceinline__ void for_each_in_piece(const float* x, Piece pc, F&& f) {
  const float* p = x + pc.offset;
  std::int64_t n = pc.length;
  const auto mis = static_cast<std::int64_t>((reinterpret_cast<std::uintptr_t>(p) >> 2) & 3U);
  std::int64_t head = mis == 0 ? 0 : 4 - mis;
  if (head > n) head = n;
  if (threadIdx.x < head) f(__ldg(p + threadIdx.x));
  p += head;
  n -= head;
  const auto* p4 = reinterpret_cast<const float4*>(p);
  const std::int64_t n4 = n / 4;
  for (std::int64_t i = threadIdx.x; i < n4; i += blockDim.x) {
    const float4 v = __ldg(p4 + i);
    f(v.x);
    f(v.y);
    f(v.z);
    f(v.w);
  }
  for (std::int64_t i = n4 * 4 + threadIdx.x; i < n; i += blockDim.x) f(__ldg(p + i));
}

__global__ void __launch_bounds__(kThreads)
    moments_kernel(const float* x, const Piece* pieces, std::int64_t num_pieces, MomentPartial* partials) {
  MomentPartial acc{0.0, 0.0, 0.0, 0.0, 0, 0, 0};
  for (std::int64_t i = blockIdx.x; i < num_pieces; i += gridDim.x)
    for_each_in_piece(x, pieces[i], [&](float f) { accumulate(acc, f); });
  using Reduce = cub::BlockReduce<MomentPartial, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  const MomentPartial total = Reduce(tmp).Reduce(acc, AddPartial{});
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// The per-CTA partials summed by one CTA: threads stride over them, then a block reduction. The order is fixed by the
// launch shape, so every run gives the same bits. (A single thread summing them in order waited for one load after
// another: about 0.25 ms for a thousand partials on an H100, more than the kernel it summarises.)
__global__ void __launch_bounds__(kThreads)
    sum_moment_partials(const MomentPartial* partials, int n, MomentPartial* out) {
  MomentPartial acc{0.0, 0.0, 0.0, 0.0, 0, 0, 0};
  for (int i = static_cast<int>(threadIdx.x); i < n; i += blockDim.x) acc = AddPartial{}(acc, partials[i]);
  using Reduce = cub::BlockReduce<MomentPartial, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  const MomentPartial total = Reduce(tmp).Reduce(acc, AddPartial{});
  if (threadIdx.x == 0) *out = total;
}

template <bool kShared>
__global__ void __launch_bounds__(kThreads)
    histogram_kernel(const float* x, const Piece* pieces, std::int64_t num_pieces, double lo, double bin_width,
                     unsigned long long* counts, std::int64_t num_bins, unsigned long long* tails) {
  extern __shared__ unsigned int s_bins[];
  __shared__ unsigned int s_tails[3];
  if constexpr (kShared) {
    for (std::int64_t i = threadIdx.x; i < num_bins; i += blockDim.x) s_bins[i] = 0;
  }
  if (threadIdx.x < 3) s_tails[threadIdx.x] = 0;
  __syncthreads();
  const auto bins = static_cast<double>(num_bins);
  for (std::int64_t i = blockIdx.x; i < num_pieces; i += gridDim.x)
    for_each_in_piece(x, pieces[i], [&](float f) {
      if (!isfinite(f)) {
        atomicAdd(&s_tails[2], 1U);
        return;
      }
      // The same double arithmetic as the CPU twin (IEEE division), so both put every value in the same bin.
      const double pos = (static_cast<double>(f) - lo) / bin_width;
      if (pos < 0.0) {
        atomicAdd(&s_tails[0], 1U);
      } else if (pos >= bins) {
        atomicAdd(&s_tails[1], 1U);
      } else if constexpr (kShared) {
        atomicAdd(&s_bins[static_cast<std::int64_t>(pos)], 1U);
      } else {
        atomicAdd(&counts[static_cast<std::int64_t>(pos)], 1ULL);
      }
    });
  __syncthreads();
  if constexpr (kShared) {
    for (std::int64_t i = threadIdx.x; i < num_bins; i += blockDim.x)
      if (s_bins[i] != 0) atomicAdd(&counts[i], static_cast<unsigned long long>(s_bins[i]));
  }
  if (threadIdx.x < 3 && s_tails[threadIdx.x] != 0)
    atomicAdd(&tails[threadIdx.x], static_cast<unsigned long long>(s_tails[threadIdx.x]));
}

// Per-CTA sum of squares to partials[blockIdx.y · gridDim.x + blockIdx.x].
__device__ __forceinline__ void write_partial(double s, double* partials) {
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  const double total = Reduce(tmp).Sum(s);
  if (threadIdx.x == 0) partials[blockIdx.y * gridDim.x + blockIdx.x] = total;
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
      s += static_cast<double>(v.x) * v.x + static_cast<double>(v.y) * v.y + static_cast<double>(v.z) * v.z +
           static_cast<double>(v.w) * v.w;
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
      s += static_cast<double>(d.x) * d.x + static_cast<double>(d.y) * d.y + static_cast<double>(d.z) * d.z +
           static_cast<double>(d.w) * d.w;
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

constexpr int kSmallThreads = 128;

// The CPU twin's cholesky(): the lower triangle of D⁻¹·G·D⁻¹ + shift·I = L·Lᵀ, left-looking, column j's
// entries below the diagonal in parallel. Same order of operations per entry as the CPU.
__device__ bool cholesky(const float* gram, const double* d, std::int64_t r, double shift, double* l) {
  __shared__ int fail;
  for (std::int64_t j = 0; j < r; ++j) {
    if (threadIdx.x == 0) {
      double v = static_cast<double>(gram[j * r + j]) / (d[j] * d[j]) + shift;
      for (std::int64_t k = 0; k < j; ++k) v -= l[j * r + k] * l[j * r + k];
      fail = !(v > 0.0) || !isfinite(v);
      if (!fail) l[j * r + j] = sqrt(v);
    }
    __syncthreads();
    if (fail) {
      __syncthreads();  // everyone has read `fail` before it is written again
      return false;
    }
    const double ljj = l[j * r + j];
    for (std::int64_t i = j + 1 + threadIdx.x; i < r; i += blockDim.x) {
      double s = static_cast<double>(gram[i * r + j]) / (d[i] * d[j]);
      for (std::int64_t k = 0; k < j; ++k) s -= l[i * r + k] * l[j * r + k];
      l[i * r + j] = s / ljj;
    }
    __syncthreads();
  }
  return true;
}

__global__ void __launch_bounds__(kSmallThreads)
    cholesky_rinv_kernel(std::int64_t r, const float* grams, float eps, const int* gate, double* dworks, float* rinvs,
                         int* ok, int* third, bool l_in_shared) {
  const int b = blockIdx.x;
  if (gate != nullptr && gate[b] == 0) {
    if (threadIdx.x == 0) ok[b] = 0;
    return;
  }
  const float* gram = grams + static_cast<std::int64_t>(b) * r * r;
  double* const work = dworks + static_cast<std::int64_t>(b) * (2 * r * r + r);
  double* const linv = work + r * r;
  double* const d = linv + r * r;
  // L lives in dynamic shared memory when the launch gave room for it (r·r doubles, up to r = 128 on an A100 or
  // H100), else in its global workspace. The Cholesky and the substitution below are chains of dependent
  // multiply-adds over L; from global memory each step waited for a cached load (0.69 ms at r = 128 on an H100).
  extern __shared__ double s_l[];
  double* const l = l_in_shared ? s_l : work;
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
  for (std::int64_t i = threadIdx.x; i < r * r; i += blockDim.x) l[i] = 0.0;
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
  for (int attempt = 0; !cholesky(gram, d, r, shift, l); ++attempt) {
    if (attempt == 40) {
      if (threadIdx.x == 0) ok[b] = 0;
      return;
    }
    shift = fmax(shift * 10.0, 1e-7);
    grew = true;
  }
  // L⁻¹ in place of L, row by row, with the CPU twin's arithmetic: entry (i, j < i) is
  // −(Σ_{k=j}^{i−1} L[i][k]·L⁻¹[k][j]) / L[i][i], summed in that order, and the diagonal is 1 / L[i][i]. Row i reads
  // the rows above it (already inverted) and its own L entries from column j on, so its entries are computed in
  // parallel into the global scratch row, then written over L after a barrier.
  for (std::int64_t i = 0; i < r; ++i) {
    const double lii = l[i * r + i];
    for (std::int64_t j = threadIdx.x; j < i; j += blockDim.x) {
      double acc = 0.0;
      for (std::int64_t k = j; k < i; ++k) acc += l[i * r + k] * l[k * r + j];
      linv[i * r + j] = -acc / lii;
    }
    __syncthreads();
    for (std::int64_t j = threadIdx.x; j < i; j += blockDim.x) l[i * r + j] = linv[i * r + j];
    if (threadIdx.x == 0) l[i * r + i] = 1.0 / lii;
    __syncthreads();
  }
  for (std::int64_t x = threadIdx.x; x < r * r; x += blockDim.x) {
    const std::int64_t i = x / r;
    const std::int64_t j = x % r;
    rinv[x] = j >= i ? static_cast<float>(l[j * r + i] / d[i]) : 0.0F;
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

dim3 batch_grid(int ctas, int batch) { return dim3(static_cast<unsigned int>(ctas), static_cast<unsigned int>(batch)); }

unsigned int ctas_for(std::int64_t count) {
  const std::int64_t c = (count + kThreads * 4 - 1) / (kThreads * 4);
  return static_cast<unsigned int>(c < 1 ? 1 : (c > 1024 ? 1024 : c));
}

}  // namespace

void launch_moments(const float* x, const Piece* pieces, std::int64_t num_pieces, int grid, MomentPartial* partials,
                    MomentPartial* out, cudaStream_t stream) {
  moments_kernel<<<grid, kThreads, 0, stream>>>(x, pieces, num_pieces, partials);
  sum_moment_partials<<<1, kThreads, 0, stream>>>(partials, grid, out);
}

void launch_histogram(const float* x, const Piece* pieces, std::int64_t num_pieces, int grid, double lo,
                      double bin_width, unsigned long long* counts, std::int64_t num_bins, unsigned long long* tails,
                      cudaStream_t stream) {
  if (num_bins <= kSharedBins) {
    histogram_kernel<true><<<grid, kThreads, static_cast<std::size_t>(num_bins) * sizeof(unsigned int), stream>>>(
        x, pieces, num_pieces, lo, bin_width, counts, num_bins, tails);
  } else {
    histogram_kernel<false>
        <<<grid, kThreads, 0, stream>>>(x, pieces, num_pieces, lo, bin_width, counts, num_bins, tails);
  }
}

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

void launch_gram_schmidt(int batch, std::int64_t rows, std::int64_t cols, float* const* p, float eps,
                         cudaStream_t stream) {
  gram_schmidt_kernel<<<batch, kThreads, 0, stream>>>(rows, cols, p, eps);
}

void launch_gather(int batch, std::int64_t count, const float* const* src, float* dst, cudaStream_t stream) {
  gather_kernel<<<dim3(ctas_for(count), static_cast<unsigned int>(batch)), kThreads, 0, stream>>>(count, src, dst);
}

void launch_cholesky_rinv(int batch, std::int64_t r, const float* gram, float eps, const int* gate, double* dwork,
                          float* rinv, int* ok, int* third, cudaStream_t stream) {
  // Room for L in shared memory: the device's opt-in limit per block, less the kernel's static shared memory.
  static const std::size_t room = [] {
    int device = 0;
    int optin = 0;
    cudaFuncAttributes attr{};
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess ||
        cudaFuncGetAttributes(&attr, cholesky_rinv_kernel) != cudaSuccess ||
        static_cast<std::size_t>(optin) <= attr.sharedSizeBytes ||
        cudaFuncSetAttribute(cholesky_rinv_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             optin - static_cast<int>(attr.sharedSizeBytes)) != cudaSuccess) {
      (void)cudaGetLastError();  // no room: L stays in global memory
      return std::size_t{0};
    }
    return static_cast<std::size_t>(optin) - attr.sharedSizeBytes;
  }();
  const auto bytes = static_cast<std::size_t>(r * r) * sizeof(double);
  const bool shared = bytes <= room;
  cholesky_rinv_kernel<<<batch, kSmallThreads, shared ? bytes : 0, stream>>>(r, gram, eps, gate, dwork, rinv, ok, third,
                                                                             shared);
}

void launch_commit(int batch, std::int64_t count, float* const* p, const float* w2, const float* w3, const int* ok1,
                   const int* ok2, const int* third, const int* ok3, cudaStream_t stream) {
  commit_kernel<<<dim3(ctas_for(count), static_cast<unsigned int>(batch)), kThreads, 0, stream>>>(count, p, w2, w3, ok1,
                                                                                                  ok2, third, ok3);
}

}  // namespace edgc::kernels::cuda
