// The kernel-level compute model's view of one transformer layer of a scenario: every kernel of its forward and
// backward pass (sim::layer_kernels) with the model's predicted time, so that a GPU can time the same kernels and
// the two be compared kernel by kernel (tools/bench/layer_kernels_torch.py reads the JSON written here).
//
//   edgc_bench_layer_kernels --scenario FILE [--json FILE]
//
// The scenario is read as `simulate` reads it (cluster, model, parallelism, compute); its GPU must carry the
// kernel model's measured figures (cluster.gpu.sm_count, matmul_tflops, ...). Printed per kernel: name, pass, what
// it computes (`op`), the GEMM's batch × m × n × k or the elements it streams, the bytes it moves, its FLOPs, the
// predicted time and the rate that time implies (TFLOP/s for a GEMM, GB/s for a memory-bound pass); then the
// forward and backward sums (recomputation not included: simulate adds it). A malformed scenario or flag gives
// exit 2.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/scenario/cluster_config.hpp"
#include "edgc/scenario/config.hpp"
#include "edgc/scenario/model_config.hpp"
#include "edgc/sim/kernel_model.hpp"
#include "edgc/sim/layout.hpp"
#include "harness.hpp"

namespace {

std::string shape_text(const edgc::sim::LayerKernel& k) {
  char text[96];
  if (k.gemm.batch > 0.0)
    std::snprintf(text, sizeof text, "%.0f x %.0fx%.0fx%.0f", k.gemm.batch, k.gemm.m, k.gemm.n, k.gemm.k);
  else
    std::snprintf(text, sizeof text, "%.0f x %.0f", k.elements / k.row, k.row);
  return text;
}

int run(int argc, char** argv) {
  std::string scenario_file;
  std::string json_out = "edgc_bench_layer_kernels.json";
  edgc::bench::Args args("--scenario FILE [--json FILE]");
  args.text("--scenario", scenario_file).json_path("--json", json_out);
  if (const auto code = args.parse(argc, argv)) return *code;
  if (scenario_file.empty()) throw edgc::UsageError("--scenario", "required: the scenario whose layer to list");

  edgc::scenario::Scenario sc = edgc::scenario::load_scenario(scenario_file, {});
  const edgc::sim::ClusterSpec cluster = edgc::scenario::read_cluster(sc);
  const edgc::scenario::ModelConfig mc = edgc::scenario::read_model_config(sc, cluster.gpu);
  const edgc::sim::ParallelSpec p = edgc::sim::validate(mc.model, mc.parallel, cluster, sc.where());
  if (!cluster.gpu.has_kernel_model())
    throw edgc::ConfigError(sc.where(), "cluster.gpu.matmul_tflops",
                            "the kernel-level compute model needs the GPU's measured GEMM figures (cluster.gpu."
                            "sm_count, matmul_tflops, matmul_m/n/k, kernel_overhead_us; scenarios/SOURCES.md §19)");
  const std::vector<edgc::sim::LayerKernel> kernels = edgc::sim::layer_kernels(mc.model, p, cluster.gpu, mc.cost);

  std::printf("edgc_bench_layer_kernels: %s, one layer of %s on one %s (tp %d%s), micro-batch %d, %s\n",
              scenario_file.c_str(), mc.model.name.c_str(), cluster.gpu.name.c_str(), p.tp,
              p.sequence_parallel ? ", sequence parallel" : "", mc.model.micro_batch_size, mc.model.dtype.c_str());
  std::printf("  %-28s %-3s %-26s %-26s %10s %10s %10s %10s\n", "kernel", "", "op", "shape", "MB", "GFLOP", "pred_us",
              "rate");
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  double forward_s = 0.0, backward_s = 0.0;
  for (const edgc::sim::LayerKernel& k : kernels) {
    (k.backward ? backward_s : forward_s) += k.seconds;
    const bool gemm = k.gemm.batch > 0.0;
    const double rate = gemm ? k.flops / k.seconds / 1e12 : k.bytes / k.seconds / 1e9;
    std::printf("  %-28s %-3s %-26s %-26s %10.2f %10.2f %10.1f %7.1f %s\n", k.name, k.backward ? "bwd" : "fwd", k.op,
                shape_text(k).c_str(), k.bytes / 1e6, k.flops / 1e9, k.seconds * 1e6, rate, gemm ? "TF/s" : "GB/s");
    nlohmann::ordered_json row = {{"name", k.name},
                                  {"op", k.op},
                                  {"pass", k.backward ? "backward" : "forward"},
                                  {"attention_core", k.attention_core}};
    if (gemm)
      row["gemm"] = {{"batch", k.gemm.batch}, {"m", k.gemm.m}, {"n", k.gemm.n}, {"k", k.gemm.k}};
    else
      row["elements"] = {{"count", k.elements}, {"row", k.row}};
    row["bytes"] = k.bytes;
    row["flops"] = k.flops;
    row["predicted_s"] = k.seconds;
    rows.push_back(row);
  }
  std::printf("\n  forward %.3f ms, backward %.3f ms (recomputation not included), %zu kernels\n", forward_s * 1e3,
              backward_s * 1e3, kernels.size());
  edgc::bench::write_json(json_out, {{"schema", "edgc.layer_kernels/1"},
                                     {"scenario", scenario_file},
                                     {"gpu", cluster.gpu.name},
                                     {"dtype", mc.model.dtype},
                                     {"micro_batch_size", mc.model.micro_batch_size},
                                     {"seq_len", mc.model.seq_len},
                                     {"hidden", mc.model.hidden},
                                     {"heads", mc.model.heads},
                                     {"tp", p.tp},
                                     {"sequence_parallel", p.sequence_parallel},
                                     {"hbm_efficiency", mc.cost.hbm_efficiency},
                                     {"forward_s", forward_s},
                                     {"backward_s", backward_s},
                                     {"kernels", rows}});
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return edgc::bench::run_main("edgc_bench_layer_kernels", [&] { return run(argc, argv); });
}
