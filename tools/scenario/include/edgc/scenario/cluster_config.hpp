#pragma once
// The `cluster` and `network` sections of a scenario, read into the typed specs of edgc::sim.
//
// A scenario either holds the cluster inline ("cluster": {...}) or names a shared cluster file
// ("cluster": "clusters/dgx-h100.json", relative to the scenario's folder). A cluster file is itself a scenario
// whose only section is "cluster", plus the free-text top-level keys "description" and "sources" that no reader
// looks at. Keys (units in the names; all under "cluster."):
//   name, gpus_per_node, nodes, price_per_gpu_hour_usd,
//   gpu.{name, peak_tflops, hbm_GBps, memory_GiB (capacity per GPU; absent = memory not checked),
//        sm_count, matmul_tflops, matmul_m, matmul_n, matmul_k, kernel_overhead_us (measured GEMM figures of the
//        kernel-level compute model, sim/kernel_model.hpp; all or none)},
//   intra_node.{topology: "switch" | "dgx1-cube-mesh", bandwidth_GBps (per GPU link, or per NVLink lane on the
//               cube-mesh), latency_us (per GPU-to-GPU hop)},
//   inter_node.{nics_per_node, nic_bandwidth_GBps, latency_us (NIC to NIC), fabric: "star" | "fat-tree",
//               nodes_per_leaf, oversubscription}.
// Network: network.profile = "ideal" | "calibrated"; network.calibration = efficiency file written by
// `edgc calibrate` (relative to the scenario's folder), required for "calibrated".
#include <optional>
#include <string>
#include <vector>

#include "edgc/scenario/config.hpp"
#include "edgc/sim/spec.hpp"

namespace edgc::scenario {

/// Reads and validates the cluster section; throws ConfigError naming the scenario and the dotted key.
sim::ClusterSpec read_cluster(Scenario& scenario);

/// cluster.gpu.memory_GiB: one GPU's memory capacity in GiB (2^30 bytes), or nullopt when the cluster does not give
/// it (simulate then reports memory without checking it). Throws ConfigError naming the key when it is not a
/// positive number. read_cluster() checks it too, so every command accepts the key.
std::optional<double> read_gpu_memory_GiB(Scenario& scenario);

/// Reads the network section; `profile_override` (e.g. from --network) wins over network.profile when not empty.
/// Calibration paths are relative to the folder of `scenario.where()`.
sim::NetworkProfile read_network(Scenario& scenario, const std::string& profile_override = "");

/// Reads an efficiency file: {"schema": "edgc.calibration/1", "intra": CURVE, "inter": CURVE} with
/// CURVE = {"points": [[bytes, efficiency], ...] (increasing bytes, efficiency in (0, 1]), "latency_factor": x > 0}.
/// Throws ConfigError naming the file and key.
sim::NetworkProfile load_calibration(const std::string& path);

}  // namespace edgc::scenario
