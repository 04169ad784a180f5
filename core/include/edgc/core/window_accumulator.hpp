#pragma once
// A window's per-stage entropy and kurtosis estimates, summed over its sampled iterations and averaged when the
// window closes: the one implementation behind `replay` (estimates measured on a trace) and `simulate` (estimates
// read from an entropy source).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "edgc/core/controller.hpp"

namespace edgc::core {

class WindowAccumulator {
 public:
  explicit WindowAccumulator(int stages);

  /// One sampled iteration's estimates of `stage`: missing or non-finite ones are skipped (each estimator keeps
  /// its own count); `elements` adds up.
  void add(std::size_t stage, const StageObservation& sample);

  /// Per stage, the mean of each estimator over the samples that had it (absent when none had), and the elements.
  std::vector<StageObservation> means() const;

  /// Elements added so far for `stage`.
  std::int64_t elements(std::size_t stage) const { return stages_.at(stage).elements; }

  /// Forgets every sample (a new window).
  void reset();

 private:
  struct Sums {
    double gaussian = 0.0;
    double histogram = 0.0;
    double kurtosis = 0.0;
    int gaussian_n = 0;
    int histogram_n = 0;
    int kurtosis_n = 0;
    std::int64_t elements = 0;
  };
  std::vector<Sums> stages_;
};

}  // namespace edgc::core
