#include "fits.hpp"

#include <cmath>

namespace edgc::live {

std::pair<double, double> fit_affine_relative(const std::vector<results::Calibration::Row>& rows) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& r : rows) {
    const double w = 1.0 / (r.time_s * r.time_s);
    const double x = static_cast<double>(r.bytes);
    sw += w, sx += w * x, sy += w * r.time_s, sxx += w * x * x, sxy += w * x * r.time_s;
  }
  const double det = sw * sxx - sx * sx;
  double a = det != 0.0 ? (sxx * sy - sx * sxy) / det : 0.0;
  double b = det != 0.0 ? (sw * sxy - sx * sy) / det : 0.0;
  if (a < 0.0 || !std::isfinite(a)) {
    a = 0.0;
    b = sxx > 0.0 ? sxy / sxx : 0.0;
  }
  if (b <= 0.0 || !std::isfinite(b)) {
    b = 0.0;
    a = sw > 0.0 ? sy / sw : 0.0;
  }
  return {a, b};
}

results::TcomFit fit_line(int stage, const std::vector<results::TcomPoint>& pts) {
  results::TcomFit f;
  f.stage = stage;
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& p : pts) {
    if (p.stage != stage) continue;
    n += 1, sx += p.rank, sy += p.comm_s, sxx += double(p.rank) * p.rank, sxy += p.rank * p.comm_s;
  }
  f.points = static_cast<int>(n);
  if (n < 2) {
    f.c_s = n > 0 ? sy / n : 0.0;
    f.r2 = n > 0 ? 1.0 : 0.0;
    return f;
  }
  const double det = n * sxx - sx * sx;
  f.eta_s = det != 0.0 ? (n * sxy - sx * sy) / det : 0.0;
  f.c_s = (sy - f.eta_s * sx) / n;
  double ss_res = 0, ss_tot = 0;
  const double mean = sy / n;
  for (const auto& p : pts) {
    if (p.stage != stage) continue;
    const double e = p.comm_s - (f.eta_s * p.rank + f.c_s);
    ss_res += e * e;
    ss_tot += (p.comm_s - mean) * (p.comm_s - mean);
  }
  f.r2 = ss_tot > 0.0 ? 1.0 - ss_res / ss_tot : 1.0;
  return f;
}

}  // namespace edgc::live
