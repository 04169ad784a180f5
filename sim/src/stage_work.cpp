#include "impl/stage_work.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/sim/kernel_model.hpp"
#include "edgc/sim/layout.hpp"
#include "impl/closed_forms.hpp"
#include "impl/traffic.hpp"

namespace edgc::sim::impl {

void check_plan(const DpSyncPlan& plan, const ParallelSpec& parallel, const std::string& where) {
  if (static_cast<int>(plan.size()) != parallel.pp)
    throw ConfigError(
        where, "dp_sync",
        "plan has " + std::to_string(plan.size()) + " stages, the layout has pp = " + std::to_string(parallel.pp));
  for (std::size_t s = 0; s < plan.size(); ++s) {
    if (plan[s].powersgd_rank < 0)
      throw ConfigError(where, "dp_sync.rank",
                        "stage " + std::to_string(s) + ": PowerSGD rank " + std::to_string(plan[s].powersgd_rank) +
                            " is negative (0 = uncompressed)");
    if (plan[s].pp_rank < 0)
      throw ConfigError(where, "dp_sync.pp_rank",
                        "stage " + std::to_string(s) + ": pipeline PowerSGD rank " + std::to_string(plan[s].pp_rank) +
                            " is negative (0 = uncompressed)");
  }
}

// The stage's gradient split into DP buckets of parallel.grad_bucket_params parameters (Megatron-Core's
// max(4e7, 1e6·dp) when 0), the last bucket holding the rest; bucket i of n is ready after (i + 1)/n of the final
// backward pass. To bound the simulated activities, more than kMaxBuckets buckets are coalesced: the last bucket
// stays alone (it is the one exposed after the backward pass), the others merge into kMaxBuckets − 1 groups, each
// ready when its last member is (never earlier than the real buckets).
constexpr std::size_t kMaxBuckets = 8;

namespace {

// The buckets with `bytes` per parameter, in backward order.
std::vector<Bucket> buckets_of(const ModelSpec& model, const ParallelSpec& par, int stage, double bytes) {
  const double params = static_cast<double>(stage_params(model, par, stage).dense());  // the DP-synced ones
  const double per_bucket =
      par.grad_bucket_params > 0 ? par.grad_bucket_params : std::max(4e7, 1e6 * static_cast<double>(par.dp));
  const auto n = static_cast<std::size_t>(std::ceil(params / per_bucket));
  const auto bucket_bytes = [&](std::size_t i) {
    return std::min(per_bucket, params - static_cast<double>(i) * per_bucket) * bytes;
  };
  const auto ready = [&](std::size_t i) { return static_cast<double>(i + 1) / static_cast<double>(n); };
  std::vector<Bucket> out;
  if (n <= kMaxBuckets) {
    for (std::size_t i = 0; i < n; ++i) out.push_back({whole_bytes(bucket_bytes(i)), ready(i)});
    return out;
  }
  const std::size_t groups = kMaxBuckets - 1;
  for (std::size_t g = 0; g < groups; ++g) {
    const std::size_t first = (n - 1) * g / groups, last = (n - 1) * (g + 1) / groups;  // [first, last)
    double sum = 0.0;
    for (std::size_t i = first; i < last; ++i) sum += bucket_bytes(i);
    out.push_back({whole_bytes(sum), ready(last - 1)});
  }
  out.push_back({whole_bytes(bucket_bytes(n - 1)), 1.0});
  return out;
}

}  // namespace

std::vector<Bucket> gradient_buckets(const ModelSpec& model, const ParallelSpec& par, int stage) {
  return buckets_of(model, par, stage, grad_bytes(model, par));
}

// A bucket whose gradients are ready after `ready` of the backward pass holds the layers the forward pass reaches
// after 1 − ready of it.
std::vector<Bucket> param_buckets(const ModelSpec& model, const ParallelSpec& par, int stage) {
  std::vector<Bucket> out = buckets_of(model, par, stage, bytes_per_element(model.dtype));
  std::reverse(out.begin(), out.end());
  for (Bucket& b : out) b.ready = 1.0 - b.ready;
  return out;
}

LayerTp layer_tp(const Platform& platform, const Group& group, const ModelSpec& model, const ParallelSpec& par,
                 const CostParams& params) {
  const TpLayerComm comm = tp_comm_per_layer(model, par);
  LayerTp out{comm.tensor_bytes, 0.0, comm.exposed_units(false), comm.exposed_units(true), 0.0};
  if (par.tp == 1) return out;
  const GpuSpec& gpu = platform.spec().gpu;
  out.allreduce_s = channel_ring_s(platform, group, whole_bytes(comm.tensor_bytes));
  const std::vector<double> kernel_s = beside_kernels_s(comm, model, par, gpu, params);
  for (std::size_t i = 0; i < comm.collectives.size(); ++i) {
    const TpCollective& c = comm.collectives[i];
    if (c.beside == nullptr) continue;
    const double sms = c.sms > 0.0 ? c.sms : ring_channels(group);
    const double share = gpu.sm_count > 0 ? std::min(1.0, sms / static_cast<double>(gpu.sm_count)) : 0.0;
    const double comm_s = allreduce_units(c.op) * out.allreduce_s;
    (c.backward ? out.backward_overlap_s : out.forward_overlap_s) += std::max(comm_s - kernel_s[i], share * comm_s);
  }
  return out;
}

namespace {

// The longest route latency between two members of `group`: what each all-to-all folded into another adds.
double all_to_all_latency_s(const Group& group) {
  double worst = 0.0;
  for (sg4::Host* a : group.hosts)
    for (sg4::Host* b : group.hosts)
      if (a != b) worst = std::max(worst, route_between(a, b).latency_s);
  return worst;
}

// MoE: the token all-to-alls of every chunk's passes (moe_all_to_all_bytes per all-to-all and GPU).
void add_all_to_alls(const ModelSpec& model, const ParallelSpec& par, const Group* ep_group, int layers,
                     ChunkWork& cw) {
  const double bytes = moe_all_to_all_bytes(model, par);
  if (ep_group == nullptr || bytes <= 0) return;
  const double lat = all_to_all_latency_s(*ep_group);
  const double n_fwd = static_cast<double>(layers) * moe_all_to_alls(model, false);
  const double n_bwd = static_cast<double>(layers) * moe_all_to_alls(model, true);
  // all_to_all() takes each member's whole send buffer, of which 1/ep stays on the GPU.
  const double buffer = bytes * par.ep / (par.ep - 1);
  cw.a2a_forward_bytes = whole_bytes(n_fwd * buffer);
  cw.a2a_backward_bytes = whole_bytes(n_bwd * buffer);
  cw.a2a_forward_extra_latency_s = std::max(0.0, n_fwd - 1.0) * lat;
  cw.a2a_backward_extra_latency_s = std::max(0.0, n_bwd - 1.0) * lat;
}

// MoE: the routed experts' sync over expert DP at sync.expert_rank_or_default().
void add_expert_sync(const Platform& platform, const ModelSpec& model, const ParallelSpec& par,
                     const CostParams& params, int stage, const StageSync& sync, StageWork& w) {
  if (!model.moe() || expert_dp_size(par) < 2) return;
  w.expert_rank = sync.expert_rank_or_default();
  if (w.expert_rank == 0) {
    w.expert_bytes = whole_bytes(expert_gradient_bytes(model, par, stage));
    w.expert_reduce_scatter = par.distributed_optimizer;
  } else {
    const PowerSgdWire wire = powersgd_wire(model, par, stage, w.expert_rank, SyncGroup::kExpert);
    w.expert_p_bytes = whole_bytes(wire.p_bytes);
    w.expert_q_bytes = whole_bytes(wire.q_bytes);
    w.expert_bytes = whole_bytes(wire.uncompressed_bytes);  // expert matrices the skip rule sends whole
    w.expert_compress_s =
        powersgd_compress_s(model, par, platform.spec().gpu, params, stage, w.expert_rank, SyncGroup::kExpert);
  }
  if (par.distributed_optimizer)
    w.expert_param_bytes =
        whole_bytes(static_cast<double>(stage_params(model, par, stage).expert) * bytes_per_element(model.dtype));
}

}  // namespace

StageWork stage_work(const Platform& platform, const ModelSpec& model, const ParallelSpec& par,
                     const CostParams& params, int stage, const StageSync& sync, const Group& tp_group,
                     const Group* ep_group) {
  const ClusterSpec& cluster = platform.spec();
  StageWork w;
  const int chunks = model_chunks(par);
  // An MoE model's layers and, where it has dense layers among them, a dense layer's (a dense model: the same).
  const LayerTp tp = layer_tp(platform, tp_group, model, par, params);
  const LayerTp dense_tp = model.moe() && model_layer_mix(model).dense > 0
                               ? layer_tp(platform, tp_group, dense_layer_model(model), par, params)
                               : tp;
  const double lat = par.tp > 1 ? ring_latency_s(tp_group) : 0.0;
  for (int c = 0; c < chunks; ++c) {
    ChunkWork cw;
    const LayerMix mix = chunk_layer_mix(model, par, stage, c);
    const auto both = [&](double LayerTp::*per_layer) {
      return mix.moe * (tp.*per_layer) + mix.dense * (dense_tp.*per_layer);  // a dense model: dense_tp is tp
    };
    const double n_fwd = both(&LayerTp::forward_units);
    const double n_bwd = both(&LayerTp::backward_units);
    const ComputeCost cost = chunk_compute(model, par, cluster.gpu, params, stage, c);
    if (params.compute_model == ComputeModel::kEfficiency) {
      cw.forward_flops = cost.forward_flops / params.compute_efficiency;
      cw.backward_flops = cost.backward_flops / params.compute_efficiency;
    } else {
      const double speed = cluster.gpu.peak_tflops * 1e12;  // the host's speed (Platform::build)
      cw.forward_flops = cost.forward_s * speed;
      cw.backward_flops = cost.backward_s * speed;
    }
    cw.tp_forward_bytes = whole_bytes(n_fwd * tp.tensor_bytes);
    cw.tp_backward_bytes = whole_bytes(n_bwd * tp.tensor_bytes);
    cw.tp_forward_extra_latency_s = std::max(0.0, n_fwd - 1.0) * lat;
    cw.tp_backward_extra_latency_s = std::max(0.0, n_bwd - 1.0) * lat;
    cw.tp_backward_overlap_s = both(&LayerTp::backward_overlap_s);
    cw.tp_forward_overlap_s = both(&LayerTp::forward_overlap_s);
    if (par.tp > 1) {
      cw.tp_forward_ring_s = contention_free_ring_s(platform, tp_group, cw.tp_forward_bytes);
      cw.tp_backward_ring_s = contention_free_ring_s(platform, tp_group, cw.tp_backward_bytes);
    }
    add_all_to_alls(model, par, ep_group, mix.moe, cw);
    w.chunks.push_back(cw);
  }
  w.powersgd_rank = sync.powersgd_rank;
  if (stage == 0 || stage == par.pp - 1) w.embedding_bytes = whole_bytes(embedding_sync_bytes(model, par));
  w.optimizer_s = optimizer_step_s(model, par, cluster.gpu, params, stage);
  w.grad_send_bytes = whole_bytes(pp_compressed_bytes(model, par, sync.pp_rank));
  w.grad_compress_s = pp_compress_s(model, par, cluster.gpu, params, sync.pp_rank);
  w.grad_decompress_s = pp_decompress_s(model, par, cluster.gpu, params, sync.pp_rank);
  if (par.distributed_optimizer && par.dp > 1) {
    w.reduce_scatter = sync.powersgd_rank == 0;  // PowerSGD all-reduces P and Q; every rank then takes its shard
    if (par.overlap_param_gather)
      w.param_buckets = param_buckets(model, par, stage);
    else
      w.param_bytes =
          whole_bytes(static_cast<double>(stage_params(model, par, stage).dense()) * bytes_per_element(model.dtype));
  }
  add_expert_sync(platform, model, par, params, stage, sync, w);
  if (sync.powersgd_rank == 0) {
    w.dp_bytes = whole_bytes(dp_gradient_bytes(model, par, stage));
    if (par.overlap_grad_reduce && par.dp > 1) w.buckets = gradient_buckets(model, par, stage);
  } else {
    const PowerSgdWire wire = powersgd_wire(model, par, stage, sync.powersgd_rank);
    w.p_bytes = whole_bytes(wire.p_bytes);
    w.q_bytes = whole_bytes(wire.q_bytes);
    w.fused_bytes = whole_bytes(wire.uncompressed_bytes);
    w.compress_s = powersgd_compress_s(model, par, cluster.gpu, params, stage, sync.powersgd_rank);
  }
  return w;
}

}  // namespace edgc::sim::impl

namespace edgc::sim {

bool dp_compressed(const DpSyncPlan& plan) {
  return std::any_of(plan.begin(), plan.end(),
                     [](const StageSync& s) { return s.powersgd_rank > 0 || s.expert_rank > 0; });
}

DpSyncPlan uncompressed_plan(int pp) { return DpSyncPlan(static_cast<std::size_t>(std::max(pp, 0))); }

DpSyncPlan powersgd_plan(int pp, int rank, int pp_rank) {
  return DpSyncPlan(static_cast<std::size_t>(std::max(pp, 0)), StageSync{rank, pp_rank});
}

LayerPassTimes layer_pass_times(const Platform& platform, const ModelSpec& model, const ParallelSpec& parallel,
                                const CostParams& params, const std::string& where) {
  const ParallelSpec par = validate(model, parallel, platform.spec(), where);
  const GpuSpec& gpu = platform.spec().gpu;
  const ComputeCost compute = layer_compute(model, par, gpu, params);
  LayerPassTimes t;
  t.forward_compute_s = compute.forward_s;
  t.backward_compute_s = compute.backward_s;
  if (params.compute_model == ComputeModel::kKernels && !par.grad_accumulation_fusion)
    t.backward_compute_s += layer_grad_accumulation_s(model, par, gpu, params);
  if (par.tp == 1) return t;
  const Layout layout(par, platform.gpus_per_node());
  const Group group = impl::on_platform(platform, impl::tp_rank_groups(layout)).front();
  const impl::LayerTp tp = impl::layer_tp(platform, group, model, par, params);
  t.forward_tp_s = tp.forward_units * tp.allreduce_s + tp.forward_overlap_s;
  t.backward_overlap_s = tp.backward_overlap_s;
  t.backward_tp_s = tp.backward_units * tp.allreduce_s + tp.backward_overlap_s;
  return t;
}

}  // namespace edgc::sim
