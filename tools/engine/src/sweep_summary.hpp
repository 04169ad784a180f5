#pragma once
// Private to the sweep: summary.csv and the best-points table (sweep_summary.cpp).
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "edgc/results/sweep_document.hpp"
#include "edgc/scenario/sweep_spec.hpp"

namespace edgc::engine {

/// Writes DIR/summary.csv (results::summary_csv over the spec's axes, with the gradient-error budget if any).
void write_summary(const std::filesystem::path& dir, const scenario::SweepSpec& spec,
                   const std::vector<results::SweepRecord>& records, std::optional<double> max_error);

/// The ten best points for the last compared policy, by `field` (lowest first where results::better_of says lower
/// is better, else highest first), leaving out points over the gradient-error budget; then that policy's
/// time–error Pareto front; then the verdict (results::judge at `min_saving`) at the first best point.
/// UsageError (--best-by) when `field` is not a run figure.
void print_best(std::ostream& os, const scenario::SweepSpec& spec, const std::vector<results::SweepRecord>& records,
                const std::string& field, std::optional<double> max_error, double min_saving);

}  // namespace edgc::engine
