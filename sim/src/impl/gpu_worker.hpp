#pragma once
// The actor of one GPU in a simulated iteration (GpuWorker in gpu_worker.cpp): its pipeline schedule, the TP
// collectives of each pass, the pipeline messages, the DP sync, the embedding all-reduce and the optimizer step.
#include "impl/iteration_state.hpp"

namespace edgc::sim::impl {

// Starts the actor of global rank `rank` on its GPU's host (state->platform), named "gpu<rank>". `state` outlives
// the simulation run; the actor reads its stage's StageWork and fills state->records[rank]. `counterpart` ≥ 0: a
// mirror (IterationState::mirrored) of that GPU of the first block, which runs from its DP sync on.
void spawn_gpu_worker(IterationState* state, int rank, int counterpart = -1);

}  // namespace edgc::sim::impl
