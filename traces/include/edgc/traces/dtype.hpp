#pragma once
// Element types of trace files and exact conversions to and from f32.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace edgc::traces {

enum class Dtype { kF32, kF16, kBF16, kI64 };

/// Bytes per element.
std::size_t element_size(Dtype d) noexcept;
/// Manifest spelling: "f32", "f16", "bf16", "i64".
std::string_view manifest_name(Dtype d) noexcept;
/// safetensors spelling: "F32", "F16", "BF16", "I64".
std::string_view safetensors_name(Dtype d) noexcept;
std::optional<Dtype> parse_manifest_dtype(std::string_view s) noexcept;
std::optional<Dtype> parse_safetensors_dtype(std::string_view s) noexcept;

/// bfloat16 → f32 is exact: the 16 bits are the high half of the f32.
inline float bf16_to_float(std::uint16_t h) noexcept {
  const std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// f32 → bfloat16 rounding to nearest even; NaN stays NaN (quiet).
inline std::uint16_t float_to_bf16(float f) noexcept {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  const std::uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>((u + rounding) >> 16);
}

/// IEEE half → f32 (exact, subnormals included).
float half_to_float(std::uint16_t h) noexcept;
/// f32 → IEEE half rounding to nearest even; overflow gives ±Inf, NaN stays NaN.
std::uint16_t float_to_half(float f) noexcept;

/// Converts `n` little-endian elements of type `d` (f32, f16 or bf16) at `src` into f32 at `dst`.
void convert_to_f32(Dtype d, const void* src, float* dst, std::size_t n) noexcept;
/// Converts `n` f32 values into `d` (f32, f16 or bf16) little-endian at `dst`.
void convert_from_f32(Dtype d, const float* src, void* dst, std::size_t n) noexcept;

}  // namespace edgc::traces
