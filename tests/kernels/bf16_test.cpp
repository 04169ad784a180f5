// bf16 gradients with float32 factors on the CPU backends: the project/reconstruct overloads against the float32
// ones on the widened data, and PowerSgd stepping bf16 gradients (exact low-rank recovery to bf16 precision, the
// same steps as float32 on the widened gradients, uncompressed tensors averaged exactly then rounded).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/kernels/buffer.hpp"
#include "edgc/kernels/powersgd.hpp"
#include "kernel_test_util.hpp"

namespace edgc::kernels {
namespace {

using testing::cpu_variants;
using testing::frobenius;
using testing::frobenius_diff;
using testing::random_normal;
using testing::spans;
using testing::to_bf16;
using testing::widen;

double relative(double got, double want) { return std::abs(got - want) / std::max(std::abs(want), 1e-300); }

struct Shape {
  std::int64_t m, n, r;
};

// One batch of two matrices through both overloads, bf16 G against float32 G = widen(bf16 G).
void check_batch(Backend& backend, Shape s) {
  const auto mn = static_cast<std::size_t>(s.m * s.n);
  std::vector<std::vector<std::uint16_t>> g16;
  std::vector<std::vector<float>> g32, e16, e32, q, p16, p32;
  for (int b = 0; b < 2; ++b) {
    g16.push_back(to_bf16(random_normal(mn, 10 + b)));
    g32.push_back(widen(g16.back()));
    e16.push_back(random_normal(mn, 20 + b, 0.5));
    e32.push_back(e16.back());
    q.push_back(random_normal(static_cast<std::size_t>(s.n * s.r), 30 + b));
    p16.emplace_back(static_cast<std::size_t>(s.m * s.r));
    p32.emplace_back(static_cast<std::size_t>(s.m * s.r));
  }
  std::vector<const std::uint16_t*> cg16;
  std::vector<std::uint16_t*> mg16;
  std::vector<const float*> cg32, cq, cp16, cp32;
  std::vector<float*> mg32, me16, me32, mp16, mp32;
  for (int b = 0; b < 2; ++b) {
    cg16.push_back(g16[b].data());
    mg16.push_back(g16[b].data());
    cg32.push_back(g32[b].data());
    mg32.push_back(g32[b].data());
    me16.push_back(e16[b].data());
    me32.push_back(e32[b].data());
    cq.push_back(q[b].data());
    mp16.push_back(p16[b].data());
    mp32.push_back(p32[b].data());
    cp16.push_back(p16[b].data());
    cp32.push_back(p32[b].data());
  }
  std::vector<double> n16(2), n32(2);
  backend.project_batched(s.m, s.n, s.r, cg16, me16, cq, mp16, n16);
  backend.project_batched(s.m, s.n, s.r, cg32, me32, cq, mp32, n32);
  for (int b = 0; b < 2; ++b) {
    EXPECT_EQ(e16[b], e32[b]);  // E += G: the same float additions
    EXPECT_LE(frobenius_diff(p16[b].data(), p32[b].data(), p32[b].size()), 1e-5 * frobenius(p32[b]));
    EXPECT_LE(relative(n16[b], n32[b]), 1e-12);
  }
  // Both reconstruct from the float32 path's P.
  for (int b = 0; b < 2; ++b) p16[b] = p32[b];
  backend.reconstruct_batched(s.m, s.n, s.r, cp16, cq, me16, mg16, n16);
  backend.reconstruct_batched(s.m, s.n, s.r, cp32, cq, me32, mg32, n32);
  for (int b = 0; b < 2; ++b) {
    EXPECT_LE(frobenius_diff(e16[b].data(), e32[b].data(), e32[b].size()), 1e-6 * frobenius(e32[b]));
    EXPECT_LE(relative(n16[b], n32[b]), 1e-6);
    // G holds Ĝ rounded to nearest: within half a bf16 step (2^-9 relative) of the float32 Ĝ.
    const std::vector<float> got = widen(g16[b]);
    for (std::size_t k = 0; k < got.size(); ++k)
      ASSERT_LE(std::abs(got[k] - g32[b][k]), std::ldexp(std::abs(g32[b][k]), -8) + 1e-30) << k;
  }
}

TEST(Bf16Kernels, ProjectAndReconstructMatchFloat32OnTheWidenedData) {
  for (const std::string& name : cpu_variants())
    for (const int threads : {1, 3}) {
      SCOPED_TRACE(name + " threads " + std::to_string(threads));
      const auto backend = make_backend(name, {.threads = threads});
      // Small and large ranks (the skinny and the Eigen paths), rows split into several conversion chunks.
      for (const Shape s : {Shape{7, 5, 1}, Shape{33, 17, 3}, Shape{300, 200, 4}, Shape{96, 1500, 40}}) {
        SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.n) + " r " + std::to_string(s.r));
        check_batch(*backend, s);
      }
    }
}

TEST(Bf16Kernels, NeedFloat32ErrorBuffers) {
  const auto backend = make_backend("cpu");
  std::vector<std::uint16_t> g(16);
  std::vector<float> q(4), p(4);
  const std::uint16_t* cg = g.data();
  std::uint16_t* mg = g.data();
  const float* cq = q.data();
  float* mp = p.data();
  const float* cp = p.data();
  double norm = 0.0;
  EXPECT_THROW(backend->project_batched(4, 4, 1, {&cg, 1}, {}, {&cq, 1}, {&mp, 1}, {&norm, 1}), InternalError);
  EXPECT_THROW(backend->reconstruct_batched(4, 4, 1, {&cp, 1}, {&cq, 1}, {}, {&mg, 1}, {&norm, 1}), InternalError);
}

TEST(PowerSgdBf16, RecoversAnExactlyLowRankMatrixToBf16Precision) {
  const auto backend = make_backend("cpu");
  const std::int64_t m = 300;
  const std::int64_t n = 200;
  const int r = 4;
  // The bf16 matrix is rank 4 up to its own rounding (at most 2^-9 relative per element); one power iteration
  // amplifies that noise by the conditioning of the rank-4 part, and the result is rounded once more. So the
  // bound is a few bf16 steps (2^-8 ≈ 3.9e-3).
  const std::vector<float> exact = testing::exact_low_rank(m, n, r);
  const std::vector<std::uint16_t> g = to_bf16(exact);
  LocalCommunicator comm;
  for (const bool feedback : {false, true}) {
    SCOPED_TRACE(feedback ? "with error feedback" : "without");
    PowerSgd psgd(*backend, {{m, n}}, {.rank = r, .error_feedback = feedback, .seed = 3});
    for (int step = 0; step < 3; ++step) {
      std::vector<std::vector<std::uint16_t>> grads{g};
      const StepStats st = psgd.step(spans(grads), comm);
      ASSERT_TRUE(st.tensors[0].compressed);
      const std::vector<float> got = widen(grads[0]);
      const double rel = frobenius_diff(got.data(), exact.data(), exact.size()) / frobenius(exact);
      EXPECT_LE(rel, 1e-2) << "step " << step;
      EXPECT_LE(st.tensors[0].relative_error, 1e-2) << "step " << step;
      EXPECT_GT(st.tensors[0].relative_error, 0.0);  // the rounding is not rank 4
    }
    EXPECT_EQ(psgd.error(0).empty(), !feedback);
  }
  // The same matrix at rank 2 loses a real share of it: the bound above does not pass just anything.
  PowerSgd low(*backend, {{m, n}}, {.rank = 2, .error_feedback = false, .seed = 3});
  std::vector<std::vector<std::uint16_t>> grads{g};
  EXPECT_GT(low.step(spans(grads), comm).tensors[0].relative_error, 0.1);
}

TEST(PowerSgdBf16, StepsLikeFloat32OnTheWidenedGradients) {
  const std::vector<std::vector<std::int64_t>> shapes{{96, 64}, {96, 64}, {64}, {40, 3, 3}, {5, 5}};
  const auto backend = make_backend("cpu");
  PowerSgd p16(*backend, shapes, {.rank = 3, .seed = 4});
  PowerSgd p32(*backend, shapes, {.rank = 3, .seed = 4});
  InProcessGroup one(1);
  for (int step = 0; step < 4; ++step) {
    std::vector<std::vector<std::uint16_t>> g16;
    std::vector<std::vector<float>> g32;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      std::int64_t numel = 1;
      for (const std::int64_t d : shapes[i]) numel *= d;
      g16.push_back(to_bf16(random_normal(static_cast<std::size_t>(numel), 100 * step + i, 0.01)));
      g32.push_back(widen(g16.back()));
    }
    const StepStats s16 = p16.step(spans(g16), one.communicator(0));
    const StepStats s32 = p32.step(spans(g32), one.communicator(0));
    ASSERT_EQ(s16.compressed_tensors, 3);
    EXPECT_EQ(s16.wire_floats, s32.wire_floats);
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      SCOPED_TRACE("step " + std::to_string(step) + " tensor " + std::to_string(i));
      if (!s16.tensors[i].compressed) {
        // Uncompressed: the same float32 average, rounded once.
        EXPECT_EQ(g16[i], to_bf16(g32[i]));
        continue;
      }
      const std::vector<float> got = widen(g16[i]);
      EXPECT_LE(frobenius_diff(got.data(), g32[i].data(), got.size()), 4e-3 * frobenius(g32[i]));
      const std::vector<float> e16 = p16.error_copy(i);
      const std::vector<float> e32 = p32.error_copy(i);
      EXPECT_LE(frobenius_diff(e16.data(), e32.data(), e32.size()), 1e-5 * frobenius(e32));
      EXPECT_NEAR(s16.tensors[i].relative_error, s32.tensors[i].relative_error, 1e-5);
    }
  }
}

}  // namespace
}  // namespace edgc::kernels
