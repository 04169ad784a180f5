#include "edgc/sim/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/core/least_squares.hpp"
#include "edgc/sim/kernel_model.hpp"
#include "edgc/sim/layer.hpp"
#include "edgc/sim/layout.hpp"

namespace edgc::sim {
namespace {

// DRAM passes over an m×n gradient of fused PowerSGD with error feedback (scenarios/SOURCES.md §10).
constexpr double kPowerSgdHbmPasses = 8.0;

void check_stage(const ParallelSpec& parallel, int stage) {
  if (stage < 0 || stage >= parallel.pp)
    throw InternalError("cost model: stage " + std::to_string(stage) + " out of range [0, " +
                        std::to_string(parallel.pp) + ")");
}

void check_chunk(const ParallelSpec& parallel, int chunk) {
  const int chunks = model_chunks(parallel);
  if (chunk < 0 || chunk >= chunks)
    throw InternalError("cost model: chunk " + std::to_string(chunk) + " out of range [0, " + std::to_string(chunks) +
                        ")");
}

double gemm_rate_flops(const GpuSpec& gpu, const CostParams& params) {
  return gpu.peak_tflops * 1e12 * params.compute_efficiency;
}

// The attention core's forward FLOPs per micro-batch, whole layer: scores and softmax·V, 2·b·s²·(a·d) each.
double attention_core_flops(const ModelSpec& model) {
  const double b = model.micro_batch_size, s = model.seq_len;
  const double q = static_cast<double>(model.heads) * model.head_dim_or_default();
  return 4.0 * b * s * s * q;
}

}  // namespace

int bytes_per_element(const std::string& dtype) {
  if (dtype == "fp16" || dtype == "bf16") return 2;
  if (dtype == "fp32") return 4;
  throw ConfigError("", "model.dtype", "expected fp16, bf16 or fp32, got '" + dtype + "'");
}

std::int64_t padded_vocab(const ModelSpec& model, int tp) {
  const std::int64_t multiple = static_cast<std::int64_t>(model.vocab_divisor) * tp;
  return (model.vocab + multiple - 1) / multiple * multiple;
}

namespace {

// One whole layer's parameters with `experts` of its routed experts.
std::int64_t one_layer_parameters(const ModelSpec& model, int experts) {
  const LayerDescription layer = describe_layer(model, ParallelSpec{});
  return layer_sharded_per_rank(layer, 1) + layer_replicated_params(layer) + layer_expert_params(layer, experts);
}

// The whole model's parameters with `experts` routed experts per MoE layer.
std::int64_t parameters_with(const ModelSpec& model, int experts) {
  const std::int64_t h = model.hidden;
  std::int64_t layers = 0;  // a dense layer holds no routed expert, whatever `experts` says
  for_each_layer_kind(model, model_layer_mix(model),
                      [&](const ModelSpec& m, int count) { layers += count * one_layer_parameters(m, experts); });
  const std::int64_t word = static_cast<std::int64_t>(model.vocab) * h;
  return layers + word + (model.position == Position::kLearned ? static_cast<std::int64_t>(model.seq_len) * h : 0) +
         final_norm_params(model) + (model.tie_embeddings ? 0 : word);
}

}  // namespace

std::int64_t parameter_count(const ModelSpec& model) { return parameters_with(model, model.experts); }

std::int64_t active_parameter_count(const ModelSpec& model) { return parameters_with(model, model.top_k); }

double moe_all_to_all_bytes(const ModelSpec& model, const ParallelSpec& parallel) {
  if (!model.moe() || parallel.ep < 2) return 0.0;
  const double tokens = static_cast<double>(model.micro_batch_size) * model.seq_len / parallel.tp;
  return tokens * model.top_k * model.hidden * bytes_per_element(model.dtype) * (parallel.ep - 1) / parallel.ep;
}

int moe_all_to_alls(const ModelSpec& model, bool backward) {
  if (!model.moe()) return 0;
  return backward && model.recompute == Recompute::kFull ? 4 : 2;
}

double layer_forward_flops(const ModelSpec& model) {
  const double b = model.micro_batch_size, s = model.seq_len;
  const LayerDescription layer = describe_layer(model, ParallelSpec{});
  // An MoE layer's routed experts count at top_k per token (the expert GEMMs' FLOPs at balanced load).
  const double matrices = static_cast<double>(layer_matrix_elements(layer) + layer_expert_params(layer, model.top_k));
  return 2.0 * b * s * matrices + attention_core_flops(model);
}

double logits_forward_flops(const ModelSpec& model, int tp) {
  const double b = model.micro_batch_size, s = model.seq_len, h = model.hidden;
  return 2.0 * b * s * h * static_cast<double>(padded_vocab(model, tp));
}

ComputeCost layer_compute(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                          const CostParams& params) {
  const double tp = parallel.tp;
  const double layer_fwd = layer_forward_flops(model) / tp;
  const double recomputed = model.recompute == Recompute::kFull        ? layer_fwd
                            : model.recompute == Recompute::kSelective ? attention_core_flops(model) / tp
                                                                       : 0.0;
  ComputeCost c;
  c.forward_flops = layer_fwd;
  c.backward_flops = 2.0 * layer_fwd + recomputed;
  if (params.compute_model == ComputeModel::kEfficiency) {
    const double rate = gemm_rate_flops(gpu, params);
    c.forward_s = c.forward_flops / rate;
    c.backward_s = c.backward_flops / rate;
  } else {
    const PassTime t = layer_time(model, parallel, gpu, params);
    c.forward_s = t.forward_s;
    c.backward_s = t.backward_s;
  }
  return c;
}

ComputeCost chunk_compute(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                          const CostParams& params, int stage, int chunk) {
  check_stage(parallel, stage);
  check_chunk(parallel, chunk);
  const LayerMix mix = chunk_layer_mix(model, parallel, stage, chunk);
  const bool head = chunk_holds_head(parallel, stage, chunk);
  ComputeCost c;
  for_each_layer_kind(model, mix, [&](const ModelSpec& m, int count) {
    const ComputeCost layer = layer_compute(m, parallel, gpu, params);
    const double layers = static_cast<double>(count);
    c.forward_flops += layers * layer.forward_flops;
    c.backward_flops += layers * layer.backward_flops;
    c.forward_s += layers * layer.forward_s;
    c.backward_s += layers * layer.backward_s;
  });
  if (head) {
    const double logits = logits_forward_flops(model, parallel.tp) / parallel.tp;
    c.forward_flops += logits;
    c.backward_flops += 2.0 * logits;
  }
  if (params.compute_model == ComputeModel::kEfficiency) {
    const double rate = gemm_rate_flops(gpu, params);
    c.forward_s = c.forward_flops / rate;
    c.backward_s = c.backward_flops / rate;
    return c;
  }
  std::vector<PassTime> extras;
  if (head) extras.push_back(head_time(model, parallel, gpu, params));
  if (chunk_holds_embedding(stage, chunk)) extras.push_back(embedding_time(model, parallel, gpu, params));
  for (const PassTime& t : extras) {
    c.forward_s += t.forward_s;
    c.backward_s += t.backward_s;
  }
  if (!parallel.grad_accumulation_fusion)
    c.backward_s += grad_accumulation_s(model, parallel, gpu, params, stage, chunk);
  return c;
}

std::vector<double> beside_kernels_s(const TpLayerComm& comm, const ModelSpec& model, const ParallelSpec& parallel,
                                     const GpuSpec& gpu, const CostParams& params) {
  std::vector<LayerKernel> kernels;  // listed once, only when some collective runs beside a GEMM
  std::vector<double> out;
  for (const TpCollective& c : comm.collectives) {
    if (c.beside == nullptr) {
      out.push_back(0.0);
    } else if (params.compute_model == ComputeModel::kEfficiency) {
      out.push_back(c.beside_flops / gemm_rate_flops(gpu, params));
    } else {
      if (kernels.empty()) kernels = layer_kernels(model, parallel, gpu, params);
      const auto k = std::find_if(kernels.begin(), kernels.end(),
                                  [&](const LayerKernel& x) { return std::string(x.name) == c.beside; });
      if (k == kernels.end()) throw InternalError(std::string("cost model: no layer kernel named ") + c.beside);
      out.push_back(k->seconds);
    }
  }
  return out;
}

ComputeCost stage_compute(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                          const CostParams& params, int stage) {
  ComputeCost total;
  for (int chunk = 0; chunk < model_chunks(parallel); ++chunk) {
    const ComputeCost c = chunk_compute(model, parallel, gpu, params, stage, chunk);
    total.forward_flops += c.forward_flops;
    total.backward_flops += c.backward_flops;
    total.forward_s += c.forward_s;
    total.backward_s += c.backward_s;
  }
  return total;
}

double allreduce_units(TpCollectiveOp op) { return op == TpCollectiveOp::kAllReduce ? 1.0 : 0.5; }

double TpLayerComm::exposed_units(bool backward) const {
  double units = 0.0;
  for (const TpCollective& c : collectives)
    if (c.backward == backward && c.beside == nullptr) units += allreduce_units(c.op);
  return units;
}

TpLayerComm tp_comm_per_layer(const ModelSpec& model, const ParallelSpec& parallel) {
  TpLayerComm c;
  const double b = model.micro_batch_size, s = model.seq_len, h = model.hidden;
  c.tensor_bytes = b * s * h * bytes_per_element(model.dtype);
  if (parallel.tp == 1) return c;
  using Op = TpCollectiveOp;
  // Input- and weight-gradient GEMMs of QKV and fc1 have their forward GEMM's FLOPs.
  const BesideFlops beside = describe_layer(model, parallel).beside;
  const double qkv_flops = beside.qkv;
  const double fc1_flops = beside.fc1;
  // An MoE layer without shared experts has no TP-split MLP: its routed experts are whole on their GPU (expert
  // tensor parallelism 1) and read the sequence-parallel shard of tokens, so only attention's collectives remain.
  const bool mlp = !model.moe() || model.shared_experts > 0;
  std::vector<TpCollective> forward;
  // Transformer Engine's userbuffers (tp_comm_overlap, sequence parallelism only): the all-gathers ring-exchange
  // beside the GEMM that consumes them (1 SM), the reduce-scatters pipeline beside the GEMM that produces them.
  constexpr double kRingExchangeSms = 1.0, kPipelineSms = 16.0;
  if (parallel.sequence_parallel && parallel.tp_comm_overlap) {
    forward = {{Op::kAllGather, false, "qkv", qkv_flops, kRingExchangeSms},
               {Op::kReduceScatter, false, "proj", beside.proj, kPipelineSms},
               {Op::kAllGather, false, "fc1", fc1_flops, kRingExchangeSms},
               {Op::kReduceScatter, false, "fc2", beside.fc2, kPipelineSms}};
  } else if (parallel.sequence_parallel) {
    forward = {
        {Op::kAllGather, false}, {Op::kReduceScatter, false}, {Op::kAllGather, false}, {Op::kReduceScatter, false}};
  } else {
    forward = {{Op::kAllReduce, false}, {Op::kAllReduce, false}};
  }
  if (!mlp) forward.resize(forward.size() / 2);  // the attention's half: QKV and projection
  c.collectives = forward;
  if (model.recompute == Recompute::kFull)
    for (TpCollective r : forward) {
      r.backward = true;
      c.collectives.push_back(r);
    }
  if (parallel.sequence_parallel && parallel.tp_comm_overlap) {
    // The output gradients' all-gathers ring-exchange beside the dgrad GEMMs that read them; the input's
    // all-gather for the weight gradient and the input gradient's reduce-scatter are bulk overlaps.
    if (mlp) {
      c.collectives.push_back({Op::kAllGather, true, "fc2.dgrad", beside.fc2, kRingExchangeSms});
      c.collectives.push_back({Op::kAllGather, true, "fc1.dgrad", fc1_flops, kPipelineSms});
      c.collectives.push_back({Op::kReduceScatter, true, "fc1.wgrad", fc1_flops, kPipelineSms});
    }
    c.collectives.push_back({Op::kAllGather, true, "proj.dgrad", beside.proj, kRingExchangeSms});
    c.collectives.push_back({Op::kAllGather, true, "qkv.dgrad", qkv_flops, kPipelineSms});
    c.collectives.push_back({Op::kReduceScatter, true, "qkv.wgrad", qkv_flops, kPipelineSms});
  } else if (parallel.sequence_parallel) {
    if (mlp) {
      c.collectives.push_back({Op::kAllGather, true});  // fc2's output gradient
      c.collectives.push_back({Op::kAllGather, true, "fc1.dgrad", fc1_flops});
      c.collectives.push_back({Op::kReduceScatter, true, "fc1.wgrad", fc1_flops});
    }
    c.collectives.push_back({Op::kAllGather, true});  // the projection's output gradient
    c.collectives.push_back({Op::kAllGather, true, "qkv.dgrad", qkv_flops});
    c.collectives.push_back({Op::kReduceScatter, true, "qkv.wgrad", qkv_flops});
  } else if (parallel.async_tp_allreduce) {
    if (mlp) c.collectives.push_back({Op::kAllReduce, true, "fc1.wgrad", fc1_flops});
    c.collectives.push_back({Op::kAllReduce, true, "qkv.wgrad", qkv_flops});
  } else {
    if (mlp) c.collectives.push_back({Op::kAllReduce, true});
    c.collectives.push_back({Op::kAllReduce, true});
  }
  return c;
}

double pp_p2p_bytes(const ModelSpec& model, const ParallelSpec& parallel) {
  const double whole =
      static_cast<double>(model.micro_batch_size) * model.seq_len * model.hidden * bytes_per_element(model.dtype);
  return parallel.sequence_parallel || parallel.scatter_gather_p2p ? whole / parallel.tp : whole;
}

double pp_gather_bytes(const ModelSpec& model, const ParallelSpec& parallel) {
  if (parallel.tp == 1 || parallel.sequence_parallel || !parallel.scatter_gather_p2p) return 0.0;
  return static_cast<double>(model.micro_batch_size) * model.seq_len * model.hidden * bytes_per_element(model.dtype);
}

int grad_bytes(const ModelSpec& model, const ParallelSpec& parallel) {
  return parallel.grad_reduce_bytes > 0 ? parallel.grad_reduce_bytes : bytes_per_element(model.dtype);
}

namespace {

// Parameters of `mix`'s layers on one GPU, with the word and position embeddings when `first` (the first chunk of
// stage 0) and the final LayerNorm and (pp > 1) the LM head's word-embedding copy when `last`.
StageParams held_params(const ModelSpec& model, const ParallelSpec& parallel, const LayerMix& mix, bool first,
                        bool last) {
  const std::int64_t h = model.hidden;
  const std::int64_t tp = parallel.tp;
  const std::int64_t word_embedding_per_shard = padded_vocab(model, parallel.tp) / tp * h;
  StageParams p;
  for_each_layer_kind(model, mix, [&](const ModelSpec& m, int count) {
    const LayerDescription layer = describe_layer(m, parallel);
    p.sharded_per_shard += count * layer_sharded_per_rank(layer, parallel.tp);
    p.replicated += count * layer_replicated_params(layer);
    p.expert += count * layer_expert_params(layer, model.experts / parallel.ep);  // 0 for a dense layer
  });
  if (first) {
    p.sharded_per_shard += word_embedding_per_shard;
    if (model.position == Position::kLearned) p.replicated += static_cast<std::int64_t>(model.seq_len) * h;
  }
  if (last) {
    p.replicated += final_norm_params(model);
    // The LM head: untied, its own matrix; tied, with pp > 1 the last stage holds its own copy of the word embedding.
    if (!model.tie_embeddings || parallel.pp > 1) p.sharded_per_shard += word_embedding_per_shard;
  }
  return p;
}

}  // namespace

StageParams stage_params(const ModelSpec& model, const ParallelSpec& parallel, int stage) {
  check_stage(parallel, stage);
  return held_params(model, parallel, stage_layer_mix(model, parallel, stage), stage == 0, stage == parallel.pp - 1);
}

StageParams layer_params(const ModelSpec& model, const ParallelSpec& parallel) {
  return held_params(model, parallel, model.moe() ? LayerMix{1, 0} : LayerMix{0, 1}, false, false);
}

StageParams chunk_params(const ModelSpec& model, const ParallelSpec& parallel, int stage, int chunk) {
  check_stage(parallel, stage);
  check_chunk(parallel, chunk);
  return held_params(model, parallel, chunk_layer_mix(model, parallel, stage, chunk),
                     chunk_holds_embedding(stage, chunk), chunk_holds_head(parallel, stage, chunk));
}

bool fused_embedding_sync_applies(const ParallelSpec& parallel) {
  return parallel.fused_embedding_sync && parallel.pp > 1 && parallel.embedding_allreduce;
}

namespace {

// The word-embedding copies of `stage` that leave its DP sync because the fused embedding sync carries them.
int fused_embedding_copies(const ParallelSpec& parallel, int stage) {
  if (!fused_embedding_sync_applies(parallel)) return 0;
  return stage == 0 || stage == parallel.pp - 1 ? 1 : 0;
}

// Parameters of one GPU of `stage` that its DP sync carries: all of them but a word-embedding copy that the fused
// embedding sync carries instead.
std::int64_t dp_synced_params(const ModelSpec& model, const ParallelSpec& parallel, int stage) {
  const std::int64_t fused = fused_embedding_copies(parallel, stage) *
                             (padded_vocab(model, parallel.tp) / parallel.tp) * static_cast<std::int64_t>(model.hidden);
  return stage_params(model, parallel, stage).dense() - fused;
}

}  // namespace

double dp_gradient_bytes(const ModelSpec& model, const ParallelSpec& parallel, int stage) {
  return static_cast<double>(dp_synced_params(model, parallel, stage)) * grad_bytes(model, parallel);
}

double expert_gradient_bytes(const ModelSpec& model, const ParallelSpec& parallel, int stage) {
  return static_cast<double>(stage_params(model, parallel, stage).expert) * grad_bytes(model, parallel);
}

double embedding_sync_bytes(const ModelSpec& model, const ParallelSpec& parallel) {
  if (parallel.pp == 1 || !parallel.embedding_allreduce || !model.tie_embeddings) return 0.0;
  const auto vocab_rows = padded_vocab(model, parallel.tp) / parallel.tp;  // whole: padded to a multiple of tp
  return static_cast<double>(vocab_rows) * model.hidden * grad_bytes(model, parallel);
}

PpBoundary pp_boundary(const ModelSpec& model, const ParallelSpec& parallel) {
  const std::int64_t rows = static_cast<std::int64_t>(model.micro_batch_size) * model.seq_len;
  const bool sliced = parallel.tp > 1 && (parallel.sequence_parallel || parallel.scatter_gather_p2p);
  return {sliced ? (rows + parallel.tp - 1) / parallel.tp : rows, model.hidden};
}

bool pp_compresses(const ModelSpec& model, const ParallelSpec& parallel, int rank) {
  if (rank < 1) return false;
  const PpBoundary b = pp_boundary(model, parallel);
  return powersgd_compresses(b.rows, b.cols, rank);  // implies rank < min(rows, cols)
}

double pp_compressed_bytes(const ModelSpec& model, const ParallelSpec& parallel, int rank) {
  if (!pp_compresses(model, parallel, rank)) return pp_p2p_bytes(model, parallel);
  const PpBoundary b = pp_boundary(model, parallel);
  return static_cast<double>(b.rows + b.cols) * rank * 4.0;
}

double pp_compress_s(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu, const CostParams& params,
                     int rank) {
  if (!pp_compresses(model, parallel, rank)) return 0.0;
  const PpBoundary b = pp_boundary(model, parallel);
  return powersgd_batch_s(b.rows, b.cols, rank, 1, bytes_per_element(model.dtype), gpu, params);
}

double pp_decompress_s(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                       const CostParams& params, int rank) {
  if (!pp_compresses(model, parallel, rank)) return 0.0;
  const PpBoundary b = pp_boundary(model, parallel);
  const double m = static_cast<double>(b.rows), n = static_cast<double>(b.cols);
  const double bytes = m * n * bytes_per_element(model.dtype) + (m + n) * rank * 4.0;
  const double memory_s = bytes / (gpu.hbm_GBps * 1e9 * params.hbm_efficiency);
  const double compute_s = 2.0 * m * n * rank / gemm_rate_flops(gpu, params);
  return std::max(memory_s, compute_s);
}

std::vector<WeightMatrix> stage_matrices(const ModelSpec& model, const ParallelSpec& parallel, int stage) {
  check_stage(parallel, stage);
  const std::int64_t h = model.hidden;
  const std::int64_t tp = parallel.tp;
  const LayerMix mix = stage_layer_mix(model, parallel, stage);
  std::vector<WeightMatrix> out;
  // The MoE layers' matrices, then the dense layers' (a dense model's every layer); a dense layer's matrix of the
  // same name and shape as an MoE layer's (QKV, projection) adds to its count.
  const auto add_layers = [&](const ModelSpec& m, int layers) {
    for (const LayerWeight& w : describe_layer(m, parallel).weights) {
      if (!w.matrix) continue;
      const WeightMatrix x{.name = w.name,
                           .rows = w.shard_rows(parallel.tp),
                           .cols = w.shard_cols(parallel.tp),
                           .count = w.expert ? layers * static_cast<int>(w.count / parallel.ep) : layers,
                           .expert = w.expert};
      const auto same = std::find_if(out.begin(), out.end(), [&](const WeightMatrix& y) {
        return y.name == x.name && y.rows == x.rows && y.cols == x.cols && y.expert == x.expert;
      });
      if (same != out.end())
        same->count += x.count;
      else
        out.push_back(x);
    }
  };
  for_each_layer_kind(model, mix, add_layers);
  const std::int64_t vocab_rows = padded_vocab(model, parallel.tp) / tp;
  const bool last = stage == parallel.pp - 1;
  const int embedding_copies = (stage == 0 ? 1 : 0) + (model.tie_embeddings && last && parallel.pp > 1 ? 1 : 0) -
                               (model.tie_embeddings ? fused_embedding_copies(parallel, stage) : 0);
  if (embedding_copies > 0)
    out.push_back({.name = "word_embedding", .rows = vocab_rows, .cols = h, .count = embedding_copies});
  if (!model.tie_embeddings && last) out.push_back({.name = "output_layer", .rows = vocab_rows, .cols = h, .count = 1});
  if (stage == 0 && model.position == Position::kLearned)
    out.push_back({.name = "position_embedding", .rows = model.seq_len, .cols = h, .count = 1});
  return out;
}

PowerSgdWire powersgd_wire(const ModelSpec& model, const ParallelSpec& parallel, int stage, int rank, SyncGroup group) {
  if (rank < 1) throw InternalError("powersgd_wire: rank must be ≥ 1, got " + std::to_string(rank));
  const double bytes = grad_bytes(model, parallel);
  const bool experts = group == SyncGroup::kExpert;
  PowerSgdWire w;
  std::int64_t matrix_elements = 0;
  for (const WeightMatrix& m : stage_matrices(model, parallel, stage)) {
    if (m.expert != experts) continue;
    matrix_elements += m.elements() * m.count;
    if (powersgd_compresses(m.rows, m.cols, rank)) {
      w.p_bytes += static_cast<double>(m.count) * static_cast<double>(m.rows) * rank * bytes;
      w.q_bytes += static_cast<double>(m.count) * static_cast<double>(m.cols) * rank * bytes;
      w.compressed_matrices += m.count;
    } else {
      w.uncompressed_bytes += static_cast<double>(m.count) * static_cast<double>(m.elements()) * bytes;
      w.skipped_matrices += m.count;
    }
  }
  if (!experts) {  // the routed experts are all matrices
    const std::int64_t one_d = dp_synced_params(model, parallel, stage) - matrix_elements;
    w.uncompressed_bytes += static_cast<double>(one_d) * bytes;
  }
  return w;
}

double powersgd_compress_s(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                           const CostParams& params, int stage, int rank, SyncGroup group) {
  if (rank < 1) throw InternalError("powersgd_compress_s: rank must be ≥ 1, got " + std::to_string(rank));
  const int bytes = grad_bytes(model, parallel);
  const bool experts = group == SyncGroup::kExpert;
  double total_s = 0.0;
  for (const WeightMatrix& m : stage_matrices(model, parallel, stage)) {
    if (m.expert != experts || !powersgd_compresses(m.rows, m.cols, rank)) continue;
    total_s += powersgd_batch_s(m.rows, m.cols, rank, m.count, bytes, gpu, params);
  }
  return total_s;
}

double powersgd_batch_s(std::int64_t rows, std::int64_t cols, int rank, int count, int element_bytes,
                        const GpuSpec& gpu, const CostParams& params) {
  if (rank < 1) throw InternalError("powersgd_batch_s: rank must be ≥ 1, got " + std::to_string(rank));
  if (!params.kernel_profile.empty()) return profiled_batch_s(params.kernel_profile, rows, cols, rank, count);
  const double hbm_Bps = gpu.hbm_GBps * 1e9 * params.hbm_efficiency;
  const double rate = gemm_rate_flops(gpu, params);
  const double r = rank;
  const double bytes = element_bytes;
  const double m = static_cast<double>(rows), n = static_cast<double>(cols);
  const double memory_s = kPowerSgdHbmPasses * m * n * bytes / hbm_Bps;
  const double gemm_s = 6.0 * m * n * r / rate;
  const double orth_s = 2.0 * m * r * r / rate;
  return count * (std::max(memory_s, gemm_s) + orth_s) + r * params.orth_column_latency_s;
}

namespace {

// One measured rank's step time as fixed + per_element · elements: a least-squares line through the rank's shapes
// (time against element count). The fixed part is what a step costs whatever its size (launches, host round trips,
// the orthogonalisation's per-matrix Cholesky); a batch pays it once. With one shape, or a line that would need a
// negative fixed part, the line goes through the origin (all per element).
struct StepLine {
  int rank = 0;
  double fixed_s = 0.0;
  double per_element_s = 0.0;
};

StepLine fit_rank(const std::vector<KernelTime>& profile, int rank) {
  core::LineSums sums;  // time against elements
  for (const KernelTime& e : profile)
    if (e.rank == rank) sums.add(static_cast<double>(e.rows) * static_cast<double>(e.cols) * e.count, e.step_s);
  StepLine line{rank, 0.0, sums.xy / sums.xx};
  if (sums.w >= 2 && sums.det() > 1e-12 * sums.w * sums.xx) {
    const double slope = sums.slope();
    const double intercept = sums.intercept_for(slope);
    if (intercept >= 0.0 && slope >= 0.0) line = {rank, intercept, slope};
  }
  return line;
}

}  // namespace

double profiled_batch_s(const std::vector<KernelTime>& profile, std::int64_t rows, std::int64_t cols, int rank,
                        int count) {
  if (profile.empty()) throw InternalError("profiled_batch_s: empty profile");
  if (count < 1) return 0.0;
  std::vector<int> ranks;
  for (const KernelTime& e : profile) ranks.push_back(e.rank);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  // The measured ranks around `rank` (the nearest one outside them), and the weight of the upper one.
  std::size_t hi = 0;
  while (hi + 1 < ranks.size() && ranks[hi] < rank) ++hi;
  const std::size_t lo = hi > 0 && ranks[hi] > rank ? hi - 1 : hi;
  const double w =
      hi == lo || rank >= ranks[hi] ? 1.0 : (rank - ranks[lo]) / static_cast<double>(ranks[hi] - ranks[lo]);
  const double elements = static_cast<double>(rows) * static_cast<double>(cols);
  const auto batch_at = [&](int r) {
    const StepLine line = fit_rank(profile, r);
    for (const KernelTime& e : profile)  // this very batch, measured
      if (e.rank == r && e.rows == rows && e.cols == cols && e.count == count) return e.step_s;
    for (const KernelTime& e : profile)  // a measured shape keeps its own time; only the fixed part is shared
      if (e.rank == r && e.rows == rows && e.cols == cols)
        return line.fixed_s + (e.step_s - line.fixed_s) / e.count * count;
    return line.fixed_s + line.per_element_s * elements * count;
  };
  return (1.0 - w) * batch_at(ranks[lo]) + w * batch_at(ranks[hi]);
}

double profiled_copy_s(const std::vector<CopyTime>& profile, std::int64_t bytes) {
  if (profile.empty()) throw InternalError("profiled_copy_s: empty copy profile");
  std::vector<CopyTime> p = profile;
  std::sort(p.begin(), p.end(), [](const CopyTime& a, const CopyTime& b) { return a.bytes < b.bytes; });
  const auto x = static_cast<double>(bytes);
  const auto at = [&](const CopyTime& a, const CopyTime& b) {  // along the line through a and b
    const double slope = (b.seconds - a.seconds) / static_cast<double>(b.bytes - a.bytes);
    return a.seconds + slope * (x - static_cast<double>(a.bytes));
  };
  if (bytes <= p.front().bytes) return p.front().seconds * x / static_cast<double>(p.front().bytes);
  for (std::size_t i = 1; i < p.size(); ++i)
    if (bytes <= p[i].bytes && p[i].bytes > p[i - 1].bytes) return at(p[i - 1], p[i]);
  const std::size_t last = p.size() - 1;
  if (last == 0 || p[last].bytes == p[last - 1].bytes) return p[last].seconds * x / static_cast<double>(p[last].bytes);
  return std::max(0.0, at(p[last - 1], p[last]));
}

}  // namespace edgc::sim
