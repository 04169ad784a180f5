// Fuzz target: a live run's measurements.json, as `edgc validate` reads it.
#include <cstddef>
#include <cstdint>

#include "edgc/results/measurements.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const edgc::fuzz::Sandbox box({});
  const std::string path = box.write("measurements.json", data, size).string();
  edgc::fuzz::expect_typed([&] { (void)edgc::results::read_measurements(path); });
  return 0;
}
