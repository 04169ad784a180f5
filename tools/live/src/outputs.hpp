#pragma once
// What rank 0 writes and prints at the end of a live run: cluster.json (the machines, as a cluster file the
// simulator accepts), result.json (edgc.result/1, as `simulate` writes it), calibration.json and kernels.json
// (what validate prices collectives and compute with) and the console summary.
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

/// The files cluster.json names beside itself.
inline constexpr const char* kCalibrationFile = "calibration.json";
inline constexpr const char* kKernelProfileFile = "kernels.json";

/// cluster.json: the placement's hosts, `rates` (median over ranks), the calibration's ring latency and bandwidth
/// and, with a calibration over ≥ 2 ranks, the calibrated network profile of calibration.json (ring forced); with
/// `kernel_profile`, compute.kernel_profile = kernels.json.
nlohmann::ordered_json cluster_json(const results::Measurements& m, const Rates& rates, const std::string& gpu_name,
                                    bool kernel_profile);

/// calibration.json (edgc.calibration/1): ring_profile() of the calibration as both link classes' curve. Needs a
/// calibration over ≥ 2 ranks with rows.
nlohmann::ordered_json calibration_json(const results::Measurements& m);

/// result.json: per policy (m.runs and `outcomes` in the same order, "none" first) the sync time per step, the
/// reductions against "none" and the rank schedule; then the T_com(r) fits.
results::ResultDocument result_document(const LiveOptions& o, const results::Measurements& m,
                                        const std::vector<PolicyOutcome>& outcomes);

/// The console summary: layout, calibration, a table of the runs (from `result`), the T_com(r) fits.
void print_summary(const results::Measurements& m, const results::ResultDocument& result, const std::string& out_dir);

}  // namespace edgc::live
