// Fuzz target: a simulate result.json (read_result_document), as `edgc report` and the sweep read one.
#include <cstddef>
#include <cstdint>

#include "edgc/results/result_document.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const edgc::fuzz::Sandbox box({});
  const auto path = box.write("result.json", data, size);
  edgc::fuzz::expect_typed([&] { (void)edgc::results::read_result_document(path); });
  return 0;
}
