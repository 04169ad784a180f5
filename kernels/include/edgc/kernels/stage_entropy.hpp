#pragma once
// The entropy of one pipeline stage's gradient at one iteration, measured on its tensors' (sampled) values with a
// backend's moment and histogram kernels: what `replay` and `simulate` (from a trace) feed the controller.
#include <optional>
#include <span>
#include <vector>

#include "edgc/core/block_sampling.hpp"
#include "edgc/core/controller.hpp"
#include "edgc/core/entropy.hpp"
#include "edgc/kernels/backend.hpp"

namespace edgc::kernels {

/// One tensor of the stage: its values and the blocks sampled from it (ignored when the stage is measured in
/// full).
using StageTensor = SampledTensor;

/// Pools the tensors' moments, each weighted by numel / sampled elements so the pool estimates the whole stage
/// (blocks of ≥ 4 KiB cover small tensors completely but large ones only at rate β; unweighted pooling would
/// over-represent the small ones). Returns the Gaussian entropy of the pooled spread (nats; −∞ for zero
/// spread), the histogram entropy on `layout` (nats; the layout is fixed at the first measurement with a positive
/// spread: `bins_per_sigma` bins per σ around the pooled mean, then kept so windows stay comparable; absent until
/// then), the pooled excess kurtosis (absent without values) and the elements read.
/// `full`: every value of every tensor is read (blocks ignored).
/// One batched statistics call per measurement (Backend::moments_and_histogram_batched once the layout is fixed;
/// moments_batched, then one histogram call per tensor, at the measurement that fixes it), so a device backend
/// makes one round trip per stage, not one per tensor.
core::StageObservation measure_stage_entropy(const Backend& backend, std::span<const StageTensor> tensors, bool full,
                                             std::optional<core::HistogramLayout>& layout, double bins_per_sigma);

}  // namespace edgc::kernels
