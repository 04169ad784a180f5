#include "boundary_link.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "edgc/core/error.hpp"
#include "edgc/kernels/kernels.hpp"
#include "edgc/kernels/mpi_communicator.hpp"

namespace edgc::live {

using kernels::check_mpi;

namespace {

constexpr int kBoundaryTag = 7103;

kernels::BoundaryConfig codec_config(std::uint64_t seed, int boundary) {
  kernels::BoundaryConfig c;
  c.rank = 0;
  c.seed = seed + static_cast<std::uint64_t>(boundary);
  return c;
}

// The trace boundary whose messages merged stage `s` sends backward, or -1.
int boundary_sent_by(const traces::Manifest& m, const std::vector<int>& merged, int s) {
  for (std::size_t b = 0; b < m.boundaries.size(); ++b) {
    const int ts = m.boundaries[b].stage;
    if (merged[static_cast<std::size_t>(ts)] == s && merged[static_cast<std::size_t>(ts - 1)] == s - 1)
      return static_cast<int>(b);
  }
  return -1;
}

}  // namespace

BoundaryLink::BoundaryLink(const World& w, const traces::Manifest& m, const std::vector<int>& merged,
                           std::uint64_t seed, bool verify)
    : host_(kernels::make_backend("cpu", {.threads = 1, .device = 0})), stage_(w.stage) {
  const auto side = [&](int b, int peer, bool receiver) {
    const auto& info = m.boundaries[static_cast<std::size_t>(b)];
    const kernels::BoundaryShape shape{info.rows, info.cols, 1};
    Side s{b, peer, kernels::BoundaryCompressor(*host_, shape, codec_config(seed, b)), std::nullopt, {}, {}, {}};
    if (receiver && verify) s.mirror.emplace(*host_, shape, codec_config(seed, b));
    return s;
  };
  const int sb = w.stage >= 1 ? boundary_sent_by(m, merged, w.stage) : -1;
  if (sb >= 0) send_.emplace(side(sb, w.rank - w.dp, false));
  const int rb = w.stage + 1 < w.pp ? boundary_sent_by(m, merged, w.stage + 1) : -1;
  if (rb >= 0) recv_.emplace(side(rb, w.rank + w.dp, true));
}

int BoundaryLink::effective_rank(const kernels::BoundaryCompressor& c, int rank) {
  return rank < std::min(c.shape().rows, c.shape().cols) ? rank : 0;  // at or past full rank: uncompressed
}

void BoundaryLink::exchange(const traces::IterationData& d, const core::WindowDecision& in_force) {
  MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  const double t0 = MPI_Wtime();
  const int send_rank = in_force.pipeline_rank(static_cast<std::size_t>(stage_));
  const int recv_rank = in_force.pipeline_rank(static_cast<std::size_t>(stage_ + 1));
  if (recv_) {
    const int rank = recv_rank;
    if (recv_->codec.rank() != effective_rank(recv_->codec, rank))
      recv_->codec.set_rank(effective_rank(recv_->codec, rank));
    recv_->wire.resize(static_cast<std::size_t>(recv_->codec.wire_floats()));
    check_mpi(MPI_Irecv(recv_->wire.data(), static_cast<int>(recv_->wire.size()), MPI_FLOAT, recv_->peer, kBoundaryTag,
                        MPI_COMM_WORLD, &reqs[0]),
              "MPI_Irecv");
  }
  double codec = 0.0;
  if (send_) {
    const int rank = send_rank;
    auto& s = *send_;
    if (s.codec.rank() != effective_rank(s.codec, rank)) s.codec.set_rank(effective_rank(s.codec, rank));
    const std::vector<float>& g = d.boundaries[static_cast<std::size_t>(s.boundary)];
    s.shard.assign(g.begin(), g.end());
    s.wire.resize(static_cast<std::size_t>(s.codec.wire_floats()));
    const std::span<float> shards[] = {s.shard};
    const double c0 = MPI_Wtime();
    const kernels::BoundaryStats st = s.codec.compress(shards, s.wire);
    codec += MPI_Wtime() - c0;
    check_mpi(MPI_Isend(s.wire.data(), static_cast<int>(s.wire.size()), MPI_FLOAT, s.peer, kBoundaryTag, MPI_COMM_WORLD,
                        &reqs[1]),
              "MPI_Isend");
    ++totals_.sent;
    totals_.sent_compressed += st.compressed ? 1 : 0;
    totals_.wire_floats += st.wire_floats;
    totals_.dense_floats += st.dense_floats;
  }
  check_mpi(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE), "MPI_Waitall");
  totals_.transfer_s += MPI_Wtime() - t0 - codec;
  if (recv_) {
    auto& r = *recv_;
    const auto& info = r.codec.shape();
    r.out.resize(static_cast<std::size_t>(info.rows * info.cols));
    const std::span<float> outs[] = {r.out};
    const double c0 = MPI_Wtime();
    r.codec.decompress(r.wire, outs);
    codec += MPI_Wtime() - c0;
    ++totals_.received;
    if (r.mirror) verify(r, d, effective_rank(r.codec, recv_rank));
  }
  totals_.codec_s += codec;
}

void BoundaryLink::verify(Side& r, const traces::IterationData& d, int rank) {
  kernels::BoundaryCompressor& m = *r.mirror;
  if (m.rank() != rank) m.set_rank(rank);
  const std::vector<float>& g = d.boundaries[static_cast<std::size_t>(r.boundary)];
  std::vector<float> shard(g.begin(), g.end());
  std::vector<float> wire(static_cast<std::size_t>(m.wire_floats()));
  const std::span<float> shards[] = {shard};
  m.compress(shards, wire);
  const std::string what = "live --verify: the stage-boundary message '" + std::to_string(r.boundary) + "' from rank " +
                           std::to_string(r.peer) + " at iteration " + std::to_string(d.info->iteration);
  if (wire.size() != r.wire.size() || std::memcmp(wire.data(), r.wire.data(), wire.size() * sizeof(float)) != 0)
    throw InternalError(what + " differs from what the in-process compressor sends");
  if (std::memcmp(shard.data(), r.out.data(), shard.size() * sizeof(float)) != 0)
    throw InternalError(what + " decompresses to other values than the sender's reconstruction");
  ++totals_.verified;
}

}  // namespace edgc::live
