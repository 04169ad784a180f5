// Fuzz target: a trace manifest (trace.json) through `edgc replay` end to end, not only through its reader: the
// options read as the command reads them (no scenario, a few --set), then run_replay (the stage map, the matrix
// layout, r_max lowered to the trace, the controller, the emulated data-parallel ranks' PowerSGD) and the report
// built from its windows. The scratch folder holds the bundled trace's iteration files, so that a manifest naming
// them is replayed on real gradients. A crafted manifest that the reader accepts but replay cannot hold (a stage that
// wraps when narrowed, a shape whose element count overflows) must be refused there with a typed error, never crash.
// The run is bounded so that one input takes milliseconds: two emulated ranks, the first four captured iterations,
// no full-sampling shadow controller.
#include <cstddef>
#include <cstdint>
#include <utility>

#include "edgc/engine/replay.hpp"
#include "edgc/traces/manifest.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const edgc::fuzz::Sandbox box({"traces/bundled/tinygpt-licenses"});
  box.write(edgc::traces::kManifestFileName, data, size);
  edgc::fuzz::expect_typed([&] {
    edgc::engine::ReplayRequest request;
    request.trace = box.home().string();
    // A window of 4 training iterations and a fixed warm-up of 2: the bundled trace captures every second one, so
    // windows close and compressed ones run within the four iterations replayed.
    request.sets = {"replay.world_size=2", "replay.compare_full=false", "compression.window=4",
                    "compression.warmup.mode=\"fixed\"", "compression.warmup.fixed_iters=2"};
    edgc::engine::ReplayOptions options = edgc::engine::read_replay_options(request);
    options.max_iterations = 4;
    edgc::engine::ReplayResult result = edgc::engine::run_replay(options);
    (void)edgc::engine::replay_report(options, std::move(result));
  });
  return 0;
}
