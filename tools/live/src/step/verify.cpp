#include "verify.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <string>
#include <utility>

#include "edgc/core/error.hpp"
#include "edgc/kernels/mpi_communicator.hpp"

namespace edgc::live {

namespace {

// FNV-1a of the bits of every tensor: equal hashes across the group stand for bit-identical replicas.
std::uint64_t fnv1a(const StageTensors& t) {
  std::uint64_t h = 1469598103934665603ULL;
  for (const auto& v : t.mine) {
    const auto* p = reinterpret_cast<const unsigned char*>(v.data());
    for (std::size_t k = 0; k < v.size() * sizeof(float); ++k) h = (h ^ p[k]) * 1099511628211ULL;
  }
  return h;
}

void check_replicas_agree(const World& w, const StageTensors& t) {
  const std::uint64_t h = fnv1a(t);
  std::uint64_t lo = h;
  std::uint64_t hi = h;
  kernels::check_mpi(MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, w.group), "MPI_Allreduce");
  kernels::check_mpi(MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, w.group), "MPI_Allreduce");
  if (lo != hi)
    throw InternalError("live verify: the replicas of stage " + std::to_string(w.stage) +
                        " hold different reconstructions");
}

}  // namespace

Verifier::Verifier(std::unique_ptr<kernels::DataParallelEmulator> emulator, bool exact)
    : emulator_(std::move(emulator)), exact_(exact) {}

void Verifier::before(const StageTensors& t, const kernels::PowerSgd& psgd) {
  m_before_.resize(t.mine.size());
  for (std::size_t i = 0; i < t.mine.size(); ++i) {
    m_before_[i] = t.mine[i];
    const std::vector<float> e = psgd.error_copy(i);
    for (std::size_t k = 0; k < e.size(); ++k) m_before_[i][k] += e[k];
  }
}

void Verifier::after(const World& w, const StageTensors& t, const kernels::PowerSgd& psgd, const kernels::StepStats& st,
                     const std::vector<int>& ranks) {
  check_error_feedback(t, psgd, st);
  check_replicas_agree(w, t);
  check_emulation(w, t, ranks);
  ++steps_;
}

// A compressed tensor keeps E = M − Ĝ; an uncompressed one delivers its error and clears it.
void Verifier::check_error_feedback(const StageTensors& t, const kernels::PowerSgd& psgd,
                                    const kernels::StepStats& st) {
  for (std::size_t i = 0; i < t.mine.size(); ++i) {
    const std::vector<float> e = psgd.error_copy(i);
    if (!st.tensors[i].compressed) {
      for (float x : e)
        if (x != 0.0F) throw InternalError("live verify: an uncompressed tensor kept a non-zero error buffer");
      continue;
    }
    double worst = 0.0;
    double scale = 0.0;
    for (std::size_t k = 0; k < e.size(); ++k) {
      const double m = m_before_[i][k];
      worst = std::max(worst, std::abs(m - static_cast<double>(t.mine[i][k]) - static_cast<double>(e[k])));
      scale = std::max(scale, std::abs(m));
    }
    const double rel = scale > 0.0 ? worst / scale : worst;
    worst_ef_ = std::max(worst_ef_, rel);
    if (rel > 1e-5)
      throw InternalError("live verify: error feedback broken on tensor " + std::to_string(i) +
                          ": max |M - G^ - E| / max |M| = " + std::to_string(rel));
  }
}

// Replica 0 steps the in-process emulation of the whole group on the same raw gradients and compares bits.
void Verifier::check_emulation(const World& w, const StageTensors& t, const std::vector<int>& ranks) {
  if (!emulator_) return;
  emulator_->step(t.raw_views, ranks);
  for (std::size_t i = 0; i < t.mine.size(); ++i) {
    const auto ref = emulator_->reconstruction(i);
    if (exact_) {
      if (std::memcmp(ref.data(), t.mine[i].data(), ref.size() * sizeof(float)) == 0) continue;
      throw InternalError("live verify: stage " + std::to_string(w.stage) + " tensor " + std::to_string(i) +
                          " differs from the in-process emulation");
    }
    double diff = 0.0;
    double scale = 0.0;
    for (std::size_t k = 0; k < ref.size(); ++k) {
      const double d = static_cast<double>(t.mine[i][k]) - ref[k];
      diff += d * d;
      scale += static_cast<double>(ref[k]) * ref[k];
    }
    const double rel = scale > 0.0 ? std::sqrt(diff / scale) : std::sqrt(diff);
    if (!(rel <= kDeviceTolerance))
      throw InternalError("live verify: stage " + std::to_string(w.stage) + " tensor " + std::to_string(i) + " is " +
                          std::to_string(rel) + " (relative) from the in-process emulation");
  }
}

}  // namespace edgc::live
