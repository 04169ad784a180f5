#include "edgc/sim/whole_run.hpp"

#include <algorithm>
#include <string>

#include "edgc/core/error.hpp"
#include "edgc/sim/layout.hpp"

namespace edgc::sim {

void RunSchedule::append(std::int64_t begin, std::int64_t end, const DpSyncPlan& plan) {
  if (begin != iterations())
    throw InternalError("RunSchedule::append: segment starts at " + std::to_string(begin) + ", the run ends at " +
                        std::to_string(iterations()));
  if (end < begin) throw InternalError("RunSchedule::append: segment ends before it begins");
  if (end == begin) return;
  if (!segments_.empty() && segments_.back().plan == plan) {
    segments_.back().end = end;
    return;
  }
  segments_.push_back({begin, end, plan});
}

const DpSyncPlan& RunSchedule::plan_at(std::int64_t iteration) const {
  const auto it = std::upper_bound(segments_.begin(), segments_.end(), iteration,
                                   [](std::int64_t i, const RunSegment& s) { return i < s.end; });
  if (iteration < 0 || it == segments_.end())
    throw InternalError("RunSchedule::plan_at: iteration " + std::to_string(iteration) + " outside the run");
  return it->plan;
}

std::vector<DpSyncPlan> distinct_plans(const std::vector<const RunSchedule*>& schedules) {
  std::vector<DpSyncPlan> out;
  for (const RunSchedule* s : schedules)
    for (const RunSegment& seg : s->segments())
      if (std::find(out.begin(), out.end(), seg.plan) == out.end()) out.push_back(seg.plan);
  return out;
}

std::optional<CompressedGradients> compressed_gradients_from_name(std::string_view name) noexcept {
  if (name == "all") return CompressedGradients::kAll;
  if (name == "dense") return CompressedGradients::kDense;
  if (name == "experts") return CompressedGradients::kExperts;
  return std::nullopt;
}

RunSchedule restrict_compression(const RunSchedule& schedule, CompressedGradients which) {
  if (which == CompressedGradients::kAll) return schedule;
  RunSchedule out;
  for (const RunSegment& seg : schedule.segments()) {
    DpSyncPlan plan = seg.plan;
    for (StageSync& s : plan) {
      if (which == CompressedGradients::kDense) {
        s.expert_rank = 0;
      } else {
        s.expert_rank = s.powersgd_rank;
        s.powersgd_rank = 0;
      }
    }
    out.append(seg.begin, seg.end, plan);
  }
  return out;
}

IterationBreakdown breakdown(const IterationResult& r) {
  IterationBreakdown b;
  if (r.stages.empty()) return b;
  // The stage that computes longest sets the pipeline's busy time; the rest until the pipeline end is bubble.
  const StageResult* busiest = &r.stages.front();
  const StageResult* last_sync = &r.stages.front();
  for (const StageResult& s : r.stages) {
    if (s.compute_s + s.tp_comm_s > busiest->compute_s + busiest->tp_comm_s) busiest = &s;
    if (s.last_backward_end_s + s.dp_sync_s > last_sync->last_backward_end_s + last_sync->dp_sync_s) last_sync = &s;
    b.compression_s = std::max(b.compression_s, s.compression_s);
    b.pp_comm_s = std::max(b.pp_comm_s, s.pp_comm_s);
    b.pp_compression_s = std::max(b.pp_compression_s, s.pp_compression_s);
    b.pp_send_bytes = std::max(b.pp_send_bytes, s.pp_send_bytes);
  }
  b.compute_s = busiest->compute_s;
  b.tp_comm_s = busiest->tp_comm_s;
  // The busiest stage's waits for its overlapped parameter all-gather are exposed DP communication, not bubble.
  const double gather_wait =
      std::min(busiest->param_gather_wait_s, std::max(0.0, r.pipeline_end_s - b.compute_s - b.tp_comm_s));
  b.bubble_s = std::max(0.0, r.pipeline_end_s - b.compute_s - b.tp_comm_s - gather_wait);
  // A mixture of experts' token all-to-alls are the busiest stage's own communication, not bubble.
  b.all_to_all_s = std::min(busiest->all_to_all_s, b.bubble_s);
  b.bubble_s -= b.all_to_all_s;
  b.expert_sync_s = last_sync->expert_sync_s;
  const double tail = std::max(0.0, r.iteration_s - r.pipeline_end_s);
  b.exposed_dp_comm_s = std::min(tail, last_sync->exposed_comm_s);
  const StageResult* last_finish =
      &*std::max_element(r.stages.begin(), r.stages.end(),
                         [](const StageResult& x, const StageResult& y) { return x.finish_s < y.finish_s; });
  double rest = tail - b.exposed_dp_comm_s;
  b.optimizer_s = std::min(rest, last_finish->optimizer_s);
  rest -= b.optimizer_s;
  b.embedding_sync_s = std::min(rest, last_finish->embedding_sync_s);
  b.exposed_compression_s = rest - b.embedding_sync_s;
  b.exposed_dp_comm_s += gather_wait;
  return b;
}

double comm_latency_s(const IterationResult& r) {
  double worst = 0.0;
  for (const StageResult& s : r.stages) worst = std::max(worst, s.dp_sync_s);
  return worst;
}

RunTotals accumulate(const RunSchedule& schedule, const std::vector<DpSyncPlan>& plans,
                     const std::vector<IterationResult>& results) {
  if (plans.size() != results.size()) throw InternalError("accumulate: one result per plan expected");
  RunTotals t;
  t.plan_iterations.assign(plans.size(), 0);
  double latency_sum = 0.0;
  double compressed_latency_sum = 0.0;
  double compressed_time_sum = 0.0;
  for (const RunSegment& seg : schedule.segments()) {
    const auto found = std::find(plans.begin(), plans.end(), seg.plan);
    if (found == plans.end()) throw InternalError("accumulate: a segment's plan was not simulated");
    const auto index = static_cast<std::size_t>(found - plans.begin());
    const IterationResult& r = results[index];
    const std::int64_t n = seg.iterations();
    const auto w = static_cast<double>(n);
    t.plan_iterations[index] += n;
    t.iterations += n;
    t.training_time_s += w * r.iteration_s;
    const double latency = comm_latency_s(r);
    latency_sum += w * latency;
    const bool compressed = dp_compressed(seg.plan);
    if (compressed) {
      t.compressed_iterations += n;
      compressed_latency_sum += w * latency;
      compressed_time_sum += w * r.iteration_s;
    }
    if (t.stage_comm_latency_s.size() < r.stages.size()) t.stage_comm_latency_s.resize(r.stages.size(), 0.0);
    for (std::size_t s = 0; s < r.stages.size(); ++s) t.stage_comm_latency_s[s] += w * r.stages[s].dp_sync_s;
    const IterationBreakdown b = breakdown(r);
    t.breakdown.compute_s += w * b.compute_s;
    t.breakdown.tp_comm_s += w * b.tp_comm_s;
    t.breakdown.bubble_s += w * b.bubble_s;
    t.breakdown.embedding_sync_s += w * b.embedding_sync_s;
    t.breakdown.optimizer_s += w * b.optimizer_s;
    t.breakdown.exposed_dp_comm_s += w * b.exposed_dp_comm_s;
    t.breakdown.exposed_compression_s += w * b.exposed_compression_s;
    t.breakdown.compression_s += w * b.compression_s;
    t.breakdown.pp_comm_s += w * b.pp_comm_s;
    t.breakdown.pp_compression_s += w * b.pp_compression_s;
    t.breakdown.pp_send_bytes += w * b.pp_send_bytes;
    t.breakdown.all_to_all_s += w * b.all_to_all_s;
    t.breakdown.expert_sync_s += w * b.expert_sync_s;
  }
  if (t.iterations > 0) {
    const auto n = static_cast<double>(t.iterations);
    t.iteration_time_s = t.training_time_s / n;
    t.comm_latency_s = latency_sum / n;
    for (double& x : t.stage_comm_latency_s) x /= n;
    t.breakdown.compute_s /= n;
    t.breakdown.tp_comm_s /= n;
    t.breakdown.bubble_s /= n;
    t.breakdown.embedding_sync_s /= n;
    t.breakdown.optimizer_s /= n;
    t.breakdown.exposed_dp_comm_s /= n;
    t.breakdown.exposed_compression_s /= n;
    t.breakdown.compression_s /= n;
    t.breakdown.pp_comm_s /= n;
    t.breakdown.pp_compression_s /= n;
    t.breakdown.all_to_all_s /= n;
    t.breakdown.expert_sync_s /= n;
    t.breakdown.pp_send_bytes /= n;
  }
  if (t.compressed_iterations > 0) {
    t.compressed_comm_latency_s = compressed_latency_sum / static_cast<double>(t.compressed_iterations);
    t.compressed_iteration_time_s = compressed_time_sum / static_cast<double>(t.compressed_iterations);
  }
  return t;
}

}  // namespace edgc::sim

namespace edgc::sim {

bool stages_separable(const ClusterSpec& cluster, const ParallelSpec& parallel) {
  if (cluster.fabric != Fabric::kStar) return false;
  // An overlapped DP sync runs during the backward passes (or the parameter all-gather during the forward ones),
  // beside the pipeline's own transfers on the same NICs: the pipeline part then depends on the plan.
  if (dp_overlaps_pipeline(parallel)) return false;
  const Layout layout(parallel, cluster.gpus_per_node);
  std::vector<int> stage_of_node(static_cast<std::size_t>(cluster.nodes), -1);
  for (int rank = 0; rank < layout.world_size(); ++rank) {
    const int node = layout.node_of(rank);
    const int stage = layout.coord_of(rank).pp;
    int& owner = stage_of_node.at(static_cast<std::size_t>(node));
    if (owner >= 0 && owner != stage) return false;
    owner = stage;
  }
  return true;
}

std::vector<DpSyncPlan> separable_basis(const std::vector<DpSyncPlan>& plans) {
  std::vector<StageSync> syncs;
  std::size_t pp = 0;
  for (const DpSyncPlan& p : plans) {
    pp = p.size();
    for (const StageSync& s : p)
      if (std::find(syncs.begin(), syncs.end(), s) == syncs.end()) syncs.push_back(s);
  }
  std::sort(syncs.begin(), syncs.end());
  std::vector<DpSyncPlan> basis;
  for (const StageSync& s : syncs) basis.push_back(DpSyncPlan(pp, s));
  return basis;
}

IterationResult compose_separable(const DpSyncPlan& plan, const std::vector<DpSyncPlan>& basis,
                                  const std::vector<IterationResult>& basis_results) {
  if (basis.size() != basis_results.size()) throw InternalError("compose_separable: basis and results differ in size");
  IterationResult out;
  for (const StageSync& s : plan)
    if (s.pp_rank != plan.front().pp_rank)
      throw InternalError("compose_separable: the plan's stages differ in pp_rank, so its pipeline part is its own");
  for (std::size_t s = 0; s < plan.size(); ++s) {
    const auto it = std::find_if(basis.begin(), basis.end(), [&](const DpSyncPlan& b) {
      return b.size() == plan.size() &&
             std::all_of(b.begin(), b.end(), [&](const StageSync& x) { return x == plan[s]; });
    });
    if (it == basis.end())
      throw InternalError("compose_separable: no uniform plan for rank " + std::to_string(plan[s].powersgd_rank));
    const IterationResult& u = basis_results[static_cast<std::size_t>(it - basis.begin())];
    if (u.stages.size() != plan.size())
      throw InternalError("compose_separable: a basis result has the wrong stage count");
    out.stages.push_back(u.stages[s]);
    out.pipeline_end_s = u.pipeline_end_s;
  }
  // The first and last stage meet for the embedding all-reduce once both synced: their finish depends on each
  // other's sync end, which the uniform plans do not share.
  if (out.stages.size() > 1 && out.stages.front().embedding_sync_s > 0) {
    const double meet = std::max(out.stages.front().sync_end_s, out.stages.back().sync_end_s);
    for (StageResult* st : {&out.stages.front(), &out.stages.back()})
      st->finish_s = meet + st->embedding_sync_s + st->optimizer_s;
  }
  for (const StageResult& st : out.stages) out.iteration_s = std::max(out.iteration_s, st.finish_s);
  return out;
}

void add_entropy_passes(RunTotals& t, std::int64_t sampled, std::int64_t sampled_compressed, double pass_s) {
  if (t.iterations <= 0 || sampled <= 0 || !(pass_s > 0.0)) return;
  const double added = static_cast<double>(sampled) * pass_s;
  const auto n = static_cast<double>(t.iterations);
  t.training_time_s += added;
  t.iteration_time_s = t.training_time_s / n;
  t.breakdown.entropy_s += added / n;
  if (t.compressed_iterations > 0)
    t.compressed_iteration_time_s +=
        static_cast<double>(sampled_compressed) * pass_s / static_cast<double>(t.compressed_iterations);
}

}  // namespace edgc::sim
