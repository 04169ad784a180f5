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

}  // namespace

BoundaryLink::BoundaryLink(const World& w, const traces::Manifest& m, std::uint64_t seed, bool verify)
    : host_(kernels::make_backend("cpu", {.threads = 1, .device = 0})), stage_(w.stage) {
  const auto side = [&](int b, int peer, bool receiver) {
    const auto& info = m.boundaries[static_cast<std::size_t>(b)];
    const kernels::BoundaryShape shape{info.rows, info.cols, 1};
    Side s{b, peer, kernels::BoundaryCompressor(*host_, shape, codec_config(seed, b))};
    if (receiver && verify) s.mirror.emplace(*host_, shape, codec_config(seed, b));
    return s;
  };
  const std::vector<int> sent_by = traces::stage_boundaries(m, w.pp);
  const int sb = sent_by[static_cast<std::size_t>(w.stage)];
  if (sb >= 0) send_.emplace(side(sb, w.rank - w.dp, false));
  const int rb = w.stage + 1 < w.pp ? sent_by[static_cast<std::size_t>(w.stage) + 1] : -1;
  if (rb >= 0) recv_.emplace(side(rb, w.rank + w.dp, true));
}

void BoundaryLink::exchange(const traces::IterationData& d, const core::WindowDecision& in_force) {
  MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  const double t0 = MPI_Wtime();
  if (recv_) {
    recv_->codec.set_rank(recv_->codec.usable_rank(in_force.pipeline_rank(static_cast<std::size_t>(stage_) + 1)));
    recv_->wire.resize(static_cast<std::size_t>(recv_->codec.wire_floats()));
    check_mpi(MPI_Irecv(recv_->wire.data(), static_cast<int>(recv_->wire.size()), MPI_FLOAT, recv_->peer, kBoundaryTag,
                        MPI_COMM_WORLD, &reqs[0]),
              "MPI_Irecv");
  }
  double codec = 0.0;
  if (send_) {
    auto& s = *send_;
    s.codec.set_rank(s.codec.usable_rank(in_force.pipeline_rank(static_cast<std::size_t>(stage_))));
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
    if (r.mirror) verify(r, d);
  }
  totals_.codec_s += codec;
}

// The receiver's rank is the sender's (both follow the same controller), so the mirror takes it from the codec.
void BoundaryLink::verify(Side& r, const traces::IterationData& d) {
  kernels::BoundaryCompressor& m = *r.mirror;
  m.set_rank(r.codec.rank());
  const std::vector<float>& g = d.boundaries[static_cast<std::size_t>(r.boundary)];
  std::vector<float>& shard = r.mirror_shard;
  std::vector<float>& wire = r.mirror_wire;
  shard.assign(g.begin(), g.end());
  wire.resize(static_cast<std::size_t>(m.wire_floats()));
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
