#pragma once
// The search behind `edgc breakeven` and simulate's bandwidth curve (breakeven.hpp, bandwidth.hpp): whole simulate
// runs at values of one scenario key, each simulating none and the compared policies once, and the bracketed secant
// search for the value at which one policy's saving reaches a sought saving.
#include <map>
#include <string>
#include <vector>

#include "edgc/engine/breakeven.hpp"

namespace edgc::engine {

/// One policy's figures at a simulated value.
struct SearchRun {
  double training_time_s = 0.0;
  double iteration_time_s = 0.0;
  double exposed_dp_comm_s = 0.0;  ///< the iteration breakdown's exposed data-parallel sync, per iteration
};

/// Every compared policy (none included) simulated at one value of the key.
struct SearchPoint {
  double value = 0.0;
  std::map<std::string, SearchRun> runs;  ///< by policy
};

class BreakevenSearch {
 public:
  /// `request`'s scenario, sets, key, bracket (lo, hi), step, value_tolerance, max_steps and jobs are used; each
  /// simulation runs none and `policies`, with `extra_sets` applied after request.sets (e.g. fidelity.measure=false).
  BreakevenSearch(const BreakevenRequest& request, std::vector<std::string> policies,
                  std::vector<std::string> extra_sets = {});

  /// The point at x, simulated once (later calls read it). Throws ConfigError naming the scenario and key when the
  /// simulation rejects the value.
  const SearchPoint& at(double x);
  /// A point known without simulating (the run the search starts from).
  void add(SearchPoint p) { points_.emplace(p.value, std::move(p)); }

  /// `policy`'s saving against none at p.
  static BreakevenPoint point(const SearchPoint& p, const std::string& policy);

  /// The crossing of `sought` (% saving) by `policy` between the simulated points a and b, which must hold it
  /// (their savings on either side of it); secant steps in log value (positive brackets), at most max_steps.
  BreakevenCrossing crossing(const std::string& policy, double sought, double tolerance, BreakevenPoint a,
                             BreakevenPoint b);

  std::vector<SearchPoint> points() const;
  std::vector<BreakevenPoint> curve(const std::string& policy) const;  ///< ascending in value
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  BreakevenRequest r_;
  std::vector<std::string> policies_;
  std::vector<std::string> extra_sets_;
  std::map<double, SearchPoint> points_;
  std::vector<std::string> warnings_;
};

/// A value as the search writes it into a --set: an integer for integral steps, else 6 significant digits.
std::string format_search_value(double x, double step);

}  // namespace edgc::engine
