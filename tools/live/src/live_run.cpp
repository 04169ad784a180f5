#include "live_run.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <map>

#include "calibration/fits.hpp"
#include "edgc/core/atomic_file.hpp"
#include "edgc/core/error.hpp"
#include "edgc/core/median.hpp"
#include "edgc/kernels/kernels.hpp"
#include "edgc/kernels/mpi_communicator.hpp"

namespace edgc::live {

using nlohmann::ordered_json;

void LiveRun::run() {
  traces::TraceReader reader(o_.trace_dir);
  const traces::Manifest& man = reader.manifest();
  std::vector<int> tensor_stage;
  for (const auto& t : man.tensors) tensor_stage.push_back(traces::merged_stage(man, t.stage, w_.pp));
  tensors_ = stage_tensors(man, tensor_stage, w_.stage);
  trace_manifest_ = man;

  open_communicators();

  rates_ = measure_rates(*backend_);
  calibrate();
  traces::IterationData first;
  reader.read(0, first);
  load_raw(tensors_, first);
  probe();
  for (const std::string& p : o_.policies) run_policy(p);
}

// The communicator first: with NCCL it has chosen this rank's GPU, and a cuda backend goes on the same one
// (without NCCL: the rank's index on its host, one GPU per rank).
void LiveRun::open_communicators() {
  const int host_rank = w_.host_rank();  // collective: every rank calls it
  if (o_.comm == "nccl")
    inner_ = kernels::make_nccl_communicator(w_.group);
  else
    inner_ = std::make_unique<kernels::MpiCommunicator>(w_.group);
  comm_ = std::make_unique<TimedCommunicator>(*inner_);
  device_ = inner_->device() >= 0 ? inner_->device() : host_rank;
  kernels::BackendOptions bo;
  bo.threads = 1;
  bo.device = device_;
  backend_ = kernels::make_backend(o_.backend, bo);
  if (backend_->device_memory()) host_backend_ = kernels::make_backend("cpu", {.threads = 1, .device = 0});
  attach_device(tensors_, *backend_);
}

// Dense all-reduces over every DP group at once (so the network is loaded as in a step); stage 0's group's
// figures, which rank 0 holds after the group reduction, are the calibration rank 0 writes.
void LiveRun::calibrate() {
  results::Calibration& cal = meas_.calibration;
  cal.ranks = w_.dp;
  std::vector<float> buf;
  for (std::int64_t bytes = o_.calibration_min_bytes; bytes <= o_.calibration_max_bytes; bytes *= 4) {
    buf.assign(static_cast<std::size_t>(std::max<std::int64_t>(1, bytes / kElementBytes)), 1.0F);
    std::vector<double> times;
    for (int rep = -1; rep < o_.calibration_repeats; ++rep) {  // rep -1 warms up
      w_.barrier();
      comm_->all_reduce_sum(buf);
      std::vector<double> t = {comm_->take().back().seconds};
      w_.group_reduce(t, MPI_MIN);
      if (rep >= 0) times.push_back(t[0]);
    }
    cal.rows.push_back({static_cast<std::int64_t>(buf.size()) * kElementBytes, core::median(times)});
    if (bytes > o_.calibration_max_bytes / 4) break;
  }
  const int d = w_.dp;
  if (d < 2) {
    cal.latency_s = 0.0;
    cal.bandwidth_Bps = rates_.copy_Bps;
    return;
  }
  const auto [a, b] = fit_affine_relative(cal.rows);
  cal.latency_s = a / (2.0 * (d - 1));
  cal.bandwidth_Bps = b > 0.0 ? 2.0 * (d - 1) / d / b : rates_.copy_Bps;
}

// A fresh PowerSgd for this rank's stage.
std::unique_ptr<kernels::PowerSgd> LiveRun::make_psgd(int initial_rank) const {
  kernels::PowerSgdConfig cfg;
  cfg.rank = 0;
  cfg.seed = o_.seed;
  auto p = std::make_unique<kernels::PowerSgd>(*backend_, tensors_.shapes, cfg);
  const auto r = tensor_ranks(tensors_, initial_rank);
  for (std::size_t i = 0; i < r.size(); ++i) p->set_rank(i, r[i]);
  return p;
}

// Timed step of every stage at once: barrier, step, record. `ranks` per tensor. With a device backend the
// replica's gradients go to the GPU before the barrier and come back only for --verify.
LocalStep LiveRun::timed_step(kernels::PowerSgd& psgd, const std::vector<int>& ranks, int stage_rank,
                              Verifier* verify) {
  for (std::size_t i = 0; i < ranks.size(); ++i) psgd.set_rank(i, ranks[i]);
  if (verify) verify->before(tensors_, psgd);
  upload_mine(tensors_);
  w_.barrier();
  const double t0 = MPI_Wtime();
  const kernels::StepStats st = psgd.step(step_views(tensors_), *comm_);
  const double sync = MPI_Wtime() - t0;
  if (verify) download_mine(tensors_);
  LocalStep s = describe(st, psgd, comm_->take());
  s.rank = stage_rank;
  s.sync_s = sync;
  if (verify) verify->after(w_, tensors_, psgd, st, ranks);
  return s;
}

void LiveRun::probe() {
  // Stage roots send their points (rank, comm, compute) to rank 0.
  ordered_json mine = ordered_json::array();
  for (const int r : o_.probe_ranks) {
    const auto point = probe_rank(r);
    if (point && w_.replica == 0) mine.push_back({r, point->first, point->second});
  }
  gather_probe_points(mine);
}

// The medians over the repeats of the group-reduced comm and compute time of a step at stage rank r (on the
// group's replica 0; zeros elsewhere), or nothing when no stage compresses anything at r. Collective.
std::optional<std::pair<double, double> > LiveRun::probe_rank(int r) {
  const auto ranks = tensor_ranks(tensors_, r);
  // Every group must agree to use this rank (the smallest stage decides whether anything is compressed).
  std::vector<double> any = {std::any_of(ranks.begin(), ranks.end(), [](int x) { return x > 0; }) ? 1.0 : 0.0};
  w_.world_reduce(any, MPI_MIN);
  if (any[0] == 0.0) return std::nullopt;
  auto psgd = make_psgd(r);
  std::vector<LocalStep> steps;
  for (int rep = -1; rep < o_.probe_repeats; ++rep) {  // rep -1 warms up
    make_replica(tensors_, host_backend(), o_.perturbation, o_.seed, 0, w_.replica);
    LocalStep s = timed_step(*psgd, ranks, r, nullptr);
    if (rep >= 0) steps.push_back(std::move(s));
  }
  std::vector<double> comm;
  std::vector<double> compute;
  for (const auto& s : reduce_steps(w_, steps)) {
    double c = 0;
    for (const auto& x : s.collectives) c += x.time_s;
    comm.push_back(c);
    compute.push_back(s.compute_s);
  }
  return std::make_pair(core::median(comm), core::median(compute));
}

// Rank 0 collects every stage root's points and fits T_com(r) per stage.
void LiveRun::gather_probe_points(const ordered_json& mine) {
  const auto all = w_.gather(mine.dump());
  if (w_.rank != 0) return;
  for (int g = 0; g < w_.size; ++g) {
    if (g % w_.dp != 0) continue;
    for (const auto& p : nlohmann::json::parse(all[static_cast<std::size_t>(g)]))
      meas_.tcom_points.push_back({g / w_.dp, p[0].get<int>(), p[1].get<double>(), p[2].get<double>()});
  }
  for (int s = 0; s < w_.pp; ++s) meas_.tcom_fit.push_back(fit_line(s, meas_.tcom_points));
}

void LiveRun::write_outputs(const std::filesystem::path& dir) {
  const Rates med = median_rates();
  const std::vector<std::string> hosts = w_.gather(host_);
  if (w_.rank != 0) return;
  meas_.world_size = w_.size;
  meas_.pp = w_.pp;
  meas_.dp = w_.dp;
  meas_.comm = o_.comm;
  meas_.backend = o_.backend;
  meas_.element_bytes = kElementBytes;
  meas_.trace = o_.trace_dir;
  record_placement(hosts);
  const std::string gpu_name = o_.backend == "cpu" ? "cpu: " + cpu_model_name() : std::string(backend_->isa());
  const ordered_json cluster = cluster_json(meas_, med, gpu_name);
  results::ResultDocument result = result_document(o_, meas_, outcomes_);
  write_file_atomic(dir / "cluster.json", cluster.dump(1) + "\n");
  write_file_atomic(dir / "measurements.json", to_json(meas_).dump(1) + "\n");
  write_file_atomic(dir / "result.json", results::to_json(result).dump(1) + "\n");
  summary_ = std::move(result);
}

// Every rank's machine rates, their medians at rank 0 (zeros elsewhere). Collective.
Rates LiveRun::median_rates() const {
  const std::vector<double> rates = {rates_.gemm_flops, rates_.copy_Bps};
  const std::vector<std::string> all = w_.gather(ordered_json(rates).dump());
  std::vector<double> flops;
  std::vector<double> copy;
  for (const auto& s : all) {
    const auto v = nlohmann::json::parse(s);
    flops.push_back(v[0].get<double>());
    copy.push_back(v[1].get<double>());
  }
  return {core::median(flops), core::median(copy)};
}

// Numbers the hosts in order of first appearance and each rank's slot on its host.
void LiveRun::record_placement(const std::vector<std::string>& hosts) {
  std::map<std::string, int> node_of;
  std::map<std::string, int> used;
  for (int g = 0; g < w_.size; ++g) {
    const std::string& h = hosts[static_cast<std::size_t>(g)];
    if (!node_of.count(h)) node_of[h] = static_cast<int>(node_of.size());
    meas_.placement.push_back({g, h, node_of[h], used[h]++, g / w_.dp, g % w_.dp});
  }
}

}  // namespace edgc::live
