// Fuzz target: a plan's plan.json (read_plan_document), as `plan --resume` and `report` read it.
#include <cstddef>
#include <cstdint>

#include "edgc/results/plan_document.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const edgc::fuzz::Sandbox box({});
  const auto path = box.write("plan.json", data, size);
  edgc::fuzz::expect_typed([&] { (void)edgc::results::read_plan_document(path); });
  return 0;
}
