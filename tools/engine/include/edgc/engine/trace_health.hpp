#pragma once
// Degenerate gradient traces: a trace whose gradients are all NaN/Inf or all zero, or that holds one captured
// iteration, replays and simulates without failing but gives the controller nothing to go on (no entropy, or no
// trend). These warnings say so; the commands print them on stderr ("edgc: warning: …") and go on.
#include <cstdint>
#include <string>
#include <vector>

#include "edgc/results/result_document.hpp"
#include "edgc/traces/reader.hpp"

namespace edgc::engine {

/// Counts over the gradient values a command read from a trace, one captured iteration at a time.
class TraceHealth {
 public:
  /// Adds one captured iteration: every value of every tensor (a full pass over the values, which the caller has
  /// just read anyway).
  void add(const traces::IterationData& data);

  /// One line per problem, each naming `trace_dir`: no finite gradient value at all; every finite value zero;
  /// some values NaN/Inf (how many, in how many iterations); a single captured iteration. Empty for a healthy
  /// trace or when nothing was added.
  std::vector<std::string> warnings(const std::string& trace_dir) const;

  std::int64_t iterations() const noexcept { return iterations_; }
  std::int64_t values() const noexcept { return values_; }
  std::int64_t non_finite() const noexcept { return non_finite_; }
  std::int64_t zeros() const noexcept { return zeros_; }

 private:
  std::int64_t iterations_ = 0;
  std::int64_t iterations_with_non_finite_ = 0;
  std::int64_t values_ = 0;
  std::int64_t non_finite_ = 0;
  std::int64_t zeros_ = 0;
};

/// The same problems as a simulate result shows them when its entropy came from a trace (`sections["entropy"]`
/// with source "trace"): one captured iteration (the entropy is one constant over the run), and simulated stages
/// whose entropy is never finite (the trace stage they read holds only NaN/Inf or only zeros). Empty otherwise.
std::vector<std::string> trace_warnings(const results::ResultDocument& result);

}  // namespace edgc::engine
