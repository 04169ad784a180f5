#pragma once
// The report's sections, one per kind of input: figures, tables and notes built from the typed inputs.
#include <string>

#include "edgc/report/document.hpp"
#include "edgc/report/inputs.hpp"

namespace edgc::report {

/// Summary table, iteration-time breakdown, entropy per stage (both estimators) and rank schedules of a
/// simulate result. `source` names the file in the section header.
Section simulate_section(const SimulateResult& result, const std::string& source);

/// Heatmaps of speedup and communication-latency reduction over two sweep axes (a line chart for one), the ten
/// best points and the failed ones. `x_key`/`y_key` choose the heatmap axes (empty: the first two axes with
/// more than one value); throws UsageError naming --x or --y for a key that is not a sweep axis.
Section sweep_section(const Sweep& sweep, const std::string& source, const std::string& x_key,
                      const std::string& y_key);

/// Time–cost scatter with the Pareto front, the verdicts and the options ranked by training time.
Section plan_section(const Plan& plan, const std::string& source);

/// `text` made safe as a file stem and element id: characters other than [A-Za-z0-9._-] become '_'.
std::string file_stem(const std::string& text);

}  // namespace edgc::report
