// PowerSGD's two products against M at moderate rank (above kSkinnyMaxRank, up to kPanelMaxRank, while a rank-wide
// panel of Q or of the result fits in half the scratch, about half an L2), as broadcast-and-FMA panels in the
// variant's widest vectors.
//
// At these ranks Eigen's general GEMM spends much of its time packing M, which it reads once anyway; here M is
// never packed:
//  * project:  four rows of M at a time (E += G first, so the rows are fresh in L1/L2), P_row += M[i][k]·Q[k][:]
//              over k, Q padded to a whole number of vectors in scratch; chunks of kChunk vectors of P stay in
//              registers;
//  * Mᵀ·P:     C[k][:] += Σ_{8 rows i} M[i][k]·P[i][:], C (a panel of Mᵀ·P, padded) accumulating in scratch, eight
//              rows' P chunks in registers, one load and store of C per eight rows.
// Measured on a Xeon with AVX-512 (tools/README.md, "CPU PowerSGD"): 1920×7680 at r = 16, M·Q with the addition
// 18.5 → 15 ms and Mᵀ·P 17.5 → 4.3 ms against Eigen. Each output sums its terms in increasing k or row order,
// whatever the buffers' alignment. Only the AVX2 and AVX-512 variants use these kernels.
#include <algorithm>
#include <type_traits>

#include "cpu_passes.hpp"
#include "cpu_simd.hpp"
#include "cpu_variant.hpp"

namespace edgc::kernels::cpu::EDGC_CPU_VARIANT {
#if defined(__AVX2__)
namespace {

using simd::FW;
constexpr std::int64_t kL = simd::kWideLanes;
#if defined(__AVX512F__)
constexpr int kChunk = 4;  // vectors of P per row in registers: 4 rows × 4 + 4 of Q of the 32 registers
constexpr int kTnChunk = 2;
#else
constexpr int kChunk = 2;  // 4 rows × 2 + 2 of the 16 registers
constexpr int kTnChunk = 1;
#endif

std::int64_t padded(std::int64_t r) { return (r + kL - 1) / kL * kL; }
// Whether a rank takes the panels: above the small-rank kernels, at most kPanelMaxRank (at r = 128 Eigen's blocked
// GEMM was as fast with AVX-512 and 6 % faster with AVX2 on 7680×1920), and a padded panel of `length` rows fits in
// half the scratch.
bool panel_fits(std::int64_t r, std::int64_t length, std::int64_t extra_rows) {
  return r > kSkinnyMaxRank && r <= kPanelMaxRank && (length + extra_rows) * padded(r) <= kScratchFloats / 2;
}

// out[i][0, V·L) = Σ_k x[i][k]·q[k·ld + (0, V·L)] for R rows, V vectors: R·V accumulators.
template <int R, int V>
void panel(const float* const* x, const float* q, std::int64_t n, std::int64_t ld, float* const* out) {
  FW acc[R][V];
  for (auto& row : acc)
    for (auto& a : row) a = simd::wzero();
  for (std::int64_t k = 0; k < n; ++k) {
    FW qv[V];
    for (int v = 0; v < V; ++v) qv[v] = simd::wload(q + k * ld + v * kL);
    for (int i = 0; i < R; ++i) {
      const FW b = simd::wset1(x[i][k]);
      for (int v = 0; v < V; ++v) acc[i][v] = simd::wfmadd(b, qv[v], acc[i][v]);
    }
  }
  for (int i = 0; i < R; ++i)
    for (int v = 0; v < V; ++v) simd::wstore(out[i] + v * kL, acc[i][v]);
}

// Calls f(std::integral_constant<int, V>{}) with V = vectors, for 1 ≤ vectors ≤ kMax: a chunk's vector count as a
// template argument, so that its accumulators stay in registers.
template <int kMax, class F>
void with_vectors(std::int64_t vectors, F&& f) {
  if constexpr (kMax > 1) {
    if (vectors < kMax) {
      with_vectors<kMax - 1>(vectors, f);
      return;
    }
  }
  f(std::integral_constant<int, kMax>{});
}

// The rp padded columns of R rows, a chunk of up to kChunk vectors at a time.
template <int R>
void panel_rows(const float* const* x, const float* q, std::int64_t n, std::int64_t rp, float* const* out) {
  for (std::int64_t c = 0; c < rp; c += kChunk * kL) {
    float* o[R];
    for (int i = 0; i < R; ++i) o[i] = out[i] + c;
    with_vectors<kChunk>((rp - c) / kL, [&](auto v) { panel<R, decltype(v)::value>(x, q + c, n, rp, o); });
  }
}

// C[k][0, V·L) += Σ_{i < R} a[i][k]·b[i][0, V·L) over k < m, C with leading dimension ld.
template <int R, int V>
void accumulate_tn(const float* const* a, const float* const* b, std::int64_t m, float* c, std::int64_t ld) {
  FW bv[R][V];
  for (int i = 0; i < R; ++i)
    for (int v = 0; v < V; ++v) bv[i][v] = simd::wload(b[i] + v * kL);
  for (std::int64_t k = 0; k < m; ++k) {
    float* ck = c + k * ld;
    for (int v = 0; v < V; ++v) {
      FW acc = simd::wload(ck + v * kL);
      for (int i = 0; i < R; ++i) acc = simd::wfmadd(simd::wset1(a[i][k]), bv[i][v], acc);
      simd::wstore(ck + v * kL, acc);
    }
  }
}

template <int R>
void accumulate_tn_rows(const float* const* a, const float* const* b, std::int64_t m, float* c, std::int64_t rp) {
  for (std::int64_t col = 0; col < rp; col += kTnChunk * kL) {
    const float* bc[R];
    for (int i = 0; i < R; ++i) bc[i] = b[i] + col;
    with_vectors<kTnChunk>((rp - col) / kL,
                           [&](auto v) { accumulate_tn<R, decltype(v)::value>(a, bc, m, c + col, rp); });
  }
}

}  // namespace
#endif

bool project_panel(const ProjectArgs& a) {
#if defined(__AVX2__)
  constexpr int kRows = 4;
  const std::int64_t rp = padded(a.r);
  if (!panel_fits(a.r, a.n, 0)) return false;
  float* q = a.scratch;  // n × rp, zero beyond column r
  float* rows_out = q + a.n * rp;
  for (std::int64_t k = 0; k < a.n; ++k) {
    std::copy(a.q + k * a.r, a.q + (k + 1) * a.r, q + k * rp);
    std::fill(q + k * rp + a.r, q + (k + 1) * rp, 0.0F);
  }
  double sq = 0.0;
  const auto prepare = [&](std::int64_t i) { return fresh_row(a, i, sq); };
  const auto emit = [&](std::int64_t i0, int count) {
    for (int i = 0; i < count; ++i) std::copy(rows_out + i * rp, rows_out + i * rp + a.r, a.p + (i0 + i) * a.r);
  };
  float* out[kRows] = {rows_out, rows_out + rp, rows_out + 2 * rp, rows_out + 3 * rp};
  std::int64_t i = 0;
  for (; i + kRows <= a.rows; i += kRows) {
    const float* x[kRows];
    for (int j = 0; j < kRows; ++j) x[j] = prepare(i + j);
    panel_rows<kRows>(x, q, a.n, rp, out);
    emit(i, kRows);
  }
  for (; i < a.rows; ++i) {
    const float* x[1] = {prepare(i)};
    panel_rows<1>(x, q, a.n, rp, out);
    emit(i, 1);
  }
  *a.m_sqnorm = sq;
  return true;
#else
  static_cast<void>(a);
  return false;
#endif
}

bool gemm_tn_panel(const GemmArgs& g) {
#if defined(__AVX2__)
  constexpr int kRows = 8;
  const std::int64_t r = g.n;
  const std::int64_t rp = padded(r);
  if (!g.trans_a || g.trans_b || !panel_fits(r, g.m, kRows)) return false;
  float* c = g.scratch;  // m × rp
  float* brows = c + g.m * rp;
  std::fill(c, c + g.m * rp, 0.0F);
  std::fill(brows, brows + kRows * rp, 0.0F);
  const float* b[kRows];
  for (int i = 0; i < kRows; ++i) b[i] = brows + i * rp;
  std::int64_t l = 0;
  for (; l + kRows <= g.k; l += kRows) {
    const float* a[kRows];
    for (int i = 0; i < kRows; ++i) {
      a[i] = g.a + (l + i) * g.lda;
      std::copy(g.b + (l + i) * g.ldb, g.b + (l + i) * g.ldb + r, brows + i * rp);
    }
    accumulate_tn_rows<kRows>(a, b, g.m, c, rp);
  }
  for (; l < g.k; ++l) {
    const float* a[1] = {g.a + l * g.lda};
    std::copy(g.b + l * g.ldb, g.b + l * g.ldb + r, brows);
    accumulate_tn_rows<1>(a, b, g.m, c, rp);
  }
  for (std::int64_t i = 0; i < g.m; ++i)
    for (std::int64_t j = 0; j < r; ++j) {
      const float v = g.alpha * c[i * rp + j];
      float& out = g.c[i * g.ldc + j];
      out = g.beta == 0.0F ? v : v + g.beta * out;
    }
  return true;
#else
  static_cast<void>(g);
  return false;
#endif
}

}  // namespace edgc::kernels::cpu::EDGC_CPU_VARIANT
