// The memory interface of the CPU backends (Buffer, allocate/copy/memset), bf16 conversions, the element-wise
// add_divide and the availability query: what PowerSgd's device-resident code path runs on when the "device" is
// the host, so that path is checked on machines without a GPU.
#include "edgc/kernels/buffer.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/traces/dtype.hpp"
#include "kernel_test_util.hpp"

namespace edgc::kernels {
namespace {

using testing::cpu_variants;
using testing::random_normal;

TEST(Buffer, RoundTripsCopiesAndZeroesOnEveryCpuVariant) {
  for (const std::string& name : cpu_variants()) {
    SCOPED_TRACE(name);
    const auto backend = make_backend(name);
    EXPECT_FALSE(backend->device_memory());
    const std::vector<float> h = random_normal(1001, 3);
    Buffer<float> a(*backend, h.size());
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.data()) % 256, 0U);
    a.upload(h);
    EXPECT_EQ(a.to_host(), h);
    Buffer<float> b(*backend, h.size());
    backend->copy(b.data(), a.data(), a.bytes());
    EXPECT_EQ(b.to_host(), h);
    a.zero();
    for (const float v : a.to_host()) ASSERT_EQ(std::bit_cast<std::uint32_t>(v), 0U);
    backend->memset(b.data(), 0xFF, 4 * sizeof(float));
    const std::vector<float> poisoned = b.to_host();
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(std::isnan(poisoned[static_cast<std::size_t>(i)]));
    EXPECT_EQ(poisoned[4], h[4]);
    // Moves hand the memory over; the moved-from buffer is empty.
    float* const p = b.data();
    Buffer<float> c = std::move(b);
    EXPECT_EQ(c.data(), p);
    EXPECT_TRUE(b.empty());
    EXPECT_EQ(b.data(), nullptr);
    c = Buffer<float>(*backend, 3);
    EXPECT_EQ(c.size(), 3U);
    // Sizes must match; an empty buffer takes empty spans.
    EXPECT_THROW(c.upload(h), InternalError);
    std::vector<float> small(2);
    EXPECT_THROW(c.download(small), InternalError);
    Buffer<float> none(*backend, 0);
    EXPECT_EQ(none.data(), nullptr);
    EXPECT_NO_THROW(none.upload({}));
    EXPECT_NO_THROW(none.zero());
  }
}

TEST(Buffer, HostBackendsHaveNoDeviceTimer) {
  const auto backend = make_backend("cpu");
  backend->start_timer();
  EXPECT_FALSE(backend->stop_timer().has_value());
}

std::uint16_t bf16_of_bits(std::uint32_t bits) { return float_to_bf16(std::bit_cast<float>(bits)); }

TEST(Bf16, RoundsToNearestEvenAndKeepsSpecialValues) {
  EXPECT_EQ(bf16_of_bits(0x3F800000U), 0x3F80);  // 1.0
  EXPECT_EQ(bf16_of_bits(0x3F808000U), 0x3F80);  // 1 + 2^-8: a tie, to the even 1.0
  EXPECT_EQ(bf16_of_bits(0x3F818000U), 0x3F82);  // 1 + 3·2^-8: a tie, up to the even neighbour
  EXPECT_EQ(bf16_of_bits(0x3F808001U), 0x3F81);  // just above a tie: up
  EXPECT_EQ(bf16_of_bits(0x3F817FFFU), 0x3F81);  // just below a tie: down
  EXPECT_EQ(bf16_of_bits(0xBFC00000U), 0xBFC0);  // -1.5, exact
  EXPECT_EQ(bf16_of_bits(0x7F800000U), 0x7F80);  // +Inf
  EXPECT_EQ(bf16_of_bits(0xFF800000U), 0xFF80);  // -Inf
  EXPECT_EQ(bf16_of_bits(0x7F7FFFFFU), 0x7F80);  // the largest float rounds past the largest bf16: +Inf
  EXPECT_EQ(bf16_of_bits(0x00018000U), 0x0002);  // subnormal tie, up to even
  EXPECT_EQ(bf16_of_bits(0x80008000U), 0x8000);  // subnormal tie, down to -0
  EXPECT_EQ(bf16_of_bits(0x7FA00000U), 0x7FE0);  // NaN stays NaN, quiet
  EXPECT_EQ(bf16_of_bits(0xFF800001U), 0xFFC0);  // a NaN whose payload sits below bf16's bits
  // Widening is exact: every non-NaN bf16 survives the round trip.
  for (std::uint32_t h = 0; h <= 0xFFFFU; ++h) {
    const auto b = static_cast<std::uint16_t>(h);
    const float f = bf16_to_float(b);
    ASSERT_EQ(std::bit_cast<std::uint32_t>(f), h << 16);
    if (!std::isnan(f)) {
      ASSERT_EQ(float_to_bf16(f), b);
    }
  }
  // The same rounding as the trace format's converter.
  for (const float f : random_normal(20000, 5, 1e3)) ASSERT_EQ(float_to_bf16(f), traces::float_to_bf16(f)) << f;
}

TEST(AddDivide, IsTheScalarArithmeticForEveryStorage) {
  for (const std::string& name : cpu_variants()) {
    SCOPED_TRACE(name);
    const auto backend = make_backend(name);
    const std::vector<float> a = random_normal(257, 1);
    const std::vector<float> b = random_normal(257, 2);
    const auto n = static_cast<std::int64_t>(a.size());
    std::vector<float> a_mut = a;
    std::vector<float> out(a.size());
    backend->add_divide(n, a.data(), b.data(), 3.0F, out.data());
    for (std::size_t k = 0; k < a.size(); ++k) ASSERT_EQ(out[k], (a[k] + b[k]) / 3.0F);
    backend->add_divide(n, a_mut.data(), nullptr, 4.0F, a_mut.data());  // in place, no addend
    for (std::size_t k = 0; k < a.size(); ++k) ASSERT_EQ(a_mut[k], a[k] / 4.0F);
    const float neg_zero = -0.0F;
    float z = 0.0F;
    backend->add_divide(1, &neg_zero, nullptr, 1.0F, &z);
    EXPECT_TRUE(std::signbit(z));  // no hidden + 0
    // bf16 in: widened exactly; bf16 out: rounded to nearest even.
    std::vector<std::uint16_t> h(a.size());
    for (std::size_t k = 0; k < a.size(); ++k) h[k] = float_to_bf16(a[k]);
    backend->add_divide(n, h.data(), b.data(), 1.0F, out.data());
    for (std::size_t k = 0; k < a.size(); ++k) ASSERT_EQ(out[k], bf16_to_float(h[k]) + b[k]);
    backend->add_divide(n, a.data(), b.data(), 2.0F, h.data());
    for (std::size_t k = 0; k < a.size(); ++k) ASSERT_EQ(h[k], float_to_bf16((a[k] + b[k]) / 2.0F));
    EXPECT_THROW(backend->add_divide(n, a.data(), nullptr, 0.0F, out.data()), InternalError);
    EXPECT_THROW(backend->add_divide(-1, a.data(), nullptr, 1.0F, out.data()), InternalError);
  }
}

TEST(BackendAvailability, NamesWhatIsMissing) {
  EXPECT_EQ(backend_unavailable_reason("cpu"), "");
  EXPECT_EQ(backend_unavailable_reason("cpu-generic"), "");
  EXPECT_NE(backend_unavailable_reason("gpu9000").find("unknown backend"), std::string::npos);
  // A SIMD variant: available exactly when make_backend gives it, else refused on the key `backend` with the reason.
  for (const char* simd : {"cpu-avx2", "cpu-avx512"}) {
    const std::string why = backend_unavailable_reason(simd);
    if (why.empty()) {
      EXPECT_EQ(make_backend(simd)->name(), simd);
      continue;
    }
    try {
      make_backend(simd);
      ADD_FAILURE() << simd << " was created although: " << why;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.field(), "backend");
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
  // This test program does not link edgc::kernels_cuda, so "cuda" is never available here.
  const std::string cuda = backend_unavailable_reason("cuda");
  EXPECT_FALSE(cuda.empty());
  EXPECT_TRUE(cuda.find("does not link") != std::string::npos || cuda.find("no CUDA") != std::string::npos) << cuda;
}

}  // namespace
}  // namespace edgc::kernels
