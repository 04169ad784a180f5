// Traces written by the Python recorder (tests/python/make_interop_trace.py, run by CTest as a fixture) read
// back in C++ give exactly the values PyTorch had, after PyTorch's own dtype round trip.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <filesystem>

#include "edgc/traces/traces.hpp"
#include "trace_test_util.hpp"

namespace edgc::traces {
namespace {

namespace fs = std::filesystem;

template <typename T>
std::vector<T> read_raw(const fs::path& p) {
  const std::string bytes = test::read_file(p);
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

class PythonRecorder : public ::testing::TestWithParam<const char*> {};

TEST_P(PythonRecorder, ReadsBackTheValuesTorchHad) {
  const fs::path dir = fs::path(EDGC_INTEROP_DIR) / GetParam();
  ASSERT_TRUE(fs::exists(dir / "trace.json")) << dir << " (made by tests/python/make_interop_trace.py)";
  TraceReader r(dir);
  ASSERT_GE(r.num_iterations(), 1u);
  IterationData d;
  std::size_t compared = 0;
  while (r.next(d)) {
    const fs::path exp = dir / "expected" / std::to_string(d.info->iteration);
    for (std::size_t k = 0; k < d.tensors.size(); ++k) {
      const auto want = read_raw<float>(exp / (std::to_string(k) + ".f32"));
      const auto& got = d.tensors[k].values;
      ASSERT_EQ(got.size(), want.size()) << r.manifest().tensors[k].name;
      for (std::size_t i = 0; i < got.size(); ++i) {
        if (std::isnan(want[i])) {
          ASSERT_TRUE(std::isnan(got[i]));
          continue;
        }
        ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want[i]))
            << r.manifest().tensors[k].name << "[" << i << "] at iteration " << d.info->iteration;
      }
      if (r.manifest().tensors[k].mode == CaptureMode::kBlocks) {
        const auto blocks = read_raw<std::int64_t>(exp / (std::to_string(k) + ".blocks.i64"));
        ASSERT_EQ(blocks.size(), 2 * d.tensors[k].blocks.size());
        for (std::size_t b = 0; b < d.tensors[k].blocks.size(); ++b)
          EXPECT_EQ(d.tensors[k].blocks[b], (Block{blocks[2 * b], blocks[2 * b + 1]}));
      }
      compared += got.size();
    }
    ASSERT_EQ(d.boundaries.size(), r.manifest().boundaries.size());
    for (std::size_t b = 0; b < d.boundaries.size(); ++b) {
      const auto want = read_raw<float>(exp / ("b" + std::to_string(b) + ".f32"));
      ASSERT_EQ(d.boundaries[b].size(), want.size()) << r.manifest().boundaries[b].name;
      for (std::size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(std::bit_cast<std::uint32_t>(d.boundaries[b][i]), std::bit_cast<std::uint32_t>(want[i]))
            << r.manifest().boundaries[b].name << "[" << i << "] at iteration " << d.info->iteration;
      }
      compared += want.size();
    }
  }
  EXPECT_GT(compared, 0u);
}

INSTANTIATE_TEST_SUITE_P(Traces, PythonRecorder, ::testing::Values("f32_full", "bf16_mixed", "f16_blocks", "boundary"));

TEST(PythonRecorder, BoundaryTraceIsVersionOnePointOneWithOneBoundaryPerLaterStage) {
  TraceReader r(fs::path(EDGC_INTEROP_DIR) / "boundary");
  EXPECT_EQ(r.manifest().version_string(), "1.1");
  ASSERT_EQ(r.manifest().boundaries.size(), 1u);
  EXPECT_EQ(r.manifest().boundaries[0].stage, 1);
  EXPECT_EQ(r.manifest().boundaries[0].rows, 32);  // 2 sequences of 16 tokens
  EXPECT_EQ(r.manifest().boundaries[0].cols, 32);
  EXPECT_EQ(r.manifest().boundaries[0].micro_batch, 2);
}

}  // namespace
}  // namespace edgc::traces
