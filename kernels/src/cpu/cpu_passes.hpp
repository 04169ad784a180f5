#pragma once
// Element-wise passes of the CPU kernels, with squared norms accumulated in double (a float sum of 10⁷ squares
// would lose digits the relative-error statistics need). Included only by the translation units of one
// compiled variant, inside its namespace, so each variant gets its own copy.
#include <cstdint>

#include "cpu_simd.hpp"
#include "cpu_variant.hpp"

namespace edgc::kernels::cpu::EDGC_CPU_VARIANT {

/// e += g; returns ‖e‖² of the new e.
inline double add_into(float* e, const float* g, std::int64_t n) {
  simd::D8 a0 = simd::dzero();
  simd::D8 a1 = simd::dzero();
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const simd::F8 x = simd::add(simd::load(e + i), simd::load(g + i));
    const simd::F8 y = simd::add(simd::load(e + i + 8), simd::load(g + i + 8));
    simd::store(e + i, x);
    simd::store(e + i + 8, y);
    const simd::D8 wx = simd::widen(x);
    const simd::D8 wy = simd::widen(y);
    a0 = simd::fmadd(wx, wx, a0);
    a1 = simd::fmadd(wy, wy, a1);
  }
  double s = simd::hsum(simd::add(a0, a1));
  for (; i < n; ++i) {
    e[i] += g[i];
    s += static_cast<double>(e[i]) * e[i];
  }
  return s;
}

/// ‖x‖².
inline double squared_norm(const float* x, std::int64_t n) {
  simd::D8 a0 = simd::dzero();
  simd::D8 a1 = simd::dzero();
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const simd::D8 wx = simd::widen(simd::load(x + i));
    const simd::D8 wy = simd::widen(simd::load(x + i + 8));
    a0 = simd::fmadd(wx, wx, a0);
    a1 = simd::fmadd(wy, wy, a1);
  }
  double s = simd::hsum(simd::add(a0, a1));
  for (; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
}

/// Epilogue of a PowerSGD step over a stretch of n elements: d = M − Ĝ; E = d (with error feedback); G = Ĝ.
/// M comes from E, or from G without error feedback (read before it is overwritten). Returns ‖d‖².
/// Ĝ goes to G with streaming (non-temporal) stores: G is not read again here, and bypassing the cache saves
/// the read-for-ownership of every line, a quarter of this pass's memory traffic. Streaming stores need
/// aligned addresses, hence a scalar head whose length depends on where G happens to lie in memory. So that
/// ‖d‖² does not depend on that (heap addresses differ from run to run), every element is added to the
/// accumulator of its index class i mod 8 in increasing i — head elements seed the vector lanes their class
/// occupies — and the eight classes are summed in a fixed order. Callers issue simd::fence() before handing G
/// to another thread.
template <bool kErrorFeedback>
inline double finish(const float* ghat, float* g, float* e, std::int64_t n) {
  double lanes[8] = {};
  std::int64_t head = 0;
  while (head < n && reinterpret_cast<std::uintptr_t>(g + head) % simd::kStreamAlign != 0) ++head;
  const auto step = [&](std::int64_t k) {
    const float m = kErrorFeedback ? e[k] : g[k];
    const float d = m - ghat[k];
    if constexpr (kErrorFeedback) e[k] = d;
    g[k] = ghat[k];
    return static_cast<double>(d) * d;
  };
  // Vector lane j will hold class (head + j) mod 8, so head element i seeds lane i + 8 − head (head < 8).
  for (std::int64_t i = 0; i < head; ++i) lanes[i + 8 - head] = step(i);
  simd::D8 acc = simd::dload(lanes);
  std::int64_t i = head;
  for (; i + 8 <= n; i += 8) {
    const simd::F8 x = simd::load(ghat + i);
    const simd::F8 d = simd::sub(simd::load(kErrorFeedback ? e + i : g + i), x);
    if constexpr (kErrorFeedback) simd::store(e + i, d);
    simd::stream(g + i, x);
    const simd::D8 wd = simd::widen(d);
    acc = simd::fmadd(wd, wd, acc);
  }
  simd::dstore(lanes, acc);
  double cls[8];
  for (std::int64_t j = 0; j < 8; ++j) cls[(head + j) % 8] = lanes[j];
  for (; i < n; ++i) cls[i % 8] += step(i);
  return ((cls[0] + cls[1]) + (cls[2] + cls[3])) + ((cls[4] + cls[5]) + (cls[6] + cls[7]));
}

/// Row i of a projection's M, made ready for its products: E += G in place with error feedback (M lands in E), else
/// G itself; the row's ‖M‖² is added to `sq`.
inline const float* fresh_row(const ProjectArgs& a, std::int64_t i, double& sq) {
  const float* g = a.g + i * a.n;
  if (a.e == nullptr) {
    sq += squared_norm(g, a.n);
    return g;
  }
  float* e = a.e + i * a.n;
  sq += add_into(e, g, a.n);
  return e;
}

}  // namespace edgc::kernels::cpu::EDGC_CPU_VARIANT
