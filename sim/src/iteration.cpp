// simulate_iteration in the shape of an S4U program: the shared state (groups, closed-form decisions, per-stage
// work, mailboxes) built from the layout on the platform, one GpuWorker actor per simulated GPU, a progress hook,
// the engine run, then the per-GPU records reduced per stage. The closed forms and the folding it decides here are
// argued in sim/README.md, "Closed forms and folding".
#include "edgc/sim/iteration.hpp"

#include <xbt/log.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/sim/collectives.hpp"
#include "edgc/sim/cost_model.hpp"
#include "edgc/sim/layout.hpp"
#include "impl/closed_forms.hpp"
#include "impl/gpu_worker.hpp"
#include "impl/iteration_state.hpp"
#include "impl/stage_work.hpp"
#include "impl/symmetric_fold.hpp"
#include "impl/traffic.hpp"

XBT_LOG_NEW_DEFAULT_CATEGORY(edgc_iteration, "edgc: one training iteration, one actor per GPU");

namespace edgc::sim {
namespace {

using impl::grid_index;
using impl::IterationState;
using impl::RankRecord;

// One barrier of `members` per group, for the closed forms' "everyone arrived" (GpuWorker's tp_ring, dp_all_reduce).
std::vector<sg4::BarrierPtr> group_barriers(std::size_t groups, int members) {
  std::vector<sg4::BarrierPtr> barriers;
  for (std::size_t g = 0; g < groups; ++g) barriers.push_back(sg4::Barrier::create(static_cast<unsigned>(members)));
  return barriers;
}

// The groups of the layout on the platform, the receiver's all-gather after a scattered pipeline message, and the
// embedding all-reduce's groups.
void build_groups(IterationState& state, const Platform& platform, const ModelSpec& model) {
  const ParallelSpec& par = state.parallel;
  const Layout& layout = state.layout;
  state.tp_groups = impl::on_platform(platform, impl::tp_rank_groups(layout));
  state.dp_groups = impl::on_platform(platform, impl::dp_rank_groups(layout));
  state.ep_groups = impl::on_platform(platform, impl::ep_rank_groups(layout, par));
  state.edp_groups = impl::on_platform(platform, impl::edp_rank_groups(layout, par));
  if (const double gather = pp_gather_bytes(model, par); gather > 0 && par.pp > 1) {
    const Group& g = state.tp_groups.front();
    state.p2p_gather_s = (par.tp - 1) * platform.lone_transfer_s(g.hosts[0], g.hosts[1], gather / par.tp);
  }
  state.fused_embedding = fused_embedding_sync_applies(par) && embedding_sync_bytes(model, par) > 0;
  if (state.fused_embedding || (par.pp > 1 && embedding_sync_bytes(model, par) > 0))
    state.embedding_groups = impl::on_platform(platform, impl::embedding_rank_groups(layout, state.fused_embedding));
}

// The bytes of every all-reduce a GPU runs over its DP group: the uncompressed sync and its buckets, or PowerSGD's
// P, Q and uncompressed rest (the reduce-scatters and all-gathers always run as rings); and over its expert-DP group:
// the experts' uncompressed sync, or their P and Q.
impl::AllReduceSizes allreduce_sizes(const IterationState& state) {
  impl::AllReduceSizes sizes;
  for (const impl::StageWork& w : state.stages) {
    if (w.powersgd_rank > 0) {
      sizes.dp.insert(sizes.dp.end(), {w.p_bytes, w.q_bytes, w.fused_bytes});
    } else if (!w.reduce_scatter) {
      sizes.dp.push_back(w.dp_bytes);
      for (const impl::Bucket& b : w.buckets) sizes.dp.push_back(b.bytes);
    }
    if (w.expert_rank > 0)
      sizes.edp.insert(sizes.edp.end(), {w.expert_p_bytes, w.expert_q_bytes});
    else if (!w.expert_reduce_scatter)
      sizes.edp.push_back(w.expert_bytes);
  }
  return sizes;
}

// Replicas that fold by symmetry (impl/symmetric_fold.hpp) where they do not fold otherwise: the replicas of a
// block, or 0. Folds the DP and expert-DP groups.
int fold_by_symmetry(IterationState& state, const Platform& platform, const impl::AllReduceSizes& sizes) {
  const ParallelSpec& par = state.parallel;
  const int block = impl::symmetric_block(platform.spec(), par, state.variability);
  if (!impl::folds_by_symmetry(platform, par, state.layout, block, sizes)) return 0;
  impl::fold_groups(state.dp_groups, impl::dp_rank_groups(state.layout), block, platform);
  if (par.expert_groups)
    impl::fold_groups(state.edp_groups, impl::edp_rank_groups(state.layout, par), block * par.tp / par.ep, platform);
  return block;
}

// Mirrors whose pipelines fold by symmetry (IterationState::mirror_block), where neither the replicas nor their
// rings fold: the first block of symmetric_block() replicas, or 0. Every DP collective beside the passes (the
// overlapped parameter all-gather; no stage may have overlapped gradient buckets, whose sync would start inside the
// pipeline phase) is a ring all-gather that shifts with the blocks (folds_by_symmetry with no all-reduce), and
// every link is one GPU's, so the pipeline phase folds as in "Replicas that fold by symmetry" while the syncs, which
// may run the tree, run over every GPU as in the mirrors' argument (sim/README.md, "Closed forms and folding").
// Keeps the whole DP groups for the syncs and folds copies of them for the all-gathers.
int mirror_by_symmetry(IterationState& state, const Platform& platform) {
  const ParallelSpec& par = state.parallel;
  if (state.dp_closed_form || !impl::links_are_private(platform, state.variability)) return 0;
  for (const impl::StageWork& w : state.stages)
    if (!w.buckets.empty()) return 0;
  const int block = impl::symmetric_block(platform.spec(), par, state.variability);
  if (!impl::folds_by_symmetry(platform, par, state.layout, block, impl::AllReduceSizes{})) return 0;
  state.dp_gather_groups = state.dp_groups;
  for (Group& g : state.dp_gather_groups) g.tag += "/gather";
  impl::fold_groups(state.dp_gather_groups, impl::dp_rank_groups(state.layout), block, platform);
  return block;
}

// Which all-reduces take their closed form and whether the DP replicas fold (the proofs: sim/README.md, "Closed
// forms and folding"), with the barriers the closed forms meet at. After the stages' work (the all-reduce sizes).
void decide_closed_forms(IterationState& state, const Platform& platform, const IterationOptions& options) {
  const ParallelSpec& par = state.parallel;
  const Layout& layout = state.layout;
  const bool may_fold = !options.record_timeline && !options.all_replicas;
  state.tp_closed_form = par.tp > 1 && !options.force_tp_ring &&
                         impl::tp_rings_are_contention_free(platform, par, layout, state.tp_groups);
  state.tp_members =
      may_fold && state.tp_closed_form && impl::tp_ranks_run_alike(platform, par, state.variability) ? 1 : par.tp;
  if (platform.fabric_copies() > 1 && state.tp_members != 1)
    throw InternalError(options.where + ": the platform's fat tree was built for TP index 0 alone (fabric_copies " +
                        std::to_string(platform.fabric_copies()) + "), but this iteration simulates every TP index");
  if (state.tp_closed_form && state.tp_members > 1)
    state.tp_barriers = group_barriers(state.tp_groups.size(), state.tp_members);
  state.tp_arrived.assign(state.tp_groups.size(), 0);
  XBT_DEBUG("TP all-reduces: %s; %d TP index(es) simulated",
            state.tp_closed_form ? "closed form after a barrier" : "ring over mailboxes", state.tp_members);
  state.platform = &platform;
  const impl::AllReduceSizes sizes = allreduce_sizes(state);
  state.dp_closed_form =
      par.dp > 1 && !options.force_dp_ring &&
      impl::dp_rings_are_contention_free(platform, par, layout, state.dp_groups, state.variability, &sizes.dp);
  XBT_DEBUG("DP all-reduces: %s", state.dp_closed_form ? "closed form after a barrier" : "ring over mailboxes");
  state.replicas_folded =
      may_fold && impl::replicas_are_identical(platform, par, state.variability, state.dp_closed_form);
  const int symmetric = may_fold && !state.replicas_folded ? fold_by_symmetry(state, platform, sizes) : 0;
  if (may_fold && !state.replicas_folded && symmetric == 0)
    state.mirror_block = impl::blocks_run_alike(platform, par, state.variability) ? folded_replicas(par)
                                                                                  : mirror_by_symmetry(state, platform);
  // The replicas whose pipelines run, and the simulated members of each DP and expert-DP group: all, or those of the
  // first block of replicas.
  state.pipeline_replicas = state.replicas_folded ? folded_replicas(par)
                            : state.mirrored()    ? state.mirror_block
                            : symmetric > 0       ? symmetric
                                                  : par.dp;
  const int replicas = state.mirrored() ? par.dp : state.pipeline_replicas;
  state.dp_members = replicas;
  state.edp_members = par.expert_groups ? replicas * par.tp / par.ep : 0;
  // Where the mirrors simulate every GPU's sync, the expert-DP rings may take their closed form on their own.
  state.edp_closed_form = state.dp_closed_form || (state.mirrored() && !options.force_dp_ring &&
                                                   impl::expert_sync_rings_alone(par, state.edp_groups, sizes.edp));
  if (state.dp_closed_form) state.dp_barriers = group_barriers(state.dp_groups.size(), state.dp_members);
  if (state.edp_closed_form) state.edp_barriers = group_barriers(state.edp_groups.size(), state.edp_members);
  state.dp_arrived.assign(state.dp_groups.size(), 0);
  state.edp_arrived.assign(state.edp_groups.size(), 0);
}

// One pipeline mailbox per purpose, simulated receiving rank and model chunk.
void open_mailboxes(IterationState& state, const std::vector<int>& ranks) {
  const ParallelSpec& par = state.parallel;
  state.p2p_inbox.assign(static_cast<std::size_t>(impl::kP2pPurposes) *
                             static_cast<std::size_t>(state.layout.world_size()) *
                             static_cast<std::size_t>(par.virtual_stages),
                         nullptr);
  for (int purpose = 0; purpose < impl::kP2pPurposes; ++purpose)
    for (const int r : ranks)
      for (int c = 0; c < par.virtual_stages; ++c) {
        const auto p = static_cast<impl::P2p>(purpose);
        state.p2p_inbox[state.channel(p, r, c)] =
            sg4::Mailbox::by_name(std::string(impl::p2p_name(p)) + "/r" + std::to_string(r) + "c" + std::to_string(c));
      }
  state.p2p_taken.assign(state.p2p_inbox.size(), 0);
}

// Everything the workers share, for `par` (validated) and `plan` (checked); returns the ranks to simulate: every
// GPU, or those of the first folded_replicas() replicas where the replicas fold.
std::vector<int> build_state(IterationState& state, const Platform& platform, const ModelSpec& model,
                             const CostParams& params, const DpSyncPlan& plan, const IterationOptions& options) {
  const ParallelSpec& par = state.parallel;
  const Layout& layout = state.layout;
  state.p2p_bytes = impl::whole_bytes(pp_p2p_bytes(model, par));
  state.t0 = sg4::Engine::get_clock();
  state.record_timeline = options.record_timeline;
  state.variability = options.variability;
  build_groups(state, platform, model);
  const int ep_groups_per_stage = expert_dp_size(par);
  for (int s = 0; s < par.pp; ++s)
    state.stages.push_back(impl::stage_work(
        platform, model, par, params, s, plan[static_cast<std::size_t>(s)], state.tp_groups[grid_index(s, par.dp, 0)],
        state.ep_groups.empty() ? nullptr : &state.ep_groups[grid_index(s, ep_groups_per_stage, 0)]));
  decide_closed_forms(state, platform, options);
  std::vector<int> ranks;  // those that run their pipelines
  for (int r = 0; r < layout.world_size(); ++r)
    if (const RankCoord c = layout.coord_of(r); c.dp < state.pipeline_replicas && c.tp < state.tp_members)
      ranks.push_back(r);
  if (state.mirrored()) {
    state.sync_reached.resize(static_cast<std::size_t>(layout.world_size()));
    for (const int r : ranks) state.sync_reached[static_cast<std::size_t>(r)] = sg4::Semaphore::create(0);
  }
  state.records.resize(static_cast<std::size_t>(layout.world_size()));
  open_mailboxes(state, ranks);
  return ranks;
}

// Calls options.on_progress whenever simulated time advances. The engine keeps its callbacks for good: this one
// reaches the hook through the returned pointer, which the caller empties once the run is over, so that a later
// simulation in this process calls nothing of this one.
std::shared_ptr<std::function<void()>> hook_progress(IterationState& state, const IterationOptions& options,
                                                     std::size_t gpus, std::size_t pipelines) {
  auto hook = std::make_shared<std::function<void()>>();
  if (options.on_progress) {
    // Every GPU that runs its pipeline runs a forward and a backward pass per micro-batch and model chunk.
    state.progress.gpus_total = static_cast<std::int64_t>(gpus);
    state.progress.passes_total =
        static_cast<std::int64_t>(pipelines) * 2 * state.parallel.microbatches * state.parallel.virtual_stages;
    *hook = [&state, &options] { options.on_progress(state.progress); };
    sg4::Engine::on_time_advance_cb([hook](double) {
      if (*hook) (*hook)();
    });
  }
  return hook;
}

// Time of [a.start, a.end] that lies after `after_s`.
double part_after(const impl::Interval& a, double after_s) {
  return std::max(0.0, a.end_s - std::max(a.start_s, after_s));
}

// Fused embedding sync: when the last member of each TP index's ring had finished its DP sync.
std::vector<double> fused_meetings(const IterationState& state, const std::vector<int>& ranks) {
  const ParallelSpec& par = state.parallel;
  std::vector<double> fused_meet(static_cast<std::size_t>(par.tp), 0.0);
  if (!state.fused_embedding) return fused_meet;
  for (const int r : ranks) {
    const RankCoord c = state.layout.coord_of(r);
    if (c.pp == 0 || c.pp == par.pp - 1) {
      double& m = fused_meet[static_cast<std::size_t>(c.tp)];
      m = std::max(m, state.records[static_cast<std::size_t>(r)].sync_end_s);
    }
  }
  return fused_meet;
}

// Folds GPU `r`'s record into its stage's figures (each the max over the stage's GPUs).
void reduce_rank(const IterationState& state, int r, const std::vector<double>& fused_meet, double pipeline_end_s,
                 StageResult& st) {
  const RankRecord& rec = state.records[static_cast<std::size_t>(r)];
  st.pp_send_bytes = std::max(st.pp_send_bytes, rec.pp_send_bytes);
  st.pp_comm_s = std::max(st.pp_comm_s, rec.pp_comm_s);
  st.pp_compression_s = std::max(st.pp_compression_s, rec.pp_compression_s);
  double comm = 0.0;
  double exposed = 0.0;
  for (const impl::Interval& i : rec.dp_comms) {
    comm += i.end_s - i.start_s;
    exposed += part_after(i, pipeline_end_s);
  }
  st.last_backward_end_s = std::max(st.last_backward_end_s, rec.last_backward_end_s);
  st.finish_s = std::max(st.finish_s, rec.finish_s);
  st.dp_sync_s = std::max(st.dp_sync_s, rec.sync_end_s - rec.sync_start_s);
  st.dp_comm_s = std::max(st.dp_comm_s, comm);
  st.exposed_comm_s = std::max(st.exposed_comm_s, exposed);
  st.param_gather_wait_s = std::max(st.param_gather_wait_s, rec.param_gather_wait_s);
  st.compression_s = std::max(st.compression_s, rec.compression_s);
  st.compute_s = std::max(st.compute_s, rec.compute_s);
  st.tp_comm_s = std::max(st.tp_comm_s, rec.tp_comm_s);
  st.bubble_s = std::max(st.bubble_s,
                         pipeline_end_s - rec.compute_s - rec.tp_comm_s - rec.param_gather_wait_s - rec.all_to_all_s);
  st.sync_end_s = std::max(st.sync_end_s, rec.sync_end_s);
  st.optimizer_s = std::max(st.optimizer_s, rec.optimizer_s);
  st.all_to_all_s = std::max(st.all_to_all_s, rec.all_to_all_s);
  st.expert_sync_s = std::max(st.expert_sync_s, rec.expert_sync_s);
  st.expert_param_gather_s = std::max(st.expert_param_gather_s, rec.expert_param_gather_s);
  if (rec.embedding_end_s > 0) {
    const RankCoord c = state.layout.coord_of(r);
    const int partner = state.layout.rank_of({c.tp, c.pp == 0 ? state.parallel.pp - 1 : 0, c.dp});
    const double meet = state.fused_embedding
                            ? fused_meet[static_cast<std::size_t>(c.tp)]
                            : std::max(rec.sync_end_s, state.records[static_cast<std::size_t>(partner)].sync_end_s);
    st.embedding_sync_s = std::max(st.embedding_sync_s, rec.embedding_end_s - meet);
  }
}

// The simulated GPUs' records as the iteration's figures, per stage.
IterationResult reduce(const IterationState& state, const std::vector<int>& ranks, const DpSyncPlan& plan) {
  IterationResult result;
  result.stages.resize(static_cast<std::size_t>(state.parallel.pp));
  const std::vector<double> fused_meet = fused_meetings(state, ranks);
  for (const int r : ranks) {
    const RankRecord& rec = state.records[static_cast<std::size_t>(r)];
    result.iteration_s = std::max(result.iteration_s, rec.finish_s);
    result.pipeline_end_s = std::max(result.pipeline_end_s, rec.last_backward_end_s);
  }
  for (const int r : ranks) {
    const int s = state.layout.coord_of(r).pp;
    StageResult& st = result.stages[static_cast<std::size_t>(s)];
    st.powersgd_rank = plan[static_cast<std::size_t>(s)].powersgd_rank;
    st.pp_rank = plan[static_cast<std::size_t>(s)].pp_rank;
    st.expert_rank = state.stages[static_cast<std::size_t>(s)].expert_rank;
    reduce_rank(state, r, fused_meet, result.pipeline_end_s, st);
    if (state.record_timeline) {
      const std::vector<TimelineEvent>& events = state.records[static_cast<std::size_t>(r)].events;
      result.timeline.insert(result.timeline.end(), events.begin(), events.end());
    }
  }
  for (StageResult& st : result.stages)
    st.bubble_fraction = result.pipeline_end_s > 0 ? st.bubble_s / result.pipeline_end_s : 0.0;
  return result;
}

}  // namespace

IterationResult simulate_iteration(sg4::Engine& engine, const Platform& platform, const ModelSpec& model,
                                   const ParallelSpec& parallel, const CostParams& params, const DpSyncPlan& plan,
                                   const IterationOptions& options) {
  const ParallelSpec par = validate(model, parallel, platform.spec(), options.where);
  impl::check_plan(plan, par, options.where);
  validate(options.variability, options.where);

  IterationState state(par, platform.gpus_per_node());
  const std::vector<int> ranks = build_state(state, platform, model, params, plan, options);
  for (const int r : ranks) impl::spawn_gpu_worker(&state, r);
  std::vector<int> all = ranks;
  if (state.mirrored()) {
    // Every other GPU mirrors the one at its dp index modulo the block in the first block (blocks_run_alike).
    const int block = state.mirror_block;
    for (int r = 0; r < state.layout.world_size(); ++r)
      if (const RankCoord c = state.layout.coord_of(r); c.dp >= block && c.tp < state.tp_members) {
        impl::spawn_gpu_worker(&state, r, state.layout.rank_of({c.tp, c.pp, c.dp % block}));
        all.push_back(r);
      }
  }
  const std::shared_ptr<std::function<void()>> hook = hook_progress(state, options, all.size(), ranks.size());
  engine.run();
  if (*hook) (*hook)();  // the last passes end at the last time advance, after its callback
  *hook = nullptr;
  return reduce(state, all, plan);
}

}  // namespace edgc::sim
