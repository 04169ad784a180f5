#pragma once
// Data-parallel PowerSGD emulated in one process: D ranks, one thread and one PowerSgd each, over an
// InProcessGroup. A trace holds one rank's gradients; the emulator turns each into D slightly different copies
// (data-parallel ranks see different micro-batches) and reports what compressed averaging with error feedback
// really delivers against the true average — the measured compression error `edgc replay` reports.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "edgc/kernels/backend.hpp"
#include "edgc/kernels/buffer.hpp"
#include "edgc/kernels/powersgd.hpp"

namespace edgc::kernels {

/// One tensor's outcome of an emulated step.
struct EmulatedTensor {
  int rank = 0;  ///< rank used (0 = uncompressed)
  bool compressed = false;
  /// ‖Ĝ − Ḡ‖_F / ‖Ḡ‖_F: the averaged reconstruction against the true average Ḡ of the D perturbed raw gradients
  /// (0/0 → 0). With error feedback Ĝ also carries residuals of earlier steps, as in training.
  double relative_error = 0.0;
  /// Rank 0's per-step compression error ‖Ĝ − M‖_F / ‖M‖_F of its error-corrected input M (0 when uncompressed).
  double compression_error = 0.0;
  std::int64_t wire_floats = 0;  ///< floats each rank sent for this tensor
};

struct EmulatedStep {
  std::vector<EmulatedTensor> tensors;  ///< in the order of the constructor's shapes
  std::int64_t wire_floats = 0;         ///< per rank, all tensors
  std::int64_t dense_floats = 0;        ///< per rank, uncompressed
  double wall_seconds = 0.0;            ///< the whole emulated step (copies, D ranks, checks)
  double compress_wall_seconds = 0.0;   ///< the D PowerSGD steps running together
  double rank0_compute_seconds = 0.0;   ///< rank 0's kernel time
};

/// Standard deviation of a gradient's values (0 when it is not finite): the scale of replica_gradient's noise.
double gradient_stddev(const Backend& backend, std::span<const float> g);

/// Data-parallel replica `replica`'s copy of gradient `g` (tensor `tensor`) at step `step`:
/// out = g + scale·N(0, 1), scale = perturbation · gradient_stddev(g), the noise drawn from its own stream of
/// (seed, step, replica, tensor), so it does not depend on which process or thread draws it. scale = 0 copies g.
/// DataParallelEmulator and `edgc live` both make their ranks' gradients with it, so a live rank holds exactly
/// the emulated rank's data. `out` must have g.size() elements.
void replica_gradient(std::span<const float> g, double scale, std::uint64_t seed, std::int64_t step, int replica,
                      std::size_t tensor, std::span<float> out);

class DataParallelEmulator {
 public:
  /// `backend`: a name for make_backend (each rank gets its own, single-threaded, made with `options`; for a
  /// device backend all D share its GPU). `shapes` as for PowerSgd. `world_size` D ≥ 1. `perturbation` ≥ 0: copy d
  /// of a gradient g is g + perturbation·std(g)·N(0, 1) noise drawn from (seed, step, d, tensor); 0 gives D
  /// identical copies. Throws ConfigError for bad values.
  ///
  /// With a device backend each rank's perturbed copy is uploaded to its own device buffer, PowerSgd runs there
  /// (P and Q staged through host memory for the in-process all-reduces), and the reconstructions come back to
  /// the host for the checks and error figures; std(g) is taken with the "cpu" backend (as `edgc live` does).
  DataParallelEmulator(std::string_view backend, std::vector<std::vector<std::int64_t>> shapes, int world_size,
                       const PowerSgdConfig& config, double perturbation, std::uint64_t seed,
                       const BackendOptions& options = {});
  ~DataParallelEmulator();
  DataParallelEmulator(const DataParallelEmulator&) = delete;
  DataParallelEmulator& operator=(const DataParallelEmulator&) = delete;

  /// Emulates one step. `grads[i]` holds tensor i (numel floats; not modified). `ranks[i]` is the rank to use
  /// for tensor i on every rank (0 = uncompressed; see PowerSgd::set_rank); an empty span keeps the current
  /// ranks. Throws InputError for wrong sizes, ConfigError for an invalid rank, InternalError if the ranks'
  /// reconstructions differ in any bit (a bug). After a failed step the emulator refuses further steps.
  EmulatedStep step(std::span<const std::span<const float>> grads, std::span<const int> ranks);

  int world_size() const noexcept { return world_size_; }
  std::size_t num_tensors() const noexcept { return shapes_.size(); }
  std::int64_t steps() const noexcept { return steps_; }
  /// Rank d's compressor (error buffers, ranks) for inspection.
  const PowerSgd& rank_state(int d) const;
  /// Rank 0's reconstruction of tensor i after the last step (identical on every rank), in host memory.
  std::span<const float> reconstruction(std::size_t tensor) const;

 private:
  void perturb(int d, std::span<const std::span<const float>> grads);
  EmulatedTensor outcome(std::size_t tensor, const TensorStepStats& rank0) const;

  std::vector<std::vector<std::int64_t>> shapes_;
  std::vector<std::int64_t> offsets_;  // of each tensor in a rank's flat buffer
  std::int64_t total_ = 0;
  int world_size_ = 1;
  double perturbation_ = 0.0;
  std::uint64_t seed_ = 0;
  std::int64_t steps_ = 0;
  bool failed_ = false;
  std::vector<std::unique_ptr<Backend>> backends_;
  std::unique_ptr<Backend> host_backend_;  // std(g) of host gradients when the ranks' backend is a device one
  std::vector<std::unique_ptr<PowerSgd>> ranks_;
  std::unique_ptr<InProcessGroup> group_;
  std::vector<std::vector<float>> buffers_;           // per rank: all tensors, flat
  std::vector<std::vector<std::span<float>>> views_;  // per rank: one span per tensor into buffers_
  std::vector<Buffer<float>> device_;                 // device backends: per rank, buffers_ on the device
  std::vector<std::vector<std::span<float>>> device_views_;
  std::vector<float> average_;  // Ḡ, flat
  std::vector<double> stddev_;  // std(g) per tensor of the current step
};

}  // namespace edgc::kernels
