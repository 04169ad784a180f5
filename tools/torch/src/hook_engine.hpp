#pragma once
// What edgc_torch's DDP communication hook does on one data-parallel rank, without Python: the window bookkeeping of
// `edgc replay` (GDS-sampled entropy per stage, one controller decision per window) and PowerSGD with error feedback
// on each gradient bucket at the rank in force. The Python side (hook.py) walks DDP's buckets, shares rank 0's
// window observation with the other ranks (so every rank decides the same ranks) and does the all-reduces.
//
// Tensors are identified by their index among the model's parameters (the order of named_parameters(), the order
// the trace recorder writes): GDS blocks and PowerSGD's initial Q are drawn from that index, as `edgc replay` draws
// them from the trace's tensor index, so a hooked run and a replay of its recorded gradients sample the same blocks,
// start from the same Q and take the same decisions.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "edgc/core/controller.hpp"
#include "edgc/core/gds.hpp"
#include "edgc/core/window_accumulator.hpp"
#include "edgc/kernels/backend.hpp"
#include "edgc/kernels/buffer.hpp"
#include "edgc/kernels/communicator.hpp"
#include "edgc/kernels/powersgd.hpp"

namespace edgc::torch_ext {

struct HookTensor {
  std::vector<std::int64_t> shape;  ///< the parameter's dims
  int stage = 0;                    ///< pipeline stage whose rank compresses it, 0 ≤ stage < stages
};

struct HookSettings {
  core::ControllerConfig controller;  ///< stages set; stage_shapes are filled in from the tensors
  core::GdsConfig gds;
  double bins_per_sigma = 8.0;  ///< histogram bin width = σ(first sample) / bins_per_sigma (as replay)
  /// seed (initial Q), error_feedback, warm_start; rank and q_ids are set per bucket.
  kernels::PowerSgdConfig powersgd;
  int threads = 1;  ///< kernel threads of the "cpu" backend
  /// The kernels' backend (make_backend's names): "cpu", or "cuda" for gradients in the GPU's memory (a module that
  /// links edgc::kernels_cuda, EDGC_TORCH_CUDA). With a device backend the gradients, the stashed copies and the
  /// error feedback stay on the GPU; P and Q go to the all-reduce through host memory.
  std::string backend = "cpu";
  int device = 0;  ///< the CUDA device of "cuda"
};

/// One window as the hook ran it.
struct HookWindow {
  std::int64_t window = 0;
  std::int64_t first_iteration = 0;
  std::int64_t end_iteration = 0;       ///< exclusive
  bool warmup = true;                   ///< the decision in force during the window was still warming up
  std::vector<int> ranks;               ///< per stage: the rank in force during the window (0 = uncompressed)
  core::WindowObservation observation;  ///< what the controller was given at the window's end (rank 0's)
  /// Per stage: mean over the window's steps and the stage's ≥2-D tensors of this rank's ‖Ĝ − M‖/‖M‖ (0 for tensors
  /// sent uncompressed), the figure `edgc replay` reports as step_error; absent without such tensors.
  std::vector<std::optional<double>> step_error;
  std::vector<std::int64_t> wire_floats;   ///< per stage: floats this rank sent (all tensors, compressed or not)
  std::vector<std::int64_t> dense_floats;  ///< per stage: what uncompressed all-reduces would have sent
  core::WindowDecision next;               ///< decided at the window's end, in force from end_iteration on
};

/// What compress() did to one bucket.
struct BucketResult {
  std::int64_t wire_floats = 0;
  std::int64_t dense_floats = 0;
  int compressed_tensors = 0;
  double compute_seconds = 0.0;
  double communication_seconds = 0.0;
};

class HookEngine {
 public:
  /// `tensors`: every parameter of the model, in order. Validates everything (ConfigError naming the setting:
  /// compression.* keys of the scenario, or "stages", "tensors[i]"), builds the controller.
  HookEngine(HookSettings settings, std::vector<HookTensor> tensors);
  ~HookEngine();
  HookEngine(const HookEngine&) = delete;
  HookEngine& operator=(const HookEngine&) = delete;

  std::int64_t iteration() const noexcept { return iteration_; }
  std::size_t num_tensors() const noexcept { return tensors_.size(); }
  /// Whether the current iteration is one the GDS samples (its gradients must be stashed before compression). Only
  /// while entropy is needed: always for policies that read it, during an entropy warm-up for the others (static,
  /// loss, ... pay nothing for it once warm).
  bool samples_iteration() const noexcept;
  /// Whether the current iteration starts a new window: the previous one must be closed before any bucket of it is
  /// compressed.
  bool window_closes() const noexcept;

  /// The current window's observation from this rank, flat: per stage (gaussian, histogram, kurtosis, elements),
  /// then sampled iterations and mean loss; NaN = not observed. Rank 0's is shared with the others.
  std::vector<double> observation() const;
  /// Closes the window with `flat` (observation()'s layout, normally rank 0's), lets the controller decide and
  /// returns the window's record. Throws InputError for a wrong length.
  const HookWindow& close_window(std::span<const double> flat);

  /// Whether gradients must be in device memory (the backend's; see Backend::device_memory).
  bool device_memory() const noexcept { return backend_->device_memory(); }
  /// The backend's name ("cpu", "cpu-avx512", "cuda", ...).
  std::string_view backend_name() const noexcept { return backend_->name(); }

  /// Copies the raw gradients of the tensors `ids` (this iteration, before compression) for the entropy measurement,
  /// into backend memory (a device backend's copies are done when it returns).
  void stash(std::span<const std::size_t> ids, std::span<const std::span<const float>> grads);
  /// Adds a training loss to the current window (its mean is the controller's loss input).
  void add_loss(double loss);
  /// Compresses one bucket in place: `grads[i]` is tensor ids[i]'s gradient (numel floats); afterwards it holds the
  /// average over the communicator's ranks (PowerSGD's reconstruction at its stage's rank in force, or the exact
  /// average for tensors sent uncompressed). Every rank calls it with the same ids in the same order. The gradients
  /// are in backend memory; a device backend's work is finished when it returns.
  BucketResult compress(std::span<const std::size_t> ids, std::span<const std::span<float>> grads,
                        kernels::Communicator& comm);
  /// Ends the iteration: at a sampled one, measures the stashed gradients' entropy per stage (InputError when a
  /// tensor was not stashed).
  void end_iteration();

  /// The rank in force for `stage` (0 = uncompressed).
  int stage_rank(std::size_t stage) const;
  /// Rank tensor `id` is compressed at now (0 for 1-D tensors and ranks at or past min(m, n)).
  int tensor_rank(std::size_t id) const;
  const core::WindowDecision& in_force() const noexcept { return in_force_; }
  const std::vector<HookWindow>& windows() const noexcept { return windows_; }
  const core::ControllerConfig& controller_config() const noexcept { return settings_.controller; }
  const core::GdsConfig& gds_config() const noexcept { return settings_.gds; }
  /// Tensor `id`'s error-feedback buffer (host copy; empty until first compressed).
  std::vector<float> error(std::size_t id) const;
  /// Totals over every compress() call.
  std::int64_t wire_floats() const noexcept { return total_wire_; }
  std::int64_t dense_floats() const noexcept { return total_dense_; }
  std::int64_t bucket_calls() const noexcept { return bucket_calls_; }
  /// Compressors alive (one per distinct bucket composition in use).
  std::size_t compressors() const noexcept { return compressors_.size(); }

 private:
  struct Compressor;
  void check_ids(std::span<const std::size_t> ids, std::size_t grads) const;
  Compressor& compressor_for(std::span<const std::size_t> ids);
  void open_window();

  HookSettings settings_;
  std::vector<HookTensor> tensors_;
  std::vector<std::int64_t> numel_;
  std::vector<std::uint64_t> q_id_;  // index among the ≥2-D tensors (replay's compressible tensors)
  std::vector<std::vector<std::size_t>> stage_members_;
  core::GradientDataSampler gds_;
  bool reads_entropy_ = false;
  std::unique_ptr<core::Controller> controller_;
  std::unique_ptr<kernels::Backend> backend_;
  core::WindowAccumulator accumulator_;
  std::vector<std::optional<core::HistogramLayout>> layouts_;
  std::vector<kernels::Buffer<float>> stash_;  // per tensor, in backend memory
  std::vector<bool> stashed_;
  std::int64_t iteration_ = 0;
  std::int64_t window_ = 0;
  int sampled_iterations_ = 0;
  double loss_sum_ = 0.0;
  int loss_n_ = 0;
  core::WindowDecision in_force_;
  HookWindow current_;
  std::vector<double> err_sum_;
  std::vector<int> err_n_;
  std::vector<HookWindow> windows_;
  std::map<std::vector<std::size_t>, std::unique_ptr<Compressor>> compressors_;
  std::vector<const std::vector<std::size_t>*> owner_;  // per tensor: the key of the compressor holding it
  std::int64_t total_wire_ = 0;
  std::int64_t total_dense_ = 0;
  std::int64_t bucket_calls_ = 0;
};

}  // namespace edgc::torch_ext
