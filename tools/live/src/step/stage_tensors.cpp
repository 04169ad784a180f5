#include "stage_tensors.hpp"

#include <algorithm>

#include "edgc/core/block_sampling.hpp"
#include "edgc/kernels/dp_emulation.hpp"

namespace edgc::live {

std::int64_t StageTensors::min_dim(std::size_t i) const {
  if (shapes[i].size() < 2) return 0;
  std::int64_t cols = 1;
  for (std::size_t d = 1; d < shapes[i].size(); ++d) cols *= shapes[i][d];
  return std::min(shapes[i][0], cols);
}

StageTensors stage_tensors(const traces::Manifest& m, const std::vector<int>& tensor_stage, int stage) {
  StageTensors t;
  for (std::size_t k = 0; k < m.tensors.size(); ++k) {
    if (tensor_stage[k] != stage) continue;
    t.trace_index.push_back(k);
    t.shapes.push_back(m.tensors[k].shape);
    t.compressible.push_back(m.tensors[k].shape.size() >= 2 && m.tensors[k].mode == traces::CaptureMode::kFull);
    t.raw.emplace_back(static_cast<std::size_t>(m.tensors[k].numel()), 0.0F);
  }
  t.mine = t.raw;
  for (std::size_t i = 0; i < t.raw.size(); ++i) {
    t.views.emplace_back(t.mine[i]);
    t.raw_views.emplace_back(t.raw[i]);
  }
  return t;
}

void load_raw(StageTensors& t, const traces::IterationData& d) {
  for (std::size_t i = 0; i < t.trace_index.size(); ++i) {
    const traces::TensorData& src = d.tensors[t.trace_index[i]];
    std::vector<float>& dst = t.raw[i];
    if (src.blocks.empty()) {
      std::copy(src.values.begin(), src.values.end(), dst.begin());
      continue;
    }
    std::fill(dst.begin(), dst.end(), 0.0F);
    std::size_t at = 0;
    for (const Block& b : src.blocks) {
      std::copy_n(src.values.begin() + static_cast<std::ptrdiff_t>(at), b.length,
                  dst.begin() + static_cast<std::ptrdiff_t>(b.offset));
      at += static_cast<std::size_t>(b.length);
    }
  }
}

void make_replica(StageTensors& t, const kernels::Backend& backend, double perturbation, std::uint64_t seed,
                  std::int64_t step, int replica) {
  for (std::size_t i = 0; i < t.raw.size(); ++i) {
    const double scale = perturbation * kernels::gradient_stddev(backend, t.raw[i]);
    kernels::replica_gradient(t.raw[i], scale, seed, step, replica, i, t.mine[i]);
  }
}

void attach_device(StageTensors& t, kernels::Backend& backend) {
  if (!backend.device_memory()) return;
  t.device.clear();
  t.device_views.clear();
  for (const auto& m : t.mine) {
    t.device.emplace_back(backend, m.size());
    t.device_views.push_back(t.device.back().span());
  }
}

std::span<const std::span<float> > step_views(const StageTensors& t) {
  return t.device.empty() ? std::span<const std::span<float> >(t.views) : t.device_views;
}

void upload_mine(StageTensors& t) {
  for (std::size_t i = 0; i < t.device.size(); ++i) t.device[i].upload(t.mine[i]);
}

void download_mine(StageTensors& t) {
  for (std::size_t i = 0; i < t.device.size(); ++i) t.device[i].download(t.mine[i]);
}

std::vector<int> tensor_ranks(const StageTensors& t, int stage_rank) {
  std::vector<int> r(t.shapes.size(), 0);
  for (std::size_t i = 0; i < r.size(); ++i)
    if (t.compressible[i] && stage_rank > 0 && stage_rank < t.min_dim(i)) r[i] = stage_rank;
  return r;
}

}  // namespace edgc::live
