#pragma once
// Eight-float SIMD vectors for the hand-written CPU kernels: one AVX2 register in the AVX2 variant, two SSE2
// registers in the portable x86-64 variant, a plain array elsewhere. Written out rather than left to the
// auto-vectoriser, which turned the double-precision norm accumulations into scalar code. Included only by the
// translation units of one variant, inside its namespace.
#include <cstdint>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "cpu_variant.hpp"

namespace edgc::kernels::cpu::EDGC_CPU_VARIANT::simd {

#if defined(__AVX2__) && defined(__FMA__)

struct F8 {
  __m256 v;
};
struct D8 {  // eight doubles, the widened lanes of an F8
  __m256d lo;
  __m256d hi;
};
/// Streaming stores need this alignment of the destination.
inline constexpr std::uintptr_t kStreamAlign = 32;

inline F8 load(const float* p) { return {_mm256_loadu_ps(p)}; }
inline void store(float* p, F8 a) { _mm256_storeu_ps(p, a.v); }
inline void stream(float* p, F8 a) { _mm256_stream_ps(p, a.v); }
inline F8 set1(float x) { return {_mm256_set1_ps(x)}; }
inline F8 zero() { return {_mm256_setzero_ps()}; }
inline F8 add(F8 a, F8 b) { return {_mm256_add_ps(a.v, b.v)}; }
inline F8 sub(F8 a, F8 b) { return {_mm256_sub_ps(a.v, b.v)}; }
inline F8 fmadd(F8 a, F8 b, F8 c) { return {_mm256_fmadd_ps(a.v, b.v, c.v)}; }
inline float hsum(F8 a) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

inline D8 dzero() { return {_mm256_setzero_pd(), _mm256_setzero_pd()}; }
inline D8 dload(const double* p) { return {_mm256_loadu_pd(p), _mm256_loadu_pd(p + 4)}; }
inline void dstore(double* p, D8 a) {
  _mm256_storeu_pd(p, a.lo);
  _mm256_storeu_pd(p + 4, a.hi);
}
inline D8 widen(F8 a) {
  return {_mm256_cvtps_pd(_mm256_castps256_ps128(a.v)), _mm256_cvtps_pd(_mm256_extractf128_ps(a.v, 1))};
}
inline D8 add(D8 a, D8 b) { return {_mm256_add_pd(a.lo, b.lo), _mm256_add_pd(a.hi, b.hi)}; }
inline D8 mul(D8 a, D8 b) { return {_mm256_mul_pd(a.lo, b.lo), _mm256_mul_pd(a.hi, b.hi)}; }
inline D8 fmadd(D8 a, D8 b, D8 c) { return {_mm256_fmadd_pd(a.lo, b.lo, c.lo), _mm256_fmadd_pd(a.hi, b.hi, c.hi)}; }
inline double hsum(D8 a) {
  const __m256d s = _mm256_add_pd(a.lo, a.hi);
  __m128d t = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
  t = _mm_add_sd(t, _mm_unpackhi_pd(t, t));
  return _mm_cvtsd_f64(t);
}
inline void fence() { _mm_sfence(); }

#elif defined(__SSE2__)

struct F8 {
  __m128 a;
  __m128 b;
};
struct D8 {
  __m128d a;
  __m128d b;
  __m128d c;
  __m128d d;
};
inline constexpr std::uintptr_t kStreamAlign = 16;

inline F8 load(const float* p) { return {_mm_loadu_ps(p), _mm_loadu_ps(p + 4)}; }
inline void store(float* p, F8 x) {
  _mm_storeu_ps(p, x.a);
  _mm_storeu_ps(p + 4, x.b);
}
inline void stream(float* p, F8 x) {
  _mm_stream_ps(p, x.a);
  _mm_stream_ps(p + 4, x.b);
}
inline F8 set1(float v) { return {_mm_set1_ps(v), _mm_set1_ps(v)}; }
inline F8 zero() { return {_mm_setzero_ps(), _mm_setzero_ps()}; }
inline F8 add(F8 x, F8 y) { return {_mm_add_ps(x.a, y.a), _mm_add_ps(x.b, y.b)}; }
inline F8 sub(F8 x, F8 y) { return {_mm_sub_ps(x.a, y.a), _mm_sub_ps(x.b, y.b)}; }
inline F8 fmadd(F8 x, F8 y, F8 z) {
  return {_mm_add_ps(_mm_mul_ps(x.a, y.a), z.a), _mm_add_ps(_mm_mul_ps(x.b, y.b), z.b)};
}
inline float hsum(F8 x) {
  __m128 s = _mm_add_ps(x.a, x.b);
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

inline D8 dzero() { return {_mm_setzero_pd(), _mm_setzero_pd(), _mm_setzero_pd(), _mm_setzero_pd()}; }
inline D8 dload(const double* p) {
  return {_mm_loadu_pd(p), _mm_loadu_pd(p + 2), _mm_loadu_pd(p + 4), _mm_loadu_pd(p + 6)};
}
inline void dstore(double* p, D8 x) {
  _mm_storeu_pd(p, x.a);
  _mm_storeu_pd(p + 2, x.b);
  _mm_storeu_pd(p + 4, x.c);
  _mm_storeu_pd(p + 6, x.d);
}
inline D8 widen(F8 x) {
  return {_mm_cvtps_pd(x.a), _mm_cvtps_pd(_mm_movehl_ps(x.a, x.a)), _mm_cvtps_pd(x.b),
          _mm_cvtps_pd(_mm_movehl_ps(x.b, x.b))};
}
inline D8 add(D8 x, D8 y) {
  return {_mm_add_pd(x.a, y.a), _mm_add_pd(x.b, y.b), _mm_add_pd(x.c, y.c), _mm_add_pd(x.d, y.d)};
}
inline D8 mul(D8 x, D8 y) {
  return {_mm_mul_pd(x.a, y.a), _mm_mul_pd(x.b, y.b), _mm_mul_pd(x.c, y.c), _mm_mul_pd(x.d, y.d)};
}
inline D8 fmadd(D8 x, D8 y, D8 z) { return add(mul(x, y), z); }
inline double hsum(D8 x) {
  __m128d t = _mm_add_pd(_mm_add_pd(x.a, x.b), _mm_add_pd(x.c, x.d));
  t = _mm_add_sd(t, _mm_unpackhi_pd(t, t));
  return _mm_cvtsd_f64(t);
}
inline void fence() { _mm_sfence(); }

#else

struct F8 {
  float v[8];
};
struct D8 {
  double v[8];
};
inline constexpr std::uintptr_t kStreamAlign = 1;

inline F8 load(const float* p) {
  F8 r;
  for (int i = 0; i < 8; ++i) r.v[i] = p[i];
  return r;
}
inline void store(float* p, F8 a) {
  for (int i = 0; i < 8; ++i) p[i] = a.v[i];
}
inline void stream(float* p, F8 a) { store(p, a); }
inline F8 set1(float x) {
  F8 r;
  for (float& v : r.v) v = x;
  return r;
}
inline F8 zero() { return set1(0.0F); }
inline F8 add(F8 a, F8 b) {
  for (int i = 0; i < 8; ++i) a.v[i] += b.v[i];
  return a;
}
inline F8 sub(F8 a, F8 b) {
  for (int i = 0; i < 8; ++i) a.v[i] -= b.v[i];
  return a;
}
inline F8 fmadd(F8 a, F8 b, F8 c) {
  for (int i = 0; i < 8; ++i) c.v[i] += a.v[i] * b.v[i];
  return c;
}
inline float hsum(F8 a) {
  float s = 0.0F;
  for (const float v : a.v) s += v;
  return s;
}
inline D8 dzero() { return D8{}; }
inline D8 dload(const double* p) {
  D8 r;
  for (int i = 0; i < 8; ++i) r.v[i] = p[i];
  return r;
}
inline void dstore(double* p, D8 a) {
  for (int i = 0; i < 8; ++i) p[i] = a.v[i];
}
inline D8 widen(F8 a) {
  D8 r;
  for (int i = 0; i < 8; ++i) r.v[i] = a.v[i];
  return r;
}
inline D8 add(D8 a, D8 b) {
  for (int i = 0; i < 8; ++i) a.v[i] += b.v[i];
  return a;
}
inline D8 mul(D8 a, D8 b) {
  for (int i = 0; i < 8; ++i) a.v[i] *= b.v[i];
  return a;
}
inline D8 fmadd(D8 a, D8 b, D8 c) { return add(mul(a, b), c); }
inline double hsum(D8 a) {
  double s = 0.0;
  for (const double v : a.v) s += v;
  return s;
}
inline void fence() {}

#endif

// The widest float vector of the variant, for the rank-panel kernels (cpu_panel.cpp): one AVX-512 register in the
// AVX-512 variant, an F8 elsewhere.
#if defined(__AVX512F__)
struct FW {
  __m512 v;
};
inline constexpr int kWideLanes = 16;
inline FW wload(const float* p) { return {_mm512_loadu_ps(p)}; }
inline void wstore(float* p, FW a) { _mm512_storeu_ps(p, a.v); }
inline FW wset1(float x) { return {_mm512_set1_ps(x)}; }
inline FW wzero() { return {_mm512_setzero_ps()}; }
inline FW wfmadd(FW a, FW b, FW c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
#else
using FW = F8;
inline constexpr int kWideLanes = 8;
inline FW wload(const float* p) { return load(p); }
inline void wstore(float* p, FW a) { store(p, a); }
inline FW wset1(float x) { return set1(x); }
inline FW wzero() { return zero(); }
inline FW wfmadd(FW a, FW b, FW c) { return fmadd(a, b, c); }
#endif

}  // namespace edgc::kernels::cpu::EDGC_CPU_VARIANT::simd
