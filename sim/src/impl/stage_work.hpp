#pragma once
// Per-stage inputs of the GPU workers, computed once before the actors start: compute per model chunk, the TP
// collectives of a pass, the DP sync's bytes and buckets, the pipeline messages' compression, the optimizer step.
#include <string>
#include <vector>

#include "edgc/sim/collectives.hpp"
#include "edgc/sim/cost_model.hpp"
#include "edgc/sim/iteration.hpp"
#include "edgc/sim/platform.hpp"
#include "edgc/sim/spec.hpp"
#include "impl/iteration_state.hpp"

namespace edgc::sim::impl {

// Throws ConfigError (naming `where`) when `plan` has not exactly pp entries (field "dp_sync") or a rank is
// negative ("dp_sync.rank", "dp_sync.pp_rank").
void check_plan(const DpSyncPlan& plan, const ParallelSpec& parallel, const std::string& where);

// The stage's gradient split into DP buckets (overlap_grad_reduce), in backward order.
std::vector<Bucket> gradient_buckets(const ModelSpec& model, const ParallelSpec& par, int stage);
// The same buckets' parameters (model dtype) for the overlapped all-gather, in forward order.
std::vector<Bucket> param_buckets(const ModelSpec& model, const ParallelSpec& par, int stage);

// One layer's TP collectives on `group` for one micro-batch (tp_comm_per_layer): the exposed ones of each pass in
// all-reduce units (folded into the pass's ring), and what the ones beside GEMMs add to the backward pass. A
// collective beside a GEMM takes its ring's time c (units · channel_ring_s of the all-reduce) while the GEMM of k
// seconds loses the SMs of the ring's NCCL channels (one thread block each) for as long as the collective runs: the
// pair ends at max(c, k + share · c), i.e. adds max(c − k, share · c) to the GEMM. The share is the collective's SMs
// (TpCollective::sms, Transformer Engine's userbuffers) or its NCCL ring channels over the GPU's SMs.
struct LayerTp {
  double tensor_bytes = 0.0;
  double allreduce_s = 0.0;  // channel_ring_s of one all-reduce of the tensor
  double forward_units = 0.0;
  double backward_units = 0.0;
  double backward_overlap_s = 0.0;
  double forward_overlap_s = 0.0;  // tp_comm_overlap: what the forward collectives beside GEMMs add
};
LayerTp layer_tp(const Platform& platform, const Group& group, const ModelSpec& model, const ParallelSpec& par,
                 const CostParams& params);

// The inputs of every GPU of pipeline stage `stage`, whose TP group (one of the stage's, all alike) is `tp_group`
// and, for a mixture of experts with ep > 1, whose expert-parallel group (likewise) is `ep_group` (else nullptr).
StageWork stage_work(const Platform& platform, const ModelSpec& model, const ParallelSpec& par,
                     const CostParams& params, int stage, const StageSync& sync, const Group& tp_group,
                     const Group* ep_group = nullptr);

}  // namespace edgc::sim::impl
