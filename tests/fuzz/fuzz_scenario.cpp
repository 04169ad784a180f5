// Fuzz target: a scenario file read the way `simulate` reads one before any simulation: load_scenario (the
// cluster and model includes, followed through nested includes), the cluster, network, model, parallelism and
// compression sections, the layout check and the unknown-key check. The input is written next to links to every
// bundled scenario, cluster and model file and to a few include files made for the fuzzer (nested, cyclic, a
// folder, not an object), so that includes reach real files.
#include <cstddef>
#include <cstdint>

#include "edgc/scenario/cluster_config.hpp"
#include "edgc/scenario/compression_config.hpp"
#include "edgc/scenario/config.hpp"
#include "edgc/scenario/model_config.hpp"
#include "edgc/sim/layout.hpp"
#include "fuzz_util.hpp"

namespace {

const edgc::fuzz::Sandbox& sandbox() {
  static const edgc::fuzz::Sandbox box({"scenarios/paper", "scenarios/replay", "scenarios/live",
                                        "scenarios/validation/narayanan2021", "tests/data/simulate", "tests/data/plan",
                                        "tests/data/live"});
  static const bool includes_written = [] {
    box.write("nested-cluster.json", R"({"cluster": {"include": "../clusters/dgx-h100.json", "nodes": 2}})");
    box.write("nested-model.json", R"({"model": {"include": "../models/gpt2-2.5b.json", "layers": 4}})");
    box.write("cycle.json", R"({"cluster": "cycle.json", "model": {"include": "cycle.json"}})");
    box.write("not-object.json", "[1, 2]");
    box.write("empty.json", "");
    box.write("calibration.json", R"({"schema": "edgc.calibration/1",
        "intra": {"points": [[1, 0.5], [1048576, 0.9]], "latency_factor": 1.5},
        "inter": {"points": [[1, 0.4]], "latency_factor": 2}})");
    box.write("kernel-profile.json", R"({"schema": "edgc.kernel_profile/1", "device": "x", "entries": [
        {"m": 1920, "n": 5760, "r": 4, "step_s": 0.001, "ok": true}]})");
    std::filesystem::create_directory(box.home() / "folder.json");
    return true;
  }();
  (void)includes_written;
  return box;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const edgc::fuzz::Sandbox& box = sandbox();
  const std::string path = box.write("scenario.json", data, size).string();
  edgc::fuzz::expect_typed([&] {
    using namespace edgc::scenario;
    Scenario sc = load_scenario(path, {});
    const edgc::sim::ClusterSpec cluster = read_cluster(sc);
    read_network(sc);
    const ModelConfig mc = read_model_config(sc, cluster.gpu);
    edgc::sim::validate(mc.model, mc.parallel, cluster, sc.where());
    read_compression(sc);
    read_gpu_memory_GiB(sc);
    sc.reject_unknown({"cluster", "network", "model", "parallelism", "compute", "compression"});
  });
  return 0;
}
