#pragma once
// One rank's part of `edgc live`: the phases of live.hpp (machine rates, calibration, probe, one replay per
// policy), all collective over the world, then rank 0's outputs.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "calibration/machine.hpp"
#include "edgc/engine/replay.hpp"
#include "edgc/kernels/backend.hpp"
#include "edgc/kernels/communicator.hpp"
#include "edgc/kernels/powersgd.hpp"
#include "edgc/live/live.hpp"
#include "edgc/results/measurements.hpp"
#include "edgc/traces/reader.hpp"
#include "outputs.hpp"
#include "step/boundary_link.hpp"
#include "step/local_step.hpp"
#include "step/stage_tensors.hpp"
#include "step/timed_communicator.hpp"
#include "step/verify.hpp"
#include "step/world.hpp"

namespace edgc::live {

class LiveRun {
 public:
  /// `w`: laid out (World::split) and kept by reference; `host`: this rank's processor name.
  LiveRun(const LiveOptions& o, World& w, std::string host) : o_(o), w_(w), host_(std::move(host)) {}

  /// Every phase, on every rank together.
  void run();
  /// After run(), on every rank (collective); rank 0 writes cluster.json, measurements.json and result.json into
  /// `dir` (the other ranks ignore it).
  void write_outputs(const std::filesystem::path& dir);
  /// Rank 0, after write_outputs(): the console summary.
  void print() const { print_summary(meas_, summary_, o_.out_dir); }

  /// With --verify: the worst error-feedback residual over every rank and policy.
  double worst_ef() const { return worst_ef_; }
  /// With --verify: the steps this rank verified, over every policy.
  std::int64_t verified_steps() const { return verified_steps_; }
  /// Rank 0: per policy that sent stage-boundary messages, their totals over the world.
  const std::vector<std::pair<std::string, BoundaryTotals> >& boundary_totals() const { return boundary_totals_; }

 private:
  void open_communicators();
  void calibrate();
  std::unique_ptr<kernels::PowerSgd> make_psgd(int initial_rank) const;
  LocalStep timed_step(kernels::PowerSgd& psgd, const std::vector<int>& ranks, int stage_rank, Verifier* verify);

  /// What the probe measured at one rank (medians over its repeats).
  struct ProbePoint {
    double comm_s = 0.0;             ///< Σ of the step's all-reduces, each the group's MIN
    double compressed_comm_s = 0.0;  ///< the P and Q all-reduces alone
    double compute_s = 0.0;          ///< the slowest replica's
    double copy_s = 0.0;             ///< pack + unpack of the dense buffer, slowest replica
    std::int64_t dense_bytes = 0;
    std::vector<results::MatrixGroup> batches;
    std::vector<double> batch_s;                                ///< per batch, slowest replica
    std::vector<std::int64_t> sizes;                            ///< bytes of every all-reduce the step made
    std::vector<std::pair<std::int64_t, double> > collectives;  ///< (bytes, group MIN) per call; replica 0 only
  };
  void probe();
  std::optional<ProbePoint> probe_rank(int r);
  void gather_probe_points(const nlohmann::ordered_json& mine);
  void gather_probe_profile(const nlohmann::ordered_json& kernels, const nlohmann::ordered_json& copies,
                            const nlohmann::ordered_json& collectives);

  void run_policy(const std::string& policy);
  engine::ReplayOptions replay_options(const std::string& policy) const;
  Verifier make_verifier() const;
  LocalStep replay_step(const traces::IterationData& data, std::span<const int> stage_ranks, std::int64_t step,
                        kernels::PowerSgd& psgd, Verifier* verify);
  void record_run(const std::string& policy, const std::vector<LocalStep>& local);
  void record_boundaries(const std::string& policy, const BoundaryTotals& t);

  Rates median_rates() const;
  void record_placement(const std::vector<std::string>& hosts);

  const LiveOptions& o_;
  World& w_;
  std::string host_;
  /// The host backend of the statistics of host data (replica noise scale): backend_ itself, or "cpu" when
  /// backend_ keeps its data on a device.
  const kernels::Backend& host_backend() const { return host_backend_ ? *host_backend_ : *backend_; }

  std::unique_ptr<kernels::Backend> backend_;
  std::unique_ptr<kernels::Backend> host_backend_;  // only with a device backend_
  StageTensors tensors_;  // after backend_: its device buffers are freed through backend_, so they must go first
  int device_ = 0;        // the GPU of a device backend_
  std::unique_ptr<kernels::Communicator> inner_;
  std::unique_ptr<TimedCommunicator> comm_;
  Rates rates_;
  results::Measurements meas_;
  std::vector<PolicyOutcome> outcomes_;
  results::ResultDocument summary_;  ///< result.json at rank 0, for the console summary
  double worst_ef_ = 0.0;
  std::int64_t verified_steps_ = 0;
  traces::Manifest trace_manifest_;
  std::vector<std::pair<std::string, BoundaryTotals> > boundary_totals_;
  std::vector<std::int64_t> probed_sizes_;  ///< every all-reduce size of the probe's steps, all stages
  nlohmann::ordered_json kernel_profile_;   ///< rank 0: kernels.json
};

}  // namespace edgc::live
