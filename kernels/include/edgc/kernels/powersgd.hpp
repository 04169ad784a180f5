#pragma once
// PowerSGD (Vogels et al. 2019) with error feedback and warm start, for ONE data-parallel rank: every rank owns
// one PowerSgd with its own error buffers and warm-start factors, and all ranks call step() together.
//
// Per compressed tensor, viewed as an m×n matrix (m = shape[0], n = product of the other dims):
//   M = G + E;  P = M·Q;  all-reduce(P);  orthogonalise P;  Q = Mᵀ·P;  all-reduce(Q);  Q /= world size;
//   Ĝ = P·Qᵀ;  E = M − Ĝ;  Q is kept for the next step (warm start).
// Ĝ replaces the gradient; it is the same on every rank because P and Q are. Tensors of equal (m, n, r) are
// batched: one backend call per group and phase, one all-reduce for all P's and one for all Q's.
//
// Memory: P, Q, the error buffers and the fused uncompressed buffer are allocated through the backend (Buffer),
// so on a device backend ("cuda") the gradients, E, P and Q stay on the GPU for the whole step. Only what the
// communicator needs crosses to the host: nothing when it sums device memory (Communicator::device_buffers(),
// NCCL), else the P, Q and uncompressed all-reduce buffers through host staging. Gradients may be float32 or bf16
// (std::uint16_t bit patterns); factors and error buffers are float32 either way.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "edgc/core/powersgd_rule.hpp"
#include "edgc/kernels/backend.hpp"
#include "edgc/kernels/buffer.hpp"
#include "edgc/kernels/communicator.hpp"

namespace edgc::kernels {

/// Checks the settings every power iteration shares (PowerSgd, BoundaryCompressor): orthogonalization_eps finite and
/// ≥ 0, min_compression_rate finite and > 0. Throws ConfigError naming the field.
void check_power_iteration_settings(float orthogonalization_eps, double min_compression_rate);

struct PowerSgdConfig {
  /// Initial rank of every ≥2-D tensor (≥ 0; 0 = send uncompressed), clamped to min(m, n) per tensor. Lower
  /// rank ⇒ more compression and a larger error. Change it per tensor with PowerSgd::set_rank.
  int rank = 4;
  /// Keep the residual M − Ĝ and add it to the next gradient. Biased compressors need it to converge.
  bool error_feedback = true;
  /// Reuse last step's Q as the starting subspace (one power iteration per step that keeps improving);
  /// false draws a fresh random Q every step.
  bool warm_start = true;
  /// Relative shift of the (equilibrated) Gram matrix in the orthogonalisation, ≥ 0; see
  /// Backend::orthogonalize_batched. Guards zero and dependent columns; costs about this much orthonormality.
  float orthogonalization_eps = 1e-6F;
  /// Compress a tensor only if (m + n)·r·min_compression_rate < m·n (PyTorch's rule, core::powersgd_compresses);
  /// > 0. The others join the one fused uncompressed all-reduce.
  double min_compression_rate = core::kPowerSgdMinCompressionRate;
  /// Seed of the random initial Q; every rank must use the same seed (Q is drawn from (seed, tensor id, rank)).
  std::uint64_t seed = 0;
  /// Per tensor, the id its initial Q is drawn from; empty = its index. A compressor holding some of a model's tensors
  /// (one DDP bucket) passes their indices among all of them, so it draws the Q one compressor over all would draw.
  std::vector<std::uint64_t> q_ids = {};
};

/// What one step did to one tensor on this rank.
struct TensorStepStats {
  bool compressed = false;
  int rank = 0;                  ///< rank used; 0 when sent uncompressed
  std::int64_t wire_floats = 0;  ///< floats this rank sent: (m + n)·r compressed, numel uncompressed
  double relative_error = 0.0;   ///< ‖Ĝ − M‖_F / ‖M‖_F on this rank (0/0 → 0; 0 for uncompressed tensors)
  double error_norm = 0.0;       ///< ‖E‖_F after the step (0 without error feedback)
  double compute_seconds = 0.0;  ///< kernel time, a batch's time shared equally by its tensors
};

struct StepStats {
  std::vector<TensorStepStats> tensors;  ///< in the order of the constructor's shapes
  std::int64_t wire_floats = 0;          ///< Σ tensors[i].wire_floats
  std::int64_t dense_floats = 0;         ///< Σ numel: what an uncompressed all-reduce would send
  int compressed_tensors = 0;
  /// Kernels and packing, this rank: the wall clock on host backends, CUDA events around the queued work on a
  /// device backend.
  double compute_seconds = 0.0;
  /// Inside all_reduce_sum (includes waiting for other ranks), plus a device backend's staging copies of the
  /// all-reduce buffers through host memory when the communicator takes host memory.
  double communication_seconds = 0.0;
  double wall_seconds = 0.0;  ///< the whole step
};

class PowerSgd {
 public:
  /// `shapes[i]` are the dims of tensor i (each ≥ 1; an empty shape is a scalar). ≥2-D tensors are m×n
  /// matrices; 0-D and 1-D tensors are never compressed. `backend` must outlive this object and is used by
  /// this rank's thread only; its memory (Backend::device_memory) holds the gradients given to step() and every
  /// buffer this object keeps. Throws ConfigError naming the field for a bad config or a dim < 1.
  PowerSgd(Backend& backend, std::vector<std::vector<std::int64_t>> shapes, const PowerSgdConfig& config);

  std::size_t num_tensors() const noexcept { return tensors_.size(); }
  std::int64_t rows(std::size_t tensor) const;  ///< m (numel for 0-D/1-D tensors)
  std::int64_t cols(std::size_t tensor) const;  ///< n (1 for 0-D/1-D tensors)
  std::int64_t numel(std::size_t tensor) const;

  /// Sets tensor's rank; 0 sends it uncompressed. A change re-initialises its P and Q and keeps its error
  /// buffer. Throws ConfigError (naming the tensor and value) for r < 0, r > min(m, n), or an index out of range;
  /// a 0-D/1-D tensor accepts only 0.
  void set_rank(std::size_t tensor, int r);
  int rank(std::size_t tensor) const;
  /// Whether the tensor would be compressed at its current rank (≥2-D, r > 0 and the skip rule passes).
  bool will_compress(std::size_t tensor) const;

  /// One synchronous step: replaces each gradient in place with the averaged reconstruction Ĝ (compressed
  /// tensors) or the exact average over ranks of G + E (the others: an uncompressed tensor also delivers and
  /// clears any error left from compressed steps). `grads[i]` must hold numel(i) floats. All ranks of `comm`
  /// call step() together with the same tensor list and ranks. The gradients live in the backend's memory (device
  /// memory of its GPU for "cuda"). Throws InputError for wrong gradient sizes; communicator errors propagate.
  /// Non-finite gradient values propagate into Ĝ and E (check them first).
  StepStats step(std::span<const std::span<float>> grads, Communicator& comm);
  /// The same with bf16 gradients (std::uint16_t bit patterns): read exactly, M = G + E and everything after it in
  /// float32, the result Ĝ (or the uncompressed average) rounded to nearest even into the gradient.
  StepStats step(std::span<const std::span<std::uint16_t>> grads, Communicator& comm);

  /// Error buffer E of a tensor (numel floats, row-major) in the backend's memory; empty until the tensor is
  /// first compressed (and always without error feedback).
  std::span<const float> error(std::size_t tensor) const;
  /// A host copy of error(tensor), for any backend.
  std::vector<float> error_copy(std::size_t tensor) const;
  /// Sets a tensor's error buffer to zero (e.g. after its gradient held NaN, or a change of layout).
  void reset_error(std::size_t tensor);
  /// Sets a tensor's error buffer to `e` (numel floats, host memory): the error feedback a tensor carries when it
  /// moves to another compressor (DDP rebuilt its buckets). Throws ConfigError for an index out of range or a
  /// compressor without error feedback, InputError when e.size() != numel(tensor).
  void set_error(std::size_t tensor, std::span<const float> e);
  /// Warm-start factor Q of a compressed tensor (n×r) in the backend's memory, empty when it has none yet.
  std::span<const float> warm_start_q(std::size_t tensor) const;
  std::int64_t steps() const noexcept { return steps_; }
  const PowerSgdConfig& config() const noexcept { return config_; }

  /// Makes this compressor's state a copy of `from`'s: every tensor's rank, error buffer and warm-start Q, and the
  /// step count; from here both give bit-identical steps on the same gradients (a replay that forks where two rank
  /// schedules part ways). Both must use the same backend object, tensor shapes and configuration (rank aside);
  /// throws ConfigError naming what differs.
  void copy_state_from(const PowerSgd& from);

 private:
  struct Tensor {
    std::int64_t m = 0;
    std::int64_t n = 1;
    bool matrix = false;
    int rank = 0;
    Buffer<float> error;  // numel once compressed; M between the two halves of a step
    Buffer<float> q;      // n×rank warm-start factor, empty when it must be (re)drawn
    Buffer<float> m32;    // bf16 gradients without error feedback: M in float32 (zeroed every step)
  };
  struct Group {
    std::int64_t m = 0;
    std::int64_t n = 0;
    int r = 0;
    std::vector<std::size_t> members;
    std::int64_t p_offset = 0;  // into p_all_
    std::int64_t q_offset = 0;  // into q_all_
  };
  // The gradient pointers of one batch, for float32 (T = float) or bf16 (T = std::uint16_t) gradients.
  template <class T>
  struct GradPointers {
    std::vector<const T*> in;
    std::vector<T*> out;
  };

  void check_index(std::size_t tensor) const;
  void plan();
  void draw_q(std::size_t tensor, std::span<float> q) const;
  // The steps of step(), for either gradient type: argument checks; the fused dense all-reduce; the three phases
  // of the compressed groups; an all-reduce of a buffer in the backend's memory.
  template <class T>
  StepStats step_impl(std::span<const std::span<T>> grads, Communicator& comm);
  template <class T>
  void check_grads(std::span<const std::span<T>> grads) const;
  template <class T>
  void dense_step(std::span<const std::span<T>> grads, Communicator& comm, float world, StepStats& st);
  template <class T>
  GradPointers<T>& grad_pointers();
  template <class T>
  void bind_pointers(const Group& g, std::span<const std::span<T>> grads);
  template <class T>
  void project_phase(std::span<const std::span<T>> grads);
  template <class T>
  void orthogonalize_phase(std::span<const std::span<T>> grads);
  template <class T>
  void reconstruct_phase(std::span<const std::span<T>> grads, double scale_s, StepStats& st);
  void all_reduce(std::span<float> buf, Communicator& comm, StepStats& st);

  Backend& backend_;
  PowerSgdConfig config_;
  std::vector<Tensor> tensors_;
  std::int64_t steps_ = 0;
  bool planned_ = false;
  // Plan of the current ranks: batches of equal (m, n, r) and the uncompressed rest.
  std::vector<Group> groups_;
  std::vector<std::size_t> dense_;
  // Reused buffers in the backend's memory: all P's and all Q's of a step contiguous (one all-reduce each) and
  // the fused dense buffer; host staging for them (device backend, host communicator) and for drawing Q; the
  // per-batch pointer and norm arrays (host).
  Buffer<float> p_all_;
  Buffer<float> q_all_;
  Buffer<float> dense_buf_;
  std::vector<float> staging_;
  std::vector<float> q_host_;
  GradPointers<float> g32_;
  GradPointers<std::uint16_t> g16_;
  std::vector<float*> ptr_e_;
  std::vector<const float*> ptr_q_;
  std::vector<float*> ptr_q_out_;
  std::vector<float*> ptr_p_;
  std::vector<const float*> ptr_p_in_;
  std::vector<const float*> ptr_m_;
  std::vector<double> norms_m_;
  std::vector<double> norms_err_;
  std::vector<double> m_sq_;           // ‖M‖² per tensor, between the two halves of a step
  std::vector<double> group_seconds_;  // kernel time per batch of the current step
};

}  // namespace edgc::kernels
