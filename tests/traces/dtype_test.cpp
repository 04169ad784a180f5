#include "edgc/traces/dtype.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <vector>

#include "edgc/core/random.hpp"

namespace edgc::traces {
namespace {

TEST(Dtype, EveryHalfSurvivesTheRoundTripThroughF32) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float f = half_to_float(bits);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(half_to_float(float_to_half(f))));
      continue;
    }
    ASSERT_EQ(float_to_half(f), bits) << std::hex << h;
  }
}

// The reference is the compiler's _Float16 where it has one (GCC 12; Clang has it on x86-64 from version 15, and
// defines __FLT16_MAX__ where it does).
TEST(Dtype, HalfConversionMatchesTheCompilersFloat16OnRandomFloats) {
#ifndef __FLT16_MAX__
  GTEST_SKIP() << "this compiler has no _Float16 to compare against";
#else
  Rng rng(11);
  for (int i = 0; i < 1'000'000; ++i) {
    // Random bit patterns cover every exponent, including subnormal and overflowing halves.
    const float f = std::bit_cast<float>(static_cast<std::uint32_t>(rng.next_u64()));
    if (std::isnan(f)) continue;
    const auto ref = static_cast<_Float16>(f);
    ASSERT_EQ(float_to_half(f), std::bit_cast<std::uint16_t>(ref)) << f;
    ASSERT_EQ(std::bit_cast<std::uint32_t>(half_to_float(float_to_half(f))),
              std::bit_cast<std::uint32_t>(static_cast<float>(ref)));
  }
#endif
}

TEST(Dtype, BulkConversionsAgreeWithTheScalarOnesForEveryBitPattern) {
  std::vector<std::uint16_t> all(0x10000 + 5);  // odd length exercises the vector loops' tails
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint16_t>(i * 40503u);
  std::vector<float> half(all.size()), bf(all.size());
  convert_to_f32(Dtype::kF16, all.data(), half.data(), all.size());
  convert_to_f32(Dtype::kBF16, all.data(), bf.data(), all.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    const float h = half_to_float(all[i]);
    const float b = bf16_to_float(all[i]);
    if (std::isnan(h)) {
      ASSERT_TRUE(std::isnan(half[i]));
    } else {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(half[i]), std::bit_cast<std::uint32_t>(h)) << std::hex << all[i];
    }
    ASSERT_EQ(std::bit_cast<std::uint32_t>(bf[i]), std::bit_cast<std::uint32_t>(b)) << std::hex << all[i];
  }
}

TEST(Dtype, Bf16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  // 1 + 2^-8 is exactly halfway between bf16 neighbours 1 and 1 + 2^-7: ties go to the even one (1).
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f), 0x3f80);
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
  EXPECT_EQ(float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);  // halfway, odd below: rounds up to even
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
  EXPECT_EQ(bf16_to_float(float_to_bf16(-INFINITY)), -INFINITY);
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = bf16_to_float(static_cast<std::uint16_t>(h));
    if (!std::isnan(f)) {
      ASSERT_EQ(float_to_bf16(f), h);
    }
  }
}

TEST(Dtype, NamesParseBothSpellings) {
  EXPECT_EQ(parse_manifest_dtype("bf16"), Dtype::kBF16);
  EXPECT_EQ(parse_safetensors_dtype("F16"), Dtype::kF16);
  EXPECT_FALSE(parse_manifest_dtype("F32").has_value());
  EXPECT_FALSE(parse_safetensors_dtype("F64").has_value());
  EXPECT_EQ(element_size(Dtype::kI64), 8u);
}

}  // namespace
}  // namespace edgc::traces
