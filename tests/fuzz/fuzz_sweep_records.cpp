// Fuzz target: a sweep's results.jsonl (read_sweep_records), as `sweep --resume`, `plan` and `report` read it.
#include <cstddef>
#include <cstdint>

#include "edgc/results/sweep_document.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const edgc::fuzz::Sandbox box({});
  const auto path = box.write("results.jsonl", data, size);
  edgc::fuzz::expect_typed([&] {
    bool truncated = false;
    (void)edgc::results::read_sweep_records(path, &truncated);
  });
  return 0;
}
