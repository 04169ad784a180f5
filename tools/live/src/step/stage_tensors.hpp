#pragma once
// The gradients one rank works on: its pipeline stage's tensors of the trace, and this replica's copy of them.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "edgc/kernels/backend.hpp"
#include "edgc/kernels/buffer.hpp"
#include "edgc/traces/manifest.hpp"
#include "edgc/traces/reader.hpp"

namespace edgc::live {

struct StageTensors {
  std::vector<std::size_t> trace_index;            // manifest index of each of the stage's tensors
  std::vector<std::vector<std::int64_t> > shapes;  // as PowerSgd sees them
  std::vector<bool> compressible;                  // ≥2-D and fully captured
  std::vector<std::vector<float> > raw;            // the trace gradient (blocks-captured: zeros off the blocks)
  std::vector<std::vector<float> > mine;           // this replica's copy, replaced by the step's result
  std::vector<std::span<float> > views;            // of `mine`, what PowerSgd::step takes
  std::vector<std::span<const float> > raw_views;  // of `raw`, what the in-process emulation takes
  std::vector<kernels::Buffer<float> > device;     // a device backend's copy of `mine` (attach_device), else empty
  std::vector<std::span<float> > device_views;     // of `device`

  /// min(rows, cols) of tensor i as PowerSgd flattens it (0 for a 1-D tensor): ranks below it compress.
  std::int64_t min_dim(std::size_t i) const;
};

/// The tensors of `stage`, zero-filled: those k with tensor_stage[k] == stage.
StageTensors stage_tensors(const traces::Manifest& m, const std::vector<int>& tensor_stage, int stage);

/// Copies iteration data into the stage's full-size raw buffers.
void load_raw(StageTensors& t, const traces::IterationData& d);

/// This replica's gradients for step `step`: the raw ones plus replica noise (kernels::replica_gradient).
void make_replica(StageTensors& t, const kernels::Backend& backend, double perturbation, std::uint64_t seed,
                  std::int64_t step, int replica);

/// For a device backend: device copies of `mine` (PowerSgd::step then runs on them, see step_views); nothing for a
/// host backend.
void attach_device(StageTensors& t, kernels::Backend& backend);
/// What PowerSgd::step takes: the device copies when attached, else `mine` itself.
std::span<const std::span<float> > step_views(const StageTensors& t);
/// `mine` → its device copies, and back (no-ops without them).
void upload_mine(StageTensors& t);
void download_mine(StageTensors& t);

/// The per-tensor rank for a stage rank: 0 (uncompressed) for tensors PowerSGD cannot compress at it.
std::vector<int> tensor_ranks(const StageTensors& t, int stage_rank);

}  // namespace edgc::live
