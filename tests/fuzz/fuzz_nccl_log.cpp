// Fuzz target: an nccl-tests all_reduce_perf log, as `edgc calibrate --nccl-tests` reads it.
#include <cstddef>
#include <cstdint>

#include "edgc/results/nccl_tests_log.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const edgc::fuzz::Sandbox box({});
  const std::string path = box.write("all_reduce_perf.log", data, size).string();
  edgc::fuzz::expect_typed([&] { (void)edgc::results::read_nccl_tests_log(path); });
  return 0;
}
