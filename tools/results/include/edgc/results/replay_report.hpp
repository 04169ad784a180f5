#pragma once
// replay.json (schema edgc.replay/1), windows.csv and `edgc replay`'s console summary: the rank controller run over a
// recorded gradient trace, window by window (engine::run_replay measures the windows; engine::replay_report adds
// the settings and the per-stage and whole-replay summaries). The writers below only lay the report out. Entropies
// are nats, errors relative (‖·‖ ratios), times seconds.
#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "edgc/core/controller.hpp"
#include "edgc/core/gds.hpp"

namespace edgc::results {

inline constexpr const char* kReplaySchema = "edgc.replay/1";

/// What PowerSGD did to one stage boundary's backward messages over a window (trace format 1.1 boundary
/// gradients, one captured iteration = one message; compressed on the host CPU whatever the replay backend).
/// G is the trace's message, Ĝ what the receiver reconstructs.
struct ReplayBoundaryWindow {
  int rank = 0;      ///< pipeline rank in force (0 = uncompressed: the policy does not compress, or warm-up)
  int messages = 0;  ///< captured iterations in the window
  /// Entropy of the GDS-sampled messages (nats, mean over the window's sampled iterations): what pp_rank_mode
  /// entropy decides from.
  std::optional<double> entropy_gaussian;
  std::optional<double> entropy_histogram;
  /// Mean over messages of ‖Ĝ − G‖/‖G‖ with lazy error propagation (the previous message's error added first) …
  std::optional<double> message_error;
  std::optional<double> message_error_plain;  ///< … and without it (each message compressed on its own)
  /// ‖ΣĜ − ΣG‖/‖ΣG‖ over the window's messages, what a weight gradient summed over micro-batches sees: bounded by
  /// the last carried error with lazy error propagation, growing with the messages without it.
  std::optional<double> accumulated_error;
  std::optional<double> accumulated_error_plain;
  std::int64_t wire_floats = 0;   ///< floats sent (with lazy error propagation; the same count without)
  std::int64_t dense_floats = 0;  ///< floats the uncompressed messages would send
};

struct ReplayStageWindow {
  std::optional<double> entropy_gaussian;
  std::optional<double> entropy_histogram;
  std::optional<double> excess_kurtosis;
  std::int64_t sampled_elements = 0;
  double estimation_seconds = 0.0;
  std::int64_t full_elements = 0;  ///< what full sampling touched in the same window
  double full_estimation_seconds = 0.0;
  int rank = 0;                             ///< rank in use during this window (0 = uncompressed)
  core::RankDecision next;                  ///< decision made from this window, used in the next one
  std::optional<int> full_next_rank;        ///< the decision the same controller state makes from full sampling
  std::optional<int> trajectory_full_rank;  ///< the independent full-sampling controller's decision
  std::optional<double> relative_error;  ///< ‖Ĝ − Ḡ‖/‖Ḡ‖ of averaged vs true mean gradient, mean over the window
  std::optional<double> step_error;  ///< ‖Ĝ − M‖/‖M‖ of rank 0's error-corrected gradient, mean
  std::int64_t wire_floats = 0;      ///< floats sent for the stage's full matrices
  std::int64_t dense_floats = 0;     ///< floats an uncompressed all-reduce would send
  /// The backward messages this stage sends to the stage before it, when the trace records that boundary.
  std::optional<ReplayBoundaryWindow> boundary;
};

struct ReplayWindow {
  std::int64_t window = 0;
  std::int64_t first_iteration = 0;
  std::int64_t end_iteration = 0;
  int captured_iterations = 0;
  int sampled_iterations = 0;
  std::optional<double> mean_loss;
  bool warmup = true;             ///< this window ran uncompressed because warm-up was not over
  bool agrees = true;             ///< from the same state, sampled and full-sampling observations give the same ranks
  bool trajectory_agrees = true;  ///< the independent full-sampling controller chose the same ranks
  std::vector<ReplayStageWindow> stages;
};

/// A stage's backward boundary over the replay: its windows with a compressed message.
struct ReplayBoundarySummary {
  std::string name;                              ///< the trace's boundary
  std::pair<std::int64_t, std::int64_t> matrix;  ///< tokens × hidden
  int compressed_windows = 0;                    ///< windows with a message error
  /// Σ over those windows of: message error, the same without lazy error propagation, accumulated error, the same
  /// without lazy error propagation (means: sum / compressed_windows).
  std::array<double, 4> error_sum = {0.0, 0.0, 0.0, 0.0};

  std::optional<double> mean(std::size_t i) const;  ///< error `i` as above; nullopt without compressed windows
};

/// A (merged) pipeline stage over the replay.
struct ReplayStageSummary {
  std::pair<std::int64_t, std::int64_t> cqm_matrix;  ///< the matrix shape the CQM reasons about
  int compressed_tensors = 0;
  double error_sum = 0.0;  ///< Σ relative_error over post-warm-up windows that have one …
  int error_n = 0;         ///< … and their count
  int rank_min = 1 << 30;  ///< ranks in force after warm-up (compressed windows); rank_max 0: none
  int rank_max = 0;
  std::optional<ReplayBoundarySummary> boundary;  ///< when the stage sends a recorded boundary backward
};

struct ReplayReport {
  // What was replayed, and how.
  std::string trace;                  ///< the trace directory
  nlohmann::ordered_json scenario;    ///< the scenario as read (file + overrides)
  std::vector<std::string> notes;     ///< what replay adapted on its own
  core::ControllerConfig controller;  ///< as run (stage count and shapes filled in from the trace)
  core::GdsConfig gds;
  int world_size = 0;  ///< emulated data-parallel ranks
  std::string backend;
  bool compare_full = true;  ///< the full-sampling shadow controller ran

  std::vector<ReplayStageSummary> stages;
  std::vector<ReplayWindow> windows;

  // The whole replay.
  std::optional<std::int64_t> warmup_end;
  std::optional<std::int64_t> full_warmup_end;
  int agreeing = 0;                     ///< windows whose sampled and full-sampling decisions agree
  int trajectory_agreeing = 0;          ///< windows where the independent full-sampling controller chose the same ranks
  std::map<std::string, int> bindings;  ///< post-warm-up stage decisions by what bound them
  std::int64_t sampled_elements = 0;
  std::int64_t full_elements = 0;
  double sampled_seconds = 0.0;
  double full_seconds = 0.0;
  std::int64_t wire_floats = 0;
  std::int64_t dense_floats = 0;
  std::int64_t boundary_wire_floats = 0;
  std::int64_t boundary_dense_floats = 0;
};

/// replay.json.
nlohmann::ordered_json to_json(const ReplayReport& report);

/// windows.csv: one line per window and stage.
std::string windows_csv(const ReplayReport& report);

/// The console summary: settings, the window table, per-stage ranks and errors, bindings, sampling agreement,
/// pipeline boundaries and traffic.
void print_replay_summary(std::ostream& os, const ReplayReport& report);

}  // namespace edgc::results
