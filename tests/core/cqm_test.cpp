#include "edgc/core/cqm.hpp"

#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <Eigen/SVD>
#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/core/random.hpp"
#include "expect_error.hpp"

namespace edgc::core {
namespace {

// Mean over `samples` i.i.d. Gaussian m×n matrices of the best rank-r relative squared error, for each r.
std::vector<double> monte_carlo_error(std::int64_t m, std::int64_t n, const std::vector<int>& ranks, int samples,
                                      Rng& rng) {
  std::vector<double> mean(ranks.size(), 0.0);
  Eigen::MatrixXd x(m, n);
  for (int s = 0; s < samples; ++s) {
    for (Eigen::Index j = 0; j < x.cols(); ++j)
      for (Eigen::Index i = 0; i < x.rows(); ++i) x(i, j) = rng.normal();
    const Eigen::BDCSVD<Eigen::MatrixXd> svd(x);  // singular values only, sorted descending
    const Eigen::VectorXd energy = svd.singularValues().array().square();
    const double total = energy.sum();
    for (std::size_t k = 0; k < ranks.size(); ++k)
      mean[k] += energy.tail(energy.size() - ranks[k]).sum() / total / samples;
  }
  return mean;
}

TEST(RankErrorModel, AgreesWithMonteCarloWithinTwoPercent) {
  // The average over the spectrum varies little between draws, so two matrices per shape pin it down far
  // tighter than the 2 % the model promises.
  const std::vector<int> ranks = {1, 4, 16, 64, 128};
  Rng rng(20251113);
  double worst = 0.0;
  std::string worst_at;
  for (const auto& [m, n] :
       std::vector<std::pair<std::int64_t, std::int64_t>>{{256, 256}, {256, 512}, {512, 256}, {384, 1024}}) {
    const RankErrorModel model(m, n);
    const std::vector<double> mc = monte_carlo_error(m, n, ranks, 2, rng);
    for (std::size_t k = 0; k < ranks.size(); ++k) {
      const double predicted = model.g(ranks[k]);
      const double deviation = std::abs(predicted - mc[k]) / mc[k];
      EXPECT_LT(deviation, 0.02) << m << "x" << n << " r=" << ranks[k] << ": model " << predicted << ", Monte Carlo "
                                 << mc[k];
      if (deviation > worst) {
        worst = deviation;
        worst_at = std::to_string(m) + "x" + std::to_string(n) + " r=" + std::to_string(ranks[k]);
      }
    }
  }
  RecordProperty("worst_relative_deviation", std::to_string(worst) + " at " + worst_at);
}

TEST(RankErrorModel, MatchesReferenceValues) {
  struct Case {
    std::int64_t m, n;
    double r, g;
  };
  for (const Case& c : {Case{1920, 1920, 4, 0.992}, Case{1920, 1920, 16, 0.968}, Case{1920, 1920, 64, 0.881},
                        Case{1920, 1920, 128, 0.778}, Case{1920, 1920, 256, 0.604}, Case{1920, 7680, 64, 0.930},
                        Case{1920, 7680, 128, 0.866}, Case{4096, 16384, 128, 0.934}}) {
    EXPECT_NEAR(RankErrorModel(c.m, c.n).g(c.r), c.g, 0.002) << c.m << "x" << c.n << " r=" << c.r;
  }
}

TEST(RankErrorModel, SquareMatrixMatchesTheQuarterCircleClosedForm) {
  // γ = 1 is where the density has its 1/√x singularity. There the fraction above angle θ is (θ − sin θ)/π
  // and the energy above it (θ − sin θ·cos θ)/π, so g is known exactly.
  const RankErrorModel model(1000, 1000);
  for (double theta : {0.05, 0.3, 1.0, 2.0, 2.9, 3.1, 3.14}) {
    const double r = 1000.0 * (theta - std::sin(theta)) / std::numbers::pi;
    const double g = 1.0 - (theta - std::sin(theta) * std::cos(theta)) / std::numbers::pi;
    EXPECT_NEAR(model.g(r), g, 1e-9 * g + 1e-14) << "theta=" << theta;
  }
}

TEST(RankErrorModel, InverseUndoesG) {
  for (const auto& [m, n] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {1920, 1920}, {1920, 1921}, {1920, 7680}, {7680, 1920}, {1, 1}, {1, 1000}, {1000, 3}, {16384, 65536}}) {
    const RankErrorModel model(m, n);
    const auto p = static_cast<double>(model.max_rank());
    for (double fraction : {1e-4, 1e-3, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999}) {
      const double r = fraction * p;
      EXPECT_NEAR(model.inverse(model.g(r)), r, 1e-9 * r) << m << "x" << n << " r=" << r;
    }
    for (double e : {1e-6, 0.01, 0.3, 0.5, 0.7, 0.99, 0.999999}) {
      EXPECT_NEAR(model.g(model.inverse(e)), e, 1e-9 * e) << m << "x" << n << " e=" << e;
    }
  }
}

TEST(RankErrorModel, StrictlyDecreasingWithExactEndpoints) {
  for (const auto& [m, n] :
       std::vector<std::pair<std::int64_t, std::int64_t>>{{256, 256}, {1920, 1921}, {768, 3072}, {2, 5}}) {
    const RankErrorModel model(m, n);
    const auto p = static_cast<double>(model.max_rank());
    EXPECT_EQ(model.g(0.0), 1.0);
    EXPECT_EQ(model.g(p), 0.0);
    EXPECT_EQ(model.g(-3.0), 1.0);
    EXPECT_EQ(model.g(p + 7.0), 0.0);
    EXPECT_EQ(model.inverse(1.0), 0.0);
    EXPECT_EQ(model.inverse(0.0), p);
    EXPECT_EQ(model.inverse(1.5), 0.0);
    EXPECT_EQ(model.inverse(-0.5), p);
    EXPECT_TRUE(std::isnan(model.g(std::nan(""))));
    double previous = 1.0;
    constexpr int kSteps = 20000;
    for (int k = 1; k < kSteps; ++k) {
      const double g = model.g(p * k / kSteps);
      ASSERT_LT(g, previous) << m << "x" << n << " step " << k;
      previous = g;
    }
    EXPECT_GT(previous, 0.0);
  }
}

TEST(RankErrorModel, DependsOnTheShapeNotItsOrientation) {
  const RankErrorModel wide(300, 1200);
  const RankErrorModel tall(1200, 300);
  EXPECT_EQ(wide.m(), 300);
  EXPECT_EQ(wide.n(), 1200);
  EXPECT_EQ(tall.max_rank(), 300);
  for (double r : {0.5, 1.0, 10.0, 77.7, 150.0, 299.0}) EXPECT_EQ(wide.g(r), tall.g(r)) << r;
  // A more elongated matrix spreads its energy more evenly, so each rank captures less.
  EXPECT_GT(RankErrorModel(300, 30000).g(10.0), wide.g(10.0));
}

TEST(RankErrorModel, RejectsBadSizes) {
  EXPECT_THROW(RankErrorModel(0, 5), ConfigError);
  EXPECT_THROW(RankErrorModel(5, 0), ConfigError);
  EXPECT_THROW(RankErrorModel(-1, 5), InputError);
  test::expect_config_error([] { RankErrorModel(7, -2); }, std::nullopt, "n", {"-2"});
}

// g depends on the shape through the aspect ratio and p only, as the top fraction r/p of one spectrum: shapes of one
// aspect ratio map rank r to r·p'/p, and equal-energy ranks give equal g whatever the shapes.
TEST(CqmEquivalentRank, ScalesWithTheSmallerSideAtOneAspectRatio) {
  const RankErrorModel big(5120, 2560);
  const RankErrorModel small(256, 128);
  for (double r : {1.0, 8.0, 32.0, 64.0, 640.0}) {
    EXPECT_NEAR(equivalent_rank(r, big, small), r * 128.0 / 2560.0, 1e-9 * r) << r;
    EXPECT_NEAR(equivalent_rank(r, big, big), r, 1e-9 * r) << r;
  }
  const RankErrorModel trace(64, 256);  // another aspect ratio
  for (double r : {4.0, 32.0, 64.0}) {
    const double r2 = equivalent_rank(r, big, trace);
    EXPECT_NEAR(trace.g(r2), big.g(r), 1e-9) << r;
    EXPECT_GT(r2, 0.0);
    EXPECT_LT(r2, 64.0);
  }
  EXPECT_LT(equivalent_rank(8.0, big, trace), equivalent_rank(32.0, big, trace));  // monotone
  EXPECT_EQ(equivalent_rank(2560.0, big, trace), 64.0);                            // exact stays exact
}

TEST(CqmCompressionRatio, IsFullBytesOverFactorBytes) {
  EXPECT_DOUBLE_EQ(compression_ratio(1920, 1920, 4), 1920.0 * 1920.0 / (3840.0 * 4.0));
  EXPECT_DOUBLE_EQ(compression_ratio(1920, 7680, 64), 1920.0 * 7680.0 / (9600.0 * 64.0));
  EXPECT_DOUBLE_EQ(compression_ratio(7680, 1920, 64), compression_ratio(1920, 7680, 64));
  EXPECT_THROW(compression_ratio(0, 10, 1), ConfigError);
  EXPECT_THROW(compression_ratio(10, 10, 0), ConfigError);
  EXPECT_THROW(compression_ratio(10, 10, std::nan("")), ConfigError);
}

}  // namespace
}  // namespace edgc::core
