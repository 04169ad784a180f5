#include "edgc/sim/pipeline_schedule.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"

namespace edgc::sim {
namespace {

constexpr const char* kWhere = "pipeline_schedule";

void require_positive(const char* field, int value) {
  if (value < 1) throw ConfigError(kWhere, field, "must be a positive integer, got " + std::to_string(value));
}

void check_arguments(PipelineSchedule schedule, int pp, int stage, int microbatches, int virtual_stages) {
  require_positive("parallelism.pp", pp);
  require_positive("parallelism.microbatches", microbatches);
  require_positive("parallelism.virtual_stages", virtual_stages);
  if (stage < 0 || stage >= pp)
    throw ConfigError(kWhere, "stage",
                      std::to_string(stage) + " is not a stage of a " + std::to_string(pp) + "-stage pipeline");
  if (schedule != PipelineSchedule::kInterleaved) {
    if (virtual_stages != 1)
      throw ConfigError(kWhere, "parallelism.virtual_stages",
                        "model chunks per GPU need the interleaved schedule, got " + std::to_string(virtual_stages));
    return;
  }
  if (pp < 2) throw ConfigError(kWhere, "parallelism.pp", "the interleaved schedule needs at least 2 pipeline stages");
  if (microbatches % pp != 0)
    throw ConfigError(kWhere, "parallelism.microbatches",
                      "the interleaved schedule needs a multiple of pp = " + std::to_string(pp) + ", got " +
                          std::to_string(microbatches));
}

// Warm-up forwards, then one forward and one backward per round, then the cool-down backwards. Forward pass k
// and backward pass k are `forward(k)` and `backward(k)`, k ∈ [0, total): the shape shared by 1F1B and
// interleaved 1F1B, which differ only in the warm-up count and the pass numbering.
template <typename Forward, typename Backward>
std::vector<Pass> one_forward_one_backward(int total, int warmup, Forward forward, Backward backward) {
  std::vector<Pass> order;
  order.reserve(2 * static_cast<std::size_t>(total));
  for (int k = 0; k < warmup; ++k) order.push_back(forward(k));
  for (int i = 0; i < total - warmup; ++i) {
    order.push_back(forward(warmup + i));
    order.push_back(backward(i));
  }
  for (int k = total - warmup; k < total; ++k) order.push_back(backward(k));
  return order;
}

}  // namespace

std::vector<Pass> pass_order(PipelineSchedule schedule, int pp, int stage, int microbatches, int virtual_stages) {
  check_arguments(schedule, pp, stage, microbatches, virtual_stages);
  const int m = microbatches;
  switch (schedule) {
    case PipelineSchedule::kGpipe: {
      std::vector<Pass> order;
      order.reserve(2 * static_cast<std::size_t>(m));
      for (int mb = 0; mb < m; ++mb) order.push_back({PassKind::kForward, mb, 0});
      for (int mb = 0; mb < m; ++mb) order.push_back({PassKind::kBackward, mb, 0});
      return order;
    }
    case PipelineSchedule::kOneFOneB: {
      // Stage s must hold p − 1 − s micro-batches before the first gradient can come back to it.
      const int warmup = std::min(pp - 1 - stage, m);
      return one_forward_one_backward(
          m, warmup,
          [](int k) {
            return Pass{PassKind::kForward, k, 0};
          },
          [](int k) {
            return Pass{PassKind::kBackward, k, 0};
          });
    }
    case PipelineSchedule::kInterleaved: {
      // Megatron-LM's numbering: pass k takes micro-batch (k / (p·v))·p + k % p through chunk (k / p) % v going
      // forward and chunk v − 1 − (k / p) % v going back, and stage s warms up with
      // (p − 1 − s)·2 + (v − 1)·p forwards (forward_backward_pipelining_with_interleaving).
      const int p = pp;
      const int v = virtual_stages;
      const int total = m * v;
      const auto mb_of = [p, v](int k) { return (k / (p * v)) * p + k % p; };
      const int warmup = std::min((p - 1 - stage) * 2 + (v - 1) * p, total);
      return one_forward_one_backward(
          total, warmup,
          [&](int k) {
            return Pass{PassKind::kForward, mb_of(k), (k / p) % v};
          },
          [&](int k) {
            return Pass{PassKind::kBackward, mb_of(k), v - 1 - (k / p) % v};
          });
    }
  }
  throw InternalError("pass_order: unknown pipeline schedule " + std::to_string(static_cast<int>(schedule)));
}

}  // namespace edgc::sim
