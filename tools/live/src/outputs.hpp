#pragma once
// What rank 0 writes and prints at the end of a live run: cluster.json (the machines, as a cluster file the
// simulator accepts), result.json (edgc.result/1, as `simulate` writes it) and the console summary.
// measurements.json itself is results::to_json(Measurements).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "calibration/machine.hpp"
#include "edgc/engine/replay.hpp"
#include "edgc/live/live.hpp"
#include "edgc/results/measurements.hpp"
#include "edgc/results/result_document.hpp"

namespace edgc::live {

/// One policy's run as the controller saw it: its rank schedule and warm-up end.
struct PolicyOutcome {
  std::string policy;
  engine::ReplayResult replay;
};

/// cluster.json: the placement's hosts, `rates` (median over ranks) and the calibration's alpha-beta fit.
nlohmann::ordered_json cluster_json(const results::Measurements& m, const Rates& rates, const std::string& gpu_name);

/// result.json: per policy (m.runs and `outcomes` in the same order, "none" first) the sync time per step, the
/// reductions against "none" and the rank schedule; then the T_com(r) fits.
results::ResultDocument result_document(const LiveOptions& o, const results::Measurements& m,
                                        const std::vector<PolicyOutcome>& outcomes);

/// The console summary: layout, calibration, a table of the runs (from `result`), the T_com(r) fits.
void print_summary(const results::Measurements& m, const results::ResultDocument& result, const std::string& out_dir);

}  // namespace edgc::live
