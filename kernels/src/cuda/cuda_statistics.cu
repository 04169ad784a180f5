// Sampled statistics on the device: the moments and the histogram of the elements in a list of pieces, apart or
// from one read (Backend::moments, histogram, moments_and_histogram). One warp per piece; per-CTA double sums
// finished in a fixed order, so results repeat bit for bit between runs; bins exactly as the CPU twin's.
#include <cub/block/block_reduce.cuh>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cuda_common.cuh"
#include "cuda_kernels.hpp"

namespace edgc::kernels::cuda {
namespace {

struct AddPartial {
  __device__ MomentPartial operator()(const MomentPartial& a, const MomentPartial& b) const {
    return {a.s1 + b.s1, a.s2 + b.s2, a.s3 + b.s3, a.s4 + b.s4, a.count + b.count, a.nan + b.nan, a.inf + b.inf};
  }
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

// Shared memory for the statistics kernels' bins: the copies per warp, or the one copy of kSharedBins.
inline constexpr std::int64_t kBinBytes = kSharedBins * sizeof(unsigned int);
inline constexpr int kUnroll = 4;  // 16-byte loads each lane keeps in flight in the statistics kernels

// Calls f(value) for every element of `pieces`, one warp per piece: a scalar head up to the next 16-byte boundary,
// then 16-byte loads, kUnroll of them issued by each lane before any is used, so that one piece of a few thousand
// elements is in flight at once (one load per thread and piece, behind the load of the piece itself, kept the
// kernels at 1.3–1.7 TB/s on an H100).
template <class F>
__device__ __forceinline__ void for_each_sampled(const float* x, const Piece* pieces, std::int64_t num_pieces, F&& f) {
  const auto lane = static_cast<std::int64_t>(threadIdx.x % 32);
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * kWarps;
  for (std::int64_t w = static_cast<std::int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32; w < num_pieces; w += warps) {
    const Piece pc = pieces[w];
    const float* p = x + pc.offset;
    std::int64_t n = pc.length;
    const auto mis = static_cast<std::int64_t>((reinterpret_cast<std::uintptr_t>(p) >> 2) & 3U);
    std::int64_t head = mis == 0 ? 0 : 4 - mis;
    if (head > n) head = n;
    if (lane < head) f(__ldg(p + lane));
    p += head;
    n -= head;
    const auto* p4 = reinterpret_cast<const float4*>(p);
    const std::int64_t n4 = n / 4;
    for (std::int64_t base = 0; base < n4; base += 32 * kUnroll) {
      float4 v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const std::int64_t k = base + u * 32 + lane;
        v[u] = k < n4 ? __ldg(p4 + k) : float4{0.0F, 0.0F, 0.0F, 0.0F};
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (base + u * 32 + lane < n4) {
          f(v[u].x);
          f(v[u].y);
          f(v[u].z);
          f(v[u].w);
        }
      }
    }
    if (n4 * 4 + lane < n) f(__ldg(p + n4 * 4 + lane));  // at most 3 elements
  }
}

// What a statistics kernel computes: the moments' per-CTA partials, a histogram, or both from one read.
struct StatsArgs {
  const float* x;
  const Piece* pieces;
  std::int64_t num_pieces;
  MomentPartial* partials;     // moments: per-CTA partial sums, or null
  unsigned long long* counts;  // histogram: num_bins counts, or null
  unsigned long long* tails;   // below, above, non-finite
  std::int64_t num_bins;
  int copies;  // shared-memory copies of the bins (one per warp when they fit, else one); 0: bins in global memory
  double lo, bin_width;
  double inv_width;  // 1 / bin_width when finite, else 0 (every value then divides)
};

// The bin of a finite value: floor((f − lo) / bin_width) in double, as the CPU twin computes it. The product with the
// reciprocal is within a few units in the last place of that quotient, so it decides the bin, the tails included,
// unless it lies within 1e-12 (relative) of an integer; there the IEEE quotient decides, as on the CPU. (A double
// division per element cost the histogram as much time as its loads.)
__device__ __forceinline__ double bin_position(float f, const StatsArgs& a) {
  const double diff = static_cast<double>(f) - a.lo;
  if (a.inv_width == 0.0) return diff / a.bin_width;
  const double pos = diff * a.inv_width;
  return fabs(pos - rint(pos)) <= 1e-12 * fmax(1.0, fabs(pos)) ? diff / a.bin_width : pos;
}

template <bool kMoments, bool kHistogram>
__global__ void __launch_bounds__(kThreads) stats_kernel(StatsArgs a) {
  extern __shared__ unsigned int s_bins[];
  __shared__ unsigned int s_tails[3];
  unsigned int* bins = nullptr;
  if constexpr (kHistogram) {
    for (std::int64_t i = threadIdx.x; i < a.copies * a.num_bins; i += blockDim.x) s_bins[i] = 0;
    if (threadIdx.x < 3) s_tails[threadIdx.x] = 0;
    __syncthreads();
    if (a.copies > 0) bins = s_bins + (threadIdx.x / 32) % a.copies * a.num_bins;
  }
  const auto nbins = static_cast<double>(a.num_bins);
  MomentPartial acc{0.0, 0.0, 0.0, 0.0, 0, 0, 0};
  for_each_sampled(a.x, a.pieces, a.num_pieces, [&](float f) {
    if constexpr (kMoments) accumulate(acc, f);
    if constexpr (kHistogram) {
      if (!isfinite(f)) {
        atomicAdd(&s_tails[2], 1U);
        return;
      }
      const double pos = bin_position(f, a);
      if (pos < 0.0) {
        atomicAdd(&s_tails[0], 1U);
      } else if (pos >= nbins) {
        atomicAdd(&s_tails[1], 1U);
      } else if (bins != nullptr) {
        atomicAdd(&bins[static_cast<std::int64_t>(pos)], 1U);
      } else {
        atomicAdd(&a.counts[static_cast<std::int64_t>(pos)], 1ULL);
      }
    }
  });
  if constexpr (kMoments) {
    using Reduce = cub::BlockReduce<MomentPartial, kThreads>;
    __shared__ typename Reduce::TempStorage tmp;
    const MomentPartial total = Reduce(tmp).Reduce(acc, AddPartial{});
    if (threadIdx.x == 0) a.partials[blockIdx.x] = total;
  }
  if constexpr (kHistogram) {
    __syncthreads();
    for (std::int64_t i = threadIdx.x; a.copies > 0 && i < a.num_bins; i += blockDim.x) {
      unsigned long long c = 0;
      for (int k = 0; k < a.copies; ++k) c += s_bins[k * a.num_bins + i];
      if (c != 0) atomicAdd(&a.counts[i], c);
    }
    if (threadIdx.x < 3 && s_tails[threadIdx.x] != 0)
      atomicAdd(&a.tails[threadIdx.x], static_cast<unsigned long long>(s_tails[threadIdx.x]));
  }
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

}  // namespace

int statistics_grid(std::int64_t num_pieces) {
  // One wave of the heaviest kind (moments and histogram) with the most bins.
  static const int wave = one_wave(stats_kernel<true, true>, kBinBytes);
  const std::int64_t warps_needed = (num_pieces + kWarps - 1) / kWarps;
  return static_cast<int>(std::min<std::int64_t>(std::max<std::int64_t>(warps_needed, 1), wave));
}

void launch_statistics(const Statistics& st, cudaStream_t stream) {
  const bool moments = st.partials != nullptr;
  const bool histogram = st.counts != nullptr;
  StatsArgs a{st.x,        st.pieces, st.num_pieces, st.partials,  st.counts, st.tails,
              st.num_bins, 0,         st.lo,         st.bin_width, 0.0};
  const double inv = 1.0 / st.bin_width;
  a.inv_width = histogram && std::isfinite(inv) ? inv : 0.0;
  // Bins in shared memory: one copy per warp when they fit in kBinBytes (fewer collisions between warps on the
  // central bins), else one copy up to kSharedBins, else global memory.
  if (histogram) {
    if (kWarps * st.num_bins * static_cast<std::int64_t>(sizeof(unsigned int)) <= kBinBytes) {
      a.copies = kWarps;
    } else if (st.num_bins <= kSharedBins) {
      a.copies = 1;
    }
  }
  const auto shared = static_cast<std::size_t>(a.copies * st.num_bins) * sizeof(unsigned int);
  if (moments && histogram) {
    stats_kernel<true, true><<<st.grid, kThreads, shared, stream>>>(a);
  } else if (moments) {
    stats_kernel<true, false><<<st.grid, kThreads, 0, stream>>>(a);
  } else {
    stats_kernel<false, true><<<st.grid, kThreads, shared, stream>>>(a);
  }
  if (moments) sum_moment_partials<<<1, kThreads, 0, stream>>>(st.partials, st.grid, st.out);
}

}  // namespace edgc::kernels::cuda
