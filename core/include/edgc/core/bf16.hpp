#pragma once
// bfloat16 ↔ float32, one definition for the trace reader and the kernels.
#include <cstdint>
#include <cstring>

namespace edgc {

/// bf16 (the high half of a float32's bits) → float32: exact.
inline float bf16_to_float(std::uint16_t h) noexcept {
  const std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// float32 → bf16, rounded to nearest even; ±Inf stays ±Inf, values past the largest bf16 round to ±Inf, NaN
/// stays NaN (quiet, sign kept).
inline std::uint16_t float_to_bf16(float f) noexcept {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffU) > 0x7f800000U) return static_cast<std::uint16_t>((u >> 16) | 0x0040U);
  return static_cast<std::uint16_t>((u + 0x7fffU + ((u >> 16) & 1U)) >> 16);
}

}  // namespace edgc
