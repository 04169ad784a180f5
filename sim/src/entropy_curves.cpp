#include "edgc/sim/entropy_curves.hpp"

#include <cstdlib>

#include <algorithm>
#include <bit>
#include <cmath>
#include <utility>

#include "edgc/core/error.hpp"
#include "edgc/core/random.hpp"

namespace edgc::sim {
namespace {

std::optional<double> lerp(const std::optional<double>& a, const std::optional<double>& b, double t) {
  if (a && b) return *a + (*b - *a) * t;
  return t < 0.5 ? a : b;
}

}  // namespace

SyntheticCurve::SyntheticCurve(const SyntheticEntropy& s, const std::string& where) : s_(s) {
  if (!(s.decay_fraction > 0.0)) throw ConfigError(where, "entropy.synthetic.decay_fraction", "must be > 0");
  if (!(s.noise_nats >= 0.0)) throw ConfigError(where, "entropy.synthetic.noise_nats", "must be >= 0");
}

core::StageObservation SyntheticCurve::at(int stage, double f) const {
  double h =
      s_.end_nats + (s_.start_nats - s_.end_nats) * std::exp(-f / s_.decay_fraction) + stage * s_.stage_step_nats;
  if (s_.noise_nats > 0.0) {
    const std::uint64_t bits = std::bit_cast<std::uint64_t>(f);
    const std::uint64_t x = mix64(s_.seed ^ mix64(bits + static_cast<std::uint64_t>(stage) * 0x9e37ULL));
    const double u = static_cast<double>(x >> 11) * 0x1.0p-53;  // [0, 1)
    h += s_.noise_nats * std::sqrt(3.0) * (2.0 * u - 1.0);      // uniform, standard deviation noise_nats
  }
  core::StageObservation o;
  o.entropy_gaussian = h;
  o.entropy_histogram = h;
  return o;
}

// Every estimate interpolated; the element count of the earlier point.
static core::StageObservation lerp(const core::StageObservation& x, const core::StageObservation& y, double w) {
  core::StageObservation o;
  o.entropy_gaussian = lerp(x.entropy_gaussian, y.entropy_gaussian, w);
  o.entropy_histogram = lerp(x.entropy_histogram, y.entropy_histogram, w);
  o.excess_kurtosis = lerp(x.excess_kurtosis, y.excess_kurtosis, w);
  o.elements = x.elements;
  return o;
}

TraceCurve::TraceCurve(TraceEntropy trace, const std::vector<double>& stage_parameters) : t_(std::move(trace)) {
  if (t_.points.empty()) throw TraceFormatError(t_.path, "iterations", "the trace has no captured iteration");
  if (t_.steps < 1) throw TraceFormatError(t_.path, "iterations", "the trace has no training length");
  map_ = map_stages(t_.stage_elements, stage_parameters);
}

core::StageObservation TraceCurve::at(int stage, double f) const {
  const int ts = map_[static_cast<std::size_t>(stage)];
  const Bracket b = bracket(f);
  return lerp(b.lo->stages[static_cast<std::size_t>(ts)], b.hi->stages[static_cast<std::size_t>(ts)], b.weight);
}

std::optional<core::StageObservation> TraceCurve::boundary(int stage, double f) const {
  if (stage < 1 || t_.boundary_stages.empty()) return std::nullopt;
  const int ts = map_[static_cast<std::size_t>(stage)];
  std::size_t best = 0;
  for (std::size_t b = 1; b < t_.boundary_stages.size(); ++b)
    if (std::abs(t_.boundary_stages[b] - ts) < std::abs(t_.boundary_stages[best] - ts)) best = b;
  const Bracket br = bracket(f);
  return lerp(br.lo->boundaries[best], br.hi->boundaries[best], br.weight);
}

std::optional<double> TraceCurve::loss(double f) const {
  const Bracket b = bracket(f);
  return lerp(b.lo->loss, b.hi->loss, b.weight);
}

TraceCurve::Bracket TraceCurve::bracket(double f) const {
  const double it = f * static_cast<double>(t_.steps);
  const auto& p = t_.points;
  const auto hi = std::lower_bound(p.begin(), p.end(), it, [](const TraceEntropyPoint& q, double v) {
    return static_cast<double>(q.iteration) < v;
  });
  if (hi == p.begin()) return {&p.front(), &p.front(), 0.0};
  if (hi == p.end()) return {&p.back(), &p.back(), 0.0};
  const auto lo = hi - 1;
  const double span = static_cast<double>(hi->iteration - lo->iteration);
  return {&*lo, &*hi, (it - static_cast<double>(lo->iteration)) / span};
}

}  // namespace edgc::sim
