#pragma once
// The rank controller: a versioned interface, like NCCL's tuner plugins. Once per window it takes what was
// observed (entropy per stage from the GDS, kurtosis, loss) and returns a rank per pipeline stage for the next
// window. Explicit fallback: a stage without an observation keeps its previous decision; before any decision
// everything is sent uncompressed.
//
// Version 1 inputs: WindowObservation. Outputs: WindowDecision (rank 0 = uncompressed, binding = which limit
// decided it). Policies are chosen by name from the registry (policy_registry.hpp): none | static | selective | loss |
// edgc | edgc-pp | edgc-megatron.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "edgc/core/dac.hpp"
#include "edgc/core/entropy.hpp"
#include "edgc/core/megatron_rule.hpp"
#include "edgc/core/policy_registry.hpp"
#include "edgc/core/rank_rule.hpp"
#include "edgc/core/warmup.hpp"

namespace edgc::core {

inline constexpr int kControllerApiVersion = 1;

struct StageObservation {
  std::optional<double> entropy_gaussian;   ///< nats, mean over the window's sampled iterations
  std::optional<double> entropy_histogram;  ///< nats, same
  std::optional<double> excess_kurtosis;    ///< of the sampled values, mean over sampled iterations
  std::int64_t elements = 0;                ///< sampled elements that fed the estimates
};

struct WindowObservation {
  std::int64_t window = 0;
  std::int64_t first_iteration = 0;  ///< inclusive
  std::int64_t end_iteration = 0;    ///< exclusive: the decision applies from here on
  int sampled_iterations = 0;
  std::vector<StageObservation> stages;
  std::optional<double> mean_loss;
  /// Per stage: what was observed of the pipeline's backward messages that stage sends (stage 0 sends none). Read
  /// only by edgc-pp with PipelineRankMode::kEntropy; empty when nothing was observed.
  std::vector<StageObservation> boundaries;
};

struct RankDecision {
  int rank = 0;             ///< 0 = uncompressed
  double continuous = 0.0;  ///< the rule's unquantised rank (edgc), else equal to rank
  RankBinding binding = RankBinding::kUncompressed;
};

struct WindowDecision {
  int api_version = kControllerApiVersion;
  bool warmup = true;  ///< still warming up (everything uncompressed)
  std::vector<RankDecision> stages;
  /// Per stage: rank of the pipeline's backward (activation-gradient) messages that stage sends to the one before
  /// it, 0 = uncompressed (stage 0 sends none); empty = none compressed. Only edgc-pp sets it, once warm-up is over.
  std::vector<int> pipeline_ranks;
  /// pipeline_ranks[stage], 0 past its end.
  int pipeline_rank(std::size_t stage) const { return stage < pipeline_ranks.size() ? pipeline_ranks[stage] : 0; }
};

/// How edgc-pp picks the rank of each stage boundary's backward messages.
enum class PipelineRankMode {
  kStatic,   ///< every boundary at ControllerConfig::pipeline_rank (Optimus-CC)
  kEntropy,  ///< per boundary, the CQM rule on the entropy trend of its messages, from pipeline_rank down to
             ///< pipeline_r_min (step, quantum and exponent as the DP ranks)
};

struct ControllerConfig {
  std::string policy = "edgc";  ///< none | static | selective | loss | edgc | edgc-pp | edgc-megatron
  int stages = 1;
  EntropyEstimator estimator = EntropyEstimator::kGaussian;
  WarmupConfig warmup;
  CqmConfig cqm;
  DacConfig dac;
  /// (m, n) per stage: the matrix shape the CQM reasons about (the stage's largest compressible gradient).
  std::vector<std::pair<std::int64_t, std::int64_t>> stage_shapes;
  int static_rank = 0;       ///< static and selective policies; 0 = r_max
  int selective_stages = 1;  ///< selective: compress only the first this-many stages (Optimus-CC)
  /// edgc-pp: PowerSGD rank of the pipeline's backward messages after warm-up (≥ 1); in entropy mode the starting
  /// and largest rank. Default 16: Optimus-CC's Table-2 scripts (--inter_grad_comp_rank 16).
  int pipeline_rank = 16;
  PipelineRankMode pipeline_rank_mode = PipelineRankMode::kStatic;
  int pipeline_r_min = 4;  ///< entropy mode: the lowest pipeline rank, ≥ 1, a multiple of the quantum
  /// Entropy mode: per stage, the boundary matrix it sends (tokens × hidden) the CQM reasons about; (0, 0) for
  /// stage 0 and for stages whose boundary is not observed (those keep pipeline_rank).
  std::vector<std::pair<std::int64_t, std::int64_t>> pipeline_shapes;
  /// edgc-megatron: the signal its rank follows (compression.signal).
  MegatronSignal megatron_signal = MegatronSignal::kLoss;
  /// edgc-megatron: largest rank change per window; 0 = the signal's default (megatron_default_step: 4 or 8).
  int megatron_step = 0;
};

/// "static" or "entropy" (compression.pp_rank_mode).
const char* pipeline_rank_mode_name(PipelineRankMode m);
/// The mode named `name` ("static" or "entropy"); nullopt for any other name.
std::optional<PipelineRankMode> pipeline_rank_mode_from_name(std::string_view name) noexcept;

class Controller {
 public:
  virtual ~Controller() = default;
  virtual int api_version() const noexcept { return kControllerApiVersion; }
  virtual std::string_view policy() const noexcept = 0;
  /// Called once per window, in order.
  virtual WindowDecision decide(const WindowObservation& obs) = 0;
  /// A copy with the same state: what-if questions ("what would this controller decide from other
  /// observations?") without disturbing the original.
  virtual std::unique_ptr<Controller> clone() const = 0;
};

/// Validates the config (ConfigError naming `where` and the field) and builds the named policy through the
/// registry (policy_registry.hpp; an unknown name is a ConfigError naming compression.policy). A compressing
/// policy given stage_shapes (one per stage) also checks that r_max does not exceed any stage's matrix rank.
std::unique_ptr<Controller> make_controller(const ControllerConfig& config, const char* where);

}  // namespace edgc::core
