#pragma once
// The pipeline's compressed backward messages in `edgc live` (policy edgc-pp on a trace of format 1.1): every
// rank of stage s >= 1 compresses the trace's boundary gradient of its stage with a kernels::BoundaryCompressor
// (lazy error propagation, warm start, the skip rule) and sends the message over MPI to the rank of stage s - 1
// with the same replica index, which decompresses it. All replicas send the trace's message as recorded.
//
// With --verify the receiver also runs the sender's compressor in process (same shape, config and seed) on the
// same message and requires the received wire and the reconstruction to be the same bits: the codec and the
// transport are checked together, message by message, as the gradient path is checked against its emulation.
// The codec runs on the host CPU (one thread) whatever live.backend is, and the messages go over MPI also with
// --comm nccl (pipeline point-to-point traffic is not what NCCL calibration measures here).
#include <mpi.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "edgc/core/controller.hpp"
#include "edgc/kernels/backend.hpp"
#include "edgc/kernels/boundary_compression.hpp"
#include "edgc/traces/manifest.hpp"
#include "edgc/traces/reader.hpp"
#include "world.hpp"

namespace edgc::live {

struct BoundaryTotals {
  std::int64_t sent = 0;             ///< messages this rank sent
  std::int64_t sent_compressed = 0;  ///< of which compressed
  std::int64_t received = 0;         ///< messages this rank received
  std::int64_t wire_floats = 0;      ///< floats this rank sent
  std::int64_t dense_floats = 0;     ///< floats the same messages would have sent uncompressed
  std::int64_t verified = 0;         ///< received messages checked bit for bit against the in-process compressor
  double codec_s = 0.0;              ///< compress (sender) and decompress (receiver) time on this rank
  double transfer_s = 0.0;           ///< from posting the sends and receives to their completion
};

class BoundaryLink {
 public:
  /// `w`: laid out (its pp merges the trace's stages, traces::stage_boundaries); `m`: the trace's manifest.
  BoundaryLink(const World& w, const traces::Manifest& m, std::uint64_t seed, bool verify);

  /// Whether this rank sends or receives anything (the trace records boundaries that survive the stage merge).
  bool active() const { return send_.has_value() || recv_.has_value(); }

  /// One message on each boundary of this rank, at the pipeline rank `in_force` gives the sending stage (0 =
  /// uncompressed). Point-to-point with the neighbouring stages' ranks of the same replica; every rank of the world
  /// calls it for every iteration. Throws InternalError when --verify finds a difference.
  void exchange(const traces::IterationData& d, const core::WindowDecision& in_force);

  const BoundaryTotals& totals() const { return totals_; }

 private:
  struct Side {
    int boundary = 0;  // index into the manifest's boundaries
    int peer = 0;      // world rank at the other end
    kernels::BoundaryCompressor codec;
    std::optional<kernels::BoundaryCompressor> mirror =
        std::nullopt;  // receiver with --verify: the sender's compressor
    std::vector<float> shard = {}, wire = {}, out = {};
    std::vector<float> mirror_shard = {}, mirror_wire = {};
  };

  void verify(Side& r, const traces::IterationData& d);

  std::unique_ptr<kernels::Backend> host_;
  int stage_ = 0;             // this rank's pipeline stage
  std::optional<Side> send_;  // the boundary this rank's stage sends backward
  std::optional<Side> recv_;  // the boundary the next stage sends to this rank
  BoundaryTotals totals_;
};

}  // namespace edgc::live
