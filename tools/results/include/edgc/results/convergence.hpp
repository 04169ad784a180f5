#pragma once
// Measured convergence beside the predictions: a convergence record (schema edgc.converge/1, written by
// tools/capture/converge.py: the same model trained under several policies with everything else fixed) gives, per
// policy, the validation loss after its steps. Where a record matches a simulated policy and its settings, simulate
// (result.json's "convergence", runs[].detail.measured_loss, the console), the report and sweep rows show the
// measured change of validation loss against none beside the gradient error.
//
// The match rule (documented in tools/README.md): a record matches the run of policy P when
//   1. it holds a run of P and a run of none (the reference the change is taken against);
//   2. its model is the simulated one: layers, hidden (the record's d_model), heads and seq_len all equal;
//   3. for P other than none, its compression settings are the run's: window, r_min, r_max and step equal,
//      alpha and beta equal to 1e-9.
// The run length, seed, batch and data are not matched: the change is the one measured over the record's own steps,
// and is shown with them (model, steps, seed) so that it is not read as the simulated run's.
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace edgc::results {

struct ResultDocument;

inline constexpr const char* kConvergeSchema = "edgc.converge/1";

struct ConvergenceRun {
  std::string policy;
  double final_val_loss = 0.0;
  std::vector<double> loss_curve;  ///< training loss per step (rank 0)
  double bytes_ratio = 0.0;        ///< bytes sent over the uncompressed bytes
};

struct ConvergenceRecord {
  std::string file;
  std::int64_t layers = 0, d_model = 0, heads = 0, seq_len = 0;
  std::int64_t steps = 0, seed = 0, world_size = 0;
  std::int64_t window = 0, r_min = 0, r_max = 0, step = 0;
  double alpha = 0.0, beta = 0.0;
  /// Where it trained: empty on the CPU (settings.device "cpu" or absent), else the GPU's name (provenance.gpu) with
  /// provenance.ranks_per_gpu, the ranks that shared it.
  std::string gpu;
  std::int64_t ranks_per_gpu = 0;
  std::vector<ConvergenceRun> runs;
  const ConvergenceRun* find(const std::string& policy) const;
};

/// Reads a convergence record. Throws ConfigError naming the file and field (a missing file: "cannot be read").
ConvergenceRecord read_convergence_record(const std::filesystem::path& file);

/// What the rule compares of a simulated run: the model and the compression settings.
struct ConvergenceKey {
  std::int64_t layers = 0, hidden = 0, heads = 0, seq_len = 0;
  std::int64_t window = 0, r_min = 0, r_max = 0, step = 0;
  double alpha = 0.0, beta = 0.0;
};

/// The key of a result document (model.architecture and run); nothing when it lacks either.
std::optional<ConvergenceKey> convergence_key(const ResultDocument& doc);

/// "" when `record` matches `policy` under `key` (the rule above), else the first difference, e.g. "window 1000,
/// the record's 20".
std::string convergence_mismatch(const ConvergenceRecord& record, const ConvergenceKey& key, const std::string& policy);

/// result.json's "convergence" section for `records` against `doc`'s runs: per record its file, model, steps and
/// seed, and per policy either the measured change ({"val_loss", "none_val_loss", "change"}) or why it does not
/// match; and each matched run's detail.measured_loss: {"change" (mean over the matching records), "records": [...]}.
/// Nothing is written for an empty `records`.
void add_convergence(const std::vector<ConvergenceRecord>& records, ResultDocument& doc);

/// One line per compressing policy with a measured change, for the console and the report: "edgc: validation loss
/// +0.0081 (seed 0), +0.0178 (seed 1) against none, measured on a 4-layer d_model 64 GPT over 300 steps (…)", with
/// ", sharing one NVIDIA H200" after the ranks for a record made on a GPU; empty without a "convergence" section.
std::vector<std::string> convergence_lines(const ResultDocument& doc);

}  // namespace edgc::results
