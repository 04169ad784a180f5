// One GPU of a simulated iteration as an S4U actor: a plain loop over its pipeline schedule's passes, then its DP
// sync, the embedding all-reduce and the optimizer step. What each step costs comes from StageWork; which closed
// forms it may take from IterationState (the arguments: sim/README.md, "Closed forms and folding").
#include "impl/gpu_worker.hpp"

#include <xbt/log.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "edgc/sim/collectives.hpp"
#include "edgc/sim/pipeline_schedule.hpp"
#include "edgc/sim/variability.hpp"
#include "impl/closed_forms.hpp"
#include "impl/traffic.hpp"
#include "transfer_payload.hpp"

XBT_LOG_NEW_DEFAULT_SUBCATEGORY(edgc_gpu_worker, edgc_iteration, "edgc: the actor of one GPU in an iteration");

namespace edgc::sim::impl {
namespace {

// One GPU: runs its stage's schedule, then its stage's DP sync.
class GpuWorker {
 public:
  GpuWorker(IterationState* state, int rank, int counterpart)
      : state_(state),
        rank_(rank),
        counterpart_(counterpart),
        coord_(state->layout.coord_of(rank)),
        slowdown_(is_straggler(state->variability, rank) ? state->variability.straggler_slowdown : 1.0) {}

  void operator()() {
    speed_ = sg4::this_actor::get_host()->get_speed();
    sg4::ActorPtr overlapped;
    sg4::ActorPtr gather;
    if (counterpart_ >= 0) {
      take_counterpart_pipeline();
    } else {
      run_pipeline(overlapped, gather);
    }
    if (overlapped) {
      overlapped->join();
    } else {
      record().sync_start_s = now();
      if (counterpart_ < 0 && state_->mirrored()) release_mirrors();
      dp_sync();
    }
    if (gather) gather->join();  // long done: the first forward pass waited for its last bucket
    expert_sync();
    record().sync_end_s = now();
    embedding_sync();
    optimizer_step();
    if (work().param_bytes > 0) dp_collective(CollectiveOp::kAllGather, work().param_bytes, "dp param all-gather");
    if (work().expert_param_bytes > 0) {
      const double start = now();
      edp_collective(CollectiveOp::kAllGather, work().expert_param_bytes, "expert param all-gather");
      record().expert_param_gather_s = now() - start;
    }
    record().finish_s = now();
    ++state_->progress.gpus_done;
    XBT_DEBUG("rank %d (stage %d) done at %g s", rank_, coord_.pp, now());
  }

 private:
  // A mirror (IterationState::mirrored): waits until its counterpart in the first block of replicas reaches its DP
  // sync, the moment this GPU would (blocks_run_alike), and takes its pipeline figures, which are this GPU's.
  void take_counterpart_pipeline() const {
    state_->sync_reached[static_cast<std::size_t>(counterpart_)]->acquire();
    const RankRecord& twin = state_->records[static_cast<std::size_t>(counterpart_)];
    RankRecord& mine = record();
    mine.compute_s = twin.compute_s;
    mine.tp_comm_s = twin.tp_comm_s;
    mine.last_backward_end_s = twin.last_backward_end_s;
    mine.pp_send_bytes = twin.pp_send_bytes;
    mine.pp_comm_s = twin.pp_comm_s;
    mine.pp_compression_s = twin.pp_compression_s;
    mine.param_gather_wait_s = twin.param_gather_wait_s;
    mine.all_to_all_s = twin.all_to_all_s;
    // The DP collectives beside its passes (mirror_by_symmetry's parameter all-gathers), all begun before its sync.
    for (const Interval& i : twin.dp_comms)
      if (i.start_s < twin.sync_start_s) mine.dp_comms.push_back(i);
  }

  // This GPU of the first block has reached its DP sync: lets each of its mirrors (one per other block) go.
  void release_mirrors() const {
    const int mirrors = state_->parallel.dp / state_->mirror_block - 1;
    for (int m = 0; m < mirrors; ++m) state_->sync_reached[static_cast<std::size_t>(rank_)]->release();
  }

  // The passes of this GPU's schedule, until its last pipeline sends have arrived; `overlapped` and `gather`: the
  // overlapped gradient sync and parameter all-gather actors, where they run.
  void run_pipeline(sg4::ActorPtr& overlapped, sg4::ActorPtr& gather) {
    const ParallelSpec& par = state_->parallel;
    const std::vector<Pass> passes = pass_order(par.schedule, par.pp, coord_.pp, par.microbatches, par.virtual_stages);
    if (!work().param_buckets.empty()) gather = start_param_gather();
    for (std::size_t i = 0; i < passes.size(); ++i) {
      const Pass& pass = passes[i];
      if (combines(passes, i)) {
        const Pass& next = passes[i + 1];
        combined_step(pass.kind == PassKind::kForward ? pass : next, pass.kind == PassKind::kForward ? next : pass);
        ++i;
      } else if (pass.kind == PassKind::kForward) {
        forward(pass.microbatch, pass.chunk);
      } else {
        const bool overlap = i + 1 == passes.size() && !work().buckets.empty();
        if (overlap) overlapped = start_overlapped_sync();
        backward(pass.microbatch, pass.chunk, overlap);
      }
    }
    record().last_backward_end_s = now();
    // Megatron's pipeline sends are blocking (the schedule waits on its isend/irecv before moving on), so the
    // gradient sync starts once this GPU's last sends have arrived. It also makes stages separable: after this
    // point only the stage's own DP traffic uses its links (whole_run.hpp, stages_separable).
    for (Outbox& out : outboxes_)
      for (const sg4::CommPtr& c : out.pending) finish(c);
  }

  RankRecord& record() const { return state_->records[static_cast<std::size_t>(rank_)]; }
  const StageWork& work() const { return state_->stages[static_cast<std::size_t>(coord_.pp)]; }
  double now() const { return sg4::Engine::get_clock() - state_->t0; }

  void note(const std::string& name, const char* category, double start_s) const {
    if (state_->record_timeline) record().events.push_back({rank_, name, category, start_s, now()});
  }

  // This GPU's DP group in IterationState::dp_groups (index stage · tp + tp_index).
  std::size_t dp_group_index() const { return grid_index(coord_.pp, state_->parallel.tp, coord_.tp); }

  // Global rank of stage `stage` of this GPU's pipeline.
  int pipeline_rank(int stage) const { return state_->layout.rank_of({coord_.tp, stage, coord_.dp}); }

  // Blocking receive of the next `purpose` message for `chunk`; counts it as taken, so that its sender may let go
  // of the finished send (see send()).
  void receive(P2p purpose, int mb, int chunk) const {
    const double start = now();
    const std::size_t c = state_->channel(purpose, rank_, chunk);
    state_->p2p_inbox[c]->get<int>();
    ++state_->p2p_taken[c];
    // A compressed activation gradient is reconstructed (Ĝ = P·Qᵀ) before anything else reads it.
    if (purpose == P2p::kGradient) {
      const int p = state_->parallel.pp;
      const int sender = coord_.pp < p - 1 ? coord_.pp + 1 : 0;
      pp_codec(state_->stages[static_cast<std::size_t>(sender)].grad_decompress_s, "decompress grad", mb, chunk);
    }
    // Megatron's scatter/gather: the message was this TP rank's slice; the TP group all-gathers the tensor over
    // NVLink (a closed form, as the TP rings of tp_all_reduce's closed-form path).
    if (state_->p2p_gather_s > 0) sg4::this_actor::sleep_for(state_->p2p_gather_s);
    if (state_->record_timeline)
      note(std::string("recv ") + p2p_name(purpose) + " " + pass_name(mb, chunk), "p2p", start);
  }

  // "3" for micro-batch 3, "3.1" for its chunk 1 under the interleaved schedule.
  std::string pass_name(int mb, int chunk) const {
    return state_->parallel.virtual_stages > 1 ? std::to_string(mb) + "." + std::to_string(chunk) : std::to_string(mb);
  }

  // Asynchronous send of a `purpose` message to chunk `to_chunk` of pipeline stage `to_stage`.
  // Sends the receiver has taken are finished: wait() on them, which returns at once. SimGrid 3.32 keeps an async
  // comm on its sender's activity list until the sender waits on it (test() does not remove it) and scans that
  // list whenever one of the sender's activities ends, so keeping finished sends costs O(sends²) per GPU;
  // detached or host-to-host comms would sit on one global list instead.
  void send(P2p purpose, int to_stage, int to_chunk) {
    const std::size_t c = state_->channel(purpose, pipeline_rank(to_stage), to_chunk);
    Outbox* out = nullptr;
    for (Outbox& o : outboxes_)
      if (o.channel == c) out = &o;
    if (out == nullptr) out = &outboxes_.emplace_back(Outbox{c, 0, {}});
    std::vector<sg4::CommPtr>& pending = out->pending;
    const std::int64_t oldest = out->posted - static_cast<std::int64_t>(pending.size());  // message number
    std::size_t finished = 0;
    while (finished < pending.size() && oldest + static_cast<std::int64_t>(finished) < state_->p2p_taken[c])
      finish(pending[finished++]);
    pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(finished));
    const std::uint64_t bytes = purpose == P2p::kActivation ? state_->p2p_bytes : work().grad_send_bytes;
    pending.push_back(state_->p2p_inbox[c]->put_async(&g_payload, bytes));
    record().pp_send_bytes += static_cast<double>(bytes);
    ++out->posted;
  }

  // Waits for a pipeline send (returns at once when it arrived) and counts its transfer time: from the moment both
  // sides were ready to its arrival.
  void finish(const sg4::CommPtr& comm) const {
    comm->wait();
    record().pp_comm_s += comm->get_finish_time() - comm->get_start_time();
  }

  // Compression work on a pipeline message (the sender's P, Q and error, or the receiver's Ĝ = P·Qᵀ), a sleep.
  void pp_codec(double seconds, const char* what, int mb, int chunk) const {
    if (seconds <= 0) return;
    const double start = now();
    sg4::this_actor::sleep_for(seconds);
    record().pp_compression_s += now() - start;
    if (state_->record_timeline) note(std::string(what) + " " + pass_name(mb, chunk), "compress", start);
  }

  // The pass's FLOPs scaled by this GPU's straggler slowdown and the pass's jitter factor (both 1 by default, and
  // then the FLOPs are passed on untouched).
  double varied(double flops, int mb, int chunk, bool backward) const {
    const double factor = slowdown_ * jitter_factor(state_->variability, rank_, mb, chunk, backward);
    return factor == 1.0 ? flops : flops * factor;
  }

  // A pass alone on its GPU: SimGrid would run execute(flops) at the host's full speed, i.e. for exactly
  // flops / speed seconds, since nothing else ever computes on a GPU host (compression and the TP closed form are
  // sleeps, which take no share of the host). Sleeping that long gives the same times with a cheaper activity
  // (an Exec costs about twice a sleep in SimGrid 3.32).
  void compute(double flops, const std::string& name) const {
    const double start = now();
    sg4::this_actor::sleep_for(flops / speed_);
    record().compute_s += now() - start;
    note(name, "compute", start);
  }

  // The final backward pass while the overlapped DP sync runs (start_overlapped_sync): its FLOPs in segments, one
  // per bucket, each ending where that bucket's gradients are complete (Bucket::ready), which it then hands to the
  // sync actor. Where the GPU's SM count is known, the segments are Execs on the host, sharing it with the NCCL
  // kernels of the buckets in flight (comm_sm_share_): the pass slows while a bucket is all-reduced, and later
  // buckets become ready later. Otherwise they are sleeps, as compute() is.
  void overlapped_compute(double flops, const std::string& name) const {
    const double start = now();
    double done = 0.0;
    for (const Bucket& b : work().buckets) {
      const double part = flops * (b.ready - done);
      done = b.ready;
      if (part > 0 && comm_sm_share_ > 0) {
        sg4::this_actor::execute(part);
      } else if (part > 0) {
        sg4::this_actor::sleep_for(part / speed_);
      }
      bucket_ready_->release();
    }
    record().compute_s += now() - start;
    note(name, "compute", start);
  }

  // The pass's exposed TP collectives (`bytes` folded into one ring all-reduce), then `overlap_s`: what the
  // collectives that ran beside the pass's GEMMs added to it (layer_tp).
  void tp_all_reduce(std::uint64_t bytes, double ring_s, double extra_latency_s, double overlap_s,
                     const std::string& name) const {
    if (state_->parallel.tp == 1 || (bytes == 0 && overlap_s <= 0)) return;
    const double start = now();
    if (bytes > 0 && state_->tp_closed_form) {
      tp_ring(bytes, ring_s, extra_latency_s + overlap_s);  // one sleep for both
    } else {
      if (bytes > 0) tp_ring(bytes, ring_s, extra_latency_s);
      if (overlap_s > 0) sg4::this_actor::sleep_for(overlap_s);
    }
    record().tp_comm_s += now() - start;
    note(name, "tp", start);
  }

  void tp_ring(std::uint64_t bytes, double ring_s, double extra_latency_s) const {
    const std::size_t group = grid_index(coord_.pp, state_->parallel.dp, coord_.dp);
    if (state_->tp_closed_form) {
      // Every member finishes the contention-free ring ring_s after the last one arrived: the last to arrive
      // sleeps that long, then meets the others at the group's barrier, which releases them all together. (The
      // count cannot mix passes: nobody passes the barrier before the whole group reached it.)
      // With the TP ranks folded (tp_members 1) the group's other members arrive alike and nobody waits.
      int& arrived = state_->tp_arrived[group];
      if (++arrived == state_->tp_members) {
        arrived = 0;
        sg4::this_actor::sleep_for(ring_s + extra_latency_s);
      }
      if (state_->tp_members > 1) state_->tp_barriers[group]->wait();
    } else {
      ring_all_reduce(state_->tp_groups[group], coord_.tp, bytes);
      if (extra_latency_s > 0) sg4::this_actor::sleep_for(extra_latency_s);
    }
  }

  // Whether passes i and i + 1 run as one combined 1F1B step (combined_step): the option is on, this GPU's stage
  // has expert-parallel groups, and the two are a forward and a backward pass of different micro-batches, neither
  // the first forward pass (it waits on the overlapped parameter all-gather) nor the last backward pass beside the
  // overlapped gradient sync. Every GPU of a stage runs the same passes, so its expert-parallel group pairs alike.
  bool combines(const std::vector<Pass>& passes, std::size_t i) const {
    if (!state_->parallel.moe_a2a_overlap || state_->ep_groups.empty() || i + 1 >= passes.size()) return false;
    if (!combinable(passes[i], passes[i + 1]) || param_gather_pending_) return false;
    return !(i + 2 == passes.size() && !work().buckets.empty());
  }

  // Chunk c of stage p is virtual stage c·pp + p: activations flow p → p + 1 within a chunk and from the last
  // stage to stage 0 of the next chunk; gradients flow back the same way. A pass is: receive its input, compute
  // (with its TP collectives), its MoE token all-to-alls, send its output.
  void forward(int mb, int chunk) {
    forward_receive(mb, chunk);
    forward_compute(mb, chunk);
    const ChunkWork& w = work().chunks[static_cast<std::size_t>(chunk)];
    finish_all_to_all(start_all_to_all(w.a2a_forward_bytes), w.a2a_forward_extra_latency_s, "a2a F", mb, chunk);
    forward_send(chunk);
  }

  void backward(int mb, int chunk, bool overlapped_sync) {
    backward_receive(mb, chunk);
    backward_compute(mb, chunk, overlapped_sync);
    const ChunkWork& w = work().chunks[static_cast<std::size_t>(chunk)];
    finish_all_to_all(start_all_to_all(w.a2a_backward_bytes), w.a2a_backward_extra_latency_s, "a2a B", mb, chunk);
    backward_send(mb, chunk);
  }

  // Megatron-Core's combined 1F1B (parallelism.moe_a2a_overlap): a forward and a backward pass of two different
  // micro-batches run as one step, each pass's token all-to-alls beside the other pass's compute (its layers'
  // dispatch and combine interleaved with the other's attention and experts): the backward pass's all-to-alls
  // beside the forward compute, then the forward pass's beside the backward compute. What a pass's all-to-alls
  // take beyond the other's compute stays exposed.
  void combined_step(const Pass& f, const Pass& b) {
    forward_receive(f.microbatch, f.chunk);
    backward_receive(b.microbatch, b.chunk);
    const ChunkWork& fw = work().chunks[static_cast<std::size_t>(f.chunk)];
    const ChunkWork& bw = work().chunks[static_cast<std::size_t>(b.chunk)];
    PendingAllToAll backward_a2a = start_all_to_all(bw.a2a_backward_bytes);
    forward_compute(f.microbatch, f.chunk);
    finish_all_to_all(std::move(backward_a2a), bw.a2a_backward_extra_latency_s, "a2a B", b.microbatch, b.chunk, true);
    PendingAllToAll forward_a2a = start_all_to_all(fw.a2a_forward_bytes);
    backward_compute(b.microbatch, b.chunk, false);
    finish_all_to_all(std::move(forward_a2a), fw.a2a_forward_extra_latency_s, "a2a F", f.microbatch, f.chunk, true);
    forward_send(f.chunk);
    backward_send(b.microbatch, b.chunk);
  }

  void forward_receive(int mb, int chunk) {
    if (coord_.pp > 0 || chunk > 0) receive(P2p::kActivation, mb, chunk);
  }

  void forward_compute(int mb, int chunk) {
    const ChunkWork& w = work().chunks[static_cast<std::size_t>(chunk)];
    const std::string name = "F" + pass_name(mb, chunk);
    if (param_gather_pending_) {
      param_gather_pending_ = false;
      gathered_compute(varied(w.forward_flops, mb, chunk, false), name);
    } else {
      compute(varied(w.forward_flops, mb, chunk, false), name);
    }
    tp_all_reduce(w.tp_forward_bytes, w.tp_forward_ring_s, w.tp_forward_extra_latency_s, w.tp_forward_overlap_s,
                  "tp " + name);
  }

  void forward_send(int chunk) {
    ++state_->progress.passes_done;
    if (const std::optional<ChunkAt> to = activation_receiver(state_->parallel, coord_.pp, chunk))
      send(P2p::kActivation, to->stage, to->chunk);
  }

  void backward_receive(int mb, int chunk) {
    const int p = state_->parallel.pp;
    const int v = state_->parallel.virtual_stages;
    if (coord_.pp < p - 1 || chunk < v - 1) receive(P2p::kGradient, mb, chunk);
  }

  void backward_compute(int mb, int chunk, bool overlapped_sync) {
    const ChunkWork& w = work().chunks[static_cast<std::size_t>(chunk)];
    const std::string name = "B" + pass_name(mb, chunk);
    if (overlapped_sync) {
      overlapped_compute(varied(w.backward_flops, mb, chunk, true), name);
    } else {
      compute(varied(w.backward_flops, mb, chunk, true), name);
    }
    tp_all_reduce(w.tp_backward_bytes, w.tp_backward_ring_s, w.tp_backward_extra_latency_s, w.tp_backward_overlap_s,
                  "tp " + name);
  }

  void backward_send(int mb, int chunk) {
    ++state_->progress.passes_done;
    if (const std::optional<ChunkAt> to = gradient_receiver(state_->parallel, coord_.pp, chunk)) {
      pp_codec(work().grad_compress_s, "compress grad", mb, chunk);
      send(P2p::kGradient, to->stage, to->chunk);
    }
  }

  // MoE: a pass's token all-to-alls over this GPU's expert-parallel group, folded into one of all their bytes
  // (posted here), then the latency of the others (finish_all_to_all). Without the combined 1F1B schedule they are
  // exposed: they sit between the router and the experts and after the experts.
  PendingAllToAll start_all_to_all(std::uint64_t bytes) const {
    if (bytes == 0 || state_->ep_groups.empty()) return {};
    const ParallelSpec& par = state_->parallel;
    const int j = stage_position(coord_, par.tp);
    const std::size_t group = grid_index(coord_.pp, expert_dp_size(par), j / par.ep);
    return PendingAllToAll(state_->ep_groups[group], j % par.ep, bytes);
  }

  // Waits for `a2a` and the latency of the all-to-alls folded into it, and records that time. `hidden`: work ran
  // since it was posted (combined_step), so only what ends after that work is waited for, the folded latency
  // counted from the transfers' end.
  void finish_all_to_all(PendingAllToAll a2a, double extra_latency_s, const char* kind, int mb, int chunk,
                         bool hidden = false) const {
    if (!a2a.posted()) return;
    const double start = now();
    const double transfers_end = a2a.wait();
    if (hidden) {
      const double end = transfers_end + extra_latency_s;
      if (end > now()) sg4::this_actor::sleep_for(end - now());
    } else if (extra_latency_s > 0) {
      sg4::this_actor::sleep_for(extra_latency_s);
    }
    record().all_to_all_s += now() - start;
    note(std::string(kind) + pass_name(mb, chunk), "a2a", start);
  }

  // MoE: one collective over this GPU's expert-data-parallel group.
  void edp_collective(CollectiveOp op, std::uint64_t bytes, const std::string& name) const {
    if (bytes == 0 || state_->edp_groups.empty()) return;
    const double start = now();
    const ParallelSpec& par = state_->parallel;
    const int j = stage_position(coord_, par.tp);
    const std::size_t group = grid_index(coord_.pp, par.ep, j % par.ep);
    const Group& g = state_->edp_groups[group];
    if (g.size() > 1 && state_->edp_closed_form) {
      closed_form_ring(*state_->edp_barriers[group], state_->edp_arrived[group], state_->edp_members, g, op, bytes);
    } else if (g.size() > 1) {
      run_collective(op, g, j / par.ep, bytes);
    }
    record().dp_comms.push_back({start, now()});
    note(name, "dp", start);
  }

  // MoE: the routed experts' gradients over expert DP, after the dense sync (uncompressed, reduce-scattered with
  // the distributed optimizer; or PowerSGD at the stage's expert rank).
  void expert_sync() const {
    const StageWork& w = work();
    if (state_->edp_groups.empty()) return;
    const double start = now();
    if (w.expert_rank == 0) {
      edp_collective(w.expert_reduce_scatter ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce, w.expert_bytes,
                     "expert dp sync");
    } else {
      compress(w.expert_compress_s / 3, "expert P = MQ");
      edp_collective(CollectiveOp::kAllReduce, w.expert_p_bytes, "expert dp P");
      compress(w.expert_compress_s / 3, "expert orth, Q = MtP");
      edp_collective(CollectiveOp::kAllReduce, w.expert_q_bytes, "expert dp Q");
      compress(w.expert_compress_s / 3, "expert M = PQt");
      edp_collective(CollectiveOp::kAllReduce, w.expert_bytes, "expert dp uncompressed");
    }
    record().expert_sync_s = now() - start;
  }

  void dp_all_reduce(std::uint64_t bytes, const std::string& name) const {
    dp_collective(CollectiveOp::kAllReduce, bytes, name);
  }

  // One collective over this GPU's DP group: an all-reduce, or the distributed optimizer's reduce-scatter of the
  // gradients or all-gather of the parameters (rings, as NCCL runs them; their closed form is half the
  // all-reduce's steps, and the same arguments hold: sim/README.md, "Closed forms and folding").
  // `beside_passes`: the overlapped parameter all-gather, over the folded copy of the group where the mirrors'
  // pipelines fold by symmetry (IterationState::dp_gather_groups).
  void dp_collective(CollectiveOp op, std::uint64_t bytes, const std::string& name, bool beside_passes = false) const {
    if (state_->parallel.dp == 1 || bytes == 0) return;
    const double start = now();
    const std::size_t group = dp_group_index();
    const Group& g =
        beside_passes && !state_->dp_gather_groups.empty() ? state_->dp_gather_groups[group] : state_->dp_groups[group];
    if (state_->dp_closed_form) {
      closed_form_ring(*state_->dp_barriers[group], state_->dp_arrived[group], state_->dp_members, g, op, bytes);
    } else if (op == CollectiveOp::kAllReduce) {
      all_reduce(g, coord_.dp, bytes);
    } else {
      run_collective(op, g, coord_.dp, bytes);
    }
    record().dp_comms.push_back({start, now()});
    note(name, "dp", start);
  }

  // The closed form of a contention-free ring `op` over `g` (dp_rings_are_contention_free), as tp_all_reduce's: the
  // last of the group's `members` simulated members to arrive sleeps it, then `barrier` releases them all. Where the
  // replicas fold, the members of the other blocks arrive when their counterparts here do (replicas_are_identical),
  // so the latest arrival is still the last of these; a lone simulated member sleeps it from now.
  void closed_form_ring(sg4::Barrier& barrier, int& arrived, int members, const Group& g, CollectiveOp op,
                        std::uint64_t bytes) const {
    if (members == 1) {
      sg4::this_actor::sleep_for(dp_ring_closed_form_s(*state_->platform, g, bytes, op));
      return;
    }
    if (++arrived == members) {
      arrived = 0;
      sg4::this_actor::sleep_for(dp_ring_closed_form_s(*state_->platform, g, bytes, op));
    }
    barrier.wait();
  }

  void compress(double seconds, const std::string& name) const {
    if (seconds <= 0) return;
    const double start = now();
    sg4::this_actor::sleep_for(seconds);
    record().compression_s += now() - start;
    note(name, "compress", start);
  }

  // Overlapped uncompressed sync (--overlap-grad-reduce, PyTorch DDP): a second actor on this GPU all-reduces the
  // stage's gradient buckets (gradient_buckets()) while the final backward pass runs; a bucket starts once that
  // pass has computed its gradients (overlapped_compute releases bucket_ready_ per bucket; gradients appear from
  // the last layer backwards). Every earlier pass's gradients are taken to land in the same buckets, so no bucket
  // starts before the final pass does. Each bucket's NCCL kernel holds one SM per channel while it runs (NCCL
  // launches one thread block per channel): an Exec bounded at that share of the GPU's speed, beside the pass.
  sg4::ActorPtr start_overlapped_sync() {
    record().sync_start_s = now();
    comm_sm_share_ = dp_comm_sm_share();
    bucket_ready_ = sg4::Semaphore::create(0);
    return sg4::Actor::create("dp-overlap" + std::to_string(rank_), sg4::this_actor::get_host(), [this] {
      const std::vector<Bucket>& buckets = work().buckets;
      for (std::size_t i = 0; i < buckets.size(); ++i) {
        bucket_ready_->acquire();
        sg4::ExecPtr kernel;
        if (comm_sm_share_ > 0)
          kernel = sg4::this_actor::exec_init(std::numeric_limits<double>::max())
                       ->set_bound(comm_sm_share_ * speed_)
                       ->start();
        dp_collective(work().reduce_scatter ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce, buckets[i].bytes,
                      "dp bucket " + std::to_string(i));
        if (kernel) kernel->cancel();
      }
    });
  }

  // The share of the GPU's SMs a DP collective's NCCL kernel holds: one per ring channel (0 when the GPU's SM count
  // is unknown: the pass beside it then runs as sleeps and loses nothing).
  double dp_comm_sm_share() const {
    const int sms = state_->platform->spec().gpu.sm_count;
    return sms > 0 ? std::min(1.0, ring_channels(state_->dp_groups[dp_group_index()]) / static_cast<double>(sms)) : 0.0;
  }

  // Overlapped parameter all-gather (--overlap-param-gather, Megatron-Core's distributed optimizer): a second actor
  // on this GPU all-gathers the stage's parameter buckets (param_buckets(), forward order). As Megatron-Core's
  // forward pre-hooks do, the first bucket's all-gather is dispatched when the first forward pass starts, and each
  // later one when the pass reaches the bucket before it (gathered_compute); the pass waits at each bucket until its
  // all-gather is done. Each all-gather's NCCL kernel holds its SMs beside the pass, as in start_overlapped_sync.
  sg4::ActorPtr start_param_gather() {
    param_gather_pending_ = true;
    param_dispatch_ = sg4::Semaphore::create(0);
    param_gathered_ = sg4::Semaphore::create(0);
    return sg4::Actor::create("dp-gather" + std::to_string(rank_), sg4::this_actor::get_host(), [this] {
      const std::vector<Bucket>& buckets = work().param_buckets;
      const double share = dp_comm_sm_share();
      for (std::size_t i = 0; i < buckets.size(); ++i) {
        param_dispatch_->acquire();
        sg4::ExecPtr kernel;
        if (share > 0)
          kernel = sg4::this_actor::exec_init(std::numeric_limits<double>::max())->set_bound(share * speed_)->start();
        dp_collective(CollectiveOp::kAllGather, buckets[i].bytes, "dp param bucket " + std::to_string(i),
                      /*beside_passes=*/true);
        if (kernel) kernel->cancel();
        param_gathered_->release();
      }
    });
  }

  // The first forward pass beside the overlapped parameter all-gather: one segment per bucket, each waiting for its
  // bucket's parameters, then dispatching the next bucket's all-gather. Segments are Execs where the GPU's SM count
  // is known (they share the GPU with the all-gather's kernel), sleeps otherwise, as in overlapped_compute.
  void gathered_compute(double flops, const std::string& name) const {
    const double start = now();
    const std::vector<Bucket>& buckets = work().param_buckets;
    const bool shared = dp_comm_sm_share() > 0;
    double compute_s = 0.0;
    param_dispatch_->release();
    for (std::size_t i = 0; i < buckets.size(); ++i) {
      const double wait_start = now();
      param_gathered_->acquire();
      record().param_gather_wait_s += now() - wait_start;
      if (i + 1 < buckets.size()) param_dispatch_->release();
      const double part = flops * ((i + 1 < buckets.size() ? buckets[i + 1].ready : 1.0) - buckets[i].ready);
      const double part_start = now();
      if (part > 0 && shared) {
        sg4::this_actor::execute(part);
      } else if (part > 0) {
        sg4::this_actor::sleep_for(part / speed_);
      }
      compute_s += now() - part_start;
    }
    record().compute_s += compute_s;
    note(name, "compute", start);
  }

  // The word-embedding gradient all-reduce between the first and the last stage, after their DP syncs (Megatron's
  // order: DP sync, embedding all-reduce, optimizer step).
  void embedding_sync() const {
    const std::uint64_t bytes = work().embedding_bytes;
    if (bytes == 0) return;
    const double start = now();
    if (state_->fused_embedding) {
      // One ring over both stages' DP groups: stage 0's members first, then stage pp − 1's.
      const Group& g = state_->embedding_groups[static_cast<std::size_t>(coord_.tp)];
      all_reduce(g, (coord_.pp == 0 ? 0 : state_->parallel.dp) + coord_.dp, bytes);
    } else {
      const Group& g = state_->embedding_groups[grid_index(coord_.dp, state_->parallel.tp, coord_.tp)];
      all_reduce(g, coord_.pp == 0 ? 0 : 1, bytes);
    }
    record().embedding_end_s = now();
    note(state_->fused_embedding ? "fused embedding allreduce" : "embedding allreduce", "dp", start);
  }

  void optimizer_step() const {
    const double seconds = work().optimizer_s;
    if (seconds <= 0) return;
    const double start = now();
    sg4::this_actor::sleep_for(seconds);
    record().optimizer_s = seconds;
    note("optimizer", "compute", start);
  }

  void dp_sync() const {
    const StageWork& w = work();
    if (state_->parallel.dp == 1) return;
    if (w.powersgd_rank == 0) {
      if (w.reduce_scatter)
        dp_collective(CollectiveOp::kReduceScatter, w.dp_bytes, "dp reduce-scatter");
      else
        dp_all_reduce(w.dp_bytes, "dp allreduce");
      return;
    }
    compress(w.compress_s / 3, "P = MQ");
    dp_all_reduce(w.p_bytes, "dp P");
    compress(w.compress_s / 3, "orth, Q = MtP");
    dp_all_reduce(w.q_bytes, "dp Q");
    compress(w.compress_s / 3, "M = PQt");
    dp_all_reduce(w.fused_bytes, "dp uncompressed");
  }

  IterationState* state_;
  int rank_;
  int counterpart_;  // a mirror's GPU of the first block (IterationState::mirrored), else −1
  RankCoord coord_;
  double slowdown_;     // straggler_slowdown when this GPU straggles this iteration, else 1
  double speed_ = 0.0;  // FLOP/s of this GPU's host
  // Overlapped DP sync only: the share of the GPU's SMs a bucket's NCCL kernel holds (channels / SMs; 0 when the
  // GPU's SM count is unknown), and the final backward pass's "bucket i is ready" signals.
  double comm_sm_share_ = 0.0;
  sg4::SemaphorePtr bucket_ready_;
  // Overlapped parameter all-gather only: whether the first forward pass is still to run, and the signals between
  // it and the all-gather actor (dispatch bucket i; bucket i gathered).
  bool param_gather_pending_ = false;
  sg4::SemaphorePtr param_dispatch_;
  sg4::SemaphorePtr param_gathered_;
  // Sends of one channel not yet waited for, oldest first; `posted` counts all sends on it.
  struct Outbox {
    std::size_t channel = 0;
    std::int64_t posted = 0;
    std::vector<sg4::CommPtr> pending;
  };
  std::vector<Outbox> outboxes_;
};

}  // namespace

void spawn_gpu_worker(IterationState* state, int rank, int counterpart) {
  sg4::Actor::create("gpu" + std::to_string(rank), state->platform->gpu(rank), GpuWorker(state, rank, counterpart));
}

}  // namespace edgc::sim::impl
