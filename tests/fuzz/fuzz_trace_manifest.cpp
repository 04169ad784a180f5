// Fuzz target: the trace manifest (trace.json) through TraceReader, which reads and validates it and checks that
// the iteration files exist; the first iteration is then read against it. The scratch folder holds the bundled
// trace's iteration files, so that a manifest naming them reaches the safetensors reader with its own shapes,
// dtypes and block lists.
#include <cstddef>
#include <cstdint>

#include "edgc/traces/reader.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const edgc::fuzz::Sandbox box({"traces/bundled/tinygpt-licenses"});
  box.write(edgc::traces::kManifestFileName, data, size);
  edgc::fuzz::expect_typed([&] {
    edgc::traces::TraceReader reader(box.home());
    edgc::traces::IterationData it;
    reader.read(0, it);
  });
  return 0;
}
