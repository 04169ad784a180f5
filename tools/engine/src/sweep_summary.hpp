#pragma once
// Private to the sweep: averaging repeated points, summary.csv, the best-points table (sweep_summary.cpp).
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "edgc/scenario/sweep_spec.hpp"

namespace edgc::engine {

/// The runs of one point over its repeats (result.json "runs" of each): the mean of every kept figure, plus a
/// 95 % Student-t confidence half-width (`<field>_ci95`) of the main ones when there are several repeats.
nlohmann::ordered_json aggregate_runs(const std::vector<nlohmann::ordered_json>& repeats);

/// Writes DIR/summary.csv: one row per point, the axes, then every kept figure per policy, then the error.
void write_summary(const std::filesystem::path& dir, const scenario::SweepSpec& spec,
                   const std::vector<nlohmann::json>& lines);

/// The ten best points for the last compared policy, by `field` (times and cost ascending, others descending);
/// UsageError (--best-by) when `field` is not a run figure.
void print_best(std::ostream& os, const scenario::SweepSpec& spec, const std::vector<nlohmann::json>& lines,
                const std::string& field);

}  // namespace edgc::engine
