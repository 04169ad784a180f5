// Fuzz target: a sweep spec (read_sweep_spec), then its points expanded as `edgc sweep` does when the spec is
// within the default --max-points. The spec is written next to links to the bundled sweep specs' folders, so that
// "base" reaches real scenarios.
#include <cstddef>
#include <cstdint>

#include "edgc/engine/sweep.hpp"
#include "edgc/scenario/sweep_spec.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const edgc::fuzz::Sandbox box({"scenarios/sweeps", "tests/data/sweep"});
  const std::string path = box.write("spec.json", data, size).string();
  edgc::fuzz::expect_typed([&] {
    const edgc::scenario::SweepSpec spec = edgc::scenario::read_sweep_spec(path);
    if (edgc::scenario::point_count(spec) <= edgc::engine::SweepOptions().max_points)
      (void)edgc::scenario::expand_points(spec);
  });
  return 0;
}
