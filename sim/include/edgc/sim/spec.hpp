#pragma once
// Typed descriptions of what is simulated: the cluster, the model, the parallel layout. Parsed once at the edge
// (tools/) from scenario JSON; everything in sim/ takes these structs. Units are in the field names.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace edgc::sim {

/// One measured point of a fused causal attention kernel on one GPU, batch 1: `heads` query heads of `head_dim`
/// channels, `group` query heads per key/value head (1 = multi-head, 4 = grouped-query), sequence `seq`. Rates count
/// 4·heads·seq²·head_dim FLOPs forward and 10·heads·seq²·head_dim backward, halved for the causal mask (the work the
/// kernel skips), the convention of tools/bench/layer_rates_torch.py which measured them.
struct AttentionRate {
  int head_dim = 0;
  int seq = 0;
  int heads = 0;
  int group = 1;
  double forward_tflops = 0.0;
  double backward_tflops = 0.0;
};

/// One measured GEMM of a shape grid on one GPU: output m × n, inner k, `tflops` achieved (2·m·n·k FLOPs over the
/// measured time), with 16-bit or FP8 operands.
struct GemmRate {
  double m = 0.0;
  double n = 0.0;
  double k = 0.0;
  double tflops = 0.0;
  bool fp8 = false;
};

struct GpuSpec {
  std::string name;          ///< e.g. "V100-SXM2-32GB"
  double peak_tflops = 0.0;  ///< dense FP16/BF16 tensor-core peak, TFLOP/s
  double hbm_GBps = 0.0;     ///< HBM bandwidth, GB/s (1e9 B/s)
  // The kernel-level compute model (kernel_model.hpp); all three come from cited measurements of the GPU
  // (scenarios/SOURCES.md §19). Absent (0) = only the single-efficiency model (compute.efficiency) is available.
  int sm_count = 0;            ///< streaming multiprocessors (spec)
  double matmul_tflops = 0.0;  ///< measured maximum achievable dense 16-bit GEMM rate, TFLOP/s
  double matmul_m = 0.0;       ///< the GEMM shape that rate was measured at: output m × n, inner k
  double matmul_n = 0.0;
  double matmul_k = 0.0;
  double kernel_overhead_us = 0.0;  ///< fixed time of one kernel (launch, ramp-up, tail), measured, µs
  /// The measured maximum achievable FP8 GEMM rate (e4m3 operands, per-tensor scales) and its shape; 0 = no FP8
  /// figure, and model.precision = fp8 is refused on this GPU.
  double fp8_matmul_tflops = 0.0;
  double fp8_matmul_m = 0.0;
  double fp8_matmul_n = 0.0;
  double fp8_matmul_k = 0.0;
  /// Measured rates of the fused causal attention kernel (model.attention = flash); empty = none measured, and
  /// flash attention is refused under the kernel-level model (kernel_model.hpp, attention_s).
  std::vector<AttentionRate> attention_rates{};
  std::string attention_source{};  ///< which kernel the rates were measured on, for the result and the report
  /// Measured GEMM rates over a shape grid (16-bit and FP8); empty = none. Where given, the kernel-level model
  /// scales its tile/wave time by the measured-to-modelled ratio at the shape (kernel_model.hpp, gemm_s).
  std::vector<GemmRate> gemm_rates{};
  bool has_kernel_model() const noexcept { return sm_count > 0 && matmul_tflops > 0.0; }
};

/// How the GPUs of one node are wired.
enum class IntraNodeTopology {
  kSwitch,        ///< NVSwitch: every GPU has one link of `bandwidth_GBps` per direction to a non-blocking switch
  kDgx1CubeMesh,  ///< DGX-1 V100 hybrid cube-mesh (documented approximation in platform.cpp)
};

/// How nodes are connected.
enum class Fabric {
  kStar,     ///< non-blocking switch: only the NICs limit
  kFatTree,  ///< two-level fat tree with `oversubscription` at the leaf uplinks
};

struct ClusterSpec {
  std::string name;
  int gpus_per_node = 8;
  int nodes = 1;
  GpuSpec gpu;
  IntraNodeTopology intra_topology = IntraNodeTopology::kSwitch;
  double intra_bandwidth_GBps = 0.0;  ///< per GPU link, per direction
  double intra_latency_us = 0.0;      ///< per hop
  int nics_per_node = 1;              ///< GPUs share NICs evenly: gpus_per_node / nics_per_node GPUs per NIC
  double nic_bandwidth_GBps = 0.0;    ///< per NIC, per direction (400 Gb/s NDR = 50 GB/s)
  double inter_latency_us = 0.0;      ///< NIC to NIC through the fabric
  Fabric fabric = Fabric::kStar;
  int fat_tree_nodes_per_leaf = 4;  ///< kFatTree only
  double oversubscription = 1.0;    ///< kFatTree only: leaf downlink / uplink bandwidth ratio, ≥ 1
  double price_per_gpu_hour_usd = 0.0;

  int total_gpus() const noexcept { return gpus_per_node * nodes; }
};

/// Network model of the simulation.
enum class NetworkProfileKind {
  kIdeal,  ///< CM02, no cross-traffic, no TCP gamma: contention-free transfers take exactly latency + bytes/bandwidth
  kCalibrated,  ///< CM02 with size-dependent bandwidth efficiency and latency factors fitted to NCCL measurements
};

/// Size-dependent efficiency of one kind of link (intra-node or inter-node), fitted from nccl-tests logs:
/// achieved bandwidth = efficiency(bytes) · link bandwidth, interpolated log-linearly between points and held
/// constant outside them; latency multiplied by `latency_factor`.
struct EfficiencyCurve {
  std::vector<std::pair<double, double>> points;  ///< (message bytes, efficiency in (0, 1]), increasing bytes
  double latency_factor = 1.0;
};

/// All-reduce algorithm (collectives.hpp): auto chooses ring or tree per group and size; ring or tree force one.
enum class CollectiveAlgorithm { kAuto, kRing, kTree };

struct NetworkProfile {
  NetworkProfileKind kind = NetworkProfileKind::kIdeal;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;  ///< network.algorithm
  EfficiencyCurve intra;                                       ///< kCalibrated only
  EfficiencyCurve inter;                                       ///< kCalibrated only
};

/// Activation recomputation (Megatron's --recompute-granularity): none; selective (Korthikanti et al. 2022: only
/// the attention core — scores, softmax, dropout, softmax·V — is recomputed in the backward pass, its activations
/// are not kept); full (every layer keeps only its input and re-runs its whole forward in the backward pass).
enum class Recompute { kNone, kSelective, kFull };

/// The MLP of a layer: GPT's fc1 → GeLU → fc2, or the gated SwiGLU of Llama-style models (fc1 holds the gate and up
/// projections as one matrix of 2·ffn_hidden outputs, as Megatron-Core stores it; silu(gate)·up feeds fc2).
enum class Mlp { kGelu, kSwiglu };
/// The normalisation before attention and MLP (and after the last layer): LayerNorm (weight and bias) or RMSNorm
/// (weight only).
enum class Norm { kLayerNorm, kRmsNorm };
/// Position information: a learned position embedding (s × h parameters on the first stage) or rotary embeddings
/// applied to queries and keys in every layer (no parameters).
enum class Position { kLearned, kRope };
/// Biases of the linear layers: on all four (GPT), none (Llama, Megatron's --disable-bias-linear), or on QKV only
/// (Qwen2, --disable-bias-linear --add-qkv-bias).
enum class LinearBias { kAll, kNone, kQkv };

/// The attention core: materialised (scores, softmax, dropout and softmax·V as separate kernels, the s × s scores
/// kept for the backward pass: Megatron-LM until 2022) or one fused flash-attention kernel forward and one backward,
/// which keep only the output and the softmax statistics (Megatron-Core with Transformer Engine).
enum class Attention { kMaterialised, kFlash };

/// A dense decoder-only transformer. The defaults are Megatron's GPT (multi-head attention, GeLU MLP of 4·hidden,
/// LayerNorm, learned positions, biases, dropout, the LM head tied to the word embedding); sim/layer.hpp turns it
/// into the one layer description every cost derives from.
struct ModelSpec {
  std::string name;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int seq_len = 0;
  int vocab = 0;
  int micro_batch_size = 0;    ///< sequences per micro-batch
  int global_batch_size = 0;   ///< sequences per iteration, all data-parallel replicas together
  std::string dtype = "fp16";  ///< training precision of activations and gradients on the wire: fp16 | bf16 | fp32
  Recompute recompute = Recompute::kNone;
  int kv_heads = 0;    ///< key/value heads (grouped-query attention); 0 = heads (multi-head attention)
  int head_dim = 0;    ///< channels per head (Megatron's --kv-channels); 0 = hidden / heads
  int ffn_hidden = 0;  ///< MLP width (Megatron's --ffn-hidden-size); 0 = 4·hidden
  Mlp mlp = Mlp::kGelu;
  Norm norm = Norm::kLayerNorm;
  Position position = Position::kLearned;
  LinearBias bias = LinearBias::kAll;
  bool tie_embeddings = true;  ///< the LM head shares the word embedding (false: its own vocab × hidden matrix)
  bool dropout = true;         ///< attention and hidden dropout in training (Llama-style pretraining: off)
  bool qk_norm = false;        ///< a norm of every query and key head before attention (Qwen3; --qk-layernorm)
  int vocab_divisor = 128;     ///< Megatron's --make-vocab-size-divisible-by: vocab padded to a multiple of it · tp
  Attention attention = Attention::kMaterialised;
  /// The transformer layers' linear GEMMs (QKV, projection, fc1, fc2, forward and backward) in FP8 (Transformer
  /// Engine's delayed or current scaling); attention, the LM head, communication and the optimizer stay in `dtype`.
  bool fp8 = false;
  // Mixture of experts (Mixtral-, Qwen-MoE-style; sim/layer.hpp): every layer's MLP is `experts` expert MLPs of
  // width moe_ffn_hidden (same mlp kind as the dense MLP), each token routed by a learned h × experts router to
  // `top_k` of them, plus `shared_experts` experts every token passes through (one MLP of width
  // shared_experts · moe_ffn_hidden, Megatron-Core's shared expert). 0 experts = a dense model.
  int experts = 0;
  int top_k = 0;
  int moe_ffn_hidden = 0;  ///< 0 = ffn_hidden's default
  int shared_experts = 0;
  /// Tokens of the busiest expert over the mean (≥ 1): the expert GEMMs of every GPU run at the busiest expert's
  /// size (the slowest GPU sets the pace of the all-to-all that follows). A capacity factor caps it (tokens beyond
  /// capacity are dropped); dropless routing (Megatron-Core's default) runs at the imbalance itself. 1 = perfectly
  /// balanced routing, a stated assumption that flatters the MoE layer's time.
  double moe_load_factor = 1.0;
  /// Which transformer layers are MoE layers (Megatron-Core's --moe-layer-freq, as its pattern): one entry per
  /// layer, 1 = MoE, 0 = a dense layer (attention and the dense MLP of width ffn_hidden); empty = every layer.
  std::vector<std::uint8_t> moe_layer_pattern;

  bool moe() const noexcept { return experts > 0; }
  /// Whether transformer layer `layer` (0-based, in model order) is an MoE layer.
  bool moe_layer(int layer) const {
    return moe() && (moe_layer_pattern.empty() || moe_layer_pattern.at(static_cast<std::size_t>(layer)) != 0);
  }
  std::int64_t moe_ffn_or_default() const { return moe_ffn_hidden > 0 ? moe_ffn_hidden : ffn_or_default(); }

  int kv_heads_or_default() const { return kv_heads > 0 ? kv_heads : heads; }
  int head_dim_or_default() const { return head_dim > 0 ? head_dim : (heads > 0 ? hidden / heads : 0); }
  std::int64_t ffn_or_default() const { return ffn_hidden > 0 ? ffn_hidden : 4 * static_cast<std::int64_t>(hidden); }
};

enum class PipelineSchedule { kGpipe, kOneFOneB, kInterleaved };

/// How global ranks are ordered over the three dimensions, innermost first (layout.hpp).
enum class RankOrder {
  kTpDpPp,  ///< Megatron-LM's default ("tp-dp-pp"): rank = (pp·dp + dp_index)·tp + tp_index
  kTpPpDp,  ///< Megatron-LM's --use-tp-pp-dp-mapping ("tp-pp-dp"): rank = (dp_index·pp + pp)·tp + tp_index
};

struct ParallelSpec {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int microbatches = 1;  ///< per iteration per pipeline = global_batch / (micro_batch · dp)
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;
  int virtual_stages = 1;  ///< model chunks per GPU for kInterleaved
  RankOrder order = RankOrder::kTpDpPp;

  // Megatron-LM features (scenario keys parallelism.*, scenarios/README.md); defaults follow Megatron-Core.
  bool sequence_parallel = false;      ///< --sequence-parallel: LayerNorm/dropout sharded over TP, TP all-reduces
                                       ///< become reduce-scatter + all-gather (same bytes), p2p tensors ÷ tp
  bool distributed_optimizer = false;  ///< --use-distributed-optimizer: Adam state and step ÷ dp (ZeRO-1)
  bool overlap_grad_reduce = false;    ///< --overlap-grad-reduce / PyTorch DDP: uncompressed DP buckets all-reduced
                                       ///< during the stage's last backward pass
  double grad_bucket_params = 0.0;     ///< parameters per DP bucket; 0 = Megatron-Core's max(4e7, 1e6·dp)
  int grad_reduce_bytes = 0;           ///< bytes per gradient element on the DP wire; 0 = model.dtype's
  bool embedding_allreduce = true;     ///< first ↔ last stage word-embedding gradient all-reduce when pp > 1
  bool fused_embedding_sync = false;   ///< Optimus-CC's fused embedding sync: the word-embedding copies leave the first
                                       ///< and last stages' DP syncs and are all-reduced once over their 2·dp GPUs
  bool scatter_gather_p2p = true;      ///< pipeline tensors sent ÷ tp, then all-gathered over TP by the receiver
  bool grad_accumulation_fusion = true;  ///< weight-gradient GEMMs accumulate into the gradient buffer; false = a
                                         ///< separate add of each micro-batch's gradients (Megatron before 2022)
  bool async_tp_allreduce = true;  ///< Megatron's asynchronous TP all-reduce (default since 2021-09): without sequence
                                   ///< parallelism, the all-reduce of a column-parallel linear's input gradient runs
                                   ///< beside its weight-gradient GEMM (tp_comm_per_layer)
  bool overlap_param_gather = false;  ///< --overlap-param-gather (distributed optimizer): the bf16 parameters'
                                      ///< all-gather runs bucket by bucket beside the next iteration's first forward
                                      ///< pass instead of after the optimizer step
  /// Expert parallelism (Megatron-Core's --expert-model-parallel-size): the experts of every MoE layer are split
  /// over ep GPUs of a stage, tokens reach them by an all-to-all over that group. Expert tensor parallelism
  /// (--expert-tensor-parallel-size) is 1: every expert whole on its GPU. The stage's tp·dp GPUs form tp·dp/ep
  /// expert-parallel groups and ep expert-data-parallel groups (expert gradients are synchronised over the
  /// tp·dp/ep GPUs that hold the same experts; layout.hpp).
  int ep = 1;
  int etp = 1;
  /// Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm): in the steady state a forward and a
  /// backward pass of two micro-batches run as one step, each one's token all-to-alls beside the other's compute.
  bool moe_a2a_overlap = false;
  bool expert_groups = false;    ///< the model is a mixture of experts (set by validate(), layout.hpp): the stage's
                                 ///< expert-parallel and expert-data-parallel groups exist
  bool tp_comm_overlap = false;  ///< --tp-comm-overlap (Transformer Engine userbuffers; needs sequence parallelism):
                                 ///< the forward pass's all-gathers and reduce-scatters, and the backward pass's
                                 ///< all-gathers, run beside the GEMMs that consume or produce them
};

/// Whether DP collectives run while pipeline transfers may use the same NICs: the overlapped gradient sync during
/// the backward passes, or the overlapped parameter all-gather during the first forward pass, with pp > 1.
inline bool dp_overlaps_pipeline(const ParallelSpec& p) noexcept {
  return p.pp > 1 && (p.overlap_grad_reduce || (p.distributed_optimizer && p.overlap_param_gather));
}

}  // namespace edgc::sim
