// Parity of the CUDA backend with its CPU twin ("cpu-generic") on fresh random inputs: statistics over sampled
// blocks, batched GEMM, orthogonalisation and the fused PowerSGD passes, over odd, tall, wide and square shapes,
// ranks from 1 to min(m, n), all-zero and NaN-containing inputs. Device outputs are poisoned (all bits set: a
// NaN) before every call, so a result the kernel forgot to write cannot pass. Without a CUDA device every test
// skips with a message.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "edgc/core/block_sampling.hpp"
#include "edgc/core/error.hpp"
#include "edgc/kernels/backend.hpp"
#include "edgc/kernels/stage_entropy.hpp"
#include "gpu_test_util.hpp"
#include "kernel_test_util.hpp"

namespace edgc::kernels {
namespace {

using testing::no_device_reason;
using testing::random_normal;

#define ASSERT_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call

/// A device copy of a host vector of floats, freed on scope exit.
class DeviceFloats {
 public:
  explicit DeviceFloats(std::size_t n) : n_(n) {
    if (cudaMalloc(&p_, std::max<std::size_t>(n, 1) * sizeof(float)) != cudaSuccess) throw CudaError("cudaMalloc");
  }
  explicit DeviceFloats(const std::vector<float>& h) : DeviceFloats(h.size()) { upload(h); }
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;
  ~DeviceFloats() { cudaFree(p_); }
  void upload(const std::vector<float>& h) {
    if (cudaMemcpy(p_, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess)
      throw CudaError("cudaMemcpy");
  }
  std::vector<float> download() const {
    std::vector<float> h(n_);
    if (cudaMemcpy(h.data(), p_, n_ * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess)
      throw CudaError("cudaMemcpy");
    return h;
  }
  void poison() {
    if (cudaMemset(p_, 0xFF, std::max<std::size_t>(n_, 1) * sizeof(float)) != cudaSuccess)
      throw CudaError("cudaMemset");
  }
  float* get() const { return p_; }
  std::span<const float> span() const { return {p_, n_}; }

 private:
  float* p_ = nullptr;
  std::size_t n_ = 0;
};

/// Max |a − b| / max(max |b|, tiny), with NaN required at the same places in both.
double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double diff = 0.0;
  double scale = 0.0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i]) || std::isnan(got[i])) {
      if (std::isnan(want[i]) != std::isnan(got[i])) return std::numeric_limits<double>::infinity();
      continue;
    }
    diff = std::max(diff, std::abs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::abs(static_cast<double>(want[i])));
  }
  return diff / std::max(scale, 1e-30);
}

double relative(double got, double want) { return std::abs(got - want) / std::max(std::abs(want), 1e-300); }

struct Shape {
  std::int64_t m, n, r;
};

// Odd sizes, tall and wide, r = 1, 2 (Gram–Schmidt), 3 (CholeskyQR2) and r = min(m, n).
const std::vector<Shape> kShapes{{1, 1, 1},       {7, 5, 1},      {5, 7, 2},     {33, 17, 3},   {17, 33, 5},
                                 {64, 64, 64},    {129, 3, 3},    {3, 129, 3},   {257, 95, 16}, {95, 257, 31},
                                 {300, 200, 128}, {1000, 37, 36}, {37, 1000, 37}};

class CudaParity : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_GPU();
    gpu_ = make_backend("cuda");
    cpu_ = make_backend("cpu-generic");
  }
  std::unique_ptr<Backend> gpu_;
  std::unique_ptr<Backend> cpu_;
};

TEST(CudaFactory, ThrowsConfigErrorWithoutADevice) {
  if (no_device_reason().empty()) GTEST_SKIP() << "this machine has a CUDA device";
  EXPECT_THROW(make_backend("cuda"), ConfigError);
}

TEST_F(CudaParity, FactoryAndMemoryContract) {
  EXPECT_EQ(gpu_->name(), "cuda");
  EXPECT_TRUE(gpu_->device_memory());
  EXPECT_NE(gpu_->native_stream(), nullptr);
  EXPECT_FALSE(cpu_->device_memory());
  EXPECT_THROW(make_backend("cuda", {.threads = 1, .device = 1 << 20}), ConfigError);
}

TEST_F(CudaParity, MomentsAndHistogramOverSampledBlocks) {
  for (const std::int64_t numel : {std::int64_t{1}, std::int64_t{1023}, std::int64_t{100003}, std::int64_t{1} << 21}) {
    SCOPED_TRACE("numel " + std::to_string(numel));
    std::vector<float> h = random_normal(static_cast<std::size_t>(numel), 7 + numel, 0.01, 0.001);
    if (numel > 10) {
      h[3] = std::nanf("");
      h[static_cast<std::size_t>(numel / 2)] = std::numeric_limits<float>::infinity();
      h[static_cast<std::size_t>(numel - 1)] = -std::numeric_limits<float>::infinity();
    }
    const DeviceFloats d(h);
    for (const double fraction : {1.0, 0.25, 0.01}) {
      const std::vector<Block> blocks = choose_blocks(numel, fraction, 1024, 42, 3);
      for (const bool all : {false, true}) {
        const std::span<const Block> sel = all ? std::span<const Block>() : std::span<const Block>(blocks);
        const MomentSums want = cpu_->moments(h, sel);
        const MomentSums got = gpu_->moments(d.span(), sel);
        EXPECT_EQ(got.count, want.count);
        EXPECT_EQ(got.nan, want.nan);
        EXPECT_EQ(got.inf, want.inf);
        EXPECT_LE(relative(got.sum, want.sum), 1e-9);
        EXPECT_LE(relative(got.sum_sq, want.sum_sq), 1e-9);
        EXPECT_LE(relative(got.sum_quad, want.sum_quad), 1e-9);
        EXPECT_LE(std::abs(got.sum_cube - want.sum_cube), 1e-9 * std::sqrt(want.sum_sq * want.sum_quad) + 1e-300);
        for (const std::size_t bins : {std::size_t{64}, std::size_t{10000}}) {  // shared and global counters
          const double width = 0.04 / static_cast<double>(bins);
          std::vector<std::int64_t> cw(bins, 0);
          std::vector<std::int64_t> cg(bins, 5);  // adds to what is there
          HistogramTails tw;
          HistogramTails tg{1, 2, 3};
          cpu_->histogram(h, sel, -0.02, width, cw, tw);
          gpu_->histogram(d.span(), sel, -0.02, width, cg, tg);
          for (std::size_t i = 0; i < bins; ++i) ASSERT_EQ(cg[i], cw[i] + 5) << "bin " << i;
          EXPECT_EQ(tg.below, tw.below + 1);
          EXPECT_EQ(tg.above, tw.above + 2);
          EXPECT_EQ(tg.non_finite, tw.non_finite + 3);
        }
      }
    }
  }
}

// moments_and_histogram: one read for both. Its moments are the bits of the GPU's own moments() (same grid, same
// order), its histogram the CPU's bins exactly: over unaligned views, odd blocks longer than a piece, non-finite
// values, values exactly on bin edges (lo and the width powers of two, the values multiples of the width: the
// quotient is an integer) and per-warp, single shared and global counters.
TEST_F(CudaParity, FusedStatisticsMatchTheSeparateCallsAndTheCpu) {
  std::mt19937_64 rng(2024);
  for (const std::int64_t numel : {std::int64_t{5000}, (std::int64_t{1} << 20) + 7}) {
    std::vector<float> h = random_normal(static_cast<std::size_t>(numel) + 1, 11 + numel, 0.004);
    std::uniform_int_distribution<int> edge(-60, 60);
    for (std::size_t i = 5; i < h.size(); i += 7) h[i] = static_cast<float>(edge(rng)) / 4096.0F;
    for (std::size_t i = 500; i < h.size(); i += 997) h[i] = 1e30F;   // past the last bin in every selection
    for (std::size_t i = 400; i < h.size(); i += 991) h[i] = -1e30F;  // below the first
    h[9] = std::nanf("");
    h[h.size() / 3] = std::numeric_limits<float>::infinity();
    const DeviceFloats d(h);
    // Elements 1 .. numel: the view starts 4 bytes past the allocation, so every piece has an unaligned head.
    const std::span<const float> dv = d.span().subspan(1);
    const std::span<const float> hv = std::span<const float>(h).subspan(1);
    std::vector<Block> odd;
    std::uniform_int_distribution<std::int64_t> len(1, 20000);
    for (std::int64_t at = 3; at < numel;) {
      const std::int64_t l = std::min(len(rng), numel - at);
      odd.push_back({at, l});
      at += l + len(rng) / 4;
    }
    for (const auto& sel : {choose_blocks(numel, 0.25, 1000, 7, 1), odd, std::vector<Block>{}}) {
      for (const std::size_t bins : {std::size_t{1024}, std::size_t{8000}, std::size_t{10000}}) {
        SCOPED_TRACE("numel " + std::to_string(numel) + " blocks " + std::to_string(sel.size()) + " bins " +
                     std::to_string(bins));
        const double lo = -0.015625;
        const double width = bins == 1024 ? 1.0 / 4096.0 : 1.0 / 32768.0;
        std::vector<std::int64_t> want(bins, 0);
        std::vector<std::int64_t> got(bins, 2);  // adds to what is there
        HistogramTails tw;
        HistogramTails tg{1, 2, 3};
        cpu_->histogram(hv, sel, lo, width, want, tw);
        const MomentSums separate = gpu_->moments(dv, sel);
        const MomentSums fused = gpu_->moments_and_histogram(dv, sel, lo, width, got, tg);
        for (std::size_t i = 0; i < bins; ++i) ASSERT_EQ(got[i], want[i] + 2) << "bin " << i;
        EXPECT_EQ(tg.below, tw.below + 1);
        EXPECT_EQ(tg.above, tw.above + 2);
        EXPECT_EQ(tg.non_finite, tw.non_finite + 3);
        EXPECT_GT(tw.above, 0);
        EXPECT_GT(tw.below, 0);
        const auto bits = [](const MomentSums& x) {
          return std::tie(x.sum, x.sum_sq, x.sum_cube, x.sum_quad, x.count, x.nan, x.inf);
        };
        EXPECT_EQ(bits(fused), bits(separate));  // the same bits
        const MomentSums cpu = cpu_->moments(hv, sel);
        EXPECT_EQ(fused.count, cpu.count);
        EXPECT_LE(relative(fused.sum_sq, cpu.sum_sq), 1e-9);
        EXPECT_LE(relative(fused.sum_quad, cpu.sum_quad), 1e-9);
      }
    }
  }
}

// The stage entropy on the GPU, first with separate calls (the layout is not fixed yet) and then fused: the same
// observation as on the CPU (histogram counts exact, moments to the last bits of their sums).
TEST_F(CudaParity, StageEntropyMatchesTheCpuWithSeparateAndFusedCalls) {
  const std::vector<float> a = random_normal(300001, 21, 0.002);
  const std::vector<float> b = random_normal(70000, 22, 0.01);
  const DeviceFloats da(a);
  const DeviceFloats db(b);
  const std::vector<Block> ba = choose_blocks(300001, 0.25, 1024, 3, 0);
  const std::vector<Block> bb = choose_blocks(70000, 0.25, 1024, 3, 1);
  const std::vector<StageTensor> host = {{a, ba}, {b, bb}};
  const std::vector<StageTensor> device = {{da.span(), ba}, {db.span(), bb}};
  std::optional<core::HistogramLayout> lc, lg;
  for (int pass = 0; pass < 2; ++pass) {
    SCOPED_TRACE(pass == 0 ? "separate calls" : "fused calls");
    const core::StageObservation want = measure_stage_entropy(*cpu_, host, false, lc, 8.0);
    const core::StageObservation got = measure_stage_entropy(*gpu_, device, false, lg, 8.0);
    ASSERT_TRUE(lc && lg);
    EXPECT_LE(relative(lg->bin_width, lc->bin_width), 1e-9);
    EXPECT_EQ(got.elements, want.elements);
    EXPECT_NEAR(*got.entropy_gaussian, *want.entropy_gaussian, 1e-9);
    EXPECT_NEAR(*got.entropy_histogram, *want.entropy_histogram, 1e-6);
    EXPECT_NEAR(*got.excess_kurtosis, *want.excess_kurtosis, 1e-6);
  }
}

// The batched statistics (one kernel and one round trip for a stage's tensors) against the CPU's single calls per
// tensor: histograms exact per row, moments to the last bits of their double sums; the same call twice gives the same
// bits. Tensors: unaligned views, sampled and odd blocks, whole tensors of many pieces, nothing selected, NaN and
// Inf; bins in per-warp shared copies (1024), one shared copy (8000) and global memory (10000); and a thousand small
// tensors, more tiles than a wave of CTAs, so the CTAs stride over the tiles, and a tensor of 20,000 one-element
// blocks, so that a warp takes several pieces of one tile.
TEST_F(CudaParity, BatchedStatisticsMatchTheCpuPerTensor) {
  std::vector<float> h = random_normal((1u << 20) + 9, 31, 0.004);
  for (std::size_t i = 700; i < h.size(); i += 1013) h[i] = 1e30F;
  for (std::size_t i = 300; i < h.size(); i += 1009) h[i] = -1e30F;
  h[17] = std::nanf("");
  h[700'000] = -std::numeric_limits<float>::infinity();
  const DeviceFloats d(h);
  const auto host_at = [&](std::size_t at, std::size_t n) { return std::span<const float>(h).subspan(at, n); };
  const auto dev_at = [&](std::size_t at, std::size_t n) { return d.span().subspan(at, n); };
  std::mt19937_64 rng(7);
  std::vector<Block> odd;
  std::uniform_int_distribution<std::int64_t> len(1, 20000);
  for (std::int64_t at = 3; at < 400'000;) {
    const std::int64_t l = std::min(len(rng), 400'000 - at);
    odd.push_back({at, l});
    at += l + len(rng) / 4;
  }
  const std::vector<Block> sampled = choose_blocks(300'001, 0.25, 1024, 3, 0);
  const std::vector<Block> nothing{{5, 0}};
  struct Part {
    std::size_t at, n;
    const std::vector<Block>* blocks;
  };
  std::vector<Part> parts = {{1, 300'001, &sampled}, {2, 400'000, &odd},    {3, 100'003, nullptr},
                             {0, 10, &nothing},      {500'000, 0, nullptr}, {500'003, (1u << 19) - 3, nullptr}};
  // 20,000 blocks of one element: so many pieces that a tile holds several per warp (the plan's pieces per tile grow
  // with the total, a wave of CTAs taking about half of them each round).
  std::vector<Block> singles;
  for (std::int64_t i = 0; i < 20'000; ++i) singles.push_back({2 * i + 1, 1});
  parts.push_back({600'000, 40'001, &singles});
  for (std::size_t k = 0; k < 1000; ++k) parts.push_back({(k * 997) % 1'000'000 + 1, 1 + k % 300, nullptr});
  for (const std::size_t count : {std::size_t{6}, parts.size()}) {
    std::vector<SampledTensor> host, dev;
    for (std::size_t i = 0; i < count; ++i) {
      const std::span<const Block> b =
          parts[i].blocks != nullptr ? std::span<const Block>(*parts[i].blocks) : std::span<const Block>();
      host.push_back({host_at(parts[i].at, parts[i].n), b});
      dev.push_back({dev_at(parts[i].at, parts[i].n), b});
    }
    for (const std::int64_t bins : {std::int64_t{1024}, std::int64_t{8000}, std::int64_t{10000}}) {
      SCOPED_TRACE("tensors " + std::to_string(count) + " bins " + std::to_string(bins));
      const double lo = -0.015625;
      const double width = bins == 1024 ? 1.0 / 4096.0 : 1.0 / 32768.0;
      const std::size_t cells = count * static_cast<std::size_t>(bins);
      std::vector<MomentSums> got(count), again(count), plain(count);
      std::vector<std::int64_t> counts(cells, 2), counts_again(cells, 0);
      std::vector<HistogramTails> tails(count, HistogramTails{1, 2, 3}), tails_again(count);
      gpu_->moments_and_histogram_batched(dev, lo, width, bins, got, counts, tails);
      gpu_->moments_and_histogram_batched(dev, lo, width, bins, again, counts_again, tails_again);
      gpu_->moments_batched(dev, plain);
      const auto bits = [](const MomentSums& x) {
        return std::tie(x.sum, x.sum_sq, x.sum_cube, x.sum_quad, x.count, x.nan, x.inf);
      };
      for (std::size_t i = 0; i < count; ++i) {
        SCOPED_TRACE("tensor " + std::to_string(i));
        std::vector<std::int64_t> want(static_cast<std::size_t>(bins), 0);
        HistogramTails tw;
        const MomentSums cpu = cpu_->moments_and_histogram(host[i].values, host[i].blocks, lo, width, want, tw);
        const auto row = counts.begin() + static_cast<std::ptrdiff_t>(i * static_cast<std::size_t>(bins));
        for (std::int64_t b = 0; b < bins; ++b) ASSERT_EQ(row[b], want[static_cast<std::size_t>(b)] + 2) << "bin " << b;
        EXPECT_EQ(tails[i].below, tw.below + 1);
        EXPECT_EQ(tails[i].above, tw.above + 2);
        EXPECT_EQ(tails[i].non_finite, tw.non_finite + 3);
        EXPECT_EQ(got[i].count, cpu.count);
        EXPECT_EQ(got[i].nan, cpu.nan);
        EXPECT_EQ(got[i].inf, cpu.inf);
        EXPECT_LE(relative(got[i].sum_sq, cpu.sum_sq), 1e-9);
        EXPECT_LE(relative(got[i].sum_quad, cpu.sum_quad), 1e-9);
        EXPECT_LE(std::abs(got[i].sum - cpu.sum),
                  1e-9 * std::sqrt(cpu.sum_sq * static_cast<double>(cpu.count)) + 1e-300);
        EXPECT_EQ(bits(again[i]), bits(got[i]));  // the same bits from the same call
        EXPECT_EQ(bits(plain[i]), bits(got[i]));  // and without the histogram
      }
      EXPECT_EQ(got[3].count, 0);
      EXPECT_EQ(got[4].count, 0);
      EXPECT_GT(tails[0].above + tails[1].above + tails[2].above, 6);
      EXPECT_GT(got[2].nan, 0);
      EXPECT_GT(got[5].inf, 0);
    }
  }
  // A block outside its tensor: InternalError before anything runs or is written.
  const std::vector<Block> outside{{8, 5}};
  const std::vector<SampledTensor> bad = {{dev_at(0, 100), {}}, {dev_at(0, 10), outside}};
  std::vector<MomentSums> m(2);
  std::vector<std::int64_t> counts(8, 0);
  std::vector<HistogramTails> tails(2);
  EXPECT_THROW(gpu_->moments_and_histogram_batched(bad, 0.0, 1.0, 4, m, counts, tails), InternalError);
  EXPECT_EQ(counts, std::vector<std::int64_t>(8, 0));
}

TEST_F(CudaParity, StatisticsRejectBlocksOutsideTheData) {
  const DeviceFloats d(random_normal(100, 1));
  const std::vector<Block> bad{{90, 20}};
  EXPECT_THROW(gpu_->moments(d.span(), bad), InternalError);
  std::vector<std::int64_t> counts(4, 0);
  HistogramTails t;
  EXPECT_THROW(gpu_->histogram(d.span(), bad, 0.0, 1.0, counts, t), InternalError);
  EXPECT_THROW(gpu_->histogram(d.span(), {}, 0.0, 0.0, counts, t), InternalError);
  EXPECT_THROW(gpu_->moments_and_histogram(d.span(), bad, 0.0, 1.0, counts, t), InternalError);
  EXPECT_THROW(gpu_->moments_and_histogram(d.span(), {}, 0.0, 0.0, counts, t), InternalError);
  EXPECT_EQ(counts, std::vector<std::int64_t>(4, 0));
}

// Batches as separate allocations (cublasSgemmBatched) and as one strided buffer (cublasSgemmStridedBatched).
TEST_F(CudaParity, BatchedGemmEveryTransposeStridedAndNot) {
  const int batch = 3;
  for (const Shape s : {Shape{37, 19, 53}, Shape{1, 1, 1}, Shape{5, 129, 3}, Shape{200, 3, 300}})
    for (const bool ta : {false, true})
      for (const bool tb : {false, true})
        for (const bool strided : {false, true}) {
          SCOPED_TRACE("m " + std::to_string(s.m) + " n " + std::to_string(s.n) + " k " + std::to_string(s.r) + " ta " +
                       std::to_string(ta) + " tb " + std::to_string(tb) + " strided " + std::to_string(strided));
          const std::int64_t m = s.m, n = s.n, k = s.r;
          const auto sa = static_cast<std::size_t>(m * k), sb = static_cast<std::size_t>(k * n),
                     sc = static_cast<std::size_t>(m * n);
          for (const float beta : {0.0F, 2.0F}) {
            std::vector<float> ha = random_normal(sa * batch, 11);
            std::vector<float> hb = random_normal(sb * batch, 12);
            std::vector<float> hc = random_normal(sc * batch, 13);
            std::vector<std::unique_ptr<DeviceFloats>> owned;
            std::vector<const float*> pa, pb;
            std::vector<float*> pc;
            DeviceFloats da(ha), db(hb), dc(hc);
            if (beta == 0.0F) dc.poison();
            for (int b = 0; b < batch; ++b) {
              if (strided) {
                pa.push_back(da.get() + b * sa);
                pb.push_back(db.get() + b * sb);
                pc.push_back(dc.get() + b * sc);
              } else {
                owned.push_back(
                    std::make_unique<DeviceFloats>(std::vector<float>(ha.begin() + b * sa, ha.begin() + (b + 1) * sa)));
                pa.push_back(owned.back()->get());
                owned.push_back(
                    std::make_unique<DeviceFloats>(std::vector<float>(hb.begin() + b * sb, hb.begin() + (b + 1) * sb)));
                pb.push_back(owned.back()->get());
                owned.push_back(
                    std::make_unique<DeviceFloats>(std::vector<float>(hc.begin() + b * sc, hc.begin() + (b + 1) * sc)));
                if (beta == 0.0F) owned.back()->poison();
                pc.push_back(owned.back()->get());
              }
            }
            const Transpose oa = ta ? Transpose::kYes : Transpose::kNo;
            const Transpose ob = tb ? Transpose::kYes : Transpose::kNo;
            gpu_->gemm_batched(oa, ob, m, n, k, 0.5F, pa, pb, beta, pc);
            gpu_->synchronize();
            std::vector<float> want = hc;
            std::vector<const float*> ca, cb;
            std::vector<float*> cc;
            for (int b = 0; b < batch; ++b) {
              ca.push_back(ha.data() + b * sa);
              cb.push_back(hb.data() + b * sb);
              cc.push_back(want.data() + b * sc);
            }
            cpu_->gemm_batched(oa, ob, m, n, k, 0.5F, ca, cb, beta, cc);
            for (int b = 0; b < batch; ++b) {
              std::vector<float> got;
              if (strided) {
                const std::vector<float> all = dc.download();
                got.assign(all.begin() + b * sc, all.begin() + (b + 1) * sc);
              } else {
                got = owned[static_cast<std::size_t>(3 * b + 2)]->download();
              }
              const std::vector<float> w(want.begin() + b * sc, want.begin() + (b + 1) * sc);
              EXPECT_LE(relative_error(got, w), 1e-4) << "matrix " << b << " beta " << beta;
            }
          }
        }
}

// Runs orthogonalize on a CUDA backend over device copies of `in`; returns the results one after another.
std::vector<float> orthogonalize_on(Backend& gpu, std::int64_t rows, std::int64_t cols,
                                    const std::vector<std::vector<float>>& in) {
  std::vector<std::unique_ptr<DeviceFloats>> d;
  std::vector<float*> pd;
  for (const std::vector<float>& m : in) {
    d.push_back(std::make_unique<DeviceFloats>(m));
    pd.push_back(d.back()->get());
  }
  gpu.orthogonalize_batched(rows, cols, pd, 1e-6F);
  gpu.synchronize();
  std::vector<float> got;
  for (const auto& m : d) {
    const std::vector<float> g = m->download();
    got.insert(got.end(), g.begin(), g.end());
  }
  return got;
}

// Runs orthogonalize on both backends from the same input; returns the GPU result and the CPU one.
std::pair<std::vector<float>, std::vector<float>> orthogonalize_both(Backend& gpu, Backend& cpu, std::int64_t rows,
                                                                     std::int64_t cols,
                                                                     const std::vector<std::vector<float>>& in) {
  std::vector<float> got = orthogonalize_on(gpu, rows, cols, in);
  std::vector<std::vector<float>> h = in;
  std::vector<float*> ph;
  for (std::vector<float>& m : h) ph.push_back(m.data());
  cpu.orthogonalize_batched(rows, cols, ph, 1e-6F);
  std::vector<float> want;
  for (const std::vector<float>& m : h) want.insert(want.end(), m.begin(), m.end());
  return {got, want};
}

TEST_F(CudaParity, OrthogonalizeMatchesTheCpuTwin) {
  for (const Shape s : kShapes) {
    const std::int64_t rows = std::max(s.m, s.n);
    const std::int64_t cols = std::min(s.r, rows);
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols));
    std::vector<std::vector<float>> in;
    for (int b = 0; b < 3; ++b) in.push_back(random_normal(static_cast<std::size_t>(rows * cols), 50 + b));
    // Columns of very different length, as a warm-started P holds.
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t c = 0; c < cols; ++c)
        in[1][static_cast<std::size_t>(i * cols + c)] *= std::pow(10.0F, -0.1F * static_cast<float>(c));
    const auto [got, want] = orthogonalize_both(*gpu_, *cpu_, rows, cols, in);
    // Square matrices with many columns are ill-conditioned: compare there with a looser bound.
    EXPECT_LE(relative_error(got, want), rows == cols && cols > 8 ? 1e-2 : 1e-4);
  }
}

TEST_F(CudaParity, OrthogonalizeZeroDependentAndNonFiniteInputs) {
  const std::int64_t rows = 50;
  for (const std::int64_t cols : {std::int64_t{1}, std::int64_t{2}, std::int64_t{6}}) {
    SCOPED_TRACE("cols " + std::to_string(cols));
    std::vector<std::vector<float>> in;
    in.emplace_back(static_cast<std::size_t>(rows * cols), 0.0F);  // all zero
    std::vector<float> dep = random_normal(static_cast<std::size_t>(rows * cols), 3);
    for (std::int64_t i = 0; i < rows; ++i)
      dep[static_cast<std::size_t>(i * cols + cols - 1)] = dep[static_cast<std::size_t>(i * cols)];
    in.push_back(dep);  // the last column repeats the first
    std::vector<float> bad = random_normal(static_cast<std::size_t>(rows * cols), 4);
    bad[5] = std::nanf("");
    in.push_back(bad);
    const auto [got, want] = orthogonalize_both(*gpu_, *cpu_, rows, cols, in);
    const auto per = static_cast<std::size_t>(rows * cols);
    for (std::size_t i = 0; i < 2 * per; ++i) ASSERT_TRUE(std::isfinite(got[i])) << i;
    EXPECT_LE(relative_error(std::vector<float>(got.begin(), got.begin() + per),
                             std::vector<float>(want.begin(), want.begin() + per)),
              1e-4);
    // NaN propagates (Gram–Schmidt) or leaves the matrix untouched (CholeskyQR), on both backends alike.
    EXPECT_LT(relative_error(std::vector<float>(got.begin() + 2 * per, got.end()),
                             std::vector<float>(want.begin() + 2 * per, want.end())),
              1e-4);
  }
}

// The spread Cholesky schedule (BackendOptions::cholesky_spread_max_rank) against a row of the update per warp on
// the same device: the same bits at each instantiation's edges (r ≤ 32, ≤ 64, ≤ 128, and 129 where both take the
// row-per-warp schedule), with a cap between them, on matrices that factorise at once, have columns of very
// different length (the third pass), a dependent column (the shift grows) or a NaN (the matrix stays untouched).
TEST_F(CudaParity, SpreadCholeskyGivesTheRowPerWarpBits) {
  const auto per_warp = make_backend("cuda", {.cholesky_spread_max_rank = 0});
  const auto spread = make_backend("cuda", {.cholesky_spread_max_rank = 128});
  const auto capped = make_backend("cuda", {.cholesky_spread_max_rank = 40});
  const auto bits = [](const std::vector<float>& v) {
    std::vector<std::uint32_t> b(v.size());
    std::memcpy(b.data(), v.data(), v.size() * sizeof(float));
    return b;
  };
  for (const std::int64_t cols : {3, 4, 17, 32, 33, 40, 41, 63, 64, 65, 100, 127, 128, 129}) {
    const std::int64_t rows = 3 * cols + 7;
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols));
    const auto count = static_cast<std::size_t>(rows * cols);
    std::vector<std::vector<float>> in;
    for (int b = 0; b < 4; ++b) in.push_back(random_normal(count, 70 + b));
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t c = 0; c < cols; ++c) {
        const auto at = static_cast<std::size_t>(i * cols + c);
        in[1][at] *= std::pow(10.0F, -4.0F * static_cast<float>(c) / static_cast<float>(cols));
        if (c == cols - 1) in[2][at] = in[2][static_cast<std::size_t>(i * cols)];
      }
    in[3][count / 2] = std::nanf("");
    const std::vector<float> want = orthogonalize_on(*per_warp, rows, cols, in);
    const std::vector<float> got = orthogonalize_on(*spread, rows, cols, in);
    ASSERT_NE(bits(want), bits([&] {
                std::vector<float> all;
                for (const auto& m : in) all.insert(all.end(), m.begin(), m.end());
                return all;
              }()));  // the row-per-warp schedule changed the matrices
    EXPECT_EQ(bits(got), bits(want));
    EXPECT_EQ(bits(orthogonalize_on(*capped, rows, cols, in)), bits(want));
    EXPECT_EQ(bits(orthogonalize_on(*spread, rows, cols, in)), bits(got));  // the same bits run to run
  }
}

TEST_F(CudaParity, RankBeyondTheRowsIsRejected) {
  DeviceFloats d(random_normal(12, 1));
  float* p = d.get();
  EXPECT_THROW(gpu_->orthogonalize_batched(3, 4, {&p, 1}, 0.0F), InternalError);
  EXPECT_THROW(gpu_->orthogonalize_batched(3, 0, {&p, 1}, 0.0F), InternalError);
  EXPECT_THROW(gpu_->orthogonalize_batched(4, 3, {&p, 1}, -1.0F), InternalError);
  float* none = nullptr;
  EXPECT_THROW(gpu_->orthogonalize_batched(4, 3, {&none, 1}, 0.0F), InternalError);
}

// project_batched then reconstruct_batched on both backends, with and without error feedback, over `batch` matrices.
void check_fused(Backend& gpu, Backend& cpu, Shape s, bool feedback, double g_scale, bool with_nan, int batch = 2) {
  const auto mn = static_cast<std::size_t>(s.m * s.n);
  const auto nr = static_cast<std::size_t>(s.n * s.r);
  const auto mr = static_cast<std::size_t>(s.m * s.r);
  std::vector<std::vector<float>> hg, he, hq;
  for (int b = 0; b < batch; ++b) {
    hg.push_back(random_normal(mn, 100 + b, g_scale));
    he.push_back(random_normal(mn, 200 + b, 0.5 * g_scale));
    hq.push_back(random_normal(nr, 300 + b));
  }
  if (with_nan) hg[1][mn / 2] = std::nanf("");
  std::vector<std::unique_ptr<DeviceFloats>> dg, de, dq, dp;
  std::vector<const float*> cg, cq, gq, gg_c;
  std::vector<float*> ce, cp, cgm, ge, gp, gg;
  std::vector<std::vector<float>> hp(batch, std::vector<float>(mr, std::nanf("")));
  for (int b = 0; b < batch; ++b) {
    dg.push_back(std::make_unique<DeviceFloats>(hg[b]));
    de.push_back(std::make_unique<DeviceFloats>(he[b]));
    dq.push_back(std::make_unique<DeviceFloats>(hq[b]));
    dp.push_back(std::make_unique<DeviceFloats>(mr));
    dp.back()->poison();
    gg_c.push_back(dg[b]->get());
    gg.push_back(dg[b]->get());
    ge.push_back(de[b]->get());
    gq.push_back(dq[b]->get());
    gp.push_back(dp[b]->get());
    cg.push_back(hg[b].data());
    cgm.push_back(hg[b].data());
    ce.push_back(he[b].data());
    cq.push_back(hq[b].data());
    cp.push_back(hp[b].data());
  }
  std::vector<double> n_gpu(batch, -1.0), n_cpu(batch, -1.0);
  gpu.project_batched(s.m, s.n, s.r, gg_c, feedback ? std::span<float* const>(ge) : std::span<float* const>(), gq, gp,
                      n_gpu);
  cpu.project_batched(s.m, s.n, s.r, cg, feedback ? std::span<float* const>(ce) : std::span<float* const>(), cq, cp,
                      n_cpu);
  for (int b = 0; b < batch; ++b) {
    SCOPED_TRACE("project, matrix " + std::to_string(b));
    EXPECT_LE(relative_error(dp[b]->download(), hp[b]), 1e-4);
    if (feedback) {
      EXPECT_LE(relative_error(de[b]->download(), he[b]), 1e-6);
    }
    if (std::isnan(n_cpu[b])) {
      EXPECT_TRUE(std::isnan(n_gpu[b]));
    } else {
      EXPECT_LE(relative(n_gpu[b], n_cpu[b]), 1e-6);
    }
  }
  // Reconstruction from the same P (the CPU's, so both start equal) into poisoned G where E carries M.
  for (int b = 0; b < batch; ++b) {
    dp[b]->upload(hp[b]);
    if (feedback) dg[b]->poison();
  }
  gpu.reconstruct_batched(s.m, s.n, s.r, std::vector<const float*>(gp.begin(), gp.end()), gq,
                          feedback ? std::span<float* const>(ge) : std::span<float* const>(), gg, n_gpu);
  cpu.reconstruct_batched(s.m, s.n, s.r, std::vector<const float*>(cp.begin(), cp.end()), cq,
                          feedback ? std::span<float* const>(ce) : std::span<float* const>(), cgm, n_cpu);
  for (int b = 0; b < batch; ++b) {
    SCOPED_TRACE("reconstruct, matrix " + std::to_string(b));
    EXPECT_LE(relative_error(dg[b]->download(), hg[b]), 1e-4);
    if (feedback) {
      EXPECT_LE(relative_error(de[b]->download(), he[b]), 1e-4);
    }
    if (std::isnan(n_cpu[b])) {
      EXPECT_TRUE(std::isnan(n_gpu[b]));
    } else {
      EXPECT_LE(relative(n_gpu[b], n_cpu[b]), 1e-4);
    }
  }
}

TEST_F(CudaParity, FusedProjectAndReconstructMatchTheCpuTwin) {
  for (const Shape s : kShapes)
    for (const bool feedback : {true, false}) {
      SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.n) + " r " + std::to_string(s.r) +
                   (feedback ? " with" : " without") + " error feedback");
      check_fused(*gpu_, *cpu_, s, feedback, 1.0, false);
    }
}

// Shapes whose passes compute the products beside them (n % 4 == 0): P = M·Q beside the addition (r ≤ 4 with Q in
// registers, 4 < r ≤ 32 with Q in shared memory) and Ĝ in tiles beside the subtraction (r ≤ 16). Partial tiles at the
// bottom and the right, one row, row groups and slabs only partly inside the matrix, several column chunks of the
// projection with a partial last one (2048, 1024 and 512 columns at r ≤ 8, ≤ 16, ≤ 32), r = 1 up to the largest
// fused ranks and past them (cuBLAS again), odd n (cuBLAS), a NaN and all-zero inputs.
TEST_F(CudaParity, ProductsBesideTheStreamingPassesMatchTheCpuTwin) {
  for (const Shape s :
       {Shape{33, 260, 1}, Shape{96, 128, 8}, Shape{200, 516, 32}, Shape{31, 4, 3}, Shape{1, 132, 1},
        Shape{1000, 132, 16}, Shape{130, 64, 64}, Shape{77, 300, 48}, Shape{9, 4100, 5}, Shape{37, 4612, 8},
        Shape{45, 2600, 12}, Shape{70, 2052, 16}, Shape{67, 1300, 24}, Shape{33, 1540, 32}, Shape{1, 516, 24},
        Shape{130, 4, 5}, Shape{77, 301, 12}, Shape{50, 1026, 33}})
    for (const bool feedback : {true, false}) {
      SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.n) + " r " + std::to_string(s.r) +
                   (feedback ? " with" : " without") + " error feedback");
      check_fused(*gpu_, *cpu_, s, feedback, 1.0, false);
    }
  for (const bool feedback : {true, false})
    for (const std::int64_t r : {4, 12, 24}) {
      SCOPED_TRACE("zero and NaN inputs, r " + std::to_string(r) + (feedback ? " with" : " without") + " feedback");
      check_fused(*gpu_, *cpu_, {65, 1100, r}, feedback, 0.0, false);
      check_fused(*gpu_, *cpu_, {65, 1100, r}, feedback, 1.0, true);
    }
}

// The shared-memory projection when a CTA's run of (column chunk, row slab) units crosses chunks and restages Q: a
// batch larger than a wave of CTAs (one CTA per matrix, every chunk of it), and a matrix of many units per CTA.
TEST_F(CudaParity, ProjectionRunsOverSeveralChunksPerCta) {
  for (const Shape s : {Shape{40, 2100, 8}, Shape{40, 1100, 13}, Shape{36, 1028, 32}}) {
    SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.n) + " r " + std::to_string(s.r) + ", batch 300");
    check_fused(*gpu_, *cpu_, s, true, 1.0, false, 300);
  }
  SCOPED_TRACE("2048x2052 r 32");
  check_fused(*gpu_, *cpu_, {2048, 2052, 32}, true, 1.0, false);
}

// The fused projection against the addition pass followed by cuBLAS (BackendOptions::fused_project_max_rank 0) on
// the same device: E the same bits (the same float additions), P and the norm within float rounding, and the fused
// path the same bits when run twice.
TEST_F(CudaParity, FusedProjectionMatchesTheAdditionPassAndCublas) {
  const auto unfused = make_backend("cuda", {.fused_project_max_rank = 0});
  for (const Shape s : {Shape{45, 2600, 12}, Shape{300, 1540, 32}, Shape{64, 4096, 6}, Shape{33, 260, 3}}) {
    SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.n) + " r " + std::to_string(s.r));
    const auto mn = static_cast<std::size_t>(s.m * s.n);
    const std::vector<float> hg = random_normal(mn, 31);
    const std::vector<float> he = random_normal(mn, 32, 0.5);
    const DeviceFloats dg(hg);
    const DeviceFloats dq(random_normal(static_cast<std::size_t>(s.n * s.r), 33));
    std::vector<std::vector<float>> e_out, p_out;
    std::vector<double> norms;
    for (Backend* b : {gpu_.get(), unfused.get(), gpu_.get()}) {
      DeviceFloats de(he);
      DeviceFloats dp(static_cast<std::size_t>(s.m * s.r));
      dp.poison();
      const float* g = dg.get();
      const float* q = dq.get();
      float* e = de.get();
      float* p = dp.get();
      double norm = -1.0;
      b->project_batched(s.m, s.n, s.r, {&g, 1}, {&e, 1}, {&q, 1}, {&p, 1}, {&norm, 1});
      e_out.push_back(de.download());
      p_out.push_back(dp.download());
      norms.push_back(norm);
    }
    EXPECT_EQ(e_out[0], e_out[1]);
    EXPECT_LE(relative_error(p_out[0], p_out[1]), 1e-4);
    EXPECT_LE(relative(norms[0], norms[1]), 1e-6);
    EXPECT_EQ(p_out[0], p_out[2]);
    EXPECT_EQ(norms[0], norms[2]);
  }
}

// Rows that are not 16-byte aligned (a view one float into the allocation) take the addition pass and cuBLAS at every
// rank, with the same results as the CPU.
TEST_F(CudaParity, UnalignedRowsFallBackAtEveryRank) {
  const std::int64_t m = 21, n = 1028;
  const auto mn = static_cast<std::size_t>(m * n);
  for (const std::int64_t r : {3, 8, 20}) {
    SCOPED_TRACE("r " + std::to_string(r));
    std::vector<float> hg = random_normal(mn + 1, 41);
    std::vector<float> he = random_normal(mn + 1, 42, 0.5);
    const std::vector<float> hq = random_normal(static_cast<std::size_t>(n * r), 43);
    const DeviceFloats dg(hg), dq(hq);
    DeviceFloats de(he);
    DeviceFloats dp(static_cast<std::size_t>(m * r));
    dp.poison();
    std::vector<float> hp(static_cast<std::size_t>(m * r));
    const float* g = dg.get() + 1;
    const float* q = dq.get();
    float* e = de.get() + 1;
    float* p = dp.get();
    const float* cg = hg.data() + 1;
    const float* cq = hq.data();
    float* ce = he.data() + 1;
    float* cp = hp.data();
    double ng = -1.0, nc = -1.0;
    gpu_->project_batched(m, n, r, {&g, 1}, {&e, 1}, {&q, 1}, {&p, 1}, {&ng, 1});
    cpu_->project_batched(m, n, r, {&cg, 1}, {&ce, 1}, {&cq, 1}, {&cp, 1}, {&nc, 1});
    EXPECT_LE(relative_error(dp.download(), hp), 1e-4);
    EXPECT_EQ(de.download(), he);
    EXPECT_LE(relative(ng, nc), 1e-6);
  }
}

TEST_F(CudaParity, FusedPassesOnZeroAndNaNInputs) {
  for (const bool feedback : {true, false}) {
    SCOPED_TRACE(feedback ? "with error feedback" : "without");
    check_fused(*gpu_, *cpu_, {65, 43, 4}, feedback, 0.0, false);  // all-zero G and E
    check_fused(*gpu_, *cpu_, {65, 43, 4}, feedback, 1.0, true);   // a NaN in one gradient
  }
}

TEST_F(CudaParity, MismatchedBatchesAreRejected) {
  DeviceFloats a(random_normal(16, 1));
  const float* ca = a.get();
  float* pa = a.get();
  double norm = 0.0;
  const std::vector<const float*> two{ca, ca};
  EXPECT_THROW(gpu_->gemm_batched(Transpose::kNo, Transpose::kNo, 2, 2, 2, 1.0F, two, {&ca, 1}, 0.0F, {&pa, 1}),
               InternalError);
  EXPECT_THROW(gpu_->project_batched(4, 4, 1, {&ca, 1}, {}, {&ca, 1}, {&pa, 1}, {}), InternalError);
  EXPECT_THROW(gpu_->project_batched(-1, 4, 1, {&ca, 1}, {}, {&ca, 1}, {&pa, 1}, {&norm, 1}), InternalError);
  EXPECT_THROW(gpu_->reconstruct_batched(4, 4, 1, {&ca, 1}, {&ca, 1}, {}, {&pa, 1}, {}), InternalError);
}

}  // namespace
}  // namespace edgc::kernels
