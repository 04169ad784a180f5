#include "live_run.hpp"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <set>
#include <tuple>

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
  traces::IterationData first;
  reader.read(0, first);
  load_raw(tensors_, first);
  probe();  // first: the calibration then times every all-reduce size the probed steps sent
  calibrate();
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
//
// The sizes: powers of two from min_bytes to max_bytes, and every size an all-reduce of the probe's steps had (the
// dense buffer and the P and Q factors at each probed rank, over all stages): a run at those ranks sends exactly
// these, so its collectives are priced from their own measurements rather than interpolated.
void LiveRun::calibrate() {
  results::Calibration& cal = meas_.calibration;
  cal.ranks = w_.dp;
  std::set<std::int64_t> sizes(probed_sizes_.begin(), probed_sizes_.end());
  for (std::int64_t bytes = o_.calibration_min_bytes; bytes <= o_.calibration_max_bytes; bytes *= 2) {
    sizes.insert(std::max<std::int64_t>(1, bytes / kElementBytes) * kElementBytes);
    if (bytes > o_.calibration_max_bytes / 2) break;
  }
  std::vector<float> buf;
  for (const std::int64_t bytes : sizes) {
    buf.assign(static_cast<std::size_t>(bytes / kElementBytes), 1.0F);
    std::vector<double> times;
    for (int rep = -1; rep < o_.calibration_repeats; ++rep) {  // rep -1 warms up
      // The caches as a step leaves them: the replica's gradients just written, then the buffer to send.
      make_replica(tensors_, host_backend(), o_.perturbation, o_.seed, 0, w_.replica);
      std::fill(buf.begin(), buf.end(), 1.0F);
      w_.barrier();
      comm_->all_reduce_sum(buf);
      std::vector<double> t = {comm_->take().back().seconds};
      w_.group_reduce(t, MPI_MIN);
      if (rep >= 0) times.push_back(t[0]);
    }
    cal.rows.push_back({bytes, core::median(times)});
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
  // Rank 0 (all uncompressed) first: the dense buffer's copies and all-reduce at full size; no T_com point.
  ordered_json points = ordered_json::array();
  ordered_json kernels = ordered_json::array();
  ordered_json copies = ordered_json::array();
  ordered_json collectives = ordered_json::array();
  std::set<std::int64_t> sizes;
  std::vector<int> ranks = {0};
  ranks.insert(ranks.end(), o_.probe_ranks.begin(), o_.probe_ranks.end());
  for (const int r : ranks) {
    const auto point = probe_rank(r);
    if (!point) continue;
    for (const std::int64_t b : point->sizes) sizes.insert(b);
    if (w_.replica != 0) continue;
    // A T_com point only where the step compressed something (past the skip threshold every tensor goes whole).
    if (r > 0 && !point->batches.empty())
      points.push_back({r, point->comm_s, point->compute_s, point->compressed_comm_s});
    if (point->dense_bytes > 0) copies.push_back({point->dense_bytes, point->copy_s});
    for (const auto& [bytes, t] : point->collectives) collectives.push_back({bytes, t});
    for (std::size_t i = 0; i < point->batches.size(); ++i) {
      const results::MatrixGroup& g = point->batches[i];
      kernels.push_back({g.rows, g.cols, g.rank, g.count, point->batch_s[i]});
    }
  }
  gather_probe_points(points);
  gather_probe_profile(kernels, copies, collectives);
  // Every rank needs every stage's sizes: the calibration is collective over all DP groups at once.
  const std::vector<std::string> all =
      w_.gather(ordered_json(std::vector<std::int64_t>(sizes.begin(), sizes.end())).dump());
  std::string merged;
  if (w_.rank == 0) {
    std::set<std::int64_t> every;
    for (const std::string& s : all)
      for (const auto& b : nlohmann::json::parse(s)) every.insert(b.get<std::int64_t>());
    merged = ordered_json(std::vector<std::int64_t>(every.begin(), every.end())).dump();
  }
  w_.broadcast(merged);
  probed_sizes_ = nlohmann::json::parse(merged).get<std::vector<std::int64_t> >();
}

// The medians over the repeats of a step at stage rank r (0: every tensor uncompressed), its parts group-reduced
// (communication: MIN per call as in the run, compute: MAX), meaningful on the group's replica 0; nothing when
// r > 0 and no stage compresses anything at r. Collective.
std::optional<LiveRun::ProbePoint> LiveRun::probe_rank(int r) {
  const auto ranks = tensor_ranks(tensors_, r);
  // Every group must agree to use this rank (the smallest stage decides whether anything is compressed).
  std::vector<double> any = {r == 0 || std::any_of(ranks.begin(), ranks.end(), [](int x) { return x > 0; }) ? 1.0
                                                                                                            : 0.0};
  w_.world_reduce(any, MPI_MIN);
  if (any[0] == 0.0) return std::nullopt;
  auto psgd = make_psgd(r);
  std::vector<LocalStep> steps;
  for (int rep = -1; rep < o_.probe_repeats; ++rep) {  // rep -1 warms up
    make_replica(tensors_, host_backend(), o_.perturbation, o_.seed, 0, w_.replica);
    LocalStep s = timed_step(*psgd, ranks, r, nullptr);
    if (rep >= 0) steps.push_back(std::move(s));
  }
  ProbePoint out;
  // This rank's medians of the compute parts, then the slowest replica's (as compute_s is reduced).
  std::vector<double> parts;
  std::vector<double> copy;
  for (const LocalStep& s : steps) copy.push_back(s.copy_s);
  parts.push_back(core::median(copy));
  for (std::size_t b = 0; b < steps.front().batch_s.size(); ++b) {
    std::vector<double> x;
    for (const LocalStep& s : steps) x.push_back(s.batch_s[b]);
    parts.push_back(core::median(x));
  }
  w_.group_reduce(parts, MPI_MAX);
  out.copy_s = parts[0];
  out.batches = steps.front().matrices;
  out.batch_s.assign(parts.begin() + 1, parts.end());
  for (const auto& c : steps.front().collectives) {
    out.sizes.push_back(c.bytes);
    if (c.kind == "dense") out.dense_bytes = c.bytes;
  }
  std::vector<double> comm;
  std::vector<double> pq;
  std::vector<double> compute;
  const auto reduced = reduce_steps(w_, steps);
  for (const auto& s : reduced) {
    double c = 0;
    double compressed = 0;
    for (const auto& x : s.collectives) {
      c += x.time_s;
      if (x.kind != "dense") compressed += x.time_s;
    }
    comm.push_back(c);
    pq.push_back(compressed);
    compute.push_back(s.compute_s);
  }
  if (reduced.empty()) return out;  // not the group's replica 0: the figures are there
  out.comm_s = core::median(comm);
  out.compressed_comm_s = core::median(pq);
  out.compute_s = core::median(compute);
  for (std::size_t i = 0; i < reduced.front().collectives.size(); ++i) {
    std::vector<double> t;
    for (const auto& s : reduced) t.push_back(s.collectives[i].time_s);
    out.collectives.emplace_back(reduced.front().collectives[i].bytes, core::median(t));
  }
  return out;
}

// Rank 0 collects every stage root's kernel and copy times, the kernel profile validate prices compute with (a
// batch or a size measured on several stages keeps its slowest time: the step waits for its slowest stage), and
// their all-reduce times, the calibration's step rows (the median of each size's calls).
void LiveRun::gather_probe_profile(const ordered_json& kernels, const ordered_json& copies,
                                   const ordered_json& collectives) {
  const auto all = w_.gather(ordered_json::array({kernels, copies, collectives}).dump());
  if (w_.rank != 0) return;
  std::map<std::tuple<std::int64_t, std::int64_t, int, int>, double> batch;
  std::map<std::int64_t, double> copy;
  std::map<std::int64_t, std::vector<double> > calls;
  for (int g = 0; g < w_.size; g += w_.dp) {
    const auto doc = nlohmann::json::parse(all[static_cast<std::size_t>(g)]);
    for (const auto& k : doc[0]) {
      double& t = batch[{k[0].get<std::int64_t>(), k[1].get<std::int64_t>(), k[2].get<int>(), k[3].get<int>()}];
      t = std::max(t, k[4].get<double>());
    }
    for (const auto& c : doc[1]) {
      double& t = copy[c[0].get<std::int64_t>()];
      t = std::max(t, c[1].get<double>());
    }
    for (const auto& c : doc[2]) calls[c[0].get<std::int64_t>()].push_back(c[1].get<double>());
  }
  for (const auto& [bytes, t] : calls) meas_.calibration.step_rows.push_back({bytes, core::median(t)});
  kernel_profile_ = {
      {"schema", "edgc.kernel_profile/1"},
      {"device", o_.backend == "cpu" ? "cpu: " + cpu_model_name() : std::string(backend_->isa())},
      {"backend", o_.backend},
      {"repeats", o_.probe_repeats},
      {"source",
       "edgc live's probe: PowerSgd::step of each stage's tensors at ranks 0 and live.probe.ranks, median "
       "over the repeats of each rank's kernel time per batch of same-shape matrices (count = matrices "
       "in the batch) and of the dense buffer's pack + unpack (copies), the slowest replica's"},
      {"entries", ordered_json::array()},
      {"copies", ordered_json::array()}};
  for (const auto& [key, t] : batch)
    if (t > 0)
      kernel_profile_["entries"].push_back({{"m", std::get<0>(key)},
                                            {"n", std::get<1>(key)},
                                            {"r", std::get<2>(key)},
                                            {"count", std::get<3>(key)},
                                            {"step_s", t}});
  for (const auto& [bytes, t] : copy)
    if (t > 0) kernel_profile_["copies"].push_back({{"bytes", bytes}, {"step_s", t}});
}

// Rank 0 collects every stage root's points and fits T_com(r) per stage.
void LiveRun::gather_probe_points(const ordered_json& mine) {
  const auto all = w_.gather(mine.dump());
  if (w_.rank != 0) return;
  for (int g = 0; g < w_.size; ++g) {
    if (g % w_.dp != 0) continue;
    for (const auto& p : nlohmann::json::parse(all[static_cast<std::size_t>(g)]))
      meas_.tcom_points.push_back(
          {g / w_.dp, p[0].get<int>(), p[1].get<double>(), p[2].get<double>(), p[3].get<double>()});
  }
  for (int s = 0; s < w_.pp; ++s) meas_.tcom_fit.push_back(fit_line(s, meas_.tcom_points));
}

void LiveRun::write_outputs(const std::filesystem::path& dir) {
  const Rates med = median_rates();
  // "host<TAB>online CPUs" of every rank.
  const std::vector<std::string> hosts = w_.gather(host_ + "\t" + std::to_string(sysconf(_SC_NPROCESSORS_ONLN)));
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
  const bool kernels = kernel_profile_.contains("entries") && !kernel_profile_["entries"].empty();
  const ordered_json cluster = cluster_json(meas_, med, gpu_name, kernels);
  results::ResultDocument result = result_document(o_, meas_, outcomes_);
  if (cluster.contains("network")) write_file_atomic(dir / kCalibrationFile, calibration_json(meas_).dump(1) + "\n");
  if (kernels) write_file_atomic(dir / kKernelProfileFile, kernel_profile_.dump(1) + "\n");
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
    const std::string& entry = hosts[static_cast<std::size_t>(g)];
    const std::size_t tab = entry.rfind('\t');
    const std::string h = entry.substr(0, tab);
    if (!node_of.count(h)) node_of[h] = static_cast<int>(node_of.size());
    meas_.placement.push_back({g, h, node_of[h], used[h]++, g / w_.dp, g % w_.dp, std::stoi(entry.substr(tab + 1))});
  }
}

}  // namespace edgc::live
