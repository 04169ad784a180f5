#include "fits.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "edgc/core/least_squares.hpp"

namespace edgc::live {

std::pair<double, double> fit_affine_relative(const std::vector<results::Calibration::Row>& rows) {
  core::LineSums sums;
  for (const auto& r : rows) sums.add(static_cast<double>(r.bytes), r.time_s, 1.0 / (r.time_s * r.time_s));
  const bool determined = sums.det() != 0.0;
  double a = determined ? sums.intercept() : 0.0;
  double b = determined ? sums.slope() : 0.0;
  if (a < 0.0 || !std::isfinite(a)) {
    a = 0.0;
    b = sums.xx > 0.0 ? sums.xy / sums.xx : 0.0;
  }
  if (b <= 0.0 || !std::isfinite(b)) {
    b = 0.0;
    a = sums.w > 0.0 ? sums.y / sums.w : 0.0;
  }
  return {a, b};
}

namespace {

// Two-sided 95 % quantile of Student's t with `df` degrees of freedom (tables; 1.96 beyond 120).
double t95(int df) {
  static const double table[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                 2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086};
  if (df < 1) return std::numeric_limits<double>::infinity();
  if (df <= 20) return table[df - 1];
  return df <= 30 ? 2.042 : df <= 60 ? 2.000 : df <= 120 ? 1.980 : 1.960;
}

}  // namespace

results::TcomFit fit_line(int stage, const std::vector<results::TcomPoint>& pts) {
  results::TcomFit f;
  f.stage = stage;
  std::vector<results::TcomPoint> mine;
  for (const auto& p : pts)
    if (p.stage == stage) mine.push_back(p);
  const double n = static_cast<double>(mine.size());
  f.points = static_cast<int>(mine.size());
  if (mine.empty()) return f;
  // The slope from the part that scales with r; points of older files have only the total.
  const bool split = std::all_of(mine.begin(), mine.end(), [](const auto& p) { return p.compressed_comm_s > 0; });
  const auto y = [&](const results::TcomPoint& p) { return split ? p.compressed_comm_s : p.comm_s; };
  core::LineSums sums;
  double total = 0;
  for (const auto& p : mine) {
    sums.add(p.rank, y(p));
    total += p.comm_s;
  }
  if (mine.size() < 2) {
    f.c_s = total / n;
    f.r2 = 1.0;
    return f;
  }
  f.eta_s = sums.det() != 0.0 ? sums.slope() : 0.0;
  const double intercept = sums.intercept_for(f.eta_s);
  f.c_s = (total - f.eta_s * sums.x) / n;
  double ss_res = 0, ss_tot = 0;
  const double mean = sums.y / n;
  for (const auto& p : mine) {
    const double e = y(p) - (f.eta_s * p.rank + intercept);
    ss_res += e * e;
    ss_tot += (y(p) - mean) * (y(p) - mean);
  }
  f.r2 = ss_tot > 0.0 ? 1.0 - ss_res / ss_tot : 1.0;
  const double sxx_c = sums.xx - sums.x * sums.x / n;  // Σ (r − mean r)²
  if (mine.size() >= 3 && sxx_c > 0) {
    f.eta_stderr_s = std::sqrt(ss_res / (n - 2) / sxx_c);
    f.significant = f.eta_s > 0 && (f.eta_stderr_s == 0 || f.eta_s / f.eta_stderr_s > t95(f.points - 2));
  }
  return f;
}

}  // namespace edgc::live
