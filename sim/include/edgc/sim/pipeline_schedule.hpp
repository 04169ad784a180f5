#pragma once
// The order in which one pipeline stage runs its forward and backward passes, per schedule. Pure arithmetic, no
// SimGrid: the iteration's GPU actors (gpu_worker.cpp) execute this list, and tests check it without an engine.
//
// Rules (p = pp, s = stage, m = microbatches, v = virtual_stages; every pass is of chunk 0 unless interleaved):
//  * GPipe: F0 … F(m−1), then B0 … B(m−1).
//  * 1F1B (PipeDream-Flush, Megatron-LM's non-interleaved schedule): w = min(p − 1 − s, m) warm-up forwards
//    F0 … F(w−1); then m − w steady rounds "F(w + i), B(i)"; then the cool-down backwards B(m − w) … B(m − 1).
//    At most min(p − s, m) micro-batches are in flight (forwarded, not yet backwarded) at once.
//  * Interleaved 1F1B (Megatron-LM's forward_backward_pipelining_with_interleaving): m·v passes each way; pass
//    k ∈ [0, m·v) is micro-batch (k / (p·v))·p + k % p, forward of chunk (k / p) % v and backward of chunk
//    v − 1 − (k / p) % v (groups of p micro-batches walk the chunks up going forward and down going back);
//    w = min(2·(p − 1 − s) + (v − 1)·p, m·v) warm-up forwards, then m·v − w steady rounds "forward k = w + i,
//    backward k = i", then the remaining backwards. At most min(w + 1, m·v) (micro-batch, chunk) passes are in
//    flight at once. Unlike Megatron, m = p does not switch every stage to "all forwards first".
#include <vector>

#include "edgc/sim/spec.hpp"

namespace edgc::sim {

/// Direction of one pipeline pass.
enum class PassKind { kForward, kBackward };

/// One pass of one pipeline stage: which micro-batch, through which of the stage's model chunks.
struct Pass {
  PassKind kind = PassKind::kForward;
  int microbatch = 0;  ///< 0-based index within the iteration, < microbatches
  int chunk = 0;       ///< 0-based model chunk of this stage, < virtual_stages (always 0 unless interleaved)
  friend bool operator==(const Pass&, const Pass&) = default;
};

/// Megatron-Core's combined 1F1B (ParallelSpec::moe_a2a_overlap): whether neighbouring passes `a` and `b` of a pass
/// order can run as one step, a forward and a backward pass of two different micro-batches.
inline bool combinable(const Pass& a, const Pass& b) noexcept {
  return a.kind != b.kind && a.microbatch != b.microbatch;
}

/// The passes stage `stage` (0-based, 0 = first stage) of a `pp`-stage pipeline runs in one iteration, in order:
/// 2 · microbatches · virtual_stages passes, each (micro-batch, chunk) once forward and once backward, the forward
/// first. Arguments mirror ParallelSpec (microbatches per pipeline per iteration, virtual_stages = model chunks per
/// GPU); validate() (layout.hpp) accepts exactly the layouts this accepts.
/// Throws ConfigError (where "pipeline_schedule") naming the field at fault when:
///  * pp < 1 ("parallelism.pp"), stage ∉ [0, pp) ("stage"), microbatches < 1 ("parallelism.microbatches"),
///    virtual_stages < 1 ("parallelism.virtual_stages");
///  * virtual_stages ≠ 1 for GPipe or 1F1B ("parallelism.virtual_stages");
///  * interleaved with pp < 2 ("parallelism.pp") or microbatches not divisible by pp ("parallelism.microbatches"):
///    Megatron's requirements, without which the pass numbering above names micro-batches ≥ microbatches.
std::vector<Pass> pass_order(PipelineSchedule schedule, int pp, int stage, int microbatches, int virtual_stages);

}  // namespace edgc::sim
