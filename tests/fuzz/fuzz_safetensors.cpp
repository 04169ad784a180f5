// Fuzz target: one iteration file (safetensors) read by TraceReader against the bundled trace's manifest, cut to
// that one iteration: the header (length, JSON, dtypes, shapes, offsets, overlaps), the entries against the
// manifest, sampled blocks and the f32/bf16 conversion. Also the plain header scan against the strict JSON parser
// on the same header text (parse_safetensors_header): the same entries or the same error, or the target aborts.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>

#include "edgc/traces/manifest.hpp"
#include "edgc/traces/reader.hpp"
#include "edgc/traces/safetensors.hpp"
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

// What one header reader makes of `text`: the entries, or the error's text.
std::string header_outcome(std::string_view text, std::uint64_t file_size, edgc::traces::HeaderReader how) {
  try {
    std::string out;
    for (const edgc::traces::SafetensorsEntry& e :
         edgc::traces::parse_safetensors_header(text, file_size, kIterationFile, how).entries)
      out += e.name + " " + edgc::traces::shape_to_string(e.shape) + " " + std::to_string(e.begin) + "-" +
             std::to_string(e.end) + " " + std::to_string(static_cast<int>(e.dtype)) + ";";
    return out;
  } catch (const std::exception& e) {
    return std::string("error: ") + e.what();
  }
}

void expect_scan_is_the_parser(const std::uint8_t* data, std::size_t size) {
  if (size < 8) return;
  std::uint64_t n = 0;
  std::memcpy(&n, data, 8);
  if (n > size - 8 || n > 1000000) return;
  const std::string_view text(reinterpret_cast<const char*>(data) + 8, static_cast<std::size_t>(n));
  if (header_outcome(text, size, edgc::traces::HeaderReader::kAny) !=
      header_outcome(text, size, edgc::traces::HeaderReader::kStrict))
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  expect_scan_is_the_parser(data, size);
  edgc::traces::TraceReader& r = reader();
  std::ofstream(r.dir() / kIterationFile, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  edgc::fuzz::expect_typed([&] {
    edgc::traces::IterationData it;
    r.read(0, it);
  });
  return 0;
}
