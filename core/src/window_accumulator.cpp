#include "edgc/core/window_accumulator.hpp"

#include <cmath>

#include "edgc/core/error.hpp"

namespace edgc::core {
namespace {

void add_if_finite(const std::optional<double>& v, double& sum, int& n) {
  if (v && std::isfinite(*v)) {
    sum += *v;
    ++n;
  }
}

std::optional<double> mean(double sum, int n) {
  if (n > 0) return sum / n;
  return std::nullopt;
}

}  // namespace

WindowAccumulator::WindowAccumulator(int stages) {
  if (stages < 1) throw InternalError("WindowAccumulator: stages must be >= 1");
  stages_.resize(static_cast<std::size_t>(stages));
}

void WindowAccumulator::add(std::size_t stage, const StageObservation& sample) {
  Sums& s = stages_.at(stage);
  add_if_finite(sample.entropy_gaussian, s.gaussian, s.gaussian_n);
  add_if_finite(sample.entropy_histogram, s.histogram, s.histogram_n);
  add_if_finite(sample.excess_kurtosis, s.kurtosis, s.kurtosis_n);
  s.elements += sample.elements;
}

std::vector<StageObservation> WindowAccumulator::means() const {
  std::vector<StageObservation> out;
  out.reserve(stages_.size());
  for (const Sums& s : stages_) {
    StageObservation o;
    o.entropy_gaussian = mean(s.gaussian, s.gaussian_n);
    o.entropy_histogram = mean(s.histogram, s.histogram_n);
    o.excess_kurtosis = mean(s.kurtosis, s.kurtosis_n);
    o.elements = s.elements;
    out.push_back(o);
  }
  return out;
}

void WindowAccumulator::reset() {
  for (Sums& s : stages_) s = Sums{};
}

}  // namespace edgc::core
