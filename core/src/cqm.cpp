#include "edgc/core/cqm.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <numbers>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/core/memo.hpp"

namespace edgc::core {
namespace {

constexpr double kPi = std::numbers::pi;
// Absolute accuracy of the tabulated spectrum fraction. A rank error of p·1e-12 is far below anything a rank
// decision can see, and a tighter target only buys more table nodes.
constexpr double kTableTolerance = 1e-12;
constexpr int kInitialPanels = 16;
constexpr int kMaxDepth = 40;

// y − sin y for y ≥ 0, accurate to a few ulps even where the two terms almost cancel (small y): the captured
// energy of the top few ranks is exactly this difference, and inverse(g(r)) == r needs it to full precision.
double y_minus_sin(double y) {
  if (y >= 1.0) return y - std::sin(y);
  double term = y * y * y / 6.0;
  double sum = 0.0;
  for (int k = 2; term != 0.0 && std::abs(term) > 1e-18 * sum; ++k) {
    sum += term;
    term *= -y * y / ((2.0 * k) * (2.0 * k + 1.0));
  }
  return sum;
}

// Marchenko–Pastur in the angle θ: an eigenvalue x = 1 + γ + 2√γ·cos θ (θ = 0 at the top edge b, θ = π at the
// bottom edge a). This substitution absorbs the √((b−x)(x−a)) endpoint behaviour of the density, so both the
// fraction of the spectrum and its energy have smooth integrands in θ:
//   d(fraction)/dθ = (2/π)·sin²θ / x(θ),      d(energy)/dθ = (2/π)·sin²θ.
// The energy integrates in closed form; the fraction is integrated numerically (its 1/x factor is sharp near
// θ = π when γ is close to 1, which the adaptive table resolves).
class Spectrum {
 public:
  explicit Spectrum(double gamma)
      : upper_sq_((1.0 + std::sqrt(gamma)) * (1.0 + std::sqrt(gamma))),
        lower_sq_((1.0 - std::sqrt(gamma)) * (1.0 - std::sqrt(gamma))) {}

  double fraction_density(double theta) const {
    const double s = std::sin(0.5 * theta);
    const double c = std::cos(0.5 * theta);
    // x(θ) as a sum of squares: it never cancels, and it is 0 only for γ = 1 at θ = π, where the 1/√x
    // singularity of the square-matrix density becomes the finite limit (2/π)·sin²(θ/2).
    const double x = upper_sq_ * c * c + lower_sq_ * s * s;
    return x > 0.0 ? 8.0 / kPi * s * s * c * c / x : 8.0 / kPi * s * s / upper_sq_;
  }

  // 5-point Gauss–Legendre on [a, b]: exact for degree 9, so smooth panels converge after one split.
  double integrate(double a, double b) const {
    static const double x1 = std::sqrt(5.0 - 2.0 * std::sqrt(10.0 / 7.0)) / 3.0;
    static const double x2 = std::sqrt(5.0 + 2.0 * std::sqrt(10.0 / 7.0)) / 3.0;
    static const double w1 = (322.0 + 13.0 * std::sqrt(70.0)) / 900.0;
    static const double w2 = (322.0 - 13.0 * std::sqrt(70.0)) / 900.0;
    const double mid = 0.5 * (a + b);
    const double half = 0.5 * (b - a);
    const double sum = 128.0 / 225.0 * fraction_density(mid) +
                       w1 * (fraction_density(mid - half * x1) + fraction_density(mid + half * x1)) +
                       w2 * (fraction_density(mid - half * x2) + fraction_density(mid + half * x2));
    return half * sum;
  }

 private:
  double upper_sq_;  // (1 + √γ)²: eigenvalue at the top edge b
  double lower_sq_;  // (1 − √γ)²: eigenvalue at the bottom edge a
};

// Fraction of the energy below x(θ), i.e. left out when everything above is kept: 1 − (2θ − sin 2θ)/(2π),
// evaluated from whichever end of [0, π] keeps the small quantity precise.
double residual_energy(double theta) {
  return theta <= 0.5 * kPi ? 1.0 - y_minus_sin(2.0 * theta) / (2.0 * kPi)
                            : y_minus_sin(2.0 * (kPi - theta)) / (2.0 * kPi);
}

// Root of an increasing function on [lo, hi] with f(lo) ≤ 0 ≤ f(hi). Newton steps, with bisection whenever a
// step leaves the bracket: the derivative vanishes at the spectrum's edges, where plain Newton would overshoot.
template <class F, class D>
double solve_increasing(const F& f, const D& df, double lo, double hi) {
  double x = 0.5 * (lo + hi);
  for (int it = 0; it < 200; ++it) {
    const double fx = f(x);
    if (fx == 0.0) return x;
    (fx < 0.0 ? lo : hi) = x;
    const double d = df(x);
    double next = d > 0.0 ? x - fx / d : 0.5 * (lo + hi);
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
    if (std::abs(next - x) <= 1e-16 * std::abs(x) || next == lo || next == hi) return next;
    x = next;
  }
  return x;
}

// θ with residual_energy(θ) = e, for 0 < e < 1.
double angle_of_residual(double e) {
  // Solve y_minus_sin(2φ)/(2π) = target on [0, π/2] on the side where the target is the small quantity.
  const auto solve = [](double target) {
    return solve_increasing([target](double phi) { return y_minus_sin(2.0 * phi) / (2.0 * kPi) - target; },
                            [](double phi) { return 2.0 / kPi * std::sin(phi) * std::sin(phi); }, 0.0, 0.5 * kPi);
  };
  return e >= 0.5 ? solve(1.0 - e) : kPi - solve(e);
}

// Cubic Hermite interpolant on one panel, in the local coordinate t ∈ [0, 1].
struct Hermite {
  double f0, delta, d0, d1;  // value at t = 0, rise over the panel, end slopes scaled to t
  double value(double t) const {
    return f0 + t * (d0 + t * ((3.0 * delta - 2.0 * d0 - d1) + t * (d0 + d1 - 2.0 * delta)));
  }
  double slope(double t) const {
    return d0 + t * (2.0 * (3.0 * delta - 2.0 * d0 - d1) + 3.0 * t * (d0 + d1 - 2.0 * delta));
  }
};

void require_positive(std::int64_t v, const char* field) {
  if (v < 1) throw ConfigError("", field, "matrix dimension must be >= 1, got " + std::to_string(v));
}

}  // namespace

RankErrorModel::RankErrorModel(std::int64_t m, std::int64_t n) : m_(m), n_(n) {
  require_positive(m, "m");
  require_positive(n, "n");
  t_ = table_of(std::min(m, n), std::max(m, n));
}

std::shared_ptr<const RankErrorModel::Table> RankErrorModel::table_of(std::int64_t p, std::int64_t q) {
  // Keyed by γ's exact value: shapes of one aspect ratio share a table, and a table is what integrate_table(γ)
  // returns for that γ, so sharing changes no figure. Bounded: past the cap a table is built and not kept.
  constexpr std::size_t kMaxTables = 4096;
  static std::mutex mutex;
  static std::map<double, std::shared_ptr<const Table>> tables;
  const double gamma = static_cast<double>(p) / static_cast<double>(q);
  if (!memo_enabled()) return std::make_shared<const Table>(integrate_table(gamma));
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = tables.find(gamma); it != tables.end()) return it->second;
  }
  auto t = std::make_shared<const Table>(integrate_table(gamma));
  const std::lock_guard<std::mutex> lock(mutex);
  if (tables.size() < kMaxTables) tables.emplace(gamma, t);
  return t;
}

RankErrorModel::Table RankErrorModel::integrate_table(double gamma) {
  const Spectrum spectrum(gamma);
  Table t;
  std::vector<double>& nodes = t.theta;
  std::vector<double>& cdf = t.cdf;
  std::vector<double>& slope = t.slope;

  // Adaptive table: a panel is kept when splitting it changes neither its integral nor the Hermite prediction
  // at its midpoint by more than the tolerance. Smooth stretches end up with few nodes, the sharp 1/x region
  // of nearly square shapes with many.
  nodes = {0.0};
  cdf = {0.0};
  const auto refine = [&](const auto& self, double a, double b, double integral, int depth) -> void {
    const double mid = 0.5 * (a + b);
    const double left = spectrum.integrate(a, mid);
    const double right = spectrum.integrate(mid, b);
    const double fa = cdf.back();
    const double hermite_mid =
        fa + 0.5 * integral + (b - a) / 8.0 * (spectrum.fraction_density(a) - spectrum.fraction_density(b));
    if (depth >= kMaxDepth || (std::abs(left + right - integral) <= kTableTolerance &&
                               std::abs(fa + left - hermite_mid) <= kTableTolerance)) {
      nodes.push_back(b);
      cdf.push_back(fa + left + right);
      return;
    }
    self(self, a, mid, left, depth + 1);
    self(self, mid, b, right, depth + 1);
  };
  for (int k = 0; k < kInitialPanels; ++k) {
    const double a = kPi * k / kInitialPanels;
    const double b = k + 1 == kInitialPanels ? kPi : kPi * (k + 1) / kInitialPanels;
    refine(refine, a, b, spectrum.integrate(a, b), 0);
  }

  // The whole spectrum integrates to 1 analytically; normalising removes the quadrature residue so that the
  // fraction reaches exactly 1 at θ = π and g(p) = 0 is continuous with g just below p.
  const double total = cdf.back();
  slope.reserve(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    cdf[i] /= total;
    slope.push_back(spectrum.fraction_density(nodes[i]) / total);
  }
  cdf.back() = 1.0;
  // Fritsch–Carlson: shrink end slopes where they would make a panel's cubic overshoot. With the tolerance
  // above this never triggers in practice; it is what guarantees g is strictly decreasing regardless.
  for (std::size_t i = 0; i + 1 < nodes.size(); ++i) {
    const double secant = (cdf[i + 1] - cdf[i]) / (nodes[i + 1] - nodes[i]);
    const double alpha = slope[i] / secant;
    const double beta = slope[i + 1] / secant;
    if (alpha * alpha + beta * beta > 9.0) {
      const double tau = 3.0 / std::sqrt(alpha * alpha + beta * beta);
      slope[i] = tau * alpha * secant;
      slope[i + 1] = tau * beta * secant;
    }
  }
  return t;
}

double RankErrorModel::fraction_at(double theta) const {
  const Table& t = *t_;
  const auto it = std::upper_bound(t.theta.begin(), t.theta.end(), theta);
  const std::size_t i = std::min<std::size_t>(it == t.theta.begin() ? 0 : it - t.theta.begin() - 1, t.theta.size() - 2);
  const double h = t.theta[i + 1] - t.theta[i];
  const Hermite cubic{t.cdf[i], t.cdf[i + 1] - t.cdf[i], t.slope[i] * h, t.slope[i + 1] * h};
  return cubic.value(std::clamp((theta - t.theta[i]) / h, 0.0, 1.0));
}

double RankErrorModel::angle_of_fraction(double fraction) const {
  const Table& t = *t_;
  const auto it = std::upper_bound(t.cdf.begin(), t.cdf.end(), fraction);
  const std::size_t i = std::min<std::size_t>(it == t.cdf.begin() ? 0 : it - t.cdf.begin() - 1, t.cdf.size() - 2);
  const double h = t.theta[i + 1] - t.theta[i];
  const Hermite cubic{t.cdf[i], t.cdf[i + 1] - t.cdf[i], t.slope[i] * h, t.slope[i + 1] * h};
  const double local = solve_increasing([&](double s) { return cubic.value(s) - fraction; },
                                        [&](double s) { return cubic.slope(s); }, 0.0, 1.0);
  return t.theta[i] + local * h;
}

double RankErrorModel::g(double r) const {
  if (std::isnan(r)) return r;
  const auto p = static_cast<double>(max_rank());
  if (r <= 0.0) return 1.0;
  if (r >= p) return 0.0;
  return residual_energy(angle_of_fraction(r / p));
}

double RankErrorModel::inverse(double e) const {
  if (std::isnan(e)) return e;
  if (e >= 1.0) return 0.0;
  const auto p = static_cast<double>(max_rank());
  if (e <= 0.0) return p;
  return p * fraction_at(angle_of_residual(e));
}

double equivalent_rank(double r, const RankErrorModel& from, const RankErrorModel& to) { return to.inverse(from.g(r)); }

double compression_ratio(std::int64_t m, std::int64_t n, double r) {
  require_positive(m, "m");
  require_positive(n, "n");
  if (!(r > 0.0)) throw ConfigError("", "r", "rank must be > 0, got " + std::to_string(r));
  // In double: the ratio is fractional anyway, and m·n cannot overflow.
  const auto md = static_cast<double>(m);
  const auto nd = static_cast<double>(n);
  return md * nd / ((md + nd) * r);
}

}  // namespace edgc::core
