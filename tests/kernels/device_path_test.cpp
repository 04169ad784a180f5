// PowerSgd's device-resident code path, run on the host: a backend that forwards every call to a CPU backend but
// reports device memory (and a device timer) makes PowerSgd stage P, Q and the uncompressed buffer through host
// memory for a host communicator, or hand them straight to one that says it takes device buffers — the paths the
// CUDA backend takes, checked here bit for bit against plain CPU runs on machines without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "edgc/kernels/powersgd.hpp"
#include "kernel_test_util.hpp"

namespace edgc::kernels {
namespace {

using testing::random_normal;
using testing::spans;
using Shapes = std::vector<std::vector<std::int64_t>>;

// A CPU backend that claims to keep its data on a device. Counts the host↔"device" copies PowerSgd asks for.
class PretendDevice final : public Backend {
 public:
  PretendDevice() : b_(make_backend("cpu")) {}
  std::string_view name() const noexcept override { return "pretend-device"; }
  std::string_view isa() const noexcept override { return b_->isa(); }
  int threads() const noexcept override { return 1; }
  bool device_memory() const noexcept override { return true; }
  void* allocate(std::size_t bytes) override { return b_->allocate(bytes); }
  void deallocate(void* p) noexcept override { b_->deallocate(p); }
  void copy_to_device(void* d, const void* s, std::size_t n) override {
    ++uploads;
    b_->copy_to_device(d, s, n);
  }
  void copy_to_host(void* d, const void* s, std::size_t n) override {
    ++downloads;
    b_->copy_to_host(d, s, n);
  }
  void copy(void* d, const void* s, std::size_t n) override { b_->copy(d, s, n); }
  void memset(void* d, int v, std::size_t n) override { b_->memset(d, v, n); }
  void start_timer() override { ++timers; }
  std::optional<double> stop_timer() override { return 1e-3; }
  void add_divide(std::int64_t n, const float* a, const float* b, float d, float* o) override {
    b_->add_divide(n, a, b, d, o);
  }
  void add_divide(std::int64_t n, const std::uint16_t* a, const float* b, float d, float* o) override {
    b_->add_divide(n, a, b, d, o);
  }
  void add_divide(std::int64_t n, const float* a, const float* b, float d, std::uint16_t* o) override {
    b_->add_divide(n, a, b, d, o);
  }
  MomentSums moments(std::span<const float> x, std::span<const Block> bl) const override { return b_->moments(x, bl); }
  void histogram(std::span<const float> x, std::span<const Block> bl, double lo, double w, std::span<std::int64_t> c,
                 HistogramTails& t) const override {
    b_->histogram(x, bl, lo, w, c, t);
  }
  void gemm_batched(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                    std::span<const float* const> a, std::span<const float* const> b, float beta,
                    std::span<float* const> c) override {
    b_->gemm_batched(ta, tb, m, n, k, alpha, a, b, beta, c);
  }
  void orthogonalize_batched(std::int64_t rows, std::int64_t cols, std::span<float* const> p, float eps) override {
    b_->orthogonalize_batched(rows, cols, p, eps);
  }
  void project_batched(std::int64_t m, std::int64_t n, std::int64_t r, std::span<const float* const> g,
                       std::span<float* const> e, std::span<const float* const> q, std::span<float* const> p,
                       std::span<double> s) override {
    b_->project_batched(m, n, r, g, e, q, p, s);
  }
  void project_batched(std::int64_t m, std::int64_t n, std::int64_t r, std::span<const std::uint16_t* const> g,
                       std::span<float* const> e, std::span<const float* const> q, std::span<float* const> p,
                       std::span<double> s) override {
    b_->project_batched(m, n, r, g, e, q, p, s);
  }
  void reconstruct_batched(std::int64_t m, std::int64_t n, std::int64_t r, std::span<const float* const> p,
                           std::span<const float* const> q, std::span<float* const> e, std::span<float* const> g,
                           std::span<double> s) override {
    b_->reconstruct_batched(m, n, r, p, q, e, g, s);
  }
  void reconstruct_batched(std::int64_t m, std::int64_t n, std::int64_t r, std::span<const float* const> p,
                           std::span<const float* const> q, std::span<float* const> e,
                           std::span<std::uint16_t* const> g, std::span<double> s) override {
    b_->reconstruct_batched(m, n, r, p, q, e, g, s);
  }

  int uploads = 0;
  int downloads = 0;
  int timers = 0;

 private:
  std::unique_ptr<Backend> b_;
};

// Passes through to an in-process communicator but says it sums device memory (as NCCL does).
class DeviceComm final : public Communicator {
 public:
  explicit DeviceComm(Communicator& inner) : inner_(inner) {}
  int rank() const noexcept override { return inner_.rank(); }
  int size() const noexcept override { return inner_.size(); }
  void all_reduce_sum(std::span<float> data) override { inner_.all_reduce_sum(data); }
  bool device_buffers() const noexcept override { return true; }

 private:
  Communicator& inner_;
};

const Shapes kShapes{{96, 64}, {96, 64}, {64}, {40, 3, 3}, {5, 5}, {}};

std::vector<std::vector<float>> gradients(std::uint64_t seed) {
  std::vector<std::vector<float>> g;
  for (std::size_t i = 0; i < kShapes.size(); ++i) {
    std::int64_t n = 1;
    for (const std::int64_t d : kShapes[i]) n *= d;
    g.push_back(random_normal(static_cast<std::size_t>(n), seed * 100 + i, 0.01));
  }
  return g;
}

enum class Mode { kCpu, kStaged, kDeviceComm };

// Bit-identical buffers. An empty one (the error buffer of an uncompressed tensor) has no data pointer, and memcmp
// must not be passed a null one even for zero bytes (UBSan's nonnull-attribute check).
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// Two in-process ranks, three steps; returns rank 0's outputs of every step and its final error buffers.
std::vector<std::vector<float>> run(Mode mode, int* uploads, int* downloads, StepStats* last) {
  const int world = 2;
  InProcessGroup group(world);
  std::vector<std::vector<float>> out;
  std::vector<std::thread> threads;
  for (int d = 0; d < world; ++d)
    threads.emplace_back([&, d] {
      PretendDevice pretend;
      const auto cpu = make_backend("cpu");
      Backend& backend = mode == Mode::kCpu ? *cpu : pretend;
      DeviceComm device_comm(group.communicator(d));
      Communicator& comm = mode == Mode::kDeviceComm ? device_comm : group.communicator(d);
      PowerSgd psgd(backend, kShapes, {.rank = 3, .seed = 5});
      std::vector<std::vector<float>> mine;
      for (int t = 0; t < 3; ++t) {
        auto g = gradients(static_cast<std::uint64_t>(10 * d + t + 1));
        const StepStats st = psgd.step(spans(g), comm);
        if (d == 0) *last = st;
        for (auto& x : g) mine.push_back(x);
      }
      for (std::size_t i = 0; i < kShapes.size(); ++i) mine.push_back(psgd.error_copy(i));
      if (d == 0) {
        out = mine;
        *uploads = pretend.uploads;
        *downloads = pretend.downloads;
      }
    });
  for (auto& t : threads) t.join();
  return out;
}

TEST(DevicePath, StagingThroughHostIsBitIdenticalToTheCpuPath) {
  int up = 0, down = 0;
  StepStats st_cpu, st_staged, st_direct;
  const auto want = run(Mode::kCpu, &up, &down, &st_cpu);
  const auto staged = run(Mode::kStaged, &up, &down, &st_staged);
  ASSERT_EQ(staged.size(), want.size());
  for (std::size_t k = 0; k < want.size(); ++k) EXPECT_TRUE(same_bits(staged[k], want[k])) << "buffer " << k;
  // Per step the dense buffer, P and Q each go down to the host and back up (3 steps); Q is uploaded when first
  // drawn (three compressed tensors, warm start); error_copy downloads the three error buffers there are.
  EXPECT_EQ(down, 3 * 3 + 3);
  EXPECT_EQ(up, 3 * 3 + 3);
  // Compute time comes from the backend's timer (1 ms per timed phase), not the wall clock: the dense pack and
  // unpack, and per group (two: 96x64 and 40x9 at rank 3) project, orthogonalise, reconstruct and half of Q's
  // division.
  EXPECT_DOUBLE_EQ(st_staged.compute_seconds, 2e-3 + 2 * 3.5e-3);
  const auto direct = run(Mode::kDeviceComm, &up, &down, &st_direct);
  for (std::size_t k = 0; k < want.size(); ++k) EXPECT_TRUE(same_bits(direct[k], want[k])) << "buffer " << k;
  EXPECT_EQ(down, 3);  // only error_copy: a communicator that takes device memory gets no staging
  EXPECT_EQ(up, 3);    // only the first Q
}

}  // namespace
}  // namespace edgc::kernels
