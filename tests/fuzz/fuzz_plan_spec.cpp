// Fuzz target: a plan spec (read_plan_spec: the base, the target, the cluster files it names, GPU counts and
// layouts expanded into options). The spec is written next to links to the bundled plan specs and their clusters.
#include <cstddef>
#include <cstdint>

#include "edgc/scenario/plan_spec.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const edgc::fuzz::Sandbox box({"scenarios/plans", "tests/data/plan"});
  const std::string path = box.write("plan-spec.json", data, size).string();
  edgc::fuzz::expect_typed([&] { (void)edgc::scenario::read_plan_spec(path); });
  return 0;
}
