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

// Calls f(value) for every element of one piece, read by the 32 lanes of a warp: a scalar head up to the next 16-byte
// boundary, then 16-byte loads, kUnroll of them issued by each lane before any is used, so that one piece of a few
// thousand elements is in flight at once (one load per thread and piece, behind the load of the piece itself, kept
// the kernels at 1.3–1.7 TB/s on an H100).
template <class F>
__device__ __forceinline__ void for_each_in_piece(const float* x, const Piece pc, std::int64_t lane, F&& f) {
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

// Calls f(value) for every element of `pieces`, one warp per piece, the warps of the grid striding over them.
template <class F>
__device__ __forceinline__ void for_each_sampled(const float* x, const Piece* pieces, std::int64_t num_pieces, F&& f) {
  const auto lane = static_cast<std::int64_t>(threadIdx.x % 32);
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * kWarps;
  for (std::int64_t w = static_cast<std::int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32; w < num_pieces; w += warps)
    for_each_in_piece(x, pieces[w], lane, f);
}

// A histogram's bins as the statistics kernels place values: `copies` shared-memory copies of the bins (one per warp
// when they fit, else one; 0: bins in global memory).
struct Binning {
  std::int64_t num_bins;
  int copies;
  double lo, bin_width;
  double inv_width;  // 1 / bin_width when finite, else 0 (every value then divides)
};

// The bin of a finite value: floor((f − lo) / bin_width) in double, as the CPU twin computes it. The product with the
// reciprocal is within a few units in the last place of that quotient, so it decides the bin, the tails included,
// unless it lies within 1e-12 (relative) of an integer; there the IEEE quotient decides, as on the CPU. (A double
// division per element cost the histogram as much time as its loads.)
__device__ __forceinline__ double bin_position(float f, const Binning& b) {
  const double diff = static_cast<double>(f) - b.lo;
  if (b.inv_width == 0.0) return diff / b.bin_width;
  const double pos = diff * b.inv_width;
  return fabs(pos - rint(pos)) <= 1e-12 * fmax(1.0, fabs(pos)) ? diff / b.bin_width : pos;
}

// Counts one value: into this warp's shared bins (`bins`, or `counts` in global memory when null) or the shared tails.
__device__ __forceinline__ void count_value(float f, const Binning& b, unsigned int* bins, unsigned int* s_tails,
                                            unsigned long long* counts) {
  if (!isfinite(f)) {
    atomicAdd(&s_tails[2], 1U);
    return;
  }
  const double pos = bin_position(f, b);
  if (pos < 0.0) {
    atomicAdd(&s_tails[0], 1U);
  } else if (pos >= static_cast<double>(b.num_bins)) {
    atomicAdd(&s_tails[1], 1U);
  } else if (bins != nullptr) {
    atomicAdd(&bins[static_cast<std::int64_t>(pos)], 1U);
  } else {
    atomicAdd(&counts[static_cast<std::int64_t>(pos)], 1ULL);
  }
}

// Zeroes the CTA's shared bins and tails (then a barrier).
__device__ __forceinline__ void clear_bins(const Binning& b, unsigned int* s_bins, unsigned int* s_tails) {
  for (std::int64_t i = threadIdx.x; i < b.copies * b.num_bins; i += blockDim.x) s_bins[i] = 0;
  if (threadIdx.x < 3) s_tails[threadIdx.x] = 0;
  __syncthreads();
}

// Adds the CTA's shared bins (summed over their copies) and tails to `counts` and `tails` in global memory (after a
// barrier).
__device__ __forceinline__ void flush_bins(const Binning& b, const unsigned int* s_bins, const unsigned int* s_tails,
                                           unsigned long long* counts, unsigned long long* tails) {
  __syncthreads();
  for (std::int64_t i = threadIdx.x; b.copies > 0 && i < b.num_bins; i += blockDim.x) {
    unsigned long long c = 0;
    for (int k = 0; k < b.copies; ++k) c += s_bins[k * b.num_bins + i];
    if (c != 0) atomicAdd(&counts[i], c);
  }
  if (threadIdx.x < 3 && s_tails[threadIdx.x] != 0)
    atomicAdd(&tails[threadIdx.x], static_cast<unsigned long long>(s_tails[threadIdx.x]));
}

// This warp's copy of the shared bins, or null when the bins are in global memory.
__device__ __forceinline__ unsigned int* warp_bins(const Binning& b, unsigned int* s_bins) {
  return b.copies > 0 ? s_bins + (threadIdx.x / 32) % b.copies * b.num_bins : nullptr;
}

// What a statistics kernel computes: the moments' per-CTA partials, a histogram, or both from one read.
struct StatsArgs {
  const float* x;
  const Piece* pieces;
  std::int64_t num_pieces;
  MomentPartial* partials;     // moments: per-CTA partial sums, or null
  unsigned long long* counts;  // histogram: num_bins counts, or null
  unsigned long long* tails;   // below, above, non-finite
  Binning bins;
};

template <bool kMoments, bool kHistogram>
__global__ void __launch_bounds__(kThreads) stats_kernel(StatsArgs a) {
  extern __shared__ unsigned int s_bins[];
  __shared__ unsigned int s_tails[3];
  unsigned int* bins = nullptr;
  if constexpr (kHistogram) {
    clear_bins(a.bins, s_bins, s_tails);
    bins = warp_bins(a.bins, s_bins);
  }
  MomentPartial acc{0.0, 0.0, 0.0, 0.0, 0, 0, 0};
  for_each_sampled(a.x, a.pieces, a.num_pieces, [&](float f) {
    if constexpr (kMoments) accumulate(acc, f);
    if constexpr (kHistogram) count_value(f, a.bins, bins, s_tails, a.counts);
  });
  if constexpr (kMoments) {
    using Reduce = cub::BlockReduce<MomentPartial, kThreads>;
    __shared__ typename Reduce::TempStorage tmp;
    const MomentPartial total = Reduce(tmp).Reduce(acc, AddPartial{});
    if (threadIdx.x == 0) a.partials[blockIdx.x] = total;
  }
  if constexpr (kHistogram) flush_bins(a.bins, s_bins, s_tails, a.counts, a.tails);
}

// What the batched statistics kernel computes: per tile (a run of pieces of one tensor) the moments' partial sums,
// and with kHistogram each tensor's histogram.
struct BatchedArgs {
  const float* const* x;  // per tensor
  const Piece* pieces;    // offsets within their tensor
  const Tile* tiles;
  std::int64_t num_tiles;
  MomentPartial* partials;     // per tile
  unsigned long long* counts;  // tensors × num_bins
  unsigned long long* tails;   // tensors × 3
  Binning bins;
};

// One CTA per tile at a time (the CTAs stride over the tiles), a warp per piece of it: the tile's moments from one
// block reduction, so they do not depend on the grid; its histogram in shared memory, added to its tensor's row.
template <bool kHistogram>
__global__ void __launch_bounds__(kThreads) batched_stats_kernel(BatchedArgs a) {
  extern __shared__ unsigned int s_bins[];
  __shared__ unsigned int s_tails[3];
  using Reduce = cub::BlockReduce<MomentPartial, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  const auto lane = static_cast<std::int64_t>(threadIdx.x % 32);
  const auto warp = static_cast<std::int64_t>(threadIdx.x / 32);
  unsigned int* bins = kHistogram ? warp_bins(a.bins, s_bins) : nullptr;
  for (std::int64_t t = blockIdx.x; t < a.num_tiles; t += gridDim.x) {
    const Tile tile = a.tiles[t];
    unsigned long long* counts = kHistogram ? a.counts + tile.tensor * a.bins.num_bins : nullptr;
    if constexpr (kHistogram) clear_bins(a.bins, s_bins, s_tails);
    const float* x = a.x[tile.tensor];
    MomentPartial acc{0.0, 0.0, 0.0, 0.0, 0, 0, 0};
    for (std::int64_t p = tile.first + warp; p < tile.end; p += kWarps)
      for_each_in_piece(x, a.pieces[p], lane, [&](float f) {
        accumulate(acc, f);
        if constexpr (kHistogram) count_value(f, a.bins, bins, s_tails, counts);
      });
    const MomentPartial total = Reduce(tmp).Reduce(acc, AddPartial{});
    if (threadIdx.x == 0) a.partials[t] = total;
    if constexpr (kHistogram) flush_bins(a.bins, s_bins, s_tails, counts, a.tails + tile.tensor * 3);
    __syncthreads();  // the reduction's storage and the shared bins are reused by the next tile
  }
}

// Each tensor's moments: CTA t sums the partials of tensor t's tiles, tile_begin[t] .. tile_begin[t + 1), in a fixed
// order (threads stride over them, then a block reduction); no tiles give zeros.
__global__ void __launch_bounds__(kThreads)
    sum_tile_partials(const MomentPartial* partials, const std::int64_t* tile_begin, MomentPartial* out) {
  MomentPartial acc{0.0, 0.0, 0.0, 0.0, 0, 0, 0};
  const std::int64_t end = tile_begin[blockIdx.x + 1];
  for (std::int64_t i = tile_begin[blockIdx.x] + threadIdx.x; i < end; i += blockDim.x)
    acc = AddPartial{}(acc, partials[i]);
  using Reduce = cub::BlockReduce<MomentPartial, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  const MomentPartial total = Reduce(tmp).Reduce(acc, AddPartial{});
  if (threadIdx.x == 0) out[blockIdx.x] = total;
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

// Bins in shared memory: one copy per warp when they fit in kBinBytes (fewer collisions between warps on the central
// bins), else one copy up to kSharedBins, else global memory.
Binning binning_of(bool histogram, std::int64_t num_bins, double lo, double bin_width) {
  Binning b{num_bins, 0, lo, bin_width, 0.0};
  if (!histogram) return b;
  const double inv = 1.0 / bin_width;
  b.inv_width = std::isfinite(inv) ? inv : 0.0;
  if (kWarps * num_bins * static_cast<std::int64_t>(sizeof(unsigned int)) <= kBinBytes) {
    b.copies = kWarps;
  } else if (num_bins <= kSharedBins) {
    b.copies = 1;
  }
  return b;
}

std::size_t shared_bytes(const Binning& b) {
  return static_cast<std::size_t>(b.copies * b.num_bins) * sizeof(unsigned int);
}

}  // namespace

int statistics_grid(std::int64_t num_pieces) {
  // One wave of the heaviest kind (moments and histogram) with the most bins.
  static const int wave = one_wave(stats_kernel<true, true>, kBinBytes);
  const std::int64_t warps_needed = (num_pieces + kWarps - 1) / kWarps;
  return static_cast<int>(std::min<std::int64_t>(std::max<std::int64_t>(warps_needed, 1), wave));
}

void launch_statistics(const Statistics& st, cudaStream_t stream) {
  const StatisticsResults& r = st.results;
  const bool moments = r.partials != nullptr;
  const bool histogram = r.counts != nullptr;
  const StatsArgs a{st.x,
                    st.pieces,
                    st.num_pieces,
                    r.partials,
                    r.counts,
                    r.tails,
                    binning_of(histogram, r.num_bins, r.lo, r.bin_width)};
  const std::size_t shared = shared_bytes(a.bins);
  if (moments && histogram) {
    stats_kernel<true, true><<<st.grid, kThreads, shared, stream>>>(a);
  } else if (moments) {
    stats_kernel<true, false><<<st.grid, kThreads, 0, stream>>>(a);
  } else {
    stats_kernel<false, true><<<st.grid, kThreads, shared, stream>>>(a);
  }
  if (moments) sum_moment_partials<<<1, kThreads, 0, stream>>>(r.partials, st.grid, r.out);
}

int batched_statistics_wave() {
  static const int wave = one_wave(batched_stats_kernel<true>, kBinBytes);
  return wave;
}

void launch_batched_statistics(const BatchedStatistics& st, cudaStream_t stream) {
  if (st.num_tensors == 0) return;
  const StatisticsResults& r = st.results;
  const bool histogram = r.counts != nullptr;
  const BatchedArgs a{st.x,       st.pieces, st.tiles, st.num_tiles,
                      r.partials, r.counts,  r.tails,  binning_of(histogram, r.num_bins, r.lo, r.bin_width)};
  const auto grid =
      static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(st.num_tiles, batched_statistics_wave())));
  if (st.num_tiles > 0) {
    if (histogram) {
      batched_stats_kernel<true><<<grid, kThreads, shared_bytes(a.bins), stream>>>(a);
    } else {
      batched_stats_kernel<false><<<grid, kThreads, 0, stream>>>(a);
    }
  }
  sum_tile_partials<<<st.num_tensors, kThreads, 0, stream>>>(r.partials, st.tile_begin, r.out);
}

}  // namespace edgc::kernels::cuda
