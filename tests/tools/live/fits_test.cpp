// The least-squares fits of `edgc live`: the calibrated ring profile reproduces every calibration row through the
// ring formula, the probe's in-step rows taking precedence over their size range; T_com's slope comes from the
// P + Q times with its standard error, and is called resolved only when it stands above the noise.
#include "calibration/fits.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "edgc/engine/live_calibration.hpp"
#include "edgc/sim/platform.hpp"

namespace edgc::live {
namespace {

using engine::ring_profile;
using engine::RingProfile;

// 2(D − 1)·L + 2(D − 1)/D · S / (B · efficiency(S / D)): what SimGrid's calibrated profile gives a ring alone.
double ring_s(const RingProfile& p, int d, double bytes) {
  sim::EfficiencyCurve curve;
  curve.points = p.points;
  const double steps = 2.0 * (d - 1);
  return steps * p.latency_s + steps / d * bytes / (p.bandwidth_Bps * sim::efficiency_at(curve, bytes / d));
}

TEST(RingProfile, ReproducesEveryRowWithStepRowsOverTheirRange) {
  results::Calibration cal;
  cal.ranks = 4;
  cal.latency_s = 3e-6;  // more than half the smallest row allows: capped
  cal.rows = {{64, 8e-6}, {4096, 12e-6}, {65536, 60e-6}, {1 << 20, 700e-6}, {4 << 20, 2.4e-3}};
  cal.step_rows = {{4096, 20e-6}, {32768, 50e-6}, {65536, 90e-6}};
  const RingProfile p = ring_profile(cal);
  EXPECT_DOUBLE_EQ(p.latency_s, 0.5 * 8e-6 / 6);  // half of the smallest row over 2(D − 1) steps
  // Below and above the step rows: the isolated rows; over their range: the step rows (65536 is theirs).
  for (const auto& [bytes, t] : std::vector<std::pair<double, double>>{
           {64, 8e-6}, {4096, 20e-6}, {32768, 50e-6}, {65536, 90e-6}, {1 << 20, 700e-6}, {4 << 20, 2.4e-3}})
    EXPECT_NEAR(ring_s(p, 4, bytes), t, t * 1e-12) << bytes;
  ASSERT_EQ(p.points.size(), 6U);
  for (const auto& [chunk, eff] : p.points) {
    EXPECT_GT(eff, 0.0);
    EXPECT_LE(eff, 1.0);
  }
  // The fastest row sets the bandwidth: its efficiency is 1.
  double best = 0;
  for (const auto& pt : p.points) best = std::max(best, pt.second);
  EXPECT_DOUBLE_EQ(best, 1.0);
}

// A tiny all-reduce that waited on a descheduled rank (4 bytes in 3.4 ms, next to 4 MB in 1 ms, as an
// oversubscribed host gives): its efficiency is far below any fixed floor, and the profile still reproduces it.
TEST(RingProfile, ReproducesALatencyBoundOutlierAtATinySize) {
  results::Calibration cal;
  cal.ranks = 4;
  cal.latency_s = 2e-6;
  cal.rows = {{4, 3.4e-3}, {1024, 20e-6}, {4 << 20, 1e-3}};
  const RingProfile p = ring_profile(cal);
  for (const auto& r : cal.rows)
    EXPECT_NEAR(ring_s(p, 4, static_cast<double>(r.bytes)), r.time_s, r.time_s * 1e-12) << r.bytes;
  EXPECT_GT(p.points.front().second, 0.0);
  EXPECT_LT(p.points.front().second, 1e-6);
}

TEST(TcomFit, SlopeFromPAndQWithItsStandardErrorAndSignificance) {
  // P + Q exactly 2 µs per rank + 1 µs; the dense part (in comm_s) is constant plus noise that has no slope.
  std::vector<results::TcomPoint> pts;
  const double noise[] = {30e-6, -20e-6, 10e-6, -25e-6, 5e-6};
  for (int i = 0; i < 5; ++i) {
    const int r = 1 << i;
    const double pq = 2e-6 * r + 1e-6;
    pts.push_back({0, r, 200e-6 + noise[i] + pq, 50e-6, pq});
  }
  pts.push_back({1, 4, 1.0, 1.0, 0.5});  // another stage: ignored
  const results::TcomFit f = fit_line(0, pts);
  EXPECT_EQ(f.points, 5);
  EXPECT_NEAR(f.eta_s, 2e-6, 1e-15);
  EXPECT_NEAR(f.r2, 1.0, 1e-12);
  EXPECT_NEAR(f.eta_stderr_s, 0.0, 1e-15);
  EXPECT_TRUE(f.significant);
  // c from the whole sync: mean(comm_s − η·r).
  double c = 0;
  for (int i = 0; i < 5; ++i) c += pts[static_cast<std::size_t>(i)].comm_s - 2e-6 * (1 << i);
  EXPECT_NEAR(f.c_s, c / 5, 1e-15);

  // Noise as large as the slope's whole effect: not resolved.
  std::vector<results::TcomPoint> noisy;
  const double pq_noise[] = {8e-6, -6e-6, 9e-6, -7e-6, 1e-6};
  for (int i = 0; i < 5; ++i) {
    const int r = 1 + i;
    noisy.push_back({0, r, 1e-4, 0.0, 10e-6 + 0.5e-6 * r + pq_noise[i]});
  }
  const results::TcomFit g = fit_line(0, noisy);
  EXPECT_GT(g.eta_stderr_s, 0.0);
  EXPECT_FALSE(g.significant) << g.eta_s << " +- " << g.eta_stderr_s;
  // Standard error by hand: sqrt(SS_res / (n − 2) / Σ(r − r̄)²), Σ(r − r̄)² = 10 for r = 1..5.
  double ss = 0;
  const double intercept = [&] {
    double sy = 0;
    for (const auto& p : noisy) sy += p.compressed_comm_s;
    return sy / 5 - g.eta_s * 3;
  }();
  for (const auto& p : noisy) ss += std::pow(p.compressed_comm_s - (g.eta_s * p.rank + intercept), 2);
  EXPECT_NEAR(g.eta_stderr_s, std::sqrt(ss / 3 / 10), 1e-15);

  // Two points: no standard error, never significant.
  const std::vector<results::TcomPoint> two = {{0, 1, 1e-4, 0, 2e-6}, {0, 2, 1e-4, 0, 4e-6}};
  EXPECT_FALSE(fit_line(0, two).significant);
  // Older files without the P + Q split: the slope of the whole sync.
  const std::vector<results::TcomPoint> old = {{0, 1, 3e-6, 0, 0}, {0, 2, 5e-6, 0, 0}, {0, 3, 7e-6, 0, 0}};
  EXPECT_NEAR(fit_line(0, old).eta_s, 2e-6, 1e-15);
}

}  // namespace
}  // namespace edgc::live
