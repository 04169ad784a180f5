// One simulated training iteration on the ideal profile against closed forms: a compute-only pipeline, the DP
// ring added after the last backward, PowerSGD shortening the sync on a slow inter-node network, and rejected
// plans. Each TEST is one simulation and runs in its own process (CTest runs the binary once per test); the
// PowerSGD comparison needs two simulations and runs each in a forked child.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/sim/collectives.hpp"
#include "edgc/sim/cost_model.hpp"
#include "edgc/sim/iteration.hpp"
#include "edgc/sim/platform.hpp"
#include "edgc/sim/whole_run.hpp"
#include "sim_test_util.hpp"

namespace edgc::sim {
namespace {

using test::engine;

// One node of 4 GPUs whose links are so fast that pipeline transfers cost nothing measurable.
ClusterSpec four_fast_gpus(double intra_GBps, double intra_latency_us) {
  ClusterSpec s = test::h100_like(1);
  s.gpus_per_node = 4;
  s.nics_per_node = 1;
  s.intra_bandwidth_GBps = intra_GBps;
  s.intra_latency_us = intra_latency_us;
  return s;
}

// 16 layers of h = 4096 and a tiny vocabulary: the LM head adds < 0.1 % to the last stage's compute.
ModelSpec wide_model(int seq_len, int microbatches) {
  ModelSpec m;
  m.name = "wide";
  m.layers = 16;
  m.hidden = 4096;
  m.heads = 32;
  m.seq_len = seq_len;
  m.vocab = 128;
  m.micro_batch_size = 1;
  m.global_batch_size = microbatches;
  return m;
}

// The closed forms below cover the pipeline and the DP sync: no first ↔ last stage embedding all-reduce (tested on
// its own) and no optimizer step (pipeline_only_params()).
ParallelSpec layout(int tp, int pp, int dp, PipelineSchedule schedule) {
  ParallelSpec p;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.schedule = schedule;
  p.microbatches = 0;  // derived from the global batch
  p.embedding_allreduce = false;
  return p;
}

CostParams pipeline_only_params() {
  CostParams c;
  c.optimizer_step_s = 0.0;
  return c;
}

void expect_compute_only_pipeline(PipelineSchedule schedule) {
  const Platform platform = Platform::build(engine(), four_fast_gpus(1e6, 1e-3), NetworkProfile{});
  const int m = 8;
  const int p = 4;
  const ModelSpec model = wide_model(128, m);
  ParallelSpec par = layout(1, p, 1, schedule);
  par.microbatches = m;
  const CostParams params = pipeline_only_params();
  IterationOptions options;
  options.record_timeline = true;
  const IterationResult r = simulate_iteration(engine(), platform, model, par, params, uncompressed_plan(p), options);
  const ComputeCost c = stage_compute(model, par, platform.spec().gpu, params, 0);
  const double expected = (m + p - 1) * (c.forward_s + c.backward_s);
  EXPECT_NEAR(r.iteration_s / expected, 1.0, 1e-3) << "sim " << r.iteration_s << " s, closed form " << expected;
  ASSERT_EQ(r.stages.size(), 4u);
  // Every stage idles (p − 1)(t_f + t_b) before its last backward ends.
  for (const StageResult& st : r.stages) {
    EXPECT_NEAR(st.bubble_fraction, (p - 1.0) / (m + p - 1.0), 2e-3);
    EXPECT_EQ(st.dp_sync_s, 0.0);
  }
  int compute_events = 0;
  for (const TimelineEvent& e : r.timeline) {
    EXPECT_LE(e.start_s, e.end_s);
    if (e.category == "compute") ++compute_events;
  }
  EXPECT_EQ(compute_events, 2 * m * p);
}

TEST(ComputeOnly, GpipeMatchesClosedForm) { expect_compute_only_pipeline(PipelineSchedule::kGpipe); }

// Interleaved 1F1B with v chunks per GPU shrinks the bubble v-fold (Narayanan et al. 2021, §2.2.2):
// (m + (p − 1)/v)(t_f + t_b), each GPU running 2·m·v passes of 1/v of its layers.
TEST(ComputeOnly, InterleavedMatchesClosedForm) {
  const Platform platform = Platform::build(engine(), four_fast_gpus(1e6, 1e-3), NetworkProfile{});
  const int m = 8;
  const int p = 4;
  const int v = 2;
  const ModelSpec model = wide_model(128, m);
  ParallelSpec par = layout(1, p, 1, PipelineSchedule::kInterleaved);
  par.virtual_stages = v;
  const CostParams params = pipeline_only_params();
  IterationOptions options;
  options.record_timeline = true;
  const IterationResult r = simulate_iteration(engine(), platform, model, par, params, uncompressed_plan(p), options);
  const ComputeCost c = stage_compute(model, par, platform.spec().gpu, params, 0);
  const double expected = (m + (p - 1.0) / v) * (c.forward_s + c.backward_s);
  EXPECT_NEAR(r.iteration_s / expected, 1.0, 1e-3) << "sim " << r.iteration_s << " s, closed form " << expected;
  for (const StageResult& st : r.stages) EXPECT_NEAR(st.bubble_fraction, (p - 1.0) / (m * v + p - 1.0), 2e-3);
  int compute_events = 0;
  for (const TimelineEvent& e : r.timeline)
    if (e.category == "compute") ++compute_events;
  EXPECT_EQ(compute_events, 2 * m * p * v);
}
TEST(ComputeOnly, OneFOneBMatchesClosedForm) { expect_compute_only_pipeline(PipelineSchedule::kOneFOneB); }

// The progress hook counts every GPU's forward and backward passes up to their total, 2·m·v per GPU, and the GPUs
// through their iteration, never backwards and never past the totals.
TEST(ComputeOnly, ProgressCountsPassesUpToTheirTotal) {
  const Platform platform = Platform::build(engine(), four_fast_gpus(1e6, 1e-3), NetworkProfile{});
  const int m = 8;
  const int p = 4;
  const int v = 2;
  ParallelSpec par = layout(1, p, 1, PipelineSchedule::kInterleaved);
  par.virtual_stages = v;
  IterationOptions options;
  std::int64_t calls = 0;
  IterationProgress last;
  bool monotone = true;
  options.on_progress = [&](const IterationProgress& now) {
    ++calls;
    monotone = monotone && now.passes_done >= last.passes_done && now.passes_done <= now.passes_total &&
               now.gpus_done >= last.gpus_done && now.gpus_done <= now.gpus_total;
    last = now;
  };
  (void)simulate_iteration(engine(), platform, wide_model(128, m), par, pipeline_only_params(), uncompressed_plan(p),
                           options);
  EXPECT_GT(calls, 1);
  EXPECT_TRUE(monotone);
  EXPECT_EQ(last.passes_total, 2 * m * v * p);
  EXPECT_EQ(last.passes_done, last.passes_total);
  EXPECT_EQ(last.gpus_total, p);
  EXPECT_EQ(last.gpus_done, p);
}

// pp = 2, dp = 2: after the syncs the first and last stage all-reduce the word-embedding gradient (a ring of
// two: 2 steps of half the bytes; the two DP replicas' rings share no NVSwitch link), then the optimizer step.
TEST(Finish, EmbeddingAllReduceThenOptimizerStep) {
  const Platform platform = Platform::build(engine(), four_fast_gpus(100, 1), NetworkProfile{});
  const ModelSpec model = wide_model(16, 8);
  ParallelSpec par = layout(1, 2, 2, PipelineSchedule::kOneFOneB);
  par.embedding_allreduce = true;
  CostParams params;
  params.optimizer_step_s = 0.002;
  const IterationResult r = simulate_iteration(engine(), platform, model, par, params, uncompressed_plan(2));
  const Route hop = route_between(platform.gpu(0), platform.gpu(1));
  const auto bytes = static_cast<std::uint64_t>(std::ceil(embedding_sync_bytes(model, par)));
  const double ring = 2 * (hop.latency_s + static_cast<double>((bytes + 1) / 2) / hop.bottleneck_Bps);
  const double meet = std::max(r.stages[0].sync_end_s, r.stages[1].sync_end_s);
  for (const StageResult& st : r.stages) {
    EXPECT_NEAR(st.embedding_sync_s / ring, 1.0, 1e-9);
    EXPECT_DOUBLE_EQ(st.optimizer_s, 0.002);
    EXPECT_NEAR(st.finish_s, meet + ring + 0.002, 1e-9);
  }
  EXPECT_NEAR(r.iteration_s, meet + ring + 0.002, 1e-9);
  const IterationBreakdown b = breakdown(r);
  EXPECT_NEAR(b.optimizer_s, 0.002, 1e-12);
  EXPECT_NEAR(b.embedding_sync_s, ring, 1e-9);
}

// pp = 1, dp = 4 with overlap_grad_reduce: the buckets all-reduce while the last backward runs. Here each bucket's
// ring is shorter than the compute between two buckets, so only the last bucket's ring is left after the backward.
TEST(Finish, OverlappedBucketsLeaveOnlyTheLastBucketExposed) {
  const Platform platform = Platform::build(engine(), four_fast_gpus(100, 1), NetworkProfile{});
  const ModelSpec model = wide_model(16384, 4);
  ParallelSpec par = layout(1, 1, 4, PipelineSchedule::kOneFOneB);
  const CostParams params = pipeline_only_params();
  const double stage_params_count = static_cast<double>(stage_params(model, par, 0).per_gpu());
  par.overlap_grad_reduce = true;
  par.grad_bucket_params = stage_params_count / 4 + 1;  // four buckets, the last one smaller
  const IterationResult r = simulate_iteration(engine(), platform, model, par, params, uncompressed_plan(1));
  const Route hop = route_between(platform.gpu(0), platform.gpu(1));
  const double last_params = stage_params_count - 3 * par.grad_bucket_params;
  const auto last_bytes = static_cast<std::uint64_t>(std::ceil(last_params * 2));
  const CollectiveOp op = CollectiveOp::kAllReduce;
  const double last_ring =
      ring_steps(op, 4) *
      (hop.latency_s + static_cast<double>(ring_chunk_bytes(op, 4, last_bytes)) / hop.bottleneck_Bps);
  EXPECT_NEAR(r.iteration_s - r.pipeline_end_s, last_ring, 1e-9);
  EXPECT_NEAR(r.stages[0].exposed_comm_s, last_ring, 1e-9);
  EXPECT_GT(r.stages[0].dp_comm_s, 3 * last_ring);  // the other three buckets ran during the backward pass
}

// The same with the GPU's SM count known (10 SMs, one ring channel inside the node): while a bucket's NCCL kernel
// runs it holds 1 of the 10 SMs, so the backward pass computes at 9/10 of its speed. Each of the first three
// buckets runs wholly inside the pass (its ring is shorter than the compute between two buckets), stretching the
// pass by a tenth of its ring; the rings themselves do not change, and the last bucket still starts when the pass
// ends.
TEST(Finish, OverlappedBucketsTakeOneSmPerChannelFromTheBackwardPass) {
  ClusterSpec spec = four_fast_gpus(100, 1);
  spec.gpu.sm_count = 10;
  const Platform platform = Platform::build(engine(), spec, NetworkProfile{});
  const ModelSpec model = wide_model(16384, 4);
  ParallelSpec par = layout(1, 1, 4, PipelineSchedule::kOneFOneB);
  const CostParams params = pipeline_only_params();
  const double stage_params_count = static_cast<double>(stage_params(model, par, 0).per_gpu());
  par.overlap_grad_reduce = true;
  par.grad_bucket_params = stage_params_count / 4 + 1;
  const IterationResult r = simulate_iteration(engine(), platform, model, par, params, uncompressed_plan(1));
  const Route hop = route_between(platform.gpu(0), platform.gpu(1));
  const CollectiveOp op = CollectiveOp::kAllReduce;
  const auto ring_of = [&](double params_count) {
    const auto bytes = static_cast<std::uint64_t>(std::ceil(params_count * 2));
    return ring_steps(op, 4) *
           (hop.latency_s + static_cast<double>(ring_chunk_bytes(op, 4, bytes)) / hop.bottleneck_Bps);
  };
  const double full_ring = ring_of(par.grad_bucket_params);
  const double last_ring = ring_of(stage_params_count - 3 * par.grad_bucket_params);
  const ComputeCost c = stage_compute(model, par, spec.gpu, params, 0);
  const double plain_backward_end = c.forward_s + c.backward_s;  // global batch 4 over dp 4: one micro-batch
  EXPECT_NEAR(r.stages[0].last_backward_end_s, plain_backward_end + 3 * full_ring / 10, 1e-9);
  EXPECT_NEAR(r.iteration_s - r.pipeline_end_s, last_ring, 1e-9);
  EXPECT_NEAR(r.stages[0].exposed_comm_s, last_ring, 1e-9);
}

// The ring closed form of `op` over the four GPUs of one node: steps of (L + chunk/B).
double ring_of(const Platform& platform, CollectiveOp op, double bytes) {
  const Route hop = route_between(platform.gpu(0), platform.gpu(1));
  const auto whole = static_cast<std::uint64_t>(std::ceil(bytes));
  return ring_steps(op, 4) * (hop.latency_s + static_cast<double>(ring_chunk_bytes(op, 4, whole)) / hop.bottleneck_Bps);
}

// pp = 1, dp = 4 with Megatron-Core's distributed optimizer, nothing overlapped: the gradients are reduce-scattered
// after the backward pass (D − 1 ring steps, not the all-reduce's 2(D − 1)), the optimizer steps on the shard, then
// the updated parameters (model dtype, 2 bytes) are all-gathered.
TEST(DistributedOptimizer, ReduceScattersGradientsThenAllGathersParameters) {
  const Platform platform = Platform::build(engine(), four_fast_gpus(100, 1), NetworkProfile{});
  const ModelSpec model = wide_model(16384, 4);
  ParallelSpec par = layout(1, 1, 4, PipelineSchedule::kOneFOneB);
  par.distributed_optimizer = true;
  CostParams params = pipeline_only_params();
  params.optimizer_step_s = 0.003;
  const IterationResult r = simulate_iteration(engine(), platform, model, par, params, uncompressed_plan(1));
  const double p = static_cast<double>(stage_params(model, par, 0).per_gpu());
  const double rs = ring_of(platform, CollectiveOp::kReduceScatter, p * 2);  // fp16 gradients
  const double ag = ring_of(platform, CollectiveOp::kAllGather, p * 2);
  EXPECT_NEAR(r.stages[0].dp_sync_s, rs, 1e-9);
  EXPECT_NEAR(r.iteration_s - r.pipeline_end_s, rs + 0.003 + ag, 1e-9);
  EXPECT_NEAR(r.stages[0].dp_comm_s, rs + ag, 1e-9);
  EXPECT_NEAR(r.stages[0].exposed_comm_s, rs + ag, 1e-9);
  EXPECT_DOUBLE_EQ(r.stages[0].param_gather_wait_s, 0.0);
  // With gradients as wide as the parameters the pair moves what one all-reduce moves (fp32 gradients: 3/4 of it).
  EXPECT_NEAR(rs + ag, ring_of(platform, CollectiveOp::kAllReduce, p * 2), 1e-12);
}

// The same with --overlap-param-gather: the parameters are all-gathered bucket by bucket (forward order: the
// smallest, remainder bucket first) beside the first forward pass. Each bucket's ring is shorter than the forward
// compute between two buckets, so the pass waits only for the first bucket; the iteration's tail keeps the
// reduce-scatter alone, and the breakdown counts the wait as exposed DP communication, not bubble.
TEST(DistributedOptimizer, OverlappedParameterGatherLeavesOnlyTheFirstBucketExposed) {
  const Platform platform = Platform::build(engine(), four_fast_gpus(100, 1), NetworkProfile{});
  const ModelSpec model = wide_model(16384, 4);
  ParallelSpec par = layout(1, 1, 4, PipelineSchedule::kOneFOneB);
  par.distributed_optimizer = true;
  par.overlap_param_gather = true;
  const double p = static_cast<double>(stage_params(model, par, 0).per_gpu());
  par.grad_bucket_params = p / 4 + 1;  // four buckets, the last one (first forward) smaller
  const IterationResult r =
      simulate_iteration(engine(), platform, model, par, pipeline_only_params(), uncompressed_plan(1));
  const double first = ring_of(platform, CollectiveOp::kAllGather, (p - 3 * par.grad_bucket_params) * 2);
  const double full = ring_of(platform, CollectiveOp::kAllGather, par.grad_bucket_params * 2);
  const ComputeCost c = stage_compute(model, par, platform.spec().gpu, pipeline_only_params(), 0);
  ASSERT_LT(full, c.forward_s / 4);  // every later bucket arrives before the pass reaches it
  EXPECT_NEAR(r.stages[0].param_gather_wait_s, first, 1e-9);
  EXPECT_NEAR(r.stages[0].last_backward_end_s, first + c.forward_s + c.backward_s, 1e-9);
  const double rs = ring_of(platform, CollectiveOp::kReduceScatter, p * 2);
  EXPECT_NEAR(r.iteration_s - r.pipeline_end_s, rs, 1e-9);
  const IterationBreakdown b = breakdown(r);
  EXPECT_NEAR(b.exposed_dp_comm_s, rs + first, 1e-9);
  EXPECT_NEAR(b.bubble_s, 0.0, 1e-9);
}

// tp = 4 with sequence parallelism and Transformer Engine's TP-communication overlap: every forward all-gather
// (reduce-scatter) runs beside the GEMM that consumes (produces) it and adds max(c − k, share · c), c = half the
// ring all-reduce, share = 1 SM (ring exchange) or 16 SMs (pipelined reduce-scatter) of the GPU's.
TEST(TpOverlap, TransformerEngineHidesTheForwardCollectivesBehindTheirGemms) {
  ClusterSpec spec = four_fast_gpus(100, 1);
  spec.gpu.sm_count = 132;
  const Platform platform = Platform::build(engine(), spec, NetworkProfile{});
  const ModelSpec model = wide_model(2048, 1);
  ParallelSpec par = layout(4, 1, 1, PipelineSchedule::kOneFOneB);
  par.sequence_parallel = true;
  CostParams params = pipeline_only_params();
  params.compute_efficiency = 0.1;
  const double half = ring_of(platform, CollectiveOp::kAllReduce, 2048.0 * 4096 * 2) / 2;
  const double rate = spec.gpu.peak_tflops * 1e12 * params.compute_efficiency;
  const double h = 4096, bs = 2048;
  const double qkv = 2 * bs * h * 3 * h / 4 / rate, proj = 2 * bs * h * h / 4 / rate,
               mlp = 2 * bs * h * 4 * h / 4 / rate;
  const auto beside = [&](double gemm, double sms) { return std::max(half - gemm, sms / 132 * half); };
  const double exposed = layer_pass_times(platform, model, par, params).forward_tp_s;
  EXPECT_NEAR(exposed, 4 * half, 1e-12);
  par.tp_comm_overlap = true;
  const LayerPassTimes t = layer_pass_times(platform, model, par, params);
  EXPECT_NEAR(t.forward_tp_s, beside(qkv, 1) + beside(proj, 16) + beside(mlp, 1) + beside(mlp, 16), 1e-12);
  EXPECT_LT(t.forward_tp_s, exposed / 5);
  const IterationResult r = simulate_iteration(engine(), platform, model, par, params, uncompressed_plan(1));
  EXPECT_NEAR(r.stages[0].tp_comm_s, model.layers * (t.forward_tp_s + t.backward_tp_s), 1e-9);
}

// tp = 4 on one node, one micro-batch: the stage's TP time is its layers' TP collectives as layer_pass_times gives
// them, and those are closed forms of the ring all-reduce R of the layer's b·s·h tensor: two exposed forward; with
// the asynchronous TP all-reduce the two backward ones run beside the QKV and fc1 weight-gradient GEMMs and add
// max(R − GEMM, share · R) each (share = the ring's channels / SMs), without it they are exposed.
TEST(TpOverlap, LayerPassTimesAreTheRingsClosedFormsAndAddUpToTheStage) {
  ClusterSpec spec = four_fast_gpus(100, 1);
  spec.gpu.sm_count = 10;
  const Platform platform = Platform::build(engine(), spec, NetworkProfile{});
  const ModelSpec model = wide_model(2048, 1);
  const ParallelSpec par = layout(4, 1, 1, PipelineSchedule::kOneFOneB);
  CostParams params = pipeline_only_params();
  params.compute_efficiency = 0.1;
  const Route hop = route_between(platform.gpu(0), platform.gpu(1));
  const CollectiveOp op = CollectiveOp::kAllReduce;
  const auto bytes = static_cast<std::uint64_t>(1.0 * 2048 * 4096 * 2);
  const double ring =
      ring_steps(op, 4) * (hop.latency_s + static_cast<double>(ring_chunk_bytes(op, 4, bytes)) / hop.bottleneck_Bps);
  Group group{{}, "tp"};
  for (int r = 0; r < 4; ++r) group.hosts.push_back(platform.gpu(r));
  const double share = ring_channels(group) / 10.0;
  const double rate = spec.gpu.peak_tflops * 1e12 * params.compute_efficiency;
  const double qkv_wgrad = 2.0 * 2048 * 4096 * 3 * 4096 / 4 / rate;
  const double fc1_wgrad = 2.0 * 2048 * 4096 * 4 * 4096 / 4 / rate;
  ASSERT_GT(qkv_wgrad, ring);  // both GEMMs hide the all-reduce
  const LayerPassTimes t = layer_pass_times(platform, model, par, params);
  EXPECT_NEAR(t.forward_tp_s, 2 * ring, 1e-12);
  EXPECT_NEAR(t.backward_overlap_s, 2 * share * ring, 1e-12);
  EXPECT_NEAR(t.backward_tp_s, t.backward_overlap_s, 1e-15);
  const ComputeCost layer = layer_compute(model, par, spec.gpu, params);
  EXPECT_DOUBLE_EQ(t.forward_compute_s, layer.forward_s);
  EXPECT_DOUBLE_EQ(t.backward_compute_s, layer.backward_s);
  ParallelSpec sync = par;
  sync.async_tp_allreduce = false;
  EXPECT_NEAR(layer_pass_times(platform, model, sync, params).backward_tp_s, 2 * ring, 1e-12);
  // GEMMs at 10 times the rate, shorter than the ring: each leaves R − GEMM exposed.
  CostParams fast = params;
  fast.compute_efficiency = 1.0;
  const double q = qkv_wgrad / 10, f = fc1_wgrad / 10;
  ASSERT_LT(f, ring * (1 - share));
  EXPECT_NEAR(layer_pass_times(platform, model, par, fast).backward_overlap_s, (ring - q) + (ring - f), 1e-12);

  const IterationResult r = simulate_iteration(engine(), platform, model, par, params, uncompressed_plan(1));
  EXPECT_NEAR(r.stages[0].tp_comm_s, model.layers * (t.forward_tp_s + t.backward_tp_s), 1e-9);
}

// dp = 2, pp = 2 on one NVSwitch node: each stage's DP ring starts after its last backward and takes exactly
// 2(D − 1)(L + (S/D)/B); the iteration ends with the sync that finishes last.
TEST(DataParallel, SyncAddsTheRingOfTheLastStageToFinish) {
  const Platform platform = Platform::build(engine(), four_fast_gpus(100, 1), NetworkProfile{});
  const int m = 4;
  const ModelSpec model = wide_model(16, 2 * m);
  const ParallelSpec par = layout(1, 2, 2, PipelineSchedule::kOneFOneB);
  const IterationResult r =
      simulate_iteration(engine(), platform, model, par, pipeline_only_params(), uncompressed_plan(2));
  ASSERT_EQ(r.stages.size(), 2u);
  double expected_end = 0.0;
  for (int s = 0; s < 2; ++s) {
    const Route hop = route_between(platform.gpu(2 * s), platform.gpu(2 * s + 1));
    const auto bytes = static_cast<std::uint64_t>(std::ceil(dp_gradient_bytes(model, par, s)));
    const double ring = 2 * (hop.latency_s + static_cast<double>((bytes + 1) / 2) / hop.bottleneck_Bps);
    const StageResult& st = r.stages[static_cast<std::size_t>(s)];
    EXPECT_NEAR(st.dp_sync_s / ring, 1.0, 1e-3) << "stage " << s;
    expected_end = std::max(expected_end, st.last_backward_end_s + ring);
  }
  EXPECT_NEAR(r.iteration_s / expected_end, 1.0, 1e-3);
  // The pipeline part is still (m + p − 1)(t_f + t_b) up to the small activation transfers.
  const ComputeCost c = stage_compute(model, par, platform.spec().gpu, CostParams{}, 0);
  EXPECT_NEAR(r.pipeline_end_s / ((m + 1) * (c.forward_s + c.backward_s)), 1.0, 1e-2);
  EXPECT_GT(r.iteration_s, r.pipeline_end_s);
}

// Runs `simulate` in a forked child (SimGrid allows one simulation per process) and returns what it returned.
std::vector<double> in_child(const std::function<std::vector<double>()>& simulate, std::size_t count) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::vector<double> out;
    try {
      out = simulate();
    } catch (...) {
      _exit(1);
    }
    const auto bytes = static_cast<ssize_t>(out.size() * sizeof(double));
    _exit(out.size() == count && write(fds[1], out.data(), static_cast<std::size_t>(bytes)) == bytes ? 0 : 1);
  }
  close(fds[1]);
  std::vector<double> out(count);
  const auto want = static_cast<ssize_t>(count * sizeof(double));
  const bool ok = read(fds[0], out.data(), static_cast<std::size_t>(want)) == want;
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!ok || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return {};
  return out;
}

// DGX-1 V100-like: cube-mesh NVLink, two GPUs per 12.5 GB/s NIC. tp = 8 inside a node, dp = 2 across the nodes.
std::vector<double> dgx1_sync(int powersgd_rank) {
  ClusterSpec s;
  s.name = "dgx1-v100-like";
  s.gpus_per_node = 8;
  s.nodes = 2;
  s.gpu = {"V100", 125, 900};
  s.intra_topology = IntraNodeTopology::kDgx1CubeMesh;
  s.intra_bandwidth_GBps = 25;
  s.intra_latency_us = 2;
  s.nics_per_node = 4;
  s.nic_bandwidth_GBps = 12.5;
  s.inter_latency_us = 4;
  const Platform platform = Platform::build(engine(), s, NetworkProfile{});
  ModelSpec model;
  model.name = "small";
  model.layers = 4;
  model.hidden = 2048;
  model.heads = 16;
  model.seq_len = 256;
  model.vocab = 1024;
  model.micro_batch_size = 1;
  model.global_batch_size = 4;
  const ParallelSpec par = layout(8, 1, 2, PipelineSchedule::kOneFOneB);
  const IterationResult r =
      simulate_iteration(engine(), platform, model, par, CostParams{}, powersgd_plan(1, powersgd_rank));
  const StageResult& st = r.stages.at(0);
  return {r.iteration_s, st.dp_sync_s, st.exposed_comm_s, st.compression_s};
}

TEST(PowerSgd, ShortensTheSyncOnASlowNetwork) {
  const std::vector<double> plain = in_child([] { return dgx1_sync(0); }, 4);
  const std::vector<double> psgd = in_child([] { return dgx1_sync(4); }, 4);
  ASSERT_EQ(plain.size(), 4u);
  ASSERT_EQ(psgd.size(), 4u);
  EXPECT_LT(psgd[1], plain[1]) << "dp sync: PowerSGD " << psgd[1] << " s, uncompressed " << plain[1] << " s";
  EXPECT_LT(psgd[2], plain[2]) << "exposed comm: PowerSGD " << psgd[2] << " s, uncompressed " << plain[2] << " s";
  EXPECT_LT(psgd[0], plain[0]);
  EXPECT_GT(psgd[3], 0.0);
  EXPECT_EQ(plain[3], 0.0);
  // Uncompressed: all of the sync is exposed with pp = 1.
  EXPECT_NEAR(plain[2] / plain[1], 1.0, 1e-9);
}

TEST(Validate, RejectsBadPlans) {
  const Platform platform = Platform::build(engine(), four_fast_gpus(100, 1), NetworkProfile{});
  const ModelSpec model = wide_model(16, 8);
  const ParallelSpec par = layout(1, 2, 2, PipelineSchedule::kOneFOneB);
  const auto field_of = [&](const ParallelSpec& p, const DpSyncPlan& plan) -> std::string {
    try {
      simulate_iteration(engine(), platform, model, p, CostParams{}, plan);
    } catch (const ConfigError& e) {
      return e.field();
    }
    return "(nothing thrown)";
  };
  EXPECT_EQ(field_of(par, uncompressed_plan(3)), "dp_sync");
  EXPECT_EQ(field_of(par, DpSyncPlan{}), "dp_sync");
  EXPECT_EQ(field_of(par, DpSyncPlan{StageSync{4}, StageSync{-1}}), "dp_sync.rank");
  ParallelSpec interleaved = par;
  interleaved.schedule = PipelineSchedule::kInterleaved;
  interleaved.virtual_stages = 3;  // 16 layers do not split into 2 · 3 chunks
  EXPECT_EQ(field_of(interleaved, uncompressed_plan(2)), "model.layers");
  ParallelSpec too_big = par;
  too_big.dp = 4;
  EXPECT_EQ(field_of(too_big, uncompressed_plan(2)), "parallelism.dp");
}

}  // namespace
}  // namespace edgc::sim
