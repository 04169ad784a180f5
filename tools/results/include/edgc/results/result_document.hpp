#pragma once
// result.json (schema edgc.result/1), written by `simulate` and by `live`, read by the console summary, `sweep`,
// `report` and the tests: one typed document, one writer (to_json) and one strict reader (read_result_document).
//
// The typed part is what any reader uses: the setup the run describes, every compared policy's whole-run figures
// with its breakdown and rank schedule, and the entropy series. What only one producer writes and no reader
// interprets (simulate's DAC fit, the simulated configurations, the variability settings; live's T_com fit and
// note) travels as `sections` and `detail`, JSON objects written after the typed members in their own order.
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "edgc/results/figure_table.hpp"
#include "edgc/results/json_reader.hpp"
#include "edgc/sim/whole_run.hpp"

namespace edgc::results {

inline constexpr const char* kResultSchema = "edgc.result/1";

/// Iterations [begin, end) run with these per-stage PowerSGD ranks (0 = uncompressed).
struct RankSegment {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::vector<std::int64_t> ranks;
  bool operator==(const RankSegment&) const = default;
};

/// A run's figures against the baseline run (policy none) of the same comparison: speedup = baseline training
/// time / training time (0 for a zero training time), reductions 1 − x / baseline; GPU-hours and cost absent.
RunFigures figures_vs_baseline(std::string policy, double iteration_time_s, double comm_latency_s,
                               double training_time_s, double base_comm_latency_s, double base_training_time_s);

/// One compared policy of a result.
struct ResultRun : RunFigures {
  std::optional<std::int64_t> compressed_iterations;  ///< iterations with any stage compressed
  std::vector<double> stage_comm_latency_s;           ///< per pipeline stage; empty when absent
  /// Mean seconds per iteration by where the time goes: compute, TP communication, bubble, exposed DP
  /// communication and exposed compression add up to the iteration time; compression_s is all compression
  /// compute (NaN when the file has none).
  std::optional<sim::IterationBreakdown> breakdown;
  std::optional<std::int64_t> warmup_end_iteration;  ///< absent: the controller never left its warm-up
  std::vector<RankSegment> rank_schedule;
  nlohmann::ordered_json detail = nlohmann::ordered_json::object();  ///< the producer's own fields
};

/// Entropy per stage by both estimators, aligned with `iterations`; NaN where the file has null.
struct StageEntropy {
  std::int64_t stage = 0;
  std::vector<double> gaussian_nats;
  std::vector<double> histogram_nats;
};
struct EntropySeries {
  std::vector<std::int64_t> iterations;
  std::vector<StageEntropy> stages;
};

/// The cluster a result describes.
struct ResultCluster {
  std::string name;
  std::int64_t gpus = 0;
  std::int64_t nodes = 0;
  std::int64_t gpus_per_node = 0;
  std::string gpu;
  double price_per_gpu_hour_usd = 0.0;
};

/// The 3D layout; the pipeline details are empty or 0 where the producer does not set them (live).
struct ResultParallelism {
  std::int64_t tp = 1, pp = 1, dp = 1;
  std::int64_t microbatches = 0;
  std::string schedule;
  std::int64_t virtual_stages = 0;
  std::string order;
};

/// The run length and the controller settings of the compared policies.
struct ResultRunSettings {
  std::int64_t iterations = 0;
  std::int64_t window = 0;
  double alpha = 0.0, beta = 0.0;
  std::int64_t r_min = 0, r_max = 0, step = 0;
};

struct ResultDocument {
  std::string source = "simulate";  ///< "simulate" or "live" (written only for live)
  std::string scenario;             ///< the scenario file the run was read from
  std::optional<ResultCluster> cluster;
  std::optional<std::string> model_name;
  std::optional<double> model_parameters;
  /// Simulate only: the layer's shape as the simulation used it (model keys with their defaults filled in:
  /// hidden, heads, kv_heads, head_dim, ffn_hidden, mlp, norm, position, bias, tie_embeddings, dropout, vocab).
  nlohmann::ordered_json model_architecture;
  std::optional<ResultParallelism> parallelism;
  std::optional<ResultRunSettings> run;
  /// Simulate only: distinct rank vectors, whether they were composed per stage ("stage-separable") or each
  /// simulated ("exact"), and how many iterations SimGrid ran for them.
  std::optional<std::int64_t> simulations;
  std::string composition;
  std::optional<std::int64_t> simulated_iterations;
  std::vector<ResultRun> runs;
  std::optional<EntropySeries> entropy_series;
  /// Simulate only: what the run went on with but the user should know (a degenerate trace, actor stacks without
  /// guard pages), one line each; written (possibly empty) when set.
  std::optional<std::vector<std::string>> warnings;
  /// Top-level members no reader interprets, written after the setup members in their own order.
  nlohmann::ordered_json sections = nlohmann::ordered_json::object();

  const ResultRun* find_run(const std::string& policy) const;
};

/// The document as result.json holds it.
nlohmann::ordered_json to_json(const ResultDocument& doc);
nlohmann::ordered_json rank_schedule_json(const std::vector<RankSegment>& schedule);

/// Reads a result document strictly for what it uses: the schema, every runs[] entry's policy, times and
/// speedup (the other figures are optional), and the shape of whatever optional member is present. Unknown
/// members go to `sections` / `detail`. Throws ConfigError naming the file and the field.
ResultDocument parse_result_document(const JsonNode& root);
ResultDocument read_result_document(const std::filesystem::path& file);

}  // namespace edgc::results
