// Fuzz target: a sweep's sweep.json (read_sweep_document), as `sweep --resume` and `report` read it.
#include <cstddef>
#include <cstdint>

#include "edgc/results/sweep_document.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const edgc::fuzz::Sandbox box({});
  const auto path = box.write("sweep.json", data, size);
  edgc::fuzz::expect_typed([&] { (void)edgc::results::read_sweep_document(path); });
  return 0;
}
