// The dense primitives of Backend: batched GEMM, orthogonalisation, and the two fused PowerSGD passes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "edgc/kernels/backend.hpp"
#include "kernel_test_util.hpp"

namespace edgc::kernels {
namespace {

using testing::cpu_variants;
using testing::random_normal;
using testing::reference_gemm;

TEST(Backend, FactoryKnowsCpuAndRejectsTheRest) {
  const auto cpu = make_backend("cpu");
  EXPECT_EQ(cpu->name(), "cpu");
  EXPECT_FALSE(cpu->isa().empty());
  EXPECT_EQ(cpu->threads(), 1);
  EXPECT_EQ(make_backend("cpu-generic")->isa(), "sse2");
  EXPECT_THROW(make_backend("tpu"), ConfigError);
  EXPECT_THROW(make_backend("cpu", {.threads = 0}), ConfigError);
  EXPECT_THROW(make_backend("cpu", {.fused_project_max_rank = -1}), ConfigError);
  EXPECT_EQ(make_backend("cpu", {.fused_project_max_rank = 0})->name(), "cpu");  // a CUDA option the CPU ignores
  EXPECT_THROW(make_backend("cpu", {.cholesky_spread_max_rank = -1}), ConfigError);
  EXPECT_EQ(make_backend("cpu", {.cholesky_spread_max_rank = 128})->name(), "cpu");
}

TEST(Backend, BatchedGemmMatchesDoubleReferenceForEveryTransposeAlphaAndBeta) {
  for (const std::string& name : cpu_variants()) {
    for (const int threads : {1, 2}) {
      SCOPED_TRACE(name + " threads " + std::to_string(threads));
      const auto backend = make_backend(name, {.threads = threads});
      const std::int64_t m = 37;
      const std::int64_t k = 53;
      // n = 3 takes the small-rank kernel for Aᵀ·B, n = 19 and 40 the rank panel of the SIMD variants (a padded
      // last vector; 40 several chunks), and Eigen's general GEMM in the portable build and for the other cases.
      for (const std::int64_t n : {std::int64_t{3}, std::int64_t{19}, std::int64_t{40}})
        for (const bool ta : {false, true})
          for (const bool tb : {false, true}) {
            std::vector<std::vector<float>> as;
            std::vector<std::vector<float>> bs;
            std::vector<std::vector<float>> cs;
            for (int b = 0; b < 3; ++b) {
              as.push_back(random_normal(static_cast<std::size_t>(m * k), 100 + b));
              bs.push_back(random_normal(static_cast<std::size_t>(k * n), 200 + b));
              cs.push_back(random_normal(static_cast<std::size_t>(m * n), 300 + b));
            }
            const std::vector<std::vector<float>> c0 = cs;
            std::vector<const float*> pa;
            std::vector<const float*> pb;
            std::vector<float*> pc;
            for (int b = 0; b < 3; ++b) {
              pa.push_back(as[b].data());
              pb.push_back(bs[b].data());
              pc.push_back(cs[b].data());
            }
            backend->gemm_batched(ta ? Transpose::kYes : Transpose::kNo, tb ? Transpose::kYes : Transpose::kNo, m, n, k,
                                  0.5F, pa, pb, 2.0F, pc);
            for (int b = 0; b < 3; ++b) {
              const std::vector<double> ref = reference_gemm(ta, tb, m, n, k, as[b].data(), bs[b].data());
              for (std::size_t i = 0; i < ref.size(); ++i)
                ASSERT_NEAR(cs[b][i], 0.5 * ref[i] + 2.0 * c0[b][i], 1e-4) << "ta " << ta << " tb " << tb;
            }
          }
    }
  }
}

TEST(Backend, GemmWithBetaZeroIgnoresGarbageInC) {
  const auto backend = make_backend("cpu");
  const std::vector<float> a = random_normal(6, 1);
  const std::vector<float> b = random_normal(6, 2);
  std::vector<float> c(4, std::nanf(""));
  const float* pa = a.data();
  const float* pb = b.data();
  float* pc = c.data();
  backend->gemm_batched(Transpose::kNo, Transpose::kNo, 2, 2, 3, 1.0F, {&pa, 1}, {&pb, 1}, 0.0F, {&pc, 1});
  for (const float v : c) EXPECT_TRUE(std::isfinite(v));
}

TEST(Backend, MismatchedBatchesAreRejected) {
  const auto backend = make_backend("cpu");
  std::vector<float> buf(16, 1.0F);
  const float* a[2] = {buf.data(), buf.data()};
  float* c[1] = {buf.data()};
  EXPECT_THROW(backend->gemm_batched(Transpose::kNo, Transpose::kNo, 2, 2, 2, 1.0F, a, {a, 1}, 0.0F, c), InternalError);
  EXPECT_THROW(backend->orthogonalize_batched(2, 3, c, 0.0F), InternalError);
}

// max |QᵀQ − I| in double.
double orthogonality_error(const std::vector<float>& q, std::int64_t rows, std::int64_t cols) {
  double worst = 0.0;
  for (std::int64_t i = 0; i < cols; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      double s = 0.0;
      for (std::int64_t k = 0; k < rows; ++k)
        s += static_cast<double>(q[static_cast<std::size_t>(k * cols + i)]) * q[static_cast<std::size_t>(k * cols + j)];
      worst = std::max(worst, std::abs(s - (i == j ? 1.0 : 0.0)));
    }
  return worst;
}

// ‖P − Q·QᵀP‖ / ‖P‖: how much of P lies outside the span of Q.
double span_residual(const std::vector<float>& p, const std::vector<float>& q, std::int64_t rows, std::int64_t cols) {
  const std::vector<double> qtp = reference_gemm(true, false, cols, cols, rows, q.data(), p.data());
  double num = 0.0;
  double den = 0.0;
  for (std::int64_t k = 0; k < rows; ++k)
    for (std::int64_t j = 0; j < cols; ++j) {
      double s = 0.0;
      for (std::int64_t i = 0; i < cols; ++i)
        s += q[static_cast<std::size_t>(k * cols + i)] * qtp[static_cast<std::size_t>(i * cols + j)];
      const double pv = p[static_cast<std::size_t>(k * cols + j)];
      num += (pv - s) * (pv - s);
      den += pv * pv;
    }
  return std::sqrt(num / den);
}

TEST(Orthogonalize, GivesOrthonormalColumnsSpanningTheInput) {
  for (const std::string& name : cpu_variants()) {
    const auto backend = make_backend(name, {.threads = 2});
    for (const std::int64_t r : {1, 2, 3, 16, 64}) {
      for (const std::int64_t rows : {std::int64_t{3000}, r + r / 4 + 1}) {
        // Columns of very different length, like a warm-started P (σ_i·u_i): decay 0.5 spans 2^63 at r = 64,
        // far beyond what a Gram matrix in float could hold without equilibration.
        for (const double decay : {0.9, 0.5}) {
          SCOPED_TRACE(name + " " + std::to_string(rows) + "x" + std::to_string(r) + " decay " + std::to_string(decay));
          std::vector<std::vector<float>> ps;
          for (int b = 0; b < 3; ++b) {
            std::vector<float> p = random_normal(static_cast<std::size_t>(rows * r), 1000 * r + rows + b);
            for (std::int64_t k = 0; k < rows; ++k)
              for (std::int64_t j = 0; j < r; ++j)
                p[static_cast<std::size_t>(k * r + j)] *= static_cast<float>(std::pow(decay, static_cast<double>(j)));
            ps.push_back(std::move(p));
          }
          const std::vector<std::vector<float>> originals = ps;
          std::vector<float*> ptrs;
          for (auto& p : ps) ptrs.push_back(p.data());
          backend->orthogonalize_batched(rows, r, ptrs, 1e-6F);
          for (int b = 0; b < 3; ++b) {
            EXPECT_LT(orthogonality_error(ps[b], rows, r), 1e-5);
            EXPECT_LT(span_residual(originals[b], ps[b], rows, r), 1e-4);
          }
        }
      }
    }
  }
}

TEST(Orthogonalize, ZeroAndRankDeficientInputsStayFinite) {
  for (const std::string& name : cpu_variants()) {
    SCOPED_TRACE(name);
    const auto backend = make_backend(name);
    for (const std::int64_t r : {1, 2, 3, 16}) {
      const std::int64_t rows = 200;
      std::vector<float> zero(static_cast<std::size_t>(rows * r), 0.0F);
      // Rank-deficient: every column a multiple of the first, one column zero.
      std::vector<float> dep = random_normal(static_cast<std::size_t>(rows * r), 5);
      for (std::int64_t k = 0; k < rows; ++k)
        for (std::int64_t j = 1; j < r; ++j)
          dep[static_cast<std::size_t>(k * r + j)] =
              j == r - 1 ? 0.0F : static_cast<float>(j + 1) * dep[static_cast<std::size_t>(k * r)];
      float* ptrs[2] = {zero.data(), dep.data()};
      for (const float eps : {0.0F, 1e-6F}) {
        backend->orthogonalize_batched(rows, r, ptrs, eps);
        for (const float v : zero) ASSERT_EQ(v, 0.0F);
        for (const float v : dep) ASSERT_TRUE(std::isfinite(v)) << "r " << r << " eps " << eps;
        // The first column keeps its direction and has unit length.
        double norm = 0.0;
        for (std::int64_t k = 0; k < rows; ++k) norm += std::pow(dep[static_cast<std::size_t>(k * r)], 2);
        EXPECT_NEAR(norm, 1.0, 1e-5);
      }
    }
  }
}

TEST(FusedPasses, ProjectAndReconstructMatchTheirDefinitions) {
  for (const std::string& name : cpu_variants()) {
    for (const int threads : {1, 2}) {
      SCOPED_TRACE(name + " threads " + std::to_string(threads));
      const auto backend = make_backend(name, {.threads = threads});
      // n above the tile width and m above the tile height, neither a multiple, to exercise the edges.
      const std::int64_t m = 131;
      const std::int64_t n = 1500;
      // Ranks that take the small-rank kernels (2, 4), the rank panels of the SIMD variants with a padded last
      // vector (5, 12, 21, 40; 40 is two chunks of AVX2 vectors and three of AVX-512 ones, 21 a partial chunk) or
      // a whole one (16, 32), and Eigen's products (5 and 40 in the portable build; 160, above kPanelMaxRank).
      for (const std::int64_t r : {2, 4, 5, 12, 16, 21, 32, 40, 160}) {
        const std::vector<float> g0 = random_normal(static_cast<std::size_t>(m * n), 1);
        const std::vector<float> e0 = random_normal(static_cast<std::size_t>(m * n), 2, 0.1);
        const std::vector<float> q = random_normal(static_cast<std::size_t>(n * r), 3);
        for (const bool ef : {true, false}) {
          std::vector<float> g = g0;
          std::vector<float> e = e0;
          std::vector<float> p(static_cast<std::size_t>(m * r));
          std::vector<float> mref(g0.size());
          for (std::size_t i = 0; i < g0.size(); ++i) mref[i] = ef ? g0[i] + e0[i] : g0[i];
          const float* pg = g.data();
          float* pe = e.data();
          const float* pq = q.data();
          float* pp = p.data();
          double msq = 0.0;
          backend->project_batched(m, n, r, {&pg, 1}, ef ? std::span<float* const>(&pe, 1) : std::span<float* const>(),
                                   {&pq, 1}, {&pp, 1}, {&msq, 1});
          const std::vector<double> pref = reference_gemm(false, false, m, r, n, mref.data(), q.data());
          // Float sums of n or r terms: 1e-3 absolute plus 1e-6 relative (r = 160 reaches |Ĝ| ≈ 1,400).
          for (std::size_t i = 0; i < p.size(); ++i) ASSERT_NEAR(p[i], pref[i], 1e-3 + 1e-6 * std::abs(pref[i]));
          double msq_ref = 0.0;
          for (const float v : mref) msq_ref += static_cast<double>(v) * v;
          EXPECT_NEAR(msq, msq_ref, 1e-9 * msq_ref);
          if (ef) {
            EXPECT_EQ(e, mref);
          }

          const float* pp_in = p.data();
          float* pg_out = g.data();
          double err = 0.0;
          backend->reconstruct_batched(m, n, r, {&pp_in, 1}, {&pq, 1},
                                       ef ? std::span<float* const>(&pe, 1) : std::span<float* const>(), {&pg_out, 1},
                                       {&err, 1});
          const std::vector<double> ghat = reference_gemm(false, true, m, n, r, p.data(), q.data());
          double err_ref = 0.0;
          for (std::size_t i = 0; i < g.size(); ++i) {
            ASSERT_NEAR(g[i], ghat[i], 1e-3 + 1e-6 * std::abs(ghat[i]));
            if (ef) {
              ASSERT_EQ(e[i], mref[i] - g[i]);
            }
            err_ref += std::pow(static_cast<double>(mref[i]) - g[i], 2);
          }
          EXPECT_NEAR(err, err_ref, 1e-9 * err_ref);
        }
      }
    }
  }
}

}  // namespace
}  // namespace edgc::kernels

namespace edgc::kernels {
namespace {

// Heap addresses differ from run to run (and between threads' malloc arenas), so nothing a kernel reports may
// depend on where its buffers lie: the same data at every float offset must give the same bits.
TEST(FusedPasses, ResultsDoNotDependOnBufferAlignment) {
  const std::int64_t m = 37, n = 53, r = 5;
  const auto g0 = testing::random_normal(static_cast<std::size_t>(m * n), 41);
  const auto e0 = testing::random_normal(static_cast<std::size_t>(m * n), 42, 0.1);
  const auto q = testing::random_normal(static_cast<std::size_t>(n * r), 43);
  for (const auto& name : testing::cpu_variants()) {
    const auto backend = make_backend(name);
    std::optional<double> m_ref, err_ref;
    std::vector<float> out_ref;
    for (std::int64_t shift = 0; shift < 8; ++shift) {
      std::vector<float> gbuf(g0.size() + 8), ebuf(e0.size() + 8), p(static_cast<std::size_t>(m * r));
      float* g = gbuf.data() + shift;
      float* e = ebuf.data() + (7 - shift);
      std::copy(g0.begin(), g0.end(), g);
      std::copy(e0.begin(), e0.end(), e);
      double m_sq = 0.0, err_sq = 0.0;
      const float* gc = g;
      const float* qc = q.data();
      const float* pc = p.data();
      float* pp = p.data();
      backend->project_batched(m, n, r, {&gc, 1}, {&e, 1}, {&qc, 1}, {&pp, 1}, {&m_sq, 1});
      backend->reconstruct_batched(m, n, r, {&pc, 1}, {&qc, 1}, {&e, 1}, {&g, 1}, {&err_sq, 1});
      if (!m_ref) {
        m_ref = m_sq;
        err_ref = err_sq;
        out_ref.assign(g, g + m * n);
        continue;
      }
      EXPECT_EQ(m_sq, *m_ref) << name << " shift " << shift;
      EXPECT_EQ(err_sq, *err_ref) << name << " shift " << shift;
      EXPECT_TRUE(std::equal(out_ref.begin(), out_ref.end(), g)) << name << " shift " << shift;
    }
  }
}

}  // namespace
}  // namespace edgc::kernels
