// Sampled statistics: power sums and a fixed-width histogram over blocks of a gradient.
//
// The moment loop streams each block once with kLanes independent double accumulators per power sum. Doubles
// because gradients have a mean tiny next to their spread (float partial sums would lose it); independent lanes
// because a single accumulator chain is latency-bound (4 cycles per add) and lanes are what the compiler turns
// into SIMD registers without -ffast-math reassociation. Non-finite values are not tested per element: a float's
// x⁴ is below 1.2e154, so the double sums of finite floats never overflow, and a block whose sums come out
// non-finite is simply recounted by the careful scalar loop.
#include <cmath>

#include "cpu_variant.hpp"

namespace edgc::kernels::cpu::EDGC_CPU_VARIANT {
namespace {

constexpr int kLanes = 16;  // one 64-byte cache line of floats per iteration

struct Sums {
  double s1 = 0.0;
  double s2 = 0.0;
  double s3 = 0.0;
  double s4 = 0.0;
};

// `next` / `next_n`: the block that comes after this one, prefetched line by line at the same pace as this one
// is read. Sampled blocks are scattered, and the hardware prefetcher only ramps up inside a block (it stops at
// page boundaries), so without this every block start waits for DRAM: measured 5.6 → 8.5 GB/s on 4 KiB blocks.
Sums fast_sums(const float* x, std::int64_t n, const float* next, std::int64_t next_n) {
  double a1[kLanes] = {};
  double a2[kLanes] = {};
  double a3[kLanes] = {};
  double a4[kLanes] = {};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    if (i < next_n) __builtin_prefetch(next + i);
    for (int j = 0; j < kLanes; ++j) {
      const double v = x[i + j];
      const double v2 = v * v;
      a1[j] += v;
      a2[j] += v2;
      a3[j] += v2 * v;
      a4[j] += v2 * v2;
    }
  }
  Sums s;
  for (int j = 0; j < kLanes; ++j) {
    s.s1 += a1[j];
    s.s2 += a2[j];
    s.s3 += a3[j];
    s.s4 += a4[j];
  }
  for (; i < n; ++i) {
    const double v = x[i];
    const double v2 = v * v;
    s.s1 += v;
    s.s2 += v2;
    s.s3 += v2 * v;
    s.s4 += v2 * v2;
  }
  return s;
}

void careful_sums(const float* x, std::int64_t n, MomentSums& out) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float f = x[i];
    if (std::isnan(f)) {
      ++out.nan;
    } else if (std::isinf(f)) {
      ++out.inf;
    } else {
      const double v = f;
      const double v2 = v * v;
      out.sum += v;
      out.sum_sq += v2;
      out.sum_cube += v2 * v;
      out.sum_quad += v2 * v2;
      ++out.count;
    }
  }
}

}  // namespace

MomentSums moments(const float* x, const Block* blocks, std::int64_t num_blocks) {
  MomentSums out;
  for (std::int64_t b = 0; b < num_blocks; ++b) {
    const float* p = x + blocks[b].offset;
    const std::int64_t n = blocks[b].length;
    const bool last = b + 1 == num_blocks;
    const Sums s = fast_sums(p, n, last ? p : x + blocks[b + 1].offset, last ? 0 : blocks[b + 1].length);
    if (std::isfinite(s.s1 + s.s2 + s.s3 + s.s4)) {
      out.sum += s.s1;
      out.sum_sq += s.s2;
      out.sum_cube += s.s3;
      out.sum_quad += s.s4;
      out.count += n;
    } else {
      careful_sums(p, n, out);
    }
  }
  return out;
}

void histogram(const float* x, const Block* blocks, std::int64_t num_blocks, double lo, double bin_width,
               std::int64_t* counts, std::int64_t num_bins, HistogramTails* tails) {
  const auto bins = static_cast<double>(num_bins);
  HistogramTails t;
  for (std::int64_t b = 0; b < num_blocks; ++b) {
    const float* p = x + blocks[b].offset;
    for (std::int64_t i = 0; i < blocks[b].length; ++i) {
      const float f = p[i];
      if (!std::isfinite(f)) {
        ++t.non_finite;
        continue;
      }
      const double pos = (static_cast<double>(f) - lo) / bin_width;
      if (pos < 0.0) {
        ++t.below;
      } else if (pos >= bins) {
        ++t.above;
      } else {
        ++counts[static_cast<std::int64_t>(pos)];
      }
    }
  }
  *tails += t;
}

}  // namespace edgc::kernels::cpu::EDGC_CPU_VARIANT
