#pragma once
// Degenerate gradient traces: a trace whose gradients are all NaN/Inf or all zero, or that holds one captured
// iteration, replays and simulates without failing but gives the controller nothing to go on (no entropy, or no
// trend). These warnings say so; the commands print them on stderr ("edgc: warning: …") and go on.
#include <cstdint>
#include <string>
#include <vector>

#include "edgc/results/result_document.hpp"
#include "edgc/traces/manifest.hpp"
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

/// A model's family as its name gives it: the lower-case alphabetic words of the name, without size words (tiny,
/// small, base, medium, large, xl, mini) and single letters ("GPT2-12.1B" → "gpt", "tiny-gpt" → "gpt",
/// "bert-large" → "bert"), joined by '-'; empty when nothing is left.
std::string model_family(const std::string& name);

/// Parameter counts differing by more than this factor are of different size classes (one order of magnitude).
inline constexpr double kSizeClassFactor = 10.0;

/// The traced model's parameters: the manifest's model.parameters, else the sum of its tensors' elements (a trace
/// that captures only a few matrices of its model lists only those, so the sum alone would make the model look small).
double traced_model_parameters(const traces::Manifest& trace);

/// Why a trace recorded from another model stands in thinly for the simulated one: a different family (by
/// model_family, when both names have one), or a parameter count (the manifest's model.parameters, else the sum of
/// its tensors' elements) more than kSizeClassFactor away from `parameters`. Empty when neither; names the trace.
/// `stands_for`: what of the trace stands in, with its verb ("entropy trend and gradient spectra stand", or one of
/// them).
std::string trace_model_mismatch(const traces::Manifest& trace, const std::string& trace_dir, const std::string& name,
                                 double parameters,
                                 const std::string& stands_for = "entropy trend and gradient spectra stand");

}  // namespace edgc::engine
