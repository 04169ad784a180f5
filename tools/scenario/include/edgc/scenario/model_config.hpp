#pragma once
// Scenario sections `model`, `parallelism` and `compute` read into the typed specs of edgc::sim.
//
// Keys (units in names; defaults in brackets):
//   model.{name [""], layers, hidden, heads, seq_len, vocab,
//          micro_batch_size, global_batch_size (sequences), dtype ["fp16"],
//          recompute ["none" | "selective" | "full"], activation_recompute [false; older spelling of full]}
//          — shape and batch keys have no default: a missing one is read as 0 and rejected by sim::validate.
//   parallelism.{tp [1], pp [1], dp [1], microbatches [0 = global_batch / (micro_batch·dp)],
//                schedule ["1f1b"; "gpipe" | "1f1b" | "interleaved"], virtual_stages [1],
//                order ["tp-dp-pp" (Megatron default) | "tp-pp-dp" (Megatron --use-tp-pp-dp-mapping)],
//                sequence_parallel [false], distributed_optimizer [false], overlap_grad_reduce [false],
//                grad_bucket_params [0 = max(4e7, 1e6·dp)], grad_reduce_dtype [fp32 for bf16, else model.dtype],
//                embedding_allreduce [true], scatter_gather_p2p [true],
//                grad_accumulation_fusion [true], async_tp_allreduce [true]} (see sim::ParallelSpec)
//   framework [not set] (top level; the defaults below are its own, see Framework)
//   model.{attention ["materialised"; "flash" under megatron-core-2024], precision [model.dtype | "fp8"]}
//   parallelism.{overlap_param_gather [false; true under megatron-core-2024 with the distributed optimizer],
//                tp_comm_overlap [false; true under megatron-core-2024 with sequence parallelism]}
//   compute.{model ["auto": kernels when the GPU has measured GEMM figures and compute.efficiency is not set,
//            else efficiency], efficiency [0.4], hbm_efficiency [0.85], orth_column_latency_us [0],
//            optimizer_step_ms [modelled], kernel_profile} (see sim::CostParams)
//
// A scenario may keep the model in a shared file: `"model": "../models/x.json"` takes the whole section from that
// file, and `"model": {"include": "../models/x.json", "micro_batch_size": 4}` takes it from the file with the
// local keys on top. Paths are relative to the scenario file. A model file is itself a scenario whose only section
// is "model", plus free-text top-level keys ("description") that no reader looks at — the same shape as a
// cluster file.
#include "edgc/scenario/config.hpp"
#include "edgc/sim/cost_model.hpp"
#include "edgc/sim/spec.hpp"

namespace edgc::scenario {

/// The top-level key `framework`: which training stack the scenario assumes, as the defaults it sets for the
/// individual keys (a scenario may still give any of them). Empty = not set: the keys' own defaults (Megatron-LM
/// of 2022 with gradient-accumulation fusion). scenarios/README.md, "Framework", tables the defaults.
///   megatron-lm-2021   Narayanan et al. 2021: no gradient-accumulation fusion, no asynchronous TP all-reduce;
///   megatron-lm-2022   Korthikanti et al. 2022: no gradient-accumulation fusion;
///   megatron-core-2024 Megatron-Core with Transformer Engine: flash attention, sequence parallelism (tp > 1), the
///                      distributed optimizer with overlapped gradient reduce-scatter and parameter all-gather, TP
///                      communication overlap (with sequence parallelism).
struct Framework {
  std::string name;
  bool megatron_core = false;
  bool flash = false;
  bool grad_accumulation_fusion = true;
  bool async_tp_allreduce = true;
};

/// Reads `framework` (ConfigError naming it for an unknown name).
Framework read_framework(Scenario& scenario);

struct ModelConfig {
  Framework framework;
  sim::ModelSpec model;
  sim::ParallelSpec parallel;
  sim::CostParams cost;
};

/// Reads the three sections (after Scenario::splice_include("model"), which load_scenario does). Throws ConfigError for
/// a wrongly typed or out-of-range value, an unknown schedule or dtype, a non-positive efficiency, and for any unknown
/// key under `model` or `parallelism`. Layout rules that need the cluster (divisibility, GPU count) are left to
/// sim::validate.
/// `gpu` decides compute.model = auto (the kernel model needs GpuSpec::has_kernel_model()).
ModelConfig read_model_config(Scenario& scenario, const sim::GpuSpec& gpu);

/// A kernel profile's contents: PowerSGD steps, and (profiles `edgc live` writes) its dense buffer's copies.
struct KernelProfile {
  std::vector<sim::KernelTime> entries;
  std::vector<sim::CopyTime> copies;
};

/// A kernel profile written by edgc_bench_powersgd_cuda or `edgc live` (schema edgc.kernel_profile/1): its entries
/// with m, n, r, step_s and an optional count (matrices in the measured batch, default 1; entries marked "ok": false
/// are skipped), and the optional `copies`, each {bytes, step_s} with bytes strictly increasing. Throws ConfigError
/// naming the file and the entry's field. Read by the scenario key compute.kernel_profile (a path relative to the
/// scenario).
KernelProfile read_kernel_profile(const std::string& path);

}  // namespace edgc::scenario
