#pragma once
// Element types of trace files and exact conversions to and from f32.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "edgc/core/bf16.hpp"

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

using edgc::bf16_to_float;  // core/bf16.hpp
using edgc::float_to_bf16;

/// IEEE half → f32 (exact, subnormals included).
float half_to_float(std::uint16_t h) noexcept;
/// f32 → IEEE half rounding to nearest even; overflow gives ±Inf, NaN stays NaN.
std::uint16_t float_to_half(float f) noexcept;

/// Converts `n` little-endian elements of type `d` (f32, f16 or bf16) at `src` into f32 at `dst`.
void convert_to_f32(Dtype d, const void* src, float* dst, std::size_t n) noexcept;
/// Converts `n` f32 values into `d` (f32, f16 or bf16) little-endian at `dst`.
void convert_from_f32(Dtype d, const float* src, void* dst, std::size_t n) noexcept;

}  // namespace edgc::traces
