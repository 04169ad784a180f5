// LiveRun's policy runs: replay's window bookkeeping drives the controller over the trace, and every captured
// iteration becomes one timed PowerSgd::step of each stage over its DP group.
#include <mpi.h>

#include <algorithm>
#include <cstddef>

#include "edgc/core/error.hpp"
#include "edgc/kernels/dp_emulation.hpp"
#include "live_run.hpp"

namespace edgc::live {

using nlohmann::ordered_json;

void LiveRun::run_policy(const std::string& policy) {
  engine::ReplayOptions ro = replay_options(policy);
  auto psgd = make_psgd(0);
  Verifier verifier = make_verifier();
  BoundaryLink boundaries(w_, trace_manifest_, o_.seed, o_.verify);
  std::vector<LocalStep> local;
  ro.on_iteration = [&](const traces::IterationData& data, std::span<const int> stage_ranks,
                        const core::WindowDecision& in_force) {
    const auto step = static_cast<std::int64_t>(local.size());
    local.push_back(replay_step(data, stage_ranks, step, *psgd, o_.verify ? &verifier : nullptr));
    // The pipeline's backward messages of the same iteration (edgc-pp compresses them; others send them whole).
    if (boundaries.active()) boundaries.exchange(data, in_force);
  };
  PolicyOutcome outcome{policy, engine::run_replay(ro)};
  if (o_.verify) {
    std::vector<double> worst = {verifier.worst_ef()};
    w_.world_reduce(worst, MPI_MAX);
    worst_ef_ = std::max(worst_ef_, worst[0]);
    verified_steps_ += verifier.steps();
  }
  record_run(policy, local);
  record_boundaries(policy, boundaries.totals());
  outcomes_.push_back(std::move(outcome));
}

// The replay `edgc replay` would make of this policy, with the stages of this run and no full-rank comparison.
engine::ReplayOptions LiveRun::replay_options(const std::string& policy) const {
  engine::ReplayOptions ro;
  ro.trace_dir = o_.trace_dir;
  if (!o_.scenario_path.empty()) ro.where = o_.scenario_path;
  ro.controller = o_.compression.controller;
  ro.controller.policy = policy;
  ro.gds = o_.compression.gds;
  ro.warmup_floor_fraction = o_.compression.warmup_floor_fraction;
  ro.warmup_ceiling_fraction = o_.compression.warmup_ceiling_fraction;
  // The controller's entropy kernels run on the host whatever PowerSGD runs on: every rank must take the same
  // decisions, and the CPU kernels give the same bits on every host (GPUs of other models might not).
  ro.backend = "cpu";
  ro.bins_per_sigma = o_.bins_per_sigma;
  ro.compare_full = false;
  ro.seed = o_.seed;
  ro.stages = w_.pp;
  ro.max_iterations = o_.max_iterations;
  return ro;
}

// With --verify, replica 0 of each group also runs the in-process emulation of the whole group to compare with.
Verifier LiveRun::make_verifier() const {
  if (!o_.verify || w_.replica != 0) return Verifier();
  kernels::PowerSgdConfig cfg;
  cfg.rank = 0;
  cfg.seed = o_.seed;
  // The emulation runs on this rank's backend (a device one on this rank's GPU): bit for bit on the host, within
  // a tolerance on a device (verify.hpp).
  kernels::BackendOptions bo;
  bo.device = device_;
  return Verifier(std::make_unique<kernels::DataParallelEmulator>(o_.backend, tensors_.shapes, w_.dp, cfg,
                                                                  o_.perturbation, o_.seed, bo),
                  !backend_->device_memory());
}

// One captured iteration, the controller having chosen `stage_ranks`: this replica's gradients, one timed step.
LocalStep LiveRun::replay_step(const traces::IterationData& data, std::span<const int> stage_ranks, std::int64_t step,
                               kernels::PowerSgd& psgd, Verifier* verify) {
  // Every rank took the same decisions (it runs the same deterministic controller on the same data).
  std::vector<double> lo(stage_ranks.begin(), stage_ranks.end());
  std::vector<double> hi = lo;
  w_.world_reduce(lo, MPI_MIN);
  w_.world_reduce(hi, MPI_MAX);
  if (lo != hi)
    throw InternalError("live: the ranks' controllers disagree at iteration " + std::to_string(data.info->iteration));
  load_raw(tensors_, data);
  make_replica(tensors_, host_backend(), o_.perturbation, o_.seed, step, w_.replica);
  const int r = stage_ranks[static_cast<std::size_t>(w_.stage)];
  LocalStep s = timed_step(psgd, tensor_ranks(tensors_, r), r, verify);
  s.iteration = data.info->iteration;
  return s;
}

// Sums this policy's boundary traffic over the world at rank 0 (collective).
void LiveRun::record_boundaries(const std::string& policy, const BoundaryTotals& t) {
  std::vector<double> v = {static_cast<double>(t.sent),
                           static_cast<double>(t.sent_compressed),
                           static_cast<double>(t.received),
                           static_cast<double>(t.wire_floats),
                           static_cast<double>(t.dense_floats),
                           static_cast<double>(t.verified),
                           t.codec_s,
                           t.transfer_s};
  std::vector<double> sum(v.size(), 0.0);
  MPI_Reduce(v.data(), sum.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  if (w_.rank != 0 || sum[0] == 0.0) return;
  BoundaryTotals all;
  all.sent = static_cast<std::int64_t>(sum[0]);
  all.sent_compressed = static_cast<std::int64_t>(sum[1]);
  all.received = static_cast<std::int64_t>(sum[2]);
  all.wire_floats = static_cast<std::int64_t>(sum[3]);
  all.dense_floats = static_cast<std::int64_t>(sum[4]);
  all.verified = static_cast<std::int64_t>(sum[5]);
  all.codec_s = sum[6];
  all.transfer_s = sum[7];
  boundary_totals_.emplace_back(policy, all);
}

// The group-reduced steps of every stage, assembled at rank 0 into one MeasuredRun of measurements.json; a step
// takes as long as its slowest stage. Collective.
void LiveRun::record_run(const std::string& policy, const std::vector<LocalStep>& local) {
  const auto reduced = reduce_steps(w_, local);
  ordered_json mine = ordered_json::array();
  for (const auto& s : reduced) mine.push_back(results::to_json(s));
  const auto all = w_.gather(mine.dump());
  if (w_.rank != 0) return;
  results::MeasuredRun run;
  run.policy = policy;
  for (std::size_t k = 0; k < local.size(); ++k) {
    results::Step st;
    st.step = static_cast<std::int64_t>(k);
    st.iteration = local[k].iteration;
    run.steps.push_back(st);
  }
  for (int s = 0; s < w_.pp; ++s) {
    const auto stage_steps = nlohmann::json::parse(all[static_cast<std::size_t>(s) * static_cast<std::size_t>(w_.dp)]);
    if (stage_steps.size() != run.steps.size())
      throw InternalError("live: stage " + std::to_string(s) + " reported a different number of steps");
    for (std::size_t k = 0; k < run.steps.size(); ++k)
      run.steps[k].stages.push_back(
          results::stage_step_from_json(stage_steps[k], "live: rank " + std::to_string(s * w_.dp)));
  }
  for (auto& st : run.steps)
    for (const auto& x : st.stages) st.iteration_s = std::max(st.iteration_s, x.sync_s);
  meas_.runs.push_back(std::move(run));
}

}  // namespace edgc::live
