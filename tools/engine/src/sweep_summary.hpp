#pragma once
// Private to the sweep: summary.csv and the best-points table (sweep_summary.cpp).
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "edgc/results/sweep_document.hpp"
#include "edgc/scenario/sweep_spec.hpp"

namespace edgc::engine {

/// Writes DIR/summary.csv (results::summary_csv over the spec's axes).
void write_summary(const std::filesystem::path& dir, const scenario::SweepSpec& spec,
                   const std::vector<results::SweepRecord>& records);

/// The ten best points for the last compared policy, by `field` (times and cost ascending, others descending);
/// UsageError (--best-by) when `field` is not a run figure.
void print_best(std::ostream& os, const scenario::SweepSpec& spec, const std::vector<results::SweepRecord>& records,
                const std::string& field);

}  // namespace edgc::engine
