#pragma once
// The least-squares line y = a + b·x, weighted or not, the one copy behind the simulator's profiled PowerSGD step
// lines (sim/cost_model.cpp) and live mode's calibration and T_com(r) fits (tools/live). Accumulate the points, then
// ask for the slope and intercept; the caller decides what a degenerate fit (det() == 0: fewer than two distinct x)
// falls back to, since each fit clamps differently.
//
// The normal equations, with weights w_i (1 for an ordinary fit) and sums W = Σw, X = Σw·x, Y = Σw·y,
// XX = Σw·x², XY = Σw·x·y:  det = W·XX − X²,  b = (W·XY − X·Y) / det,  a = (XX·Y − X·XY) / det = (Y − b·X) / W.

namespace edgc::core {

struct LineSums {
  double w = 0.0;   ///< Σ w: the point count for an ordinary fit
  double x = 0.0;   ///< Σ w·x
  double y = 0.0;   ///< Σ w·y
  double xx = 0.0;  ///< Σ w·x²
  double xy = 0.0;  ///< Σ w·x·y

  void add(double xi, double yi, double weight = 1.0) noexcept {
    w += weight;
    x += weight * xi;
    y += weight * yi;
    xx += weight * xi * xi;
    xy += weight * xi * yi;
  }
  /// The normal equations' determinant: 0 (up to rounding) when the x do not span a line.
  double det() const noexcept { return w * xx - x * x; }
  /// b; requires det() != 0.
  double slope() const noexcept { return (w * xy - x * y) / det(); }
  /// a by Cramer's rule; requires det() != 0.
  double intercept() const noexcept { return (xx * y - x * xy) / det(); }
  /// a given the slope b: (Y − b·X) / W, the line through the (weighted) centroid; requires w > 0.
  double intercept_for(double b) const noexcept { return (y - b * x) / w; }
};

}  // namespace edgc::core
