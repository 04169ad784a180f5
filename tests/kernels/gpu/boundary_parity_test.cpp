// BoundaryCompressor on the CUDA backend against the CPU one: a few messages of a two-shard boundary with lazy error
// propagation and warm start, the message (P and Q), the delivered Ĝ and the carried error compared on random data
// with a decaying spectrum; the receiver's reconstruction on the device against the sender's view. Skips without a
// CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "edgc/kernels/boundary_compression.hpp"
#include "edgc/kernels/buffer.hpp"
#include "gpu_test_util.hpp"
#include "kernel_test_util.hpp"

namespace edgc::kernels {
namespace {

using testing::frobenius;
using testing::frobenius_diff;
using testing::random_normal;

// rows × cols with singular values 2^-k (k < 8) plus 1 % noise: the rank-4 subspace is well separated.
std::vector<float> boundary_gradient(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  std::vector<float> a = random_normal(static_cast<std::size_t>(rows * 8), seed);
  const std::vector<float> b = random_normal(static_cast<std::size_t>(cols * 8), seed + 1);
  for (std::int64_t i = 0; i < rows; ++i)
    for (int j = 0; j < 8; ++j) a[static_cast<std::size_t>(i * 8 + j)] *= std::ldexp(1.0F, -j);
  const std::vector<double> prod = testing::reference_gemm(false, true, rows, cols, 8, a.data(), b.data());
  std::vector<float> g = random_normal(static_cast<std::size_t>(rows * cols), seed + 2, 0.01);
  for (std::size_t i = 0; i < g.size(); ++i) g[i] += static_cast<float>(prod[i]);
  return g;
}

double rel(const std::vector<float>& got, const std::vector<float>& want) {
  return frobenius_diff(got.data(), want.data(), want.size()) / frobenius(want);
}

TEST(BoundaryParity, CudaMatchesCpuOverSeveralMessages) {
  SKIP_WITHOUT_GPU();
  const BoundaryShape shape{512, 256, 2};
  BoundaryConfig cfg;
  cfg.rank = 4;
  const auto cpu = make_backend("cpu");
  const auto gpu = make_backend("cuda");
  BoundaryCompressor tx_cpu(*cpu, shape, cfg);
  BoundaryCompressor tx_gpu(*gpu, shape, cfg);
  BoundaryCompressor rx_gpu(*gpu, shape, cfg);
  const auto numel = static_cast<std::size_t>(shape.rows * shape.cols);
  std::vector<Buffer<float>> dev;
  std::vector<std::span<float>> dev_views;
  std::vector<Buffer<float>> out;
  std::vector<std::span<float>> out_views;
  for (int s = 0; s < shape.shards; ++s) {
    dev.emplace_back(*gpu, numel);
    out.emplace_back(*gpu, numel);
  }
  for (int s = 0; s < shape.shards; ++s) {
    dev_views.push_back(dev[static_cast<std::size_t>(s)].span());
    out_views.push_back(out[static_cast<std::size_t>(s)].span());
  }
  Buffer<float> wire_gpu(*gpu, static_cast<std::size_t>(tx_gpu.wire_floats()));
  std::vector<float> wire_cpu(static_cast<std::size_t>(tx_cpu.wire_floats()));
  for (int msg = 0; msg < 4; ++msg) {
    std::vector<std::vector<float>> host;
    for (int s = 0; s < shape.shards; ++s)
      host.push_back(boundary_gradient(shape.rows, shape.cols, static_cast<std::uint64_t>(10 * msg + 3 * s)));
    for (int s = 0; s < shape.shards; ++s) dev[static_cast<std::size_t>(s)].upload(host[static_cast<std::size_t>(s)]);
    const BoundaryStats a = tx_cpu.compress(testing::spans(host), wire_cpu);
    const BoundaryStats b = tx_gpu.compress(dev_views, wire_gpu.span());
    rx_gpu.decompress(wire_gpu.span(), out_views);
    EXPECT_NEAR(a.relative_error, b.relative_error, 1e-3 * a.relative_error + 1e-6) << "message " << msg;
    const std::vector<float> wg = wire_gpu.to_host();
    EXPECT_LT(rel(wg, wire_cpu), 1e-3) << "message " << msg;  // P and Q (signs fixed by the same orthogonalisation)
    for (int s = 0; s < shape.shards; ++s) {
      const auto i = static_cast<std::size_t>(s);
      EXPECT_LT(rel(dev[i].to_host(), host[i]), 1e-4) << "message " << msg << " shard " << s;  // Ĝ
      EXPECT_LT(rel(out[i].to_host(), host[i]), 1e-4) << "receiver, message " << msg << " shard " << s;
      const std::vector<float> ec = tx_cpu.carried_error(s);
      EXPECT_LT(frobenius_diff(tx_gpu.carried_error(s).data(), ec.data(), numel), 1e-3 * frobenius(ec) + 1e-6);
    }
  }
}

}  // namespace
}  // namespace edgc::kernels
