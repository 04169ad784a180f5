#pragma once
// PowerSGD on the pipeline's inter-stage traffic: the activation gradient a stage sends back to the stage before it
// ("compressed backpropagation" of Optimus-CC, Song et al. ASPLOS'23, which EDGC inherits). One object per
// boundary and side: the sender compresses, the receiver decompresses, both built with the same shape and config
// and kept at the same rank (set_rank on both).
//
// The message of one micro-batch is `shards` same-shape matrices: the TP shards a GPU holds (one per GPU in a real
// run, all of them in an emulation), each the boundary tensor viewed as rows × cols = (micro-batch · sequence / tp)
// × hidden under Megatron's scatter/gather or sequence parallelism (a 1/tp slice of rows), or (micro-batch ·
// sequence) × hidden without them. Per shard, with E its carried error:
//   M = G + E;  P = M·Q;  orthogonalise P;  Q = Mᵀ·P;  send P and Q;  Ĝ = P·Qᵀ (both sides);  E = M − Ĝ.
// There is no all-reduce: one power iteration on the sender, (rows + cols)·r floats on the wire instead of
// rows·cols. All shards run in one batched backend call per phase.
//
// Lazy error propagation: E cannot be fed back into the message it came from (the receiver consumes Ĝ at once),
// so it is carried to the NEXT micro-batch's message on the same boundary. Over any number of messages the
// receiver gets Σ Ĝ = Σ G − E_last exactly (tests/kernels/boundary_compression_test.cpp). Without it (config
// lazy_error_propagation = false) each message's error is dropped.
// Warm start: the sender keeps each shard's last Q as the next message's starting subspace (consecutive
// micro-batches of one boundary are alike). The skip rule is PowerSgd's: a shard is compressed only when
// (rows + cols)·r·min_compression_rate < rows·cols; otherwise M itself is sent and the carried error delivered.
//
// Memory: E (rows × cols per shard, with lazy error propagation, once compressed) and Q (cols × r per shard) in
// the backend's memory (device memory on "cuda"); the message buffer and the shards are the caller's, in the same
// memory. Float32 activation gradients; factors and errors float32.
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "edgc/core/powersgd_rule.hpp"
#include "edgc/kernels/backend.hpp"
#include "edgc/kernels/buffer.hpp"

namespace edgc::kernels {

struct BoundaryShape {
  std::int64_t rows = 0;  ///< ≥ 1: micro-batch · sequence (÷ tp when sliced)
  std::int64_t cols = 0;  ///< ≥ 1: hidden
  int shards = 1;         ///< ≥ 1: same-shape matrices per message (TP shards held by this side)
};

struct BoundaryConfig {
  /// Rank of the factors, ≥ 0 and ≤ min(rows, cols); 0 sends the tensor uncompressed. Default 16: Optimus-CC's
  /// Table-2 scripts (--inter_grad_comp_rank 16; scenarios/SOURCES.md §20).
  int rank = 16;
  /// Carry each message's compression error into the next message on this boundary (see above).
  bool lazy_error_propagation = true;
  /// Start each message from the previous message's Q (false: a fresh random Q every message).
  bool warm_start = true;
  /// As PowerSgdConfig::orthogonalization_eps; ≥ 0.
  float orthogonalization_eps = 1e-6F;
  /// As PowerSgdConfig::min_compression_rate; > 0.
  double min_compression_rate = core::kPowerSgdMinCompressionRate;
  /// Seed of the random initial Q (drawn on the sender only: the receiver gets Q on the wire).
  std::uint64_t seed = 0;
};

/// What one message did (all shards together).
struct BoundaryStats {
  bool compressed = false;
  int rank = 0;                   ///< 0 when sent uncompressed
  std::int64_t wire_floats = 0;   ///< floats of the message
  std::int64_t dense_floats = 0;  ///< shards · rows · cols: the uncompressed message
  /// ‖M − Ĝ‖_F / ‖M‖_F over all shards, M = G + carried error (0/0 → 0; 0 when uncompressed).
  double relative_error = 0.0;
  double carried_error_norm = 0.0;  ///< ‖E‖_F after the message (0 without lazy error propagation)
  double compute_seconds = 0.0;     ///< sender's kernel time (wall clock on host backends, CUDA events on "cuda")
};

class BoundaryCompressor {
 public:
  /// `backend` must outlive this object and is used by one thread at a time. Throws ConfigError naming the field
  /// ("rows", "cols", "shards", "rank", "orthogonalization_eps", "min_compression_rate").
  BoundaryCompressor(Backend& backend, const BoundaryShape& shape, const BoundaryConfig& config);

  const BoundaryShape& shape() const noexcept { return shape_; }
  const BoundaryConfig& config() const noexcept { return config_; }
  int rank() const noexcept { return rank_; }
  /// Changes the rank (0 = uncompressed); the carried error is kept, the warm-start Q redrawn (only when r differs
  /// from the current rank). Throws ConfigError (field "rank") for r < 0 or r > min(rows, cols).
  void set_rank(int r);
  /// The rank a policy's rank r ≥ 0 becomes on this boundary: r below min(rows, cols), else 0 (a rank at or past the
  /// matrix's rank is no compression).
  int usable_rank(int r) const noexcept { return r < std::min(shape_.rows, shape_.cols) ? r : 0; }
  /// Whether the next message is compressed: rank > 0 and the skip rule passes.
  bool compressed() const noexcept;
  /// Floats of the next message: shards · (rows + cols) · rank compressed, shards · rows · cols otherwise.
  std::int64_t wire_floats() const noexcept;

  /// Sender, one message: reads the shards' gradients (`shards[s]` holds rows·cols floats in the backend's memory)
  /// and writes the message into `wire` (wire_floats() floats, backend memory): compressed, P_0 … P_{k−1} (rows × r
  /// each, row-major) then Q_0 … Q_{k−1} (cols × r); uncompressed, M_0 … M_{k−1}. Each shard is overwritten with what
  /// the receiver will reconstruct (Ĝ, or M uncompressed), so the caller sees the delivered value. Throws
  /// InputError for a wrong number or size of spans.
  BoundaryStats compress(std::span<const std::span<float>> shards, std::span<float> wire);
  /// Receiver, one message: `wire` as compress() wrote it at the same rank; writes rows·cols floats into each of
  /// `out` (backend memory): Ĝ_s = P_s·Q_sᵀ, or M_s copied when the message is uncompressed. Throws InputError for
  /// wrong sizes.
  void decompress(std::span<const float> wire, std::span<const std::span<float>> out);

  /// A host copy of shard `s`'s carried error (rows·cols floats; zeros before the first compressed message and
  /// without lazy error propagation).
  std::vector<float> carried_error(int s) const;
  /// Drops the carried error (e.g. at the end of an iteration, or after non-finite gradients).
  void reset_error();
  std::int64_t messages() const noexcept { return messages_; }

 private:
  void check_spans(std::size_t count, std::size_t each, std::size_t wire, std::size_t wire_expected,
                   const char* what) const;
  void draw_q(int shard);

  Backend& backend_;
  BoundaryShape shape_;
  BoundaryConfig config_;
  int rank_ = 0;
  std::int64_t messages_ = 0;
  std::vector<Buffer<float>> error_;  // per shard, rows × cols; empty until the first compressed message
  std::vector<Buffer<float>> q_;      // per shard, cols × rank warm-start factor; empty when it must be drawn
  std::vector<float> q_host_;
  std::vector<const float*> ptr_g_;
  std::vector<float*> ptr_g_out_;
  std::vector<float*> ptr_e_;
  std::vector<const float*> ptr_m_;
  std::vector<const float*> ptr_q_;
  std::vector<float*> ptr_p_;
  std::vector<const float*> ptr_p_in_;
  std::vector<float*> ptr_q_out_;
  std::vector<const float*> ptr_q_in_;
  std::vector<double> m_sq_;
  std::vector<double> err_sq_;
};

}  // namespace edgc::kernels
