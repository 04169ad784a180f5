#include "machine.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <vector>

#include "edgc/kernels/buffer.hpp"

namespace edgc::live {

namespace {

// Best of five timings of f; a device backend's queued work is waited for inside each timing.
template <class F>
double best_of_five(kernels::Backend& backend, F&& f) {
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const double t0 = MPI_Wtime();
    f(rep);
    backend.synchronize();
    best = std::min(best, MPI_Wtime() - t0);
  }
  return std::max(1e-9, best);
}

}  // namespace

Rates measure_rates(kernels::Backend& backend) {
  Rates r;
  constexpr std::int64_t n = 384;
  const auto nn = static_cast<std::size_t>(n * n);
  kernels::Buffer<float> a(backend, nn), b(backend, nn), c(backend, nn);
  a.upload(std::vector<float>(nn, 1.0F));
  b.upload(std::vector<float>(nn, 0.5F));
  const float* pa = a.data();
  const float* pb = b.data();
  float* pc = c.data();
  r.gemm_flops = 2.0 * n * n * n / best_of_five(backend, [&](int) {
                   backend.gemm_batched(kernels::Transpose::kNo, kernels::Transpose::kNo, n, n, n, 1.0F, {&pa, 1},
                                        {&pb, 1}, 0.0F, {&pc, 1});
                 });
  // A 32 MiB copy in the backend's memory (host memcpy, or device to device).
  const std::size_t floats = std::size_t{8} << 20;
  kernels::Buffer<float> src(backend, floats), dst(backend, floats);
  src.zero();
  // Through the backend's (virtual) copy: the compiler cannot drop it as it could a memcpy nobody reads.
  const double copy_s = best_of_five(backend, [&](int) { backend.copy(dst.data(), src.data(), src.bytes()); });
  r.copy_Bps = 2.0 * static_cast<double>(floats * sizeof(float)) / copy_s;
  return r;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(colon + 1);
        name.erase(0, name.find_first_not_of(' '));
        return name;
      }
    }
  }
  return "cpu";
}

}  // namespace edgc::live
