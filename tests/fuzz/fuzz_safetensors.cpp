// Fuzz target: one iteration file (safetensors) read by TraceReader against the bundled trace's manifest, cut to
// that one iteration: the header (length, JSON, dtypes, shapes, offsets, overlaps), the entries against the
// manifest, sampled blocks and the f32/bf16 conversion.
#include <cstddef>
#include <cstdint>

#include "edgc/traces/manifest.hpp"
#include "edgc/traces/reader.hpp"
#include "fuzz_util.hpp"

namespace {

constexpr const char* kIterationFile = "iteration.safetensors";

// The reader is made once (its manifest read once); read() opens the iteration file afresh on every call.
edgc::traces::TraceReader& reader() {
  static const edgc::fuzz::Sandbox box({});
  static edgc::traces::TraceReader r = [] {
    edgc::traces::Manifest m =
        edgc::traces::read_manifest(std::filesystem::path(EDGC_SOURCE_DIR) / "traces/bundled/tinygpt-licenses");
    m.iterations = {{0, kIterationFile, std::nullopt}};
    box.write(edgc::traces::kManifestFileName, edgc::traces::manifest_to_json(m));
    box.write(kIterationFile, "");
    return edgc::traces::TraceReader(box.home());
  }();
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  edgc::traces::TraceReader& r = reader();
  std::ofstream(r.dir() / kIterationFile, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  edgc::fuzz::expect_typed([&] {
    edgc::traces::IterationData it;
    r.read(0, it);
  });
  return 0;
}
