#include "edgc/sim/memory.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/sim/cost_model.hpp"
#include "edgc/sim/layer.hpp"
#include "edgc/sim/layout.hpp"
#include "edgc/sim/pipeline_schedule.hpp"

namespace edgc::sim {
namespace {

// Adam's state per parameter besides the weights (Rajbhandari et al. 2020, §3.1): an fp32 master copy (none when
// training in fp32) and the two fp32 moments.
constexpr double kMasterWeightBytes = 4.0;
constexpr double kMomentBytes = 8.0;
// Embedding terms of Korthikanti et al. §4.3 / Megatron's theoretical_memory_usage.py: a 1-byte dropout mask
// per element of the embedding output, and the int64 token ids.
constexpr double kDropoutMaskBytes = 1.0;
constexpr double kTokenIdBytes = 8.0;
// Output layer: the 16-bit inputs of the final LayerNorm and of the output projection (2 + 2 bytes per element of
// s·b·h), and the fp32 logits kept by the cross-entropy (4 bytes per element of s·b·V/t).
constexpr double kOutputInputsBytes = 4.0;
constexpr double kLogitBytes = 4.0;

// s·b·h: elements of one micro-batch's hidden states.
double sbh(const ModelSpec& m) {
  return static_cast<double>(m.seq_len) * m.micro_batch_size * static_cast<double>(m.hidden);
}

// Activations at the schedule's peak: walk the stage's passes, adding a forward's bytes and releasing them at its
// backward. Returns the peak bytes and the passes held then.
std::pair<double, int> schedule_peak(const ModelSpec& model, const ParallelSpec& parallel, int stage) {
  std::vector<double> per_chunk;
  for (int c = 0; c < model_chunks(parallel); ++c)
    per_chunk.push_back(pass_activation_bytes(model, parallel, stage, c));
  double held = 0.0, peak = 0.0;
  int passes = 0, peak_passes = 0;
  std::vector<Pass> order =
      pass_order(parallel.schedule, parallel.pp, stage, parallel.microbatches, model_chunks(parallel));
  // Combined 1F1B (parallelism.moe_a2a_overlap) runs neighbouring forward and backward passes of two micro-batches
  // as one step, paired from the start as the GPU pairs them (gpu_worker.cpp): a backward pass's activations are
  // freed only after its partner forward pass has stored its own.
  if (parallel.moe_a2a_overlap)
    for (std::size_t i = 0; i + 1 < order.size(); ++i)
      if (combinable(order[i], order[i + 1])) {
        if (order[i].kind == PassKind::kBackward) std::swap(order[i], order[i + 1]);
        ++i;
      }
  for (const Pass& p : order) {
    const double bytes = per_chunk[static_cast<std::size_t>(p.chunk)];
    if (p.kind == PassKind::kForward) {
      held += bytes;
      ++passes;
      if (held > peak) {
        peak = held;
        peak_passes = passes;
      }
    } else {
      held -= bytes;
      --passes;
    }
  }
  return {peak, peak_passes};
}

std::string gib_text(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", to_GiB(bytes));
  return buf;
}

}  // namespace

double layer_activation_bytes(const ModelSpec& model, const ParallelSpec& parallel) {
  const double t = parallel.tp, s = model.seq_len, h = model.hidden, a = model.heads;
  const double scale = bytes_per_element(model.dtype) / 2.0;  // the equation counts 16-bit tensors
  const SavedActivations saved = describe_layer(model, parallel).saved;
  // Korthikanti et al. Table 2: the attention core's 5·a·s/h term is dropped by selective recomputation; the
  // 10 of LayerNorm, dropout and residual inputs is ÷ t with sequence parallelism.
  const double replicated = parallel.sequence_parallel ? saved.replicated / t : saved.replicated;
  const double core = model.recompute == Recompute::kSelective ? 0.0 : saved.score_factor * a * s / (h * t);
  if (saved.head_stats > 0.0)  // flash attention: no s × s term, the softmax statistics instead
    return sbh(model) * (replicated + saved.sharded / t + saved.head_stats * a / (h * t)) * scale;
  return sbh(model) * (replicated + saved.sharded / t + core) * scale;
}

double pass_activation_bytes(const ModelSpec& model, const ParallelSpec& parallel, int stage, int chunk) {
  const int chunks = model_chunks(parallel);
  if (stage < 0 || stage >= parallel.pp || chunk < 0 || chunk >= chunks)
    throw InternalError("pass_activation_bytes: stage " + std::to_string(stage) + ", chunk " + std::to_string(chunk) +
                        " out of range");
  const double e = bytes_per_element(model.dtype);
  const double input = parallel.sequence_parallel ? sbh(model) * e / parallel.tp : sbh(model) * e;
  const LayerMix mix = chunk_layer_mix(model, parallel, stage, chunk);
  double bytes = 0.0;
  if (model.recompute == Recompute::kFull) {
    bytes = (mix.moe + mix.dense) * input;
  } else {  // an MoE layer keeps its experts' activations too (layer.hpp)
    for_each_layer_kind(model, mix,
                        [&](const ModelSpec& m, int count) { bytes += count * layer_activation_bytes(m, parallel); });
  }
  if (chunk_holds_embedding(stage, chunk))
    bytes +=
        sbh(model) * kDropoutMaskBytes + static_cast<double>(model.seq_len) * model.micro_batch_size * kTokenIdBytes;
  if (chunk_holds_head(parallel, stage, chunk)) {
    const double sb = static_cast<double>(model.seq_len) * model.micro_batch_size;
    bytes += sbh(model) * kOutputInputsBytes * (e / 2.0) +
             sb * static_cast<double>(padded_vocab(model, parallel.tp)) / parallel.tp * kLogitBytes;
  }
  return bytes;
}

double dispatch_buffer_bytes(const ModelSpec& model, const ParallelSpec& parallel) {
  if (!model.moe()) return 0.0;
  const double tokens =
      static_cast<double>(model.seq_len) * model.micro_batch_size / (parallel.sequence_parallel ? parallel.tp : 1);
  return (model.moe_load_factor + 1.0) * model.top_k * tokens * static_cast<double>(model.hidden) *
         bytes_per_element(model.dtype);
}

std::vector<StageMemory> stage_memory(const ModelSpec& model, const ParallelSpec& parallel) {
  const double e = bytes_per_element(model.dtype);
  const double master = model.dtype == "fp32" ? 0.0 : kMasterWeightBytes;
  std::vector<StageMemory> out;
  for (int s = 0; s < parallel.pp; ++s) {
    StageMemory m;
    m.stage = s;
    const StageParams held = stage_params(model, parallel, s);
    m.parameters = held.per_gpu();
    const double p = static_cast<double>(m.parameters);
    m.weights_bytes = p * e;
    m.gradients_bytes = p * grad_bytes(model, parallel);
    m.optimizer_bytes = p * (master + kMomentBytes) / (parallel.distributed_optimizer ? parallel.dp : 1);
    // The distributed optimizer shards a mixture of experts' routed experts over their expert-DP group instead.
    if (held.expert > 0 && parallel.distributed_optimizer)
      m.optimizer_bytes = (master + kMomentBytes) * (static_cast<double>(held.dense()) / parallel.dp +
                                                     static_cast<double>(held.expert) / expert_dp_size(parallel));
    const auto [peak, passes] = schedule_peak(model, parallel, s);
    m.activations_bytes = peak;
    m.inflight_passes = passes;
    if (model.moe() && stage_layer_mix(model, parallel, s).moe > 0)
      m.dispatch_bytes = dispatch_buffer_bytes(model, parallel);
    if (model.recompute == Recompute::kFull) {  // one layer's activations, the larger kind's with dense layers
      m.recompute_bytes = layer_activation_bytes(model, parallel);
      if (model.moe() && stage_layer_mix(model, parallel, s).dense > 0)
        m.recompute_bytes = std::max(m.recompute_bytes, layer_activation_bytes(dense_layer_model(model), parallel));
    }
    out.push_back(m);
  }
  return out;
}

void check_fits(const std::vector<StageMemory>& stages, double capacity_GiB, const std::string& where) {
  if (!(capacity_GiB > 0.0)) throw InternalError("check_fits: capacity must be > 0 GiB");
  if (stages.empty()) return;
  const auto worst = std::max_element(stages.begin(), stages.end(), [](const StageMemory& x, const StageMemory& y) {
    return x.total_bytes() < y.total_bytes();
  });
  if (to_GiB(worst->total_bytes()) <= capacity_GiB) return;
  char cap[32];
  std::snprintf(cap, sizeof cap, "%g", capacity_GiB);
  throw ConfigError(where, "cluster.gpu.memory_GiB",
                    "the layout does not fit: needs " + gib_text(worst->total_bytes()) + " GiB per GPU on stage " +
                        std::to_string(worst->stage) + " (weights " + gib_text(worst->weights_bytes) + ", gradients " +
                        gib_text(worst->gradients_bytes) + ", optimizer " + gib_text(worst->optimizer_bytes) +
                        ", activations " +
                        gib_text(worst->activations_bytes + worst->recompute_bytes + worst->dispatch_bytes) +
                        "), the GPU has " + cap + " GiB");
}

}  // namespace edgc::sim
