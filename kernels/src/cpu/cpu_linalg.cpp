// Dense linear algebra of PowerSGD on the CPU: GEMMs through Eigen, the batched orthogonalisation, and the two
// fused passes of a step (M = G + E with P = M·Q; Ĝ = P·Qᵀ with E = M − Ĝ). Compiled once per instruction set.
#include <Eigen/Core>
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "cpu_passes.hpp"
#include "cpu_simd.hpp"
#include "cpu_variant.hpp"

namespace edgc::kernels::cpu::EDGC_CPU_VARIANT {
namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Stride = Eigen::OuterStride<>;
using MatMap = Eigen::Map<RowMat, Eigen::Unaligned, Stride>;
using ConstMatMap = Eigen::Map<const RowMat, Eigen::Unaligned, Stride>;

// ---- GEMM ----

template <class A, class B>
void product(MatMap& c, const A& a, const B& b, float alpha, float beta) {
  if (beta == 0.0F) {
    c.noalias() = alpha * a * b;  // Eigen zero-fills C first: garbage in C is never read
  } else {
    if (beta != 1.0F) c *= beta;
    c.noalias() += alpha * a * b;
  }
}

void gemm(const GemmArgs& g) {
  if (gemm_tn_skinny(g) || gemm_tn_panel(g)) return;
  MatMap c(g.c, g.m, g.n, Stride(g.ldc));
  const ConstMatMap a(g.a, g.trans_a ? g.k : g.m, g.trans_a ? g.m : g.k, Stride(g.lda));
  const ConstMatMap b(g.b, g.trans_b ? g.n : g.k, g.trans_b ? g.k : g.n, Stride(g.ldb));
  if (!g.trans_a && !g.trans_b) {
    product(c, a, b, g.alpha, g.beta);
  } else if (g.trans_a && !g.trans_b) {
    product(c, a.transpose(), b, g.alpha, g.beta);
  } else if (!g.trans_a) {
    product(c, a, b.transpose(), g.alpha, g.beta);
  } else {
    product(c, a.transpose(), b.transpose(), g.alpha, g.beta);
  }
}

// M = G + E in place in E (with error feedback), ‖M‖², then P = M·Q in one product. (Small ranks take the
// row-by-row kernel of cpu_skinny.cpp.) Fusing the addition into row bands of an Eigen product would save one
// read of M but makes Eigen repack Q for every band, which costs more than it saves once r is beyond a handful
// (measured on 1920×7680: no gain at r ≤ 16, 70 % slower at r = 128).
void project(const ProjectArgs& a) {
  if (project_skinny(a) || project_panel(a)) return;
  const std::int64_t count = a.rows * a.n;
  const float* m = a.g;
  if (a.e != nullptr) {
    *a.m_sqnorm = add_into(a.e, a.g, count);
    m = a.e;
  } else {
    *a.m_sqnorm = squared_norm(a.g, count);
  }
  const ConstMatMap mm(m, a.rows, a.n, Stride(a.n));
  const ConstMatMap q(a.q, a.n, a.r, Stride(a.r));
  MatMap p(a.p, a.rows, a.r, Stride(a.r));
  p.noalias() = mm * q;
}

void reconstruct(const ReconstructArgs& a) {
  if (reconstruct_skinny(a)) return;
  const ConstMatMap q(a.q, a.n, a.r, Stride(a.r));
  const TileShape shape = reconstruct_tile(a.n, a.r);
  const std::int64_t w_max = shape.cols;
  const std::int64_t h_max = shape.rows;
  double sq = 0.0;
  for (std::int64_t row0 = 0; row0 < a.rows; row0 += h_max) {
    const std::int64_t h = std::min(h_max, a.rows - row0);
    const ConstMatMap p(a.p + row0 * a.r, h, a.r, Stride(a.r));
    for (std::int64_t col0 = 0; col0 < a.n; col0 += w_max) {
      const std::int64_t w = std::min(w_max, a.n - col0);
      MatMap tile(a.scratch, h, w, Stride(w));
      tile.noalias() = p * q.middleRows(col0, w).transpose();
      // Whole rows make the tile one contiguous stretch of G and E.
      const std::int64_t rows_per_stretch = w == a.n ? h : 1;
      for (std::int64_t i = 0; i < h; i += rows_per_stretch) {
        const std::int64_t at = (row0 + i) * a.n + col0;
        const std::int64_t len = rows_per_stretch * w;
        sq += a.e != nullptr ? finish<true>(a.scratch + i * w, a.g + at, a.e + at, len)
                             : finish<false>(a.scratch + i * w, a.g + at, nullptr, len);
      }
    }
  }
  simd::fence();  // order the streaming stores before whatever hands G to another thread
  *a.err_sqnorm = sq;
}

// ---- orthogonalisation ----

// Dot product of columns c1 and c2 of a rows×cols row-major matrix, accumulated in double.
double column_dot(const float* p, std::int64_t rows, std::int64_t cols, std::int64_t c1, std::int64_t c2) {
  double s = 0.0;
  for (std::int64_t i = 0; i < rows; ++i) s += static_cast<double>(p[i * cols + c1]) * p[i * cols + c2];
  return s;
}

void scale_column(float* p, std::int64_t rows, std::int64_t cols, std::int64_t c, double factor) {
  const auto f = static_cast<float>(factor);
  for (std::int64_t i = 0; i < rows; ++i) p[i * cols + c] *= f;
}

// Gram–Schmidt for one or two columns. Each column's shift is relative to its own squared norm, so a column
// that is merely small comes out with unit length and only a dependent one (nothing left after projection)
// comes out short. The second column is projected out twice ("twice is enough"): once leaves an error
// proportional to the cosine of the two columns, which warm-started P's make close to 1.
void gram_schmidt(float* p, std::int64_t rows, std::int64_t cols, float eps) {
  const auto e = static_cast<double>(eps);
  const double n0 = column_dot(p, rows, cols, 0, 0);
  scale_column(p, rows, cols, 0, 1.0 / std::sqrt(n0 * (1.0 + e) + FLT_MIN));
  if (cols < 2) return;
  const double n1 = column_dot(p, rows, cols, 1, 1);
  for (int pass = 0; pass < 2; ++pass) {
    const auto dot = static_cast<float>(column_dot(p, rows, cols, 0, 1));
    for (std::int64_t i = 0; i < rows; ++i) p[i * 2 + 1] -= dot * p[i * 2];
  }
  scale_column(p, rows, cols, 1, 1.0 / std::sqrt(column_dot(p, rows, cols, 1, 1) + e * n1 + FLT_MIN));
}

// Cholesky D⁻¹·G·D⁻¹ + shift·I = L·Lᵀ of the lower triangle of the r×r float Gram matrix G, in double, with
// D = diag(d). False when a pivot is not positive (the shift was too small for the rounding in G) or not finite.
bool cholesky(const float* gram, const double* d, std::int64_t r, double shift, double* l) {
  for (std::int64_t j = 0; j < r; ++j) {
    double v = static_cast<double>(gram[j * r + j]) / (d[j] * d[j]) + shift;
    for (std::int64_t k = 0; k < j; ++k) v -= l[j * r + k] * l[j * r + k];
    if (!(v > 0.0) || !std::isfinite(v)) return false;
    const double ljj = std::sqrt(v);
    l[j * r + j] = ljj;
    for (std::int64_t i = j + 1; i < r; ++i) {
      double s = static_cast<double>(gram[i * r + j]) / (d[i] * d[j]);
      for (std::int64_t k = 0; k < j; ++k) s -= l[i * r + k] * l[j * r + k];
      l[i * r + j] = s / ljj;
    }
  }
  return true;
}

// One CholeskyQR pass: dst = src·R⁻¹ with RᵀR = srcᵀsrc (equilibrated and shifted). Returns false (dst
// untouched) when the Gram matrix is not finite. `deviation` receives max |G − I| of the input's Gram matrix:
// how far src already was from orthonormal.
//
// Equilibration: the Gram matrix is scaled to unit diagonal (D⁻¹GD⁻¹, D = the column norms) before it is
// factorised, and R⁻¹ = D⁻¹·L⁻ᵀ undoes it. Columns of very different length — a warm-started P holds σ_i·u_i —
// then cost nothing: only near-dependence of the directions limits the factorisation, not the spread of the
// singular values, whose square would otherwise overflow float's 24 bits at σ_1/σ_r ≈ 4000.
bool cholesky_qr_pass(const float* src, float* dst, std::int64_t rows, std::int64_t r, float eps, float* small,
                      double* dwork, double& deviation, bool& shift_grew) {
  const ConstMatMap s(src, rows, r, Stride(r));
  Eigen::Map<Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> gram(small, r, r);
  gram.setZero();
  gram.selfadjointView<Eigen::Lower>().rankUpdate(s.transpose());  // lower triangle of sᵀs
  double* l = dwork;
  double* linv = dwork + r * r;
  double* d = dwork + 2 * r * r;
  double trace = 0.0;
  deviation = 0.0;
  for (std::int64_t i = 0; i < r; ++i) {
    const double gii = small[i * r + i];
    trace += gii;
    d[i] = gii > 0.0 ? std::sqrt(gii) : 1.0;  // an all-zero column stays zero
    for (std::int64_t j = 0; j <= i; ++j)
      deviation = std::max(deviation, std::abs(static_cast<double>(small[i * r + j]) - (i == j ? 1.0 : 0.0)));
  }
  if (!std::isfinite(trace)) return false;
  std::fill(l, l + r * r, 0.0);
  double shift = static_cast<double>(eps) + FLT_MIN;
  shift_grew = false;
  // A rank-deficient P makes G singular up to float rounding, which can leave it slightly indefinite: grow the
  // shift until the factorisation goes through (each attempt is O(r³) on an r×r matrix, noise next to the
  // products).
  for (int attempt = 0; !cholesky(small, d, r, shift, l); ++attempt) {
    if (attempt == 40) return false;
    shift = std::max(shift * 10.0, 1e-7);
    shift_grew = true;
  }
  // L⁻¹ by forward substitution.
  std::fill(linv, linv + r * r, 0.0);
  for (std::int64_t j = 0; j < r; ++j) {
    linv[j * r + j] = 1.0 / l[j * r + j];
    for (std::int64_t i = j + 1; i < r; ++i) {
      double acc = 0.0;
      for (std::int64_t k = j; k < i; ++k) acc += l[i * r + k] * linv[k * r + j];
      linv[i * r + j] = -acc / l[i * r + i];
    }
  }
  // R⁻¹ = D⁻¹·L⁻ᵀ (upper triangular) in float, in the Gram matrix's storage (no longer needed).
  for (std::int64_t i = 0; i < r; ++i)
    for (std::int64_t j = 0; j < r; ++j) small[i * r + j] = j >= i ? static_cast<float>(linv[j * r + i] / d[i]) : 0.0F;
  const ConstMatMap rinv(small, r, r, Stride(r));
  MatMap out(dst, rows, r, Stride(r));
  out.noalias() = s * rinv.triangularView<Eigen::Upper>();
  return true;
}

void orthogonalize(float* p, std::int64_t rows, std::int64_t cols, float eps, float* fwork, double* dwork) {
  if (cols <= 2) {
    gram_schmidt(p, rows, cols, eps);
    return;
  }
  float* w = fwork;
  float* small = fwork + rows * cols;
  double dev1 = 0.0;
  double dev2 = 0.0;
  bool grew1 = false;
  bool grew2 = false;
  // CholeskyQR2: the first pass leaves an error of about cond(P)²·u, the second removes it. A third pass runs
  // only when the second started far from orthonormal (nearly dependent columns) or needed a larger shift.
  if (!cholesky_qr_pass(p, w, rows, cols, eps, small, dwork, dev1, grew1)) return;
  if (!cholesky_qr_pass(w, p, rows, cols, eps, small, dwork, dev2, grew2)) return;
  if (dev2 > 0.5 || grew2) {
    if (cholesky_qr_pass(p, w, rows, cols, eps, small, dwork, dev1, grew1))
      std::memcpy(p, w, static_cast<std::size_t>(rows * cols) * sizeof(float));
  }
}

}  // namespace
}  // namespace edgc::kernels::cpu::EDGC_CPU_VARIANT

#define EDGC_CPU_STRINGIFY2(x) #x
#define EDGC_CPU_STRINGIFY(x) EDGC_CPU_STRINGIFY2(x)
#define EDGC_CPU_CONCAT2(a, b) a##b
#define EDGC_CPU_CONCAT(a, b) EDGC_CPU_CONCAT2(a, b)

extern "C" __attribute__((visibility("default"))) const edgc::kernels::cpu::KernelTable* EDGC_CPU_CONCAT(
    edgc_kernels_cpu_, EDGC_CPU_VARIANT)() {
  namespace v = edgc::kernels::cpu::EDGC_CPU_VARIANT;
  static const edgc::kernels::cpu::KernelTable table{EDGC_CPU_ISA,      &v::moments, &v::histogram,  &v::gemm,
                                                     &v::orthogonalize, &v::project, &v::reconstruct};
  return &table;
}
