// The two Cholesky schedules of the CUDA orthogonalisation, called directly (cuda/cuda_kernels.hpp,
// launch_cholesky_rinv) on Gram matrices the backend's orthogonalisation tests rarely produce: indefinite ones, whose
// shift has to grow over several failed factorisations (the retry path), next to one that factorises at once and one
// that is not finite. The spread schedule must leave R⁻¹, ok and third bit for bit as a row of the update per warp
// does, at the edges of each of its instantiations.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_kernels.hpp"
#include "gpu_test_util.hpp"

namespace edgc::kernels {
namespace {

// Unit diagonal, off-diagonal entries ±0.9 with a pseudo-random sign; entries (0, 1), (0, 2), (1, 2) = 0.9, 0.9, −0.9
// make the leading 3×3 block indefinite (determinant −2.888), so the whole matrix is.
std::vector<float> indefinite_gram(int r, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<float> g(static_cast<std::size_t>(r * r));
  for (int i = 0; i < r; ++i)
    for (int j = 0; j <= i; ++j) {
      const float v = i == j ? 1.0F : (gen() % 2 == 0 ? 0.9F : -0.9F);
      g[static_cast<std::size_t>(i * r + j)] = g[static_cast<std::size_t>(j * r + i)] = v;
    }
  g[1] = g[static_cast<std::size_t>(r)] = 0.9F;
  g[2] = g[static_cast<std::size_t>(2 * r)] = 0.9F;
  g[static_cast<std::size_t>(r + 2)] = g[static_cast<std::size_t>(2 * r + 1)] = -0.9F;
  return g;
}

// PᵀP of a random (2r)×r panel: positive definite, columns of different lengths.
std::vector<float> positive_gram(int r, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> normal;
  const int rows = 2 * r;
  std::vector<double> p(static_cast<std::size_t>(rows * r));
  for (int i = 0; i < rows; ++i)
    for (int c = 0; c < r; ++c) p[static_cast<std::size_t>(i * r + c)] = normal(gen) * std::pow(0.9, c);
  std::vector<float> g(static_cast<std::size_t>(r * r));
  for (int a = 0; a < r; ++a)
    for (int b = 0; b < r; ++b) {
      double s = 0.0;
      for (int i = 0; i < rows; ++i)
        s += p[static_cast<std::size_t>(i * r + a)] * p[static_cast<std::size_t>(i * r + b)];
      g[static_cast<std::size_t>(a * r + b)] = static_cast<float>(s);
    }
  return g;
}

struct Outputs {
  std::vector<std::uint32_t> rinv;  // bits
  std::vector<int> ok, third;
};

template <class T>
T* device_alloc(std::size_t n) {
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, n * sizeof(T)), cudaSuccess);
  return static_cast<T*>(p);
}

Outputs run(int r, const std::vector<float>& grams, int batch, int spread_max_rank) {
  const auto rr = static_cast<std::size_t>(r * r);
  const auto nb = static_cast<std::size_t>(batch);
  float* gram = device_alloc<float>(nb * rr);
  double* dwork = device_alloc<double>(nb * (2 * rr + static_cast<std::size_t>(r)));
  float* rinv = device_alloc<float>(nb * rr);
  int* flags = device_alloc<int>(2 * nb);
  EXPECT_EQ(cudaMemcpy(gram, grams.data(), grams.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemset(rinv, 0xFF, nb * rr * sizeof(float)), cudaSuccess);  // poisoned: every entry must be written
  EXPECT_EQ(cudaMemset(flags, 0xFF, 2 * nb * sizeof(int)), cudaSuccess);
  cuda::launch_cholesky_rinv(batch, r, gram, 1e-6F, nullptr, dwork, rinv, flags, flags + batch, spread_max_rank,
                             nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  Outputs out{std::vector<std::uint32_t>(nb * rr), std::vector<int>(nb), std::vector<int>(nb)};
  EXPECT_EQ(cudaMemcpy(out.rinv.data(), rinv, nb * rr * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(out.ok.data(), flags, nb * sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(out.third.data(), flags + batch, nb * sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
  for (void* p :
       {static_cast<void*>(gram), static_cast<void*>(dwork), static_cast<void*>(rinv), static_cast<void*>(flags)})
    cudaFree(p);
  return out;
}

TEST(CholeskySchedules, SpreadGivesTheRowPerWarpBitsThroughRetries) {
  SKIP_WITHOUT_GPU();
  for (const int r : {3, 5, 32, 33, 64, 65, 100, 128}) {
    SCOPED_TRACE("r " + std::to_string(r));
    std::vector<float> grams = indefinite_gram(r, 7U + static_cast<unsigned>(r));
    const std::vector<float> pd = positive_gram(r, 11U + static_cast<unsigned>(r));
    grams.insert(grams.end(), pd.begin(), pd.end());
    std::vector<float> bad = positive_gram(r, 13U);
    bad[static_cast<std::size_t>(r + 1)] = std::nanf("");  // a diagonal entry: the trace is not finite
    grams.insert(grams.end(), bad.begin(), bad.end());
    const Outputs per_warp = run(r, grams, 3, 0);
    const Outputs spread = run(r, grams, 3, 128);
    EXPECT_EQ(per_warp.ok, (std::vector<int>{1, 1, 0}));
    EXPECT_EQ(per_warp.third[0], 1);  // far from orthonormal, and the shift grew
    EXPECT_EQ(spread.ok, per_warp.ok);
    EXPECT_EQ(spread.third[0], per_warp.third[0]);
    EXPECT_EQ(spread.third[1], per_warp.third[1]);
    const auto rr = static_cast<std::size_t>(r * r);
    const std::vector<std::uint32_t> want(per_warp.rinv.begin(), per_warp.rinv.begin() + 2 * rr);
    const std::vector<std::uint32_t> got(spread.rinv.begin(), spread.rinv.begin() + 2 * rr);
    EXPECT_EQ(got, want);  // the failed matrix's R⁻¹ is not written by either
    for (std::size_t i = 0; i < 2 * rr; ++i) {
      float v = 0.0F;
      std::memcpy(&v, &want[i], sizeof v);
      ASSERT_TRUE(std::isfinite(v)) << "R⁻¹ entry " << i;
    }
  }
}

}  // namespace
}  // namespace edgc::kernels
