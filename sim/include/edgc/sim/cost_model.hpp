#pragma once
// Closed-form costs of one pipeline stage of a Megatron GPT (pre-LayerNorm transformer with GELU MLP of width
// 4h, learned position embedding, LM head tied to the word embedding), per GPU = per tensor-parallel shard.
// These are the numbers the simulation turns into compute activities and messages; nothing here runs SimGrid.
//
// Assumptions (each one a place where a real run can differ):
//  * FLOPs follow Narayanan et al. 2021 (arXiv 2104.04473, §3.5 / appendix): one layer's forward pass costs
//    24·b·s·h² + 4·b·s²·h FLOPs, the backward pass twice that, and full activation recomputation one more
//    forward; the logits GEMM costs 2·b·s·h·V forward and twice that backward and is never recomputed; the
//    embedding lookup, LayerNorm, softmax and GELU are ignored (they are memory-bound and small at these h).
//  * TP splits every GEMM evenly, so per-GPU FLOPs are the layer's FLOPs / tp.
//  * The vocabulary is padded as Megatron's `--make-vocab-size-divisible-by 128` does: up to a multiple of
//    128·tp, so the vocab-parallel embedding splits evenly (padded_vocab()).
//  * The word embedding is tied to the LM head. With pp > 1 Megatron keeps a second copy on the last stage
//    whose gradient is all-reduced with the first stage's copy (the "embedding group") before the optimizer;
//    both copies are also synchronised over DP, so the last stage's DP bytes include the copy
//    (embedding_sync_bytes() is the first↔last all-reduce). Position embeddings live on the first stage only.
//  * Time is FLOPs / (gpu.peak_tflops · compute_efficiency): one achieved-efficiency figure for all GEMMs,
//    HFU-like since recomputation FLOPs are counted (scenarios/SOURCES.md §6).
//  * Gradients are synchronised in model.dtype (bytes_per_element); PowerSGD works on the same element size.
#include <cstdint>
#include <string>
#include <vector>

#include "edgc/core/powersgd_rule.hpp"
#include "edgc/sim/spec.hpp"

namespace edgc::sim {

/// Achieved-efficiency knobs of the cost model (scenario `compute.*`).
/// One measured PowerSGD step (compress + decompress with error feedback) of a rows × cols fp32 gradient at
/// `rank`: an entry of a kernel profile written by edgc_bench_powersgd_cuda (schema edgc.kernel_profile/1).
struct KernelTime {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  int rank = 0;
  double step_s = 0.0;
  int count = 1;  ///< same-shape matrices in the measured batch (edgc live measures its stages' batches)
};

/// One measured pack + unpack of `edgc live`'s fused uncompressed buffer (PowerSgd::step's dense path: G (+ E)
/// copied into one buffer before the all-reduce, the sum divided back into the gradients after it): `bytes` of
/// fp32 gradient, seconds. Megatron's contiguous gradient buffer has no such copy, so only `edgc validate` uses it.
struct CopyTime {
  std::int64_t bytes = 0;
  double seconds = 0.0;
};

/// How pass times are computed: one efficiency for every FLOP, or the kernel-level model (kernel_model.hpp).
enum class ComputeModel { kEfficiency, kKernels };

struct CostParams {
  /// Fraction of gpu.peak_tflops reached by transformer and PowerSGD GEMMs, in (0, 1]. Default 0.4 sits
  /// between the V100 (0.32) and H100 (0.50) HFU defaults of scenarios/SOURCES.md §6; set it per cluster.
  double compute_efficiency = 0.4;
  /// Fraction of gpu.hbm_GBps reached by PowerSGD's memory passes, in (0, 1]. Default 0.85
  /// (measured V100 memcpy reaches 86–90 %, scenarios/SOURCES.md §2).
  double hbm_efficiency = 0.85;
  /// Fixed time per column of one batched orthogonalisation of P, seconds (kernel launches of a Gram–Schmidt
  /// loop). Default 0: the design batches same-shape matrices into one fused orthogonalisation. Unbatched
  /// PyTorch code costs ≈ 25–50 µs per column per matrix (scenarios/SOURCES.md §10).
  double orth_column_latency_s = 0.0;
  /// kEfficiency: forward/backward seconds = FLOPs / (peak · compute_efficiency). kKernels: the kernel-level model
  /// of kernel_model.hpp (needs GpuSpec::has_kernel_model()); compute_efficiency then only rates PowerSGD's GEMMs.
  ComputeModel compute_model = ComputeModel::kEfficiency;
  /// Seconds of one optimizer step per GPU; < 0 = modelled from HBM traffic (kernel_model.hpp, optimizer_step_s()).
  double optimizer_step_s = -1.0;
  /// Measured step times; when not empty, powersgd_compress_s() uses them instead of the roofline.
  std::vector<KernelTime> kernel_profile{};
  /// Measured pack + unpack copies of live's fused dense buffer (a kernel profile's `copies`); empty = none measured.
  std::vector<CopyTime> copy_profile{};
};

/// Bytes of one element of `dtype` (fp16 | bf16 → 2, fp32 → 4); throws ConfigError on field "model.dtype".
int bytes_per_element(const std::string& dtype);

/// Vocabulary rounded up to a multiple of 128·tp (Megatron's padding for the vocab-parallel embedding).
std::int64_t padded_vocab(const ModelSpec& model, int tp);

/// Parameters of the model with `model.vocab` as given (no padding), the embedding counted once (tied):
/// L·(12h² + 13h) + V·h + s·h + 2h for GPT; every routed expert counted.
std::int64_t parameter_count(const ModelSpec& model);
/// Parameters one token passes through: parameter_count() with top_k routed experts per MoE layer instead of all
/// (the "active" count MoE models publish; the word embedding counted once, as parameter_count()). Equal to
/// parameter_count() for a dense model.
std::int64_t active_parameter_count(const ModelSpec& model);

/// Bytes one GPU sends in one token all-to-all of an MoE layer (dispatch or combine, forward or backward), summed
/// over its peers: its b·s·k routed token copies (÷ tp with sequence parallelism) of h elements in model.dtype,
/// less the (1/ep) that stay on the GPU. 0 for a dense model or ep = 1.
double moe_all_to_all_bytes(const ModelSpec& model, const ParallelSpec& parallel);
/// Token all-to-alls of one MoE layer per micro-batch and pass: dispatch and combine (2) forward; backward their
/// gradients (2), and with full recomputation the forward pair again (4).
int moe_all_to_alls(const ModelSpec& model, bool backward);

/// FLOPs of one whole transformer layer (all TP shards together) for one micro-batch, forward pass only.
double layer_forward_flops(const ModelSpec& model);
/// FLOPs of the logits GEMM (all TP shards together, padded vocabulary) for one micro-batch, forward only.
double logits_forward_flops(const ModelSpec& model, int tp);

/// Compute of one micro-batch on one GPU. backward includes the recomputation (model.recompute: the whole forward
/// for kFull, the attention core for kSelective). FLOPs count GEMMs only; seconds follow params.compute_model.
struct ComputeCost {
  double forward_flops = 0.0;
  double backward_flops = 0.0;
  double forward_s = 0.0;
  double backward_s = 0.0;
};

/// One transformer layer for one micro-batch on one GPU (recomputation included, gradient accumulation and the
/// embedding and head not): FLOPs as above, seconds from layer_time() under the kernel-level model, else FLOPs at
/// peak · compute.efficiency.
ComputeCost layer_compute(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                          const CostParams& params);

/// Cost of model chunk `chunk` ∈ [0, virtual_stages) of pipeline stage `stage` ∈ [0, pp) (Megatron's
/// interleaving: chunk c of stage p is virtual stage c·pp + p; the LM head sits on the last chunk of the last
/// stage). For the non-interleaved schedules pass chunk 0. Throws InternalError for indices out of range.
ComputeCost chunk_compute(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                          const CostParams& params, int stage, int chunk);
/// Sum of chunk_compute over all chunks of `stage`: one micro-batch through every layer the GPU holds.
ComputeCost stage_compute(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                          const CostParams& params, int stage);

/// Tensor-parallel collectives of one transformer layer for one micro-batch on one GPU (none when tp == 1). Each
/// moves the layer's activation tensor of b·s·h elements (TpLayerComm::tensor_bytes): all-reduced whole, or
/// reduce-scattered to / all-gathered from 1/tp shards. In Megatron-LM's order:
///  * without sequence parallelism (the f and g operators): forward, an all-reduce after the projection and after
///    fc2; backward, an all-reduce of fc1's and of QKV's input gradient. With ParallelSpec::async_tp_allreduce each
///    of those two runs beside its linear's weight-gradient GEMM ("fc1.wgrad", "qkv.wgrad"): Megatron launches it
///    asynchronously before that GEMM and waits after it (LinearWithGradAccumulationAndAsyncCommunication);
///  * with sequence parallelism: forward, an all-gather before QKV and fc1 and a reduce-scatter after the projection
///    and fc2; backward, an all-gather of fc2's and of the projection's output gradient (exposed), and for fc1 and
///    QKV an all-gather of the sequence-sharded input again, beside the input-gradient GEMM (".dgrad": the weight
///    gradient needs the whole input, which Megatron does not keep), then the reduce-scatter of the input gradient
///    beside the weight-gradient GEMM (".wgrad"). Megatron always runs these two asynchronously;
///  * full recomputation repeats the forward pass's collectives at the start of the backward pass (exposed);
///    selective recomputation re-runs the attention core, which has none.
enum class TpCollectiveOp { kAllReduce, kReduceScatter, kAllGather };
struct TpCollective {
  TpCollectiveOp op = TpCollectiveOp::kAllReduce;
  bool backward = false;
  const char* beside = nullptr;  ///< the layer kernel (layer_kernels() name) it overlaps; nullptr = exposed
  double beside_flops = 0.0;     ///< that GEMM's FLOPs (its time under compute.model = efficiency)
  /// SMs the collective holds while it runs beside the GEMM: 0 = one per NCCL ring channel (NCCL's kernels);
  /// Transformer Engine's userbuffers (tp_comm_overlap): 1 for a ring-exchange all-gather (copy engines move the
  /// data), 16 for a pipelined or bulk reduce-scatter or bulk all-gather (its default num_sm).
  double sms = 0.0;
};
/// An all-reduce counts 1, a reduce-scatter or all-gather ½: a ring all-reduce is a reduce-scatter followed by an
/// all-gather of the same tensor, each D − 1 of its 2(D − 1) steps.
double allreduce_units(TpCollectiveOp op);
struct TpLayerComm {
  double tensor_bytes = 0.0;  ///< b·s·h·e, the tensor every collective moves
  std::vector<TpCollective> collectives;
  /// Sum of allreduce_units() over one pass's exposed collectives (`beside` == nullptr).
  double exposed_units(bool backward) const;
};
TpLayerComm tp_comm_per_layer(const ModelSpec& model, const ParallelSpec& parallel);
/// Seconds of the GEMM each of comm.collectives runs beside (TpCollective::beside), in the same order: its
/// layer_kernels() time under the kernel-level model (the list is built once), its FLOPs at peak ·
/// compute.efficiency otherwise; 0 for an exposed collective.
std::vector<double> beside_kernels_s(const TpLayerComm& comm, const ModelSpec& model, const ParallelSpec& parallel,
                                     const GpuSpec& gpu, const CostParams& params);

/// Bytes one GPU sends to the adjacent pipeline stage per micro-batch and direction (activations forward, their
/// gradients backward): b·s·h elements, ÷ tp with sequence parallelism (the tensor is sequence-sharded) or
/// Megatron's scatter/gather (each TP rank sends its 1/tp slice; the receiver all-gathers over TP, see
/// pp_gather_bytes()).
double pp_p2p_bytes(const ModelSpec& model, const ParallelSpec& parallel);
/// Bytes of the receiver's TP all-gather after a scattered pipeline message (b·s·h elements, the whole tensor), or
/// 0 when none is needed (tp == 1, sequence parallelism, or scatter/gather off).
double pp_gather_bytes(const ModelSpec& model, const ParallelSpec& parallel);
/// The activation gradient one GPU sends back to the previous stage per micro-batch, as the matrix the boundary
/// compressor works on (kernels/boundary_compression.hpp): (micro-batch · sequence) × hidden, the rows ÷ tp (rounded
/// up) when the message is a 1/tp slice (sequence parallelism or scatter/gather, as pp_p2p_bytes()).
struct PpBoundary {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
};
PpBoundary pp_boundary(const ModelSpec& model, const ParallelSpec& parallel);
/// Bytes of one backward pipeline message (activation gradients) compressed at `rank` with PowerSGD: (rows + cols)
/// · rank fp32 factors (P and Q; the boundary compressor keeps them in fp32, as Optimus-CC does), or pp_p2p_bytes()
/// when rank is 0 or the skip rule (powersgd_compresses) sends the tensor uncompressed.
double pp_compressed_bytes(const ModelSpec& model, const ParallelSpec& parallel, int rank);
/// Whether a backward pipeline message at `rank` is compressed (rank ≥ 1 and the skip rule passes).
bool pp_compresses(const ModelSpec& model, const ParallelSpec& parallel, int rank);
/// Sender's compute for one compressed backward message, seconds: one PowerSGD step of the boundary matrix
/// (powersgd_batch_s: P = MQ with the carried error added, the orthogonalisation, Q = MᵀP, Ĝ and the new error),
/// roofline or measured profile. 0 when the message is not compressed.
double pp_compress_s(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu, const CostParams& params,
                     int rank);
/// Receiver's compute for one compressed backward message, seconds: Ĝ = P·Qᵀ written in model.dtype, the larger of
/// its HBM traffic (the output plus the fp32 factors, at hbm_efficiency) and its 2·rows·cols·rank FLOPs at the GEMM
/// rate. 0 when the message is not compressed.
double pp_decompress_s(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                       const CostParams& params, int rank);
/// Bytes per gradient element on the DP wire: parallel.grad_reduce_bytes, or model.dtype's when 0.
int grad_bytes(const ModelSpec& model, const ParallelSpec& parallel);

/// Parameters held by one GPU of pipeline stage `stage` (all its chunks). sharded: split over TP (counted per
/// shard); replicated: identical on every TP rank (LayerNorm, row-parallel biases, position embedding).
struct StageParams {
  std::int64_t sharded_per_shard = 0;
  std::int64_t replicated = 0;
  std::int64_t expert = 0;  ///< routed experts' weights on this GPU (experts / ep per MoE layer), synced over EDP
  std::int64_t per_gpu() const noexcept { return sharded_per_shard + replicated + expert; }
  std::int64_t dense() const noexcept { return sharded_per_shard + replicated; }  ///< synced over DP
};
StageParams stage_params(const ModelSpec& model, const ParallelSpec& parallel, int stage);

/// The share of stage_params() in model chunk `chunk` of `stage` (chunk 0 for the non-interleaved schedules): the
/// chunk's layers, the word and position embeddings on the first chunk of stage 0, the final LayerNorm and (pp > 1)
/// the LM head's copy of the word embedding on the last chunk of the last stage.
StageParams chunk_params(const ModelSpec& model, const ParallelSpec& parallel, int stage, int chunk);
/// Parameters of one transformer layer on one GPU (its share of chunk_params()).
StageParams layer_params(const ModelSpec& model, const ParallelSpec& parallel);

/// Gradient bytes one GPU of `stage` all-reduces over its DP group per iteration, uncompressed (grad_bytes() each);
/// the routed experts' gradients are not among them (expert_gradient_bytes).
double dp_gradient_bytes(const ModelSpec& model, const ParallelSpec& parallel, int stage);
/// Routed experts' gradient bytes one GPU of `stage` all-reduces over its expert-data-parallel group (tp·dp/ep
/// GPUs) per iteration, uncompressed. 0 for a dense model.
double expert_gradient_bytes(const ModelSpec& model, const ParallelSpec& parallel, int stage);
/// Bytes of the word-embedding gradient all-reduce between the first and last stage (0 when pp == 1 or
/// parallel.embedding_allreduce is off), grad_bytes() per element. With parallel.fused_embedding_sync it is the one
/// all-reduce over the 2·dp GPUs holding a copy (fused_embedding_sync_applies()), and the copies leave the two
/// stages' DP syncs (dp_gradient_bytes, stage_matrices).
double embedding_sync_bytes(const ModelSpec& model, const ParallelSpec& parallel);
/// Whether the embedding sync is fused into one all-reduce of the 2·dp copies (Optimus-CC's fused embedding
/// synchronisation): parallel.fused_embedding_sync, pp > 1 and parallel.embedding_allreduce.
bool fused_embedding_sync_applies(const ParallelSpec& parallel);

/// One 2-D weight gradient per TP shard, viewed as rows × cols, appearing `count` times on the stage.
struct WeightMatrix {
  std::string name;  ///< "qkv", "proj", "fc1", "fc2", "router", "expert.fc1", "word_embedding", …
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  int count = 0;
  bool expert = false;  ///< a routed expert's: synchronised over the expert-data-parallel group
  std::int64_t elements() const noexcept { return rows * cols; }
};
/// The stage's 2-D weights on one GPU (an MoE layer's: the router, the shared experts as fc1 and fc2, and
/// experts / ep copies of each routed expert's, marked `expert`): per layer QKV h×3h/tp, proj h/tp×h, fc1 h×4h/tp, fc2
/// 4h/tp×h; the word embedding (V_padded/tp × h) on the first stage and, with pp > 1, its copy on the last; the
/// position embedding (s × h) on the first stage. Everything else of the stage is 1-D.
std::vector<WeightMatrix> stage_matrices(const ModelSpec& model, const ParallelSpec& parallel, int stage);

/// PowerSGD's skip rule (core/powersgd_rule.hpp): a rows×cols matrix is sent compressed at rank r only when
/// (rows + cols)·r·2 < rows·cols, i.e. compression at least halves its bytes.
using core::powersgd_compresses;

/// DP wire bytes of one GPU of `stage` per iteration under rank-`rank` PowerSGD.
struct PowerSgdWire {
  double p_bytes = 0.0;             ///< first all-reduce: P (rows × r) of every compressed matrix
  double q_bytes = 0.0;             ///< second all-reduce: Q (cols × r) of every compressed matrix
  double uncompressed_bytes = 0.0;  ///< 1-D parameters and skipped matrices, one fused all-reduce
  int compressed_matrices = 0;
  int skipped_matrices = 0;
  double total_bytes() const noexcept { return p_bytes + q_bytes + uncompressed_bytes; }
};
/// Which gradients a DP sync carries: the dense ones (over DP) or the routed experts' (over expert DP).
enum class SyncGroup { kDense, kExpert };
/// Throws InternalError when rank < 1. `group` kExpert: the routed experts' matrices over expert DP (no 1-D part).
PowerSgdWire powersgd_wire(const ModelSpec& model, const ParallelSpec& parallel, int stage, int rank,
                           SyncGroup group = SyncGroup::kDense);

/// Roofline estimate of PowerSGD's compress + decompress compute on one GPU of `stage` at rank `rank`
/// (scenarios/SOURCES.md §10), seconds. Per compressed m×n matrix: the larger of 8 passes of m·n elements
/// over HBM at hbm_efficiency (error feedback fused into the GEMMs: read M+E twice, write M̂ and the new E)
/// and the 6·m·n·r FLOPs of P = MQ, Q = MᵀP, M̂ = PQᵀ at peak · compute_efficiency; plus the
/// orthogonalisation of P, 2·m·r² FLOPs at the same rate, and orth_column_latency_s per column once per
/// batch of same-shape matrices. Skipped matrices and 1-D parameters cost nothing here (plain all-reduce).
/// With params.kernel_profile, each batch of same-shape matrices instead costs profiled_batch_s() (the
/// orthogonalisation and its launches are part of a measured step). The sum of powersgd_batch_s() over the stage's
/// compressed matrices.
double powersgd_compress_s(const ModelSpec& model, const ParallelSpec& parallel, const GpuSpec& gpu,
                           const CostParams& params, int stage, int rank, SyncGroup group = SyncGroup::kDense);

/// The per-matrix part of powersgd_compress_s(), for `count` same-shape rows × cols matrices compressed together
/// at `rank` (one batch: the orthogonalisation's per-column latency is paid once) with elements of
/// `element_bytes` bytes (2 for fp16/bf16, 4 for fp32), seconds: the roofline above, or with params.kernel_profile
/// profiled_batch_s(). Does not apply the skip rule: callers pass matrices that are compressed (`edgc
/// validate` passes the groups a live run compressed). Throws InternalError when rank < 1.
double powersgd_batch_s(std::int64_t rows, std::int64_t cols, int rank, int count, int element_bytes,
                        const GpuSpec& gpu, const CostParams& params);

/// `count` same-shape rows × cols matrices compressed in one batch at `rank`, from a non-empty measured profile of
/// single-matrix steps, seconds. Per measured rank, the steps are fitted as fixed + per-element · m·n over the
/// profile's shapes (least squares; through the origin when the rank has one shape or the fit's fixed part would be
/// negative): the batch pays the fixed part once (launches, host round trips and the per-matrix Cholesky run once
/// for the whole batch, one CTA per matrix) and the per-element part for every matrix. A measured shape keeps its
/// own step time: fixed + (measured − fixed) · count. Between measured ranks the result is interpolated linearly;
/// outside them the nearest measured rank is used. 0 for count < 1. An entry measured on a batch (KernelTime::count
/// > 1) counts as count matrices of its shape: its per-matrix part is (measured − fixed) / its count, and an entry
/// of exactly this shape, rank and count gives its own time.
double profiled_batch_s(const std::vector<KernelTime>& profile, std::int64_t rows, std::int64_t cols, int rank,
                        int count);

/// Pack + unpack seconds of `bytes` through live's fused dense buffer from a non-empty copy profile: linear
/// between measured sizes, through the origin below the smallest, along the last two sizes' slope above the largest
/// (the smallest's rate with one size). Throws InternalError on an empty profile.
double profiled_copy_s(const std::vector<CopyTime>& profile, std::int64_t bytes);

}  // namespace edgc::sim
