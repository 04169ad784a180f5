#pragma once
// Helpers shared by the kernel tests: seeded random data, double-precision references, backend variants.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "edgc/core/bf16.hpp"
#include "edgc/core/error.hpp"
#include "edgc/core/random.hpp"
#include "edgc/kernels/backend.hpp"

namespace edgc::kernels::testing {

inline std::vector<float> random_normal(std::size_t n, std::uint64_t seed, double scale = 1.0, double mean = 0.0) {
  Rng rng(seed, 17);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(mean + scale * rng.normal());
  return v;
}

/// Every CPU kernel variant this build and machine can run: the tests hold each to the same properties.
inline std::vector<std::string> cpu_variants() {
  std::vector<std::string> names{"cpu-generic"};
  for (const char* simd : {"cpu-avx2", "cpu-avx512"})
    if (backend_unavailable_reason(simd).empty()) names.emplace_back(simd);
  return names;
}

/// C = op(A)·op(B) in double, row-major, tightly packed.
inline std::vector<double> reference_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
                                          const float* a, const float* b) {
  std::vector<double> c(static_cast<std::size_t>(m * n), 0.0);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0.0;
      for (std::int64_t l = 0; l < k; ++l) {
        const double av = ta ? a[l * m + i] : a[i * k + l];
        const double bv = tb ? b[j * k + l] : b[l * n + j];
        s += av * bv;
      }
      c[static_cast<std::size_t>(i * n + j)] = s;
    }
  return c;
}

/// Elements of a tensor of this shape.
inline std::int64_t numel(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (const std::int64_t d : shape) n *= d;
  return n;
}

/// Every element rounded to bf16 (nearest even), and back (exact).
inline std::vector<std::uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<std::uint16_t> h(v.size());
  std::transform(v.begin(), v.end(), h.begin(), float_to_bf16);
  return h;
}
inline std::vector<float> widen(const std::vector<std::uint16_t>& h) {
  std::vector<float> v(h.size());
  std::transform(h.begin(), h.end(), v.begin(), bf16_to_float);
  return v;
}

/// Spans over each vector, for the span-of-spans arguments of PowerSgd::step.
template <class T>
std::vector<std::span<T>> spans(std::vector<std::vector<T>>& v) {
  std::vector<std::span<T>> s;
  for (auto& x : v) s.emplace_back(x);
  return s;
}

/// An m×n matrix of exact rank r: A·Bᵀ with A (m×r) and B (n×r) standard normal from seeds 1 and 2, row-major.
inline std::vector<float> exact_low_rank(std::int64_t m, std::int64_t n, int r) {
  const std::vector<float> a = random_normal(static_cast<std::size_t>(m * r), 1);
  const std::vector<float> b = random_normal(static_cast<std::size_t>(n * r), 2);
  const std::vector<double> prod = reference_gemm(false, true, m, n, r, a.data(), b.data());
  return {prod.begin(), prod.end()};
}

inline double frobenius(const std::vector<float>& v) {
  double s = 0.0;
  for (const float x : v) s += static_cast<double>(x) * x;
  return std::sqrt(s);
}

inline double frobenius_diff(const float* a, const float* b, std::size_t n) {
  double s = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    s += d * d;
  }
  return std::sqrt(s);
}

}  // namespace edgc::kernels::testing
