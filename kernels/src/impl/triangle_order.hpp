#pragma once
// The numbering of the trailing entries of an r×r Cholesky factorisation that the CUDA backend's spread schedule
// hands out to the threads of a CTA (cuda/cuda_orthogonalize.cu): the entries (i, k) of the lower triangle with
// 1 ≤ k ≤ i < r, column by column from the last column, rows from the diagonal down. The entries still to update
// after column j (columns j + 1 .. r − 1) are then the first trailing_entries(j, r). Plain C++ callable from device
// code, so that the CPU tests check the numbering the kernel uses.
#include <cmath>

#if defined(__CUDACC__)
#define EDGC_HOST_DEVICE __host__ __device__
#else
#define EDGC_HOST_DEVICE
#endif

namespace edgc::kernels::impl {

struct TriangleCell {
  int row, col;
};

/// Entries of the lower triangle in the columns j + 1 .. r − 1, (r − 1 − j)(r − j)/2: what step j of the
/// factorisation updates; trailing_entries(0, r) is the whole numbering.
EDGC_HOST_DEVICE constexpr int trailing_entries(int j, int r) { return (r - 1 - j) * (r - j) / 2; }

/// Entry e (0 ≤ e < trailing_entries(0, r)) of the numbering: column r − 1 − c holds the entries c(c + 1)/2 ..
/// c(c + 1)/2 + c.
EDGC_HOST_DEVICE inline TriangleCell trailing_cell(int e, int r) {
  // c = ⌊(√(8e + 1) − 1)/2⌋. The double square root is correctly rounded, so exact where 8e + 1 is a square and
  // elsewhere far from an integer boundary for any int e; the two corrections only guard against a library sqrt
  // that is not.
  auto c = static_cast<int>((sqrt(8.0 * e + 1.0) - 1.0) * 0.5);
  c -= c * (c + 1) / 2 > e ? 1 : 0;
  c += (c + 1) * (c + 2) / 2 <= e ? 1 : 0;
  const int k = r - 1 - c;
  return {k + e - c * (c + 1) / 2, k};
}

}  // namespace edgc::kernels::impl
