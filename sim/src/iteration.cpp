#include "edgc/sim/iteration.hpp"

#include <xbt/log.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/sim/collectives.hpp"
#include "edgc/sim/layout.hpp"

XBT_LOG_NEW_DEFAULT_CATEGORY(edgc_iteration, "edgc: one training iteration, one actor per GPU");

namespace edgc::sim {
namespace {

// put_async refuses a null payload; nobody reads it.
int g_payload = 0;

struct Interval {
  double start_s = 0.0;
  double end_s = 0.0;
};

// What one GPU measured; filled by its actor, reduced per stage after the run.
struct RankRecord {
  double compute_s = 0.0;
  double tp_comm_s = 0.0;
  double compression_s = 0.0;
  double last_backward_end_s = 0.0;
  double sync_end_s = 0.0;
  double finish_s = 0.0;
  std::vector<Interval> dp_comms;
  std::vector<TimelineEvent> events;
};

// Per-chunk inputs of the workers (one chunk per GPU except for the interleaved schedule).
struct ChunkWork {
  double forward_flops = 0.0;  // already divided by compute_efficiency
  double backward_flops = 0.0;
  std::uint64_t tp_forward_bytes = 0;  // all of one pass's TP all-reduces, summed
  std::uint64_t tp_backward_bytes = 0;
  double tp_forward_extra_latency_s = 0.0;  // latency terms of the folded-away all-reduces
  double tp_backward_extra_latency_s = 0.0;
};

// Per-stage inputs of the workers, computed once before the actors start.
struct StageWork {
  std::vector<ChunkWork> chunks;
  int powersgd_rank = 0;
  std::uint64_t dp_bytes = 0;  // uncompressed sync
  std::uint64_t p_bytes = 0;   // PowerSGD sync
  std::uint64_t q_bytes = 0;
  std::uint64_t fused_bytes = 0;
  double compress_s = 0.0;
};

// Everything the workers share. Actors are not threads: plain shared data is safe.
struct IterationState {
  ParallelSpec parallel;
  Layout layout;
  std::uint64_t p2p_bytes = 0;
  double t0 = 0.0;
  bool record_timeline = false;
  std::vector<StageWork> stages;
  std::vector<Group> tp_groups;  // index stage · dp + dp_index
  std::vector<Group> dp_groups;  // index stage · tp + tp_index
  std::vector<RankRecord> records;
};

std::uint64_t whole_bytes(double bytes) { return static_cast<std::uint64_t>(std::ceil(bytes)); }

// The latency part of one ring all-reduce over `group`: 2(D − 1) steps of the slowest neighbour route's latency.
double ring_latency_s(const Group& group) {
  double worst = 0.0;
  for (int i = 0; i < group.size(); ++i)
    worst = std::max(worst, route_between(group.hosts[static_cast<std::size_t>(i)],
                                          group.hosts[static_cast<std::size_t>((i + 1) % group.size())])
                                .latency_s);
  return ring_steps(CollectiveOp::kAllReduce, group.size()) * worst;
}

// One GPU: runs its stage's schedule, then its stage's DP sync.
class GpuWorker {
 public:
  GpuWorker(IterationState* state, int rank) : state_(state), rank_(rank), coord_(state->layout.coord_of(rank)) {}

  void operator()() {
    const ParallelSpec& par = state_->parallel;
    const int m = par.microbatches;
    if (par.schedule == PipelineSchedule::kGpipe) {
      for (int mb = 0; mb < m; ++mb) forward(mb, 0);
      for (int mb = 0; mb < m; ++mb) backward(mb, 0);
    } else if (par.schedule == PipelineSchedule::kOneFOneB) {
      const int warmup = std::min(par.pp - 1 - coord_.pp, m);
      for (int mb = 0; mb < warmup; ++mb) forward(mb, 0);
      for (int i = 0; i < m - warmup; ++i) {
        forward(warmup + i, 0);
        backward(i, 0);
      }
      for (int mb = m - warmup; mb < m; ++mb) backward(mb, 0);
    } else {
      // Interleaved 1F1B (Megatron-LM): m·v passes each way; pass k works on micro-batch (k / (p·v))·p + k % p of
      // chunk (k / p) % v forward and chunk v − 1 − (k / p) % v backward; (p − 1 − stage)·2 + (v − 1)·p warm-up
      // forwards, then one forward and one backward alternately, then the remaining backwards.
      const int p = par.pp;
      const int v = par.virtual_stages;
      const int total = m * v;
      const auto mb_of = [p, v](int k) { return (k / (p * v)) * p + k % p; };
      const auto fchunk = [p, v](int k) { return (k / p) % v; };
      const auto bchunk = [p, v](int k) { return v - 1 - (k / p) % v; };
      const int warmup = std::min((p - 1 - coord_.pp) * 2 + (v - 1) * p, total);
      for (int k = 0; k < warmup; ++k) forward(mb_of(k), fchunk(k));
      for (int i = 0; i < total - warmup; ++i) {
        forward(mb_of(warmup + i), fchunk(warmup + i));
        backward(mb_of(i), bchunk(i));
      }
      for (int k = total - warmup; k < total; ++k) backward(mb_of(k), bchunk(k));
    }
    record().last_backward_end_s = now();
    dp_sync();
    record().sync_end_s = now();
    sg4::Comm::wait_all(pending_sends_);
    record().finish_s = now();
    XBT_DEBUG("rank %d (stage %d) done at %g s", rank_, coord_.pp, now());
  }

 private:
  RankRecord& record() const { return state_->records[static_cast<std::size_t>(rank_)]; }
  const StageWork& work() const { return state_->stages[static_cast<std::size_t>(coord_.pp)]; }
  double now() const { return sg4::Engine::get_clock() - state_->t0; }

  void note(const std::string& name, const char* category, double start_s) const {
    if (state_->record_timeline) record().events.push_back({rank_, name, category, start_s, now()});
  }

  // Mailbox of chunk `chunk` of stage `stage` of this GPU's pipeline for `purpose` ("act" or "grad").
  sg4::Mailbox* inbox(const char* purpose, int stage, int chunk) const {
    return sg4::Mailbox::by_name(std::string(purpose) + "/d" + std::to_string(coord_.dp) + "t" +
                                 std::to_string(coord_.tp) + "s" + std::to_string(stage) + "c" + std::to_string(chunk));
  }

  void receive(const char* purpose, int mb, int chunk) const {
    const double start = now();
    inbox(purpose, coord_.pp, chunk)->get<int>();
    note(std::string("recv ") + purpose + " " + pass_name(mb, chunk), "p2p", start);
  }

  // "3" for micro-batch 3, "3.1" for its chunk 1 under the interleaved schedule.
  std::string pass_name(int mb, int chunk) const {
    return state_->parallel.virtual_stages > 1 ? std::to_string(mb) + "." + std::to_string(chunk) : std::to_string(mb);
  }

  void send(const char* purpose, int to_stage, int to_chunk) {
    // Forget sends that have completed: SimGrid keeps every unfinished activity on the actor's list and scans
    // that list whenever one of its activities ends, so holding all sends until the end costs O(sends²).
    std::erase_if(pending_sends_, [](const sg4::CommPtr& c) { return c->test(); });
    pending_sends_.push_back(inbox(purpose, to_stage, to_chunk)->put_async(&g_payload, state_->p2p_bytes));
  }

  void compute(double flops, const std::string& name) const {
    const double start = now();
    sg4::this_actor::execute(flops);
    record().compute_s += now() - start;
    note(name, "compute", start);
  }

  void tp_all_reduce(std::uint64_t bytes, double extra_latency_s, const std::string& name) const {
    if (state_->parallel.tp == 1 || bytes == 0) return;
    const double start = now();
    const Group& g = state_->tp_groups[static_cast<std::size_t>(coord_.pp * state_->parallel.dp + coord_.dp)];
    ring_all_reduce(g, coord_.tp, bytes);
    if (extra_latency_s > 0) sg4::this_actor::sleep_for(extra_latency_s);
    record().tp_comm_s += now() - start;
    note(name, "tp", start);
  }

  // Chunk c of stage p is virtual stage c·pp + p: activations flow p → p + 1 within a chunk and from the last
  // stage to stage 0 of the next chunk; gradients flow back the same way.
  void forward(int mb, int chunk) {
    const int p = state_->parallel.pp;
    const int v = state_->parallel.virtual_stages;
    if (coord_.pp > 0 || chunk > 0) receive("act", mb, chunk);
    const ChunkWork& w = work().chunks[static_cast<std::size_t>(chunk)];
    const std::string name = "F" + pass_name(mb, chunk);
    compute(w.forward_flops, name);
    tp_all_reduce(w.tp_forward_bytes, w.tp_forward_extra_latency_s, "tp " + name);
    if (coord_.pp < p - 1) {
      send("act", coord_.pp + 1, chunk);
    } else if (chunk < v - 1) {
      send("act", 0, chunk + 1);
    }
  }

  void backward(int mb, int chunk) {
    const int p = state_->parallel.pp;
    const int v = state_->parallel.virtual_stages;
    if (coord_.pp < p - 1 || chunk < v - 1) receive("grad", mb, chunk);
    const ChunkWork& w = work().chunks[static_cast<std::size_t>(chunk)];
    const std::string name = "B" + pass_name(mb, chunk);
    compute(w.backward_flops, name);
    tp_all_reduce(w.tp_backward_bytes, w.tp_backward_extra_latency_s, "tp " + name);
    if (coord_.pp > 0) {
      send("grad", coord_.pp - 1, chunk);
    } else if (chunk > 0) {
      send("grad", p - 1, chunk - 1);
    }
  }

  void dp_all_reduce(std::uint64_t bytes, const std::string& name) const {
    if (state_->parallel.dp == 1 || bytes == 0) return;
    const double start = now();
    const Group& g = state_->dp_groups[static_cast<std::size_t>(coord_.pp * state_->parallel.tp + coord_.tp)];
    ring_all_reduce(g, coord_.dp, bytes);
    record().dp_comms.push_back({start, now()});
    note(name, "dp", start);
  }

  void compress(double seconds, const std::string& name) const {
    if (seconds <= 0) return;
    const double start = now();
    sg4::this_actor::sleep_for(seconds);
    record().compression_s += now() - start;
    note(name, "compress", start);
  }

  void dp_sync() const {
    const StageWork& w = work();
    if (state_->parallel.dp == 1) return;
    if (w.powersgd_rank == 0) {
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
  RankCoord coord_;
  std::vector<sg4::CommPtr> pending_sends_;
};

void check_plan(const DpSyncPlan& plan, const ParallelSpec& parallel) {
  if (static_cast<int>(plan.size()) != parallel.pp)
    throw ConfigError(
        "iteration", "dp_sync",
        "plan has " + std::to_string(plan.size()) + " stages, the layout has pp = " + std::to_string(parallel.pp));
  for (std::size_t s = 0; s < plan.size(); ++s)
    if (plan[s].powersgd_rank < 0)
      throw ConfigError("iteration", "dp_sync.rank",
                        "stage " + std::to_string(s) + ": PowerSGD rank " + std::to_string(plan[s].powersgd_rank) +
                            " is negative (0 = uncompressed)");
}

StageWork stage_work(const ModelSpec& model, const ParallelSpec& par, const ClusterSpec& cluster,
                     const CostParams& params, int stage, const StageSync& sync, const Group& tp_group) {
  StageWork w;
  const int chunks = par.schedule == PipelineSchedule::kInterleaved ? par.virtual_stages : 1;
  const TpComm tp = tp_comm_per_layer(model, par);
  const int layers = layers_per_chunk(model, par);
  const int n_fwd = layers * tp.forward_allreduces;
  const int n_bwd = layers * tp.backward_allreduces;
  const double lat = par.tp > 1 ? ring_latency_s(tp_group) : 0.0;
  for (int c = 0; c < chunks; ++c) {
    ChunkWork cw;
    const ComputeCost cost = chunk_compute(model, par, cluster.gpu, params, stage, c);
    cw.forward_flops = cost.forward_flops / params.compute_efficiency;
    cw.backward_flops = cost.backward_flops / params.compute_efficiency;
    cw.tp_forward_bytes = whole_bytes(n_fwd * tp.bytes_per_allreduce);
    cw.tp_backward_bytes = whole_bytes(n_bwd * tp.bytes_per_allreduce);
    cw.tp_forward_extra_latency_s = std::max(0, n_fwd - 1) * lat;
    cw.tp_backward_extra_latency_s = std::max(0, n_bwd - 1) * lat;
    w.chunks.push_back(cw);
  }
  w.powersgd_rank = sync.powersgd_rank;
  if (sync.powersgd_rank == 0) {
    w.dp_bytes = whole_bytes(dp_gradient_bytes(model, par, stage));
  } else {
    const PowerSgdWire wire = powersgd_wire(model, par, stage, sync.powersgd_rank);
    w.p_bytes = whole_bytes(wire.p_bytes);
    w.q_bytes = whole_bytes(wire.q_bytes);
    w.fused_bytes = whole_bytes(wire.uncompressed_bytes);
    w.compress_s = powersgd_compress_s(model, par, cluster.gpu, params, stage, sync.powersgd_rank);
  }
  return w;
}

// Time of [a.start, a.end] that lies after `after_s`.
double part_after(const Interval& a, double after_s) { return std::max(0.0, a.end_s - std::max(a.start_s, after_s)); }

}  // namespace

DpSyncPlan uncompressed_plan(int pp) { return DpSyncPlan(static_cast<std::size_t>(std::max(pp, 0))); }

DpSyncPlan powersgd_plan(int pp, int rank) {
  return DpSyncPlan(static_cast<std::size_t>(std::max(pp, 0)), StageSync{rank});
}

IterationResult simulate_iteration(sg4::Engine& engine, const Platform& platform, const ModelSpec& model,
                                   const ParallelSpec& parallel, const CostParams& params, const DpSyncPlan& plan,
                                   const IterationOptions& options) {
  const ParallelSpec par = validate(model, parallel, platform.spec(), "iteration");
  check_plan(plan, par);

  IterationState state{par,
                       Layout(par, platform.gpus_per_node()),
                       whole_bytes(pp_p2p_bytes(model)),
                       sg4::Engine::get_clock(),
                       options.record_timeline,
                       {},
                       {},
                       {},
                       {}};
  const Layout& layout = state.layout;
  for (int s = 0; s < par.pp; ++s)
    for (int d = 0; d < par.dp; ++d) {
      Group g{{}, "tp-s" + std::to_string(s) + "d" + std::to_string(d)};
      for (int r : layout.tp_group(layout.rank_of({0, s, d}))) g.hosts.push_back(platform.gpu(r));
      state.tp_groups.push_back(std::move(g));
    }
  for (int s = 0; s < par.pp; ++s)
    for (int t = 0; t < par.tp; ++t) {
      Group g{{}, "dp-s" + std::to_string(s) + "t" + std::to_string(t)};
      for (int r : layout.dp_group(layout.rank_of({t, s, 0}))) g.hosts.push_back(platform.gpu(r));
      state.dp_groups.push_back(std::move(g));
    }
  for (int s = 0; s < par.pp; ++s)
    state.stages.push_back(stage_work(model, par, platform.spec(), params, s, plan[static_cast<std::size_t>(s)],
                                      state.tp_groups[static_cast<std::size_t>(s * par.dp)]));
  state.records.resize(static_cast<std::size_t>(layout.world_size()));

  for (int r = 0; r < layout.world_size(); ++r)
    sg4::Actor::create("gpu" + std::to_string(r), platform.gpu(r), GpuWorker(&state, r));
  engine.run();

  IterationResult result;
  result.stages.resize(static_cast<std::size_t>(par.pp));
  for (const RankRecord& rec : state.records) {
    result.iteration_s = std::max(result.iteration_s, rec.finish_s);
    result.pipeline_end_s = std::max(result.pipeline_end_s, rec.last_backward_end_s);
  }
  for (int r = 0; r < layout.world_size(); ++r) {
    const RankRecord& rec = state.records[static_cast<std::size_t>(r)];
    const int s = layout.coord_of(r).pp;
    StageResult& st = result.stages[static_cast<std::size_t>(s)];
    st.powersgd_rank = plan[static_cast<std::size_t>(s)].powersgd_rank;
    double comm = 0.0;
    double exposed = 0.0;
    for (const Interval& i : rec.dp_comms) {
      comm += i.end_s - i.start_s;
      exposed += part_after(i, result.pipeline_end_s);
    }
    st.last_backward_end_s = std::max(st.last_backward_end_s, rec.last_backward_end_s);
    st.dp_sync_s = std::max(st.dp_sync_s, rec.sync_end_s - rec.last_backward_end_s);
    st.dp_comm_s = std::max(st.dp_comm_s, comm);
    st.exposed_comm_s = std::max(st.exposed_comm_s, exposed);
    st.compression_s = std::max(st.compression_s, rec.compression_s);
    st.compute_s = std::max(st.compute_s, rec.compute_s);
    st.tp_comm_s = std::max(st.tp_comm_s, rec.tp_comm_s);
    st.bubble_s = std::max(st.bubble_s, result.pipeline_end_s - rec.compute_s - rec.tp_comm_s);
    if (options.record_timeline) result.timeline.insert(result.timeline.end(), rec.events.begin(), rec.events.end());
  }
  for (StageResult& st : result.stages)
    st.bubble_fraction = result.pipeline_end_s > 0 ? st.bubble_s / result.pipeline_end_s : 0.0;
  return result;
}

}  // namespace edgc::sim
