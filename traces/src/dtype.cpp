#include "edgc/traces/dtype.hpp"

#include <bit>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

static_assert(std::endian::native == std::endian::little, "edgc trace I/O assumes a little-endian host");

namespace edgc::traces {

std::size_t element_size(Dtype d) noexcept {
  switch (d) {
    case Dtype::kF32:
      return 4;
    case Dtype::kF16:
    case Dtype::kBF16:
      return 2;
    case Dtype::kI64:
      return 8;
  }
  return 0;
}

std::string_view manifest_name(Dtype d) noexcept {
  switch (d) {
    case Dtype::kF32:
      return "f32";
    case Dtype::kF16:
      return "f16";
    case Dtype::kBF16:
      return "bf16";
    case Dtype::kI64:
      return "i64";
  }
  return "?";
}

std::string_view safetensors_name(Dtype d) noexcept {
  switch (d) {
    case Dtype::kF32:
      return "F32";
    case Dtype::kF16:
      return "F16";
    case Dtype::kBF16:
      return "BF16";
    case Dtype::kI64:
      return "I64";
  }
  return "?";
}

std::optional<Dtype> parse_manifest_dtype(std::string_view s) noexcept {
  for (Dtype d : {Dtype::kF32, Dtype::kF16, Dtype::kBF16, Dtype::kI64})
    if (s == manifest_name(d)) return d;
  return std::nullopt;
}

std::optional<Dtype> parse_safetensors_dtype(std::string_view s) noexcept {
  for (Dtype d : {Dtype::kF32, Dtype::kF16, Dtype::kBF16, Dtype::kI64})
    if (s == safetensors_name(d)) return d;
  return std::nullopt;
}

namespace {

#if defined(__x86_64__) && defined(__GNUC__)
// What GCC's __builtin_cpu_supports("f16c") answers, spelt out with cpuid (Clang 14 does not know that feature
// name): the CPU has F16C and the OS saves the YMM registers its 256-bit results live in (OSXSAVE set, XCR0 with
// SSE and AVX state), as libgcc only reports F16C when AVX is usable.
bool cpu_has_f16c() noexcept {
  unsigned eax = 0;
  unsigned ebx = 0;
  unsigned ecx = 0;
  unsigned edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  if ((ecx & bit_OSXSAVE) == 0U || (ecx & bit_F16C) == 0U) return false;
  unsigned xcr0_low = 0;
  unsigned xcr0_high = 0;
  __asm__("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0U));
  constexpr unsigned kSseAndYmmState = 0x6U;
  return (xcr0_low & kSseAndYmmState) == kSseAndYmmState;
}

// F16C converts eight halves per instruction; used when the CPU has it (every x86-64 CPU since 2012).
__attribute__((target("f16c"))) void half_block_to_float_f16c(const std::uint16_t* src, float* dst,
                                                              std::size_t n) noexcept {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) dst[i] = half_to_float(src[i]);
}
#endif

void half_block_to_float(const std::uint16_t* src, float* dst, std::size_t n) noexcept {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has_f16c = cpu_has_f16c();
  if (has_f16c) {
    half_block_to_float_f16c(src, dst, n);
    return;
  }
#endif
  for (std::size_t i = 0; i < n; ++i) dst[i] = half_to_float(src[i]);
}

}  // namespace

float half_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  std::uint32_t u;
  if (exp == 0x1f) {
    u = sign | 0x7f800000u | (mant << 13);  // Inf or NaN
  } else if (exp != 0) {
    u = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {
    u = sign;  // ±0
  } else {
    // Subnormal half: normalise into an f32 normal.
    std::uint32_t e = 113;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    u = sign | (e << 23) | ((mant & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(u);
}

std::uint16_t float_to_half(float f) noexcept {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);   // NaN
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // ≥ 65520 rounds to Inf
  if (abs < 0x38800000u) {
    // Result is subnormal (or zero): value / 2^-24, rounded to nearest even.
    if (abs < 0x33000000u) return sign;  // below half the smallest subnormal
    const std::uint32_t e = abs >> 23;
    const std::uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126 - e;  // 14..24 - aligns to 2^-24 units
    const std::uint32_t q = m >> shift;
    const std::uint32_t rem = m & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1);
    const std::uint32_t r = q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
    return static_cast<std::uint16_t>(sign | r);
  }
  // Normal: rebias exponent, round mantissa to 10 bits (carry into the exponent is correct).
  const std::uint32_t rebased = abs - (112u << 23);
  const std::uint32_t r = (rebased + 0xfffu + ((rebased >> 13) & 1u)) >> 13;
  return static_cast<std::uint16_t>(sign | r);
}

void convert_to_f32(Dtype d, const void* src, float* dst, std::size_t n) noexcept {
  switch (d) {
    case Dtype::kF32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
    case Dtype::kBF16: {
      // Widen into an integer chunk, then copy the bits out: both loops vectorise, and no float is read
      // through a uint32_t pointer.
      const auto* s = static_cast<const std::uint16_t*>(src);
      constexpr std::size_t kChunk = 2048;
      std::uint32_t wide[kChunk];
      for (std::size_t base = 0; base < n; base += kChunk) {
        const std::size_t len = n - base < kChunk ? n - base : kChunk;
        for (std::size_t i = 0; i < len; ++i) wide[i] = static_cast<std::uint32_t>(s[base + i]) << 16;
        std::memcpy(dst + base, wide, len * sizeof(float));
      }
      return;
    }
    case Dtype::kF16:
      half_block_to_float(static_cast<const std::uint16_t*>(src), dst, n);
      return;
    case Dtype::kI64:
      return;
  }
}

void convert_from_f32(Dtype d, const float* src, void* dst, std::size_t n) noexcept {
  switch (d) {
    case Dtype::kF32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
    case Dtype::kBF16: {
      auto* o = static_cast<std::uint16_t*>(dst);
      for (std::size_t i = 0; i < n; ++i) o[i] = float_to_bf16(src[i]);
      return;
    }
    case Dtype::kF16: {
      auto* o = static_cast<std::uint16_t*>(dst);
      for (std::size_t i = 0; i < n; ++i) o[i] = float_to_half(src[i]);
      return;
    }
    case Dtype::kI64:
      return;
  }
}

}  // namespace edgc::traces
