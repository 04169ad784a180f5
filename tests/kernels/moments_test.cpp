#include "edgc/kernels/moments.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "edgc/core/block_sampling.hpp"
#include "kernel_test_util.hpp"

namespace edgc::kernels {
namespace {

using testing::cpu_variants;
using testing::random_normal;

MomentSums reference_moments(const std::vector<float>& x, const std::vector<Block>& blocks) {
  MomentSums s;
  for (const Block& b : blocks)
    for (std::int64_t i = b.offset; i < b.offset + b.length; ++i) {
      const float f = x[static_cast<std::size_t>(i)];
      if (std::isnan(f)) {
        ++s.nan;
      } else if (std::isinf(f)) {
        ++s.inf;
      } else {
        const double v = f;
        s.sum += v;
        s.sum_sq += v * v;
        s.sum_cube += v * v * v;
        s.sum_quad += v * v * v * v;
        ++s.count;
      }
    }
  return s;
}

// Gradient-like data: small mean, unit-ish spread, a few heavy outliers, and NaN/Inf sprinkled in.
std::vector<float> gradient_like(std::size_t n, std::uint64_t seed) {
  std::vector<float> x = random_normal(n, seed, 1e-3, 2e-5);
  Rng rng(seed, 99);
  for (int k = 0; k < 20; ++k) x[rng.below(n)] *= 300.0F;
  x[rng.below(n)] = std::numeric_limits<float>::quiet_NaN();
  x[rng.below(n)] = std::numeric_limits<float>::infinity();
  x[rng.below(n)] = -std::numeric_limits<float>::infinity();
  x[rng.below(n)] = std::numeric_limits<float>::quiet_NaN();
  return x;
}

void expect_close(double got, double want, double rel) {
  EXPECT_NEAR(got, want, rel * std::abs(want) + 1e-300) << "want " << want;
}

TEST(Moments, MatchDoubleReferenceOnRandomBlocksWithNanAndInf) {
  for (const std::string& name : cpu_variants()) {
    SCOPED_TRACE(name);
    const auto backend = make_backend(name);
    for (const std::size_t n : {std::size_t{1}, std::size_t{37}, std::size_t{100'003}}) {
      const std::vector<float> x = gradient_like(n, n);
      for (const std::uint64_t seed : {1u, 2u, 3u}) {
        const std::vector<Block> blocks =
            choose_blocks(static_cast<std::int64_t>(n), 0.25, 1 + static_cast<std::int64_t>(seed * 37), seed, 0);
        const MomentSums got = backend->moments(x, blocks);
        const MomentSums want = reference_moments(x, blocks);
        EXPECT_EQ(got.count, want.count);
        EXPECT_EQ(got.nan, want.nan);
        EXPECT_EQ(got.inf, want.inf);
        expect_close(got.sum, want.sum, 1e-9);
        expect_close(got.sum_sq, want.sum_sq, 1e-12);
        expect_close(got.sum_cube, want.sum_cube, 1e-9);
        expect_close(got.sum_quad, want.sum_quad, 1e-12);
      }
    }
  }
}

TEST(Moments, EmptyBlockListMeansWholeSpanAndUnsortedBlocksAreFine) {
  const auto backend = make_backend("cpu");
  const std::vector<float> x = gradient_like(5000, 7);
  const MomentSums whole = backend->moments(x, {});
  const MomentSums want = reference_moments(x, {{0, 5000}});
  EXPECT_EQ(whole.count + whole.nan + whole.inf, 5000);
  expect_close(whole.sum_sq, want.sum_sq, 1e-12);
  const std::vector<Block> unsorted{{4000, 1000}, {0, 1000}, {2000, 3}};
  const MomentSums u = backend->moments(x, unsorted);
  const MomentSums uw = reference_moments(x, unsorted);
  EXPECT_EQ(u.count, uw.count);
  expect_close(u.sum_quad, uw.sum_quad, 1e-12);
}

TEST(Moments, BlocksOutsideTheDataAreRejected) {
  const auto backend = make_backend("cpu");
  const std::vector<float> x(100, 1.0F);
  EXPECT_THROW(backend->moments(x, std::vector<Block>{{90, 11}}), InternalError);
  EXPECT_THROW(backend->moments(x, std::vector<Block>{{-1, 5}}), InternalError);
}

TEST(Moments, DerivedStatisticsMatchTwoPassCentralMoments) {
  const std::vector<float> x = random_normal(200'000, 11, 0.01, 1e-4);
  const auto backend = make_backend("cpu");
  const MomentSums s = backend->moments(x, {});
  double mean = 0.0;
  for (const float v : x) mean += v;
  mean /= static_cast<double>(x.size());
  double m2 = 0.0;
  double m4 = 0.0;
  for (const float v : x) {
    const double d = v - mean;
    m2 += d * d;
    m4 += d * d * d * d;
  }
  m2 /= static_cast<double>(x.size());
  m4 /= static_cast<double>(x.size());
  expect_close(s.mean(), mean, 1e-9);
  expect_close(s.variance(), m2, 1e-9);
  EXPECT_NEAR(s.excess_kurtosis(), m4 / (m2 * m2) - 3.0, 1e-6);
  EXPECT_NEAR(s.excess_kurtosis(), 0.0, 0.05);  // Gaussian
}

TEST(Moments, ConstantOrEmptyDataGiveNanKurtosis) {
  const auto backend = make_backend("cpu");
  const std::vector<float> c(1000, 0.37F);
  const MomentSums s = backend->moments(c, {});
  EXPECT_NEAR(s.mean(), 0.37, 1e-7);
  EXPECT_NEAR(s.variance(), 0.0, 1e-12);
  EXPECT_TRUE(std::isnan(s.excess_kurtosis()));
  const MomentSums none = backend->moments(std::vector<float>(4, std::numeric_limits<float>::quiet_NaN()), {});
  EXPECT_EQ(none.nan, 4);
  EXPECT_TRUE(std::isnan(none.mean()));
  EXPECT_TRUE(std::isnan(none.variance()));
}

TEST(Histogram, CountsMatchReferenceAndAddUpToCount) {
  for (const std::string& name : cpu_variants()) {
    SCOPED_TRACE(name);
    const auto backend = make_backend(name);
    const std::vector<float> x = gradient_like(50'000, 5);
    const std::vector<Block> blocks = choose_blocks(50'000, 0.3, 512, 9, 1);
    const double lo = -3e-3;
    const double w = 1e-4;
    std::vector<std::int64_t> counts(60, 0);
    HistogramTails tails;
    backend->histogram(x, blocks, lo, w, counts, tails);

    std::vector<std::int64_t> want(60, 0);
    HistogramTails want_tails;
    for (const Block& b : blocks)
      for (std::int64_t i = b.offset; i < b.offset + b.length; ++i) {
        const float f = x[static_cast<std::size_t>(i)];
        if (!std::isfinite(f)) {
          ++want_tails.non_finite;
          continue;
        }
        const double bin = std::floor((static_cast<double>(f) - lo) / w);
        if (bin < 0) {
          ++want_tails.below;
        } else if (bin >= 60) {
          ++want_tails.above;
        } else {
          ++want[static_cast<std::size_t>(bin)];
        }
      }
    EXPECT_EQ(counts, want);
    EXPECT_EQ(tails.below, want_tails.below);
    EXPECT_EQ(tails.above, want_tails.above);
    EXPECT_EQ(tails.non_finite, want_tails.non_finite);
    EXPECT_GT(tails.below, 0);
    EXPECT_GT(tails.above, 0);
    std::int64_t total = tails.below + tails.above;
    for (const std::int64_t c : counts) total += c;
    EXPECT_EQ(total, backend->moments(x, blocks).count);
  }
}

TEST(Histogram, RejectsBadBinWidth) {
  const auto backend = make_backend("cpu");
  const std::vector<float> x(10, 1.0F);
  std::vector<std::int64_t> counts(4, 0);
  HistogramTails tails;
  EXPECT_THROW(backend->histogram(x, {}, 0.0, 0.0, counts, tails), InternalError);
  EXPECT_THROW(backend->histogram(x, {}, std::nan(""), 1.0, counts, tails), InternalError);
  // The fused call checks the same, and leaves the counts untouched.
  EXPECT_THROW(backend->moments_and_histogram(x, {}, 0.0, 0.0, counts, tails), InternalError);
  const std::vector<Block> outside{{8, 5}};
  EXPECT_THROW(backend->moments_and_histogram(x, outside, 0.0, 1.0, counts, tails), InternalError);
  EXPECT_EQ(counts, std::vector<std::int64_t>(4, 0));
  EXPECT_EQ(tails.below + tails.above + tails.non_finite, 0);
}

// The batched calls give each tensor exactly what its single call gives (the CPU backends read the tensors one by
// one): tensors measured in full (no blocks), sampled, empty and without any element, with NaN and Inf; each tensor's
// histogram in its own row, added to what is there.
TEST(BatchedStatistics, EveryTensorGetsItsSingleCallsResults) {
  const std::vector<float> a = gradient_like(50'000, 5);
  const std::vector<float> b = gradient_like(777, 6);
  const std::vector<float> c = gradient_like(3, 7);
  const std::vector<Block> ba = choose_blocks(50'000, 0.3, 512, 9, 1);
  const std::vector<Block> bc{{1, 0}};  // one empty block: nothing selected
  const std::vector<SampledTensor> tensors = {{a, ba}, {b, {}}, {c, bc}, {{}, {}}, {a, {}}};
  const std::int64_t bins = 60;
  const double lo = -3e-3;
  const double w = 1e-4;
  for (const std::string& name : cpu_variants()) {
    SCOPED_TRACE(name);
    const auto backend = make_backend(name);
    std::vector<MomentSums> moments(tensors.size());
    std::vector<MomentSums> fused(tensors.size());
    std::vector<std::int64_t> counts(tensors.size() * bins, 1);
    std::vector<HistogramTails> tails(tensors.size(), HistogramTails{1, 2, 3});
    backend->moments_batched(tensors, moments);
    backend->moments_and_histogram_batched(tensors, lo, w, bins, fused, counts, tails);
    const auto bits = [](const MomentSums& x) {
      return std::tie(x.sum, x.sum_sq, x.sum_cube, x.sum_quad, x.count, x.nan, x.inf);
    };
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      SCOPED_TRACE("tensor " + std::to_string(i));
      const MomentSums want = backend->moments(tensors[i].values, tensors[i].blocks);
      EXPECT_EQ(bits(moments[i]), bits(want));
      EXPECT_EQ(bits(fused[i]), bits(want));
      std::vector<std::int64_t> row(bins, 1);
      HistogramTails t{1, 2, 3};
      backend->histogram(tensors[i].values, tensors[i].blocks, lo, w, row, t);
      EXPECT_TRUE(std::equal(row.begin(), row.end(), counts.begin() + static_cast<std::ptrdiff_t>(i) * bins));
      EXPECT_EQ(std::tie(tails[i].below, tails[i].above, tails[i].non_finite),
                std::tie(t.below, t.above, t.non_finite));
    }
    EXPECT_GT(moments[0].nan + moments[0].inf, 0);
    EXPECT_EQ(moments[2].count, 0);
    EXPECT_EQ(moments[3].count, 0);
    EXPECT_EQ(moments[4].count + moments[4].nan + moments[4].inf, 50'000);
  }
}

// Results that do not fit the tensors, and a bad layout, are caller bugs: InternalError, nothing written.
TEST(BatchedStatistics, RejectMismatchedResultsAndBadLayouts) {
  const auto backend = make_backend("cpu");
  const std::vector<float> x(10, 1.0F);
  const std::vector<SampledTensor> two = {{x, {}}, {x, {}}};
  std::vector<MomentSums> one(1);
  std::vector<MomentSums> m(2);
  std::vector<std::int64_t> counts(8, 0);
  std::vector<HistogramTails> tails(2);
  EXPECT_THROW(backend->moments_batched(two, one), InternalError);
  EXPECT_THROW(backend->moments_and_histogram_batched(two, 0.0, 1.0, 4, one, counts, tails), InternalError);
  EXPECT_THROW(backend->moments_and_histogram_batched(two, 0.0, 1.0, 3, m, counts, tails), InternalError);
  EXPECT_THROW(backend->moments_and_histogram_batched(two, 0.0, 1.0, 4, m, counts, std::span(tails).first(1)),
               InternalError);
  EXPECT_THROW(backend->moments_and_histogram_batched(two, 0.0, 0.0, 4, m, counts, tails), InternalError);
  const std::vector<Block> outside{{8, 5}};
  const std::vector<SampledTensor> bad = {{x, {}}, {x, outside}};
  EXPECT_THROW(backend->moments_and_histogram_batched(bad, 0.0, 1.0, 4, m, counts, tails), InternalError);
  EXPECT_EQ(counts, std::vector<std::int64_t>(8, 0));
  for (const HistogramTails& t : tails) EXPECT_EQ(t.below + t.above + t.non_finite, 0);
}

}  // namespace
}  // namespace edgc::kernels
