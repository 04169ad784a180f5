// PowerSGD's products at small rank (see kSkinnyMaxRank), written as streaming loops over the rows of M.
//
// With r this small a GEMM against M does 2r flops per element of M, so one pass costs what reading M costs,
// and what matters is touching M as few times as possible. Eigen's general GEMM packs both operands into
// blocked buffers and runs a register-tiled kernel that has little to tile at r = 4; here instead:
//  * project:     per row of M: E += G (M lands in E while in L1), then the r dot products of that row with the
//                 columns of Q — one pass that reads G and E and writes E;
//  * Q = Mᵀ·P:    four rows of M at a time are folded into Qᵀ (r × n, in L2) — one read of M;
//  * reconstruct: per row, Ĝ = P_row·Qᵀ is formed in L1 and the error-feedback epilogue streams it out — one
//                 read of E, one write of E and one streaming write of G.
// Q is used transposed (r × n) so that every inner loop runs along contiguous memory and vectorises; the loops
// are written with the eight-lane vectors of cpu_simd.hpp.
#include <algorithm>

#include "cpu_passes.hpp"
#include "cpu_simd.hpp"
#include "cpu_variant.hpp"

namespace edgc::kernels::cpu::EDGC_CPU_VARIANT {
namespace {

// qt (r × n) = qᵀ for q (n × r), both row-major.
void transpose(const float* q, std::int64_t n, std::int64_t r, float* qt) {
  for (std::int64_t k = 0; k < n; ++k)
    for (std::int64_t j = 0; j < r; ++j) qt[j * n + k] = q[k * r + j];
}

// out[row][j] = Σ_k x[row][k]·qt[j·n + k] for R rows and J < 5 columns of Q: R·J accumulators in registers,
// each load of Qᵀ shared by the R rows and each load of x by the J columns.
template <int R, int J>
void dots(const float* const* x, const float* qt, std::int64_t n, float* const* out) {
  simd::F8 acc[R][J];
  for (auto& row : acc)
    for (auto& a : row) a = simd::zero();
  std::int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    simd::F8 xv[R];
    for (int i = 0; i < R; ++i) xv[i] = simd::load(x[i] + k);
    for (int j = 0; j < J; ++j) {
      const simd::F8 q = simd::load(qt + j * n + k);
      for (int i = 0; i < R; ++i) acc[i][j] = simd::fmadd(xv[i], q, acc[i][j]);
    }
  }
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < J; ++j) {
      float s = simd::hsum(acc[i][j]);
      for (std::int64_t kk = k; kk < n; ++kk) s += x[i][kk] * qt[j * n + kk];
      out[i][j] = s;
    }
}

// P rows p[i] (r values each) = x[i]·Q for R rows, in groups of four columns.
template <int R>
void row_dots(const float* const* x, const float* qt, std::int64_t n, std::int64_t r, float* const* p) {
  for (std::int64_t j = 0; j < r; j += 4) {
    float* out[R];
    for (int i = 0; i < R; ++i) out[i] = p[i] + j;
    const float* q = qt + j * n;
    switch (r - j) {
      case 1:
        dots<R, 1>(x, q, n, out);
        break;
      case 2:
        dots<R, 2>(x, q, n, out);
        break;
      case 3:
        dots<R, 3>(x, q, n, out);
        break;
      default:
        dots<R, 4>(x, q, n, out);
        break;
    }
  }
}

// rows[i][k] = Σ_j p[i][j]·qt[j·n + k] for R rows: 32 outputs per row stay in registers while the r rows of
// Qᵀ stream past, each load of Qᵀ shared by the R rows.
template <int R>
void row_combination(const float* const* p, const float* qt, std::int64_t n, std::int64_t r, float* const* rows) {
  constexpr std::int64_t kV = 4;  // vectors of eight per row and chunk
  std::int64_t k = 0;
  for (; k + 8 * kV <= n; k += 8 * kV) {
    simd::F8 acc[R][kV];
    for (auto& row : acc)
      for (auto& a : row) a = simd::zero();
    for (std::int64_t j = 0; j < r; ++j) {
      simd::F8 q[kV];
      for (std::int64_t c = 0; c < kV; ++c) q[c] = simd::load(qt + j * n + k + 8 * c);
      for (int i = 0; i < R; ++i) {
        const simd::F8 pij = simd::set1(p[i][j]);
        for (std::int64_t c = 0; c < kV; ++c) acc[i][c] = simd::fmadd(pij, q[c], acc[i][c]);
      }
    }
    for (int i = 0; i < R; ++i)
      for (std::int64_t c = 0; c < kV; ++c) simd::store(rows[i] + k + 8 * c, acc[i][c]);
  }
  for (; k < n; ++k)
    for (int i = 0; i < R; ++i) {
      float s = 0.0F;
      for (std::int64_t j = 0; j < r; ++j) s += p[i][j] * qt[j * n + k];
      rows[i][k] = s;
    }
}

}  // namespace

bool project_skinny(const ProjectArgs& a) {
  if (a.r > kSkinnyMaxRank || a.r * a.n > kScratchFloats) return false;
  float* qt = a.scratch;
  transpose(a.q, a.n, a.r, qt);
  double sq = 0.0;
  // M = G + E row by row; the fresh rows are still in L1 when their dot products read them.
  const auto prepare = [&](std::int64_t i) { return fresh_row(a, i, sq); };
  std::int64_t i = 0;
  for (; i + 2 <= a.rows; i += 2) {
    const float* x[2] = {prepare(i), prepare(i + 1)};
    float* p[2] = {a.p + i * a.r, a.p + (i + 1) * a.r};
    row_dots<2>(x, qt, a.n, a.r, p);
  }
  if (i < a.rows) {
    const float* x[1] = {prepare(i)};
    float* p[1] = {a.p + i * a.r};
    row_dots<1>(x, qt, a.n, a.r, p);
  }
  *a.m_sqnorm = sq;
  return true;
}

bool reconstruct_skinny(const ReconstructArgs& a) {
  if (a.r > kSkinnyReconstructMaxRank || (a.r + 2) * a.n > kScratchFloats) return false;
  float* qt = a.scratch;
  float* rows[2] = {a.scratch + a.r * a.n, a.scratch + (a.r + 1) * a.n};
  transpose(a.q, a.n, a.r, qt);
  double sq = 0.0;
  const auto emit = [&](std::int64_t i, const float* row) {
    const std::int64_t at = i * a.n;
    sq += a.e != nullptr ? finish<true>(row, a.g + at, a.e + at, a.n) : finish<false>(row, a.g + at, nullptr, a.n);
  };
  std::int64_t i = 0;
  for (; i + 2 <= a.rows; i += 2) {
    const float* p[2] = {a.p + i * a.r, a.p + (i + 1) * a.r};
    row_combination<2>(p, qt, a.n, a.r, rows);
    emit(i, rows[0]);
    emit(i + 1, rows[1]);
  }
  if (i < a.rows) {
    const float* p[1] = {a.p + i * a.r};
    row_combination<1>(p, qt, a.n, a.r, rows);
    emit(i, rows[0]);
  }
  simd::fence();
  *a.err_sqnorm = sq;
  return true;
}

// C (m × r) = alpha·Aᵀ·B + beta·C with A stored k × m and B k × r: Cᵀ accumulates in scratch, four rows of A
// at a time (one load and store of Cᵀ per four rows), and is transposed into C at the end.
bool gemm_tn_skinny(const GemmArgs& g) {
  if (!g.trans_a || g.trans_b || g.n > kSkinnyMaxRank || g.n * g.m > kScratchFloats) return false;
  const std::int64_t m = g.m;
  const std::int64_t r = g.n;
  float* ct = g.scratch;
  std::fill(ct, ct + r * m, 0.0F);
  std::int64_t l = 0;
  for (; l + 4 <= g.k; l += 4) {
    const float* a0 = g.a + l * g.lda;
    const float* a1 = a0 + g.lda;
    const float* a2 = a1 + g.lda;
    const float* a3 = a2 + g.lda;
    const float* b = g.b + l * g.ldb;
    for (std::int64_t j = 0; j < r; ++j) {
      const float s0 = b[j];
      const float s1 = b[g.ldb + j];
      const float s2 = b[2 * g.ldb + j];
      const float s3 = b[3 * g.ldb + j];
      const simd::F8 b0 = simd::set1(s0);
      const simd::F8 b1 = simd::set1(s1);
      const simd::F8 b2 = simd::set1(s2);
      const simd::F8 b3 = simd::set1(s3);
      float* c = ct + j * m;
      std::int64_t i = 0;
      for (; i + 8 <= m; i += 8) {
        simd::F8 acc = simd::load(c + i);
        acc = simd::fmadd(b0, simd::load(a0 + i), acc);
        acc = simd::fmadd(b1, simd::load(a1 + i), acc);
        acc = simd::fmadd(b2, simd::load(a2 + i), acc);
        acc = simd::fmadd(b3, simd::load(a3 + i), acc);
        simd::store(c + i, acc);
      }
      for (; i < m; ++i) c[i] += s0 * a0[i] + s1 * a1[i] + s2 * a2[i] + s3 * a3[i];
    }
  }
  for (; l < g.k; ++l) {
    const float* a0 = g.a + l * g.lda;
    for (std::int64_t j = 0; j < r; ++j) {
      const float s0 = g.b[l * g.ldb + j];
      float* c = ct + j * m;
      for (std::int64_t i = 0; i < m; ++i) c[i] += s0 * a0[i];
    }
  }
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < r; ++j) {
      const float v = g.alpha * ct[j * m + i];
      float& out = g.c[i * g.ldc + j];
      out = g.beta == 0.0F ? v : v + g.beta * out;
    }
  return true;
}

}  // namespace edgc::kernels::cpu::EDGC_CPU_VARIANT
