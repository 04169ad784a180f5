// Fuzz target: a scenario through `edgc simulate` as a whole, not only through its readers: run_simulation reads and
// checks it in full (the entropy source, the policies, the memory fit and every key but the ones read) and, when
// the scenario is small enough to simulate in well under a second, simulates it (every distinct rank vector in a
// child process, as the command does) and builds result.json. Bigger scenarios stop after the same readers
// (fuzz_scenario.cpp's, plus the run length): what the fuzzer looks for there is an input the checks let through
// that the simulation cannot hold, and that needs a simulation it can afford to run thousands of times. Scenarios
// that read a trace (entropy or fidelity from trace.path) stop after the checks too: the trace's reader and replay
// have their own targets.
#include <cstddef>
#include <cstdint>

#include "edgc/engine/simulation.hpp"
#include "edgc/scenario/cluster_config.hpp"
#include "edgc/scenario/config.hpp"
#include "edgc/scenario/model_config.hpp"
#include "edgc/scenario/simulate_config.hpp"
#include "edgc/sim/layout.hpp"
#include "fuzz_util.hpp"

namespace {

// What one simulation of this target may hold: GPUs, transformer layers, micro-batches per iteration, whole-run
// iterations (a run of more only adds windows, each a controller decision and no new simulation).
constexpr std::int64_t kAffordableGpus = 64;
constexpr int kAffordableLayers = 48;
constexpr int kAffordableMicrobatches = 32;
constexpr std::int64_t kAffordableIterations = 200000;

const edgc::fuzz::Sandbox& sandbox() {
  static const edgc::fuzz::Sandbox box(
      {"scenarios/paper", "scenarios/whatif", "tests/data/simulate", "tests/data/plan", "tests/data/sweep"});
  return box;
}

// True when the scenario at `path` reads, is small enough to simulate here and names no trace.
bool affordable(const std::string& path) {
  using namespace edgc::scenario;
  Scenario sc = load_scenario(path, {});
  if (sc.has("trace")) return false;
  const edgc::sim::ClusterSpec cluster = read_cluster(sc);
  const ModelConfig mc = read_model_config(sc, cluster.gpu);
  const edgc::sim::ParallelSpec p = edgc::sim::validate(mc.model, mc.parallel, cluster, sc.where());
  const std::int64_t gpus = std::int64_t{p.tp} * p.pp * p.dp;
  return gpus <= kAffordableGpus && mc.model.layers <= kAffordableLayers && p.microbatches <= kAffordableMicrobatches &&
         read_run_iterations(sc) <= kAffordableIterations;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = sandbox().write("scenario.json", data, size).string();
  edgc::fuzz::expect_typed([&] {
    if (!affordable(path)) return;
    edgc::engine::SimulateRequest request;
    request.scenario = path;
    request.break_even = false;  // a few more simulations per input, of the same code
    (void)edgc::engine::run_simulation(request);
  });
  return 0;
}
