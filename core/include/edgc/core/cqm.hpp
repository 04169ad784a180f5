#pragma once
// The CQM rank-error model: how much of an m×n gradient's energy a rank-r approximation (PowerSGD's P·Qᵀ)
// leaves behind. By Eckart–Young–Mirsky the best rank-r error is the energy outside the top r singular values;
// for a matrix of i.i.d. entries the singular-value spectrum follows the Marchenko–Pastur law, which gives the
// expected error in closed shape without drawing a matrix. Real gradients are correlated (low effective rank),
// so their error at a given rank is lower: the model is the pessimistic, structure-free baseline.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

namespace edgc::core {

/// Expected relative squared error g(r; m, n) of the best rank-r approximation of an m×n i.i.d. matrix:
/// E[Σ_{i>r} σᵢ²] / E[Σᵢ σᵢ²], in [0, 1] (1 = nothing captured). Rank r is continuous in [0, p], p = min(m, n);
/// the top r singular values are taken to be the top fraction r/p of the Marchenko–Pastur spectrum, which for
/// m, n ≥ 256 agrees with finite matrices to within 2 % of g.
///
/// The shape enters only through the aspect ratio γ = p / max(m, n) and through p, so g(r; m, n) == g(r; n, m).
/// The constructor integrates the spectrum once into a small table (well under a millisecond; once per aspect
/// ratio and process, then shared); g() and inverse() then cost a table search and a few Newton steps. Immutable
/// after construction: safe to share between threads, and construction is thread-safe.
class RankErrorModel {
 public:
  /// m, n: the matrix shape (rows, columns; either order), both ≥ 1. Throws ConfigError otherwise.
  RankErrorModel(std::int64_t m, std::int64_t n);

  /// Expected relative squared error at rank r (continuous; clamped to [0, p]). g(0) = 1, g(p) = 0, strictly
  /// decreasing in between ("higher rank ⇒ lower error, less compression"). NaN gives NaN.
  double g(double r) const;

  /// The continuous rank r with g(r) = e, for a target error e (clamped to [0, 1]): the smallest rank that
  /// meets an error budget is ceil(inverse(e)). Inverse of g() to about 1e-12 relative. NaN gives NaN.
  double inverse(double e) const;

  std::int64_t m() const noexcept { return m_; }
  std::int64_t n() const noexcept { return n_; }
  /// p = min(m, n): the rank at which the approximation is exact.
  std::int64_t max_rank() const noexcept { return std::min(m_, n_); }

 private:
  // The spectrum is parametrised by an angle θ ∈ [0, π] (eigenvalue x(θ) runs from the top edge b down to the
  // bottom edge a). cdf[i] is the fraction of eigenvalues above x(theta[i]) and slope[i] its derivative in θ;
  // between nodes the fraction is the cubic Hermite interpolant, kept monotone so g is strictly decreasing.
  struct Table {
    std::vector<double> theta;
    std::vector<double> cdf;
    std::vector<double> slope;
  };
  /// The table of aspect ratio γ: integrated once per process and shared by every model of that γ (a sweep
  /// builds the same few shapes' models at every point), so a model is cheap to construct again.
  static std::shared_ptr<const Table> table_of(std::int64_t p, std::int64_t q);
  static Table integrate_table(double gamma);

  std::int64_t m_;
  std::int64_t n_;
  std::shared_ptr<const Table> t_;

  double fraction_at(double theta) const;
  double angle_of_fraction(double fraction) const;
};

/// The rank r' at which matrices of `to`'s shape keep the same expected share of their energy as matrices of `from`'s
/// shape keep at rank r: g_to(r') = g_from(r), continuous in [0, p_to]. This is how the ranks of a simulated model
/// map onto a recorded trace of another model ("equal CQM captured energy"); the same shape maps r to r.
double equivalent_rank(double r, const RankErrorModel& from, const RankErrorModel& to);

/// Bytes of the full m×n matrix over bytes of its rank-r factors P (m×r) and Q (n×r) in the same dtype:
/// m·n / ((m + n)·r). Higher is more compression. Requires m, n ≥ 1 and r > 0 (ConfigError otherwise).
double compression_ratio(std::int64_t m, std::int64_t n, double r);

}  // namespace edgc::core
