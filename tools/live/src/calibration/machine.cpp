#include "machine.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <vector>

namespace edgc::live {

Rates measure_rates(kernels::Backend& backend) {
  Rates r;
  constexpr std::int64_t n = 384;
  std::vector<float> a(n * n, 1.0F), b(n * n, 0.5F), c(n * n, 0.0F);
  const float* pa = a.data();
  const float* pb = b.data();
  float* pc = c.data();
  std::vector<double> t;
  for (int rep = 0; rep < 5; ++rep) {
    const double t0 = MPI_Wtime();
    backend.gemm_batched(kernels::Transpose::kNo, kernels::Transpose::kNo, n, n, n, 1.0F, {&pa, 1}, {&pb, 1}, 0.0F,
                         {&pc, 1});
    t.push_back(MPI_Wtime() - t0);
  }
  r.gemm_flops = 2.0 * n * n * n / std::max(1e-9, *std::min_element(t.begin(), t.end()));
  const std::size_t floats = std::size_t{8} << 20;  // 32 MiB
  std::vector<float> src(floats, 1.0F), dst(floats, 0.0F);
  t.clear();
  for (int rep = 0; rep < 5; ++rep) {
    const double t0 = MPI_Wtime();
    std::memcpy(dst.data(), src.data(), floats * sizeof(float));
    t.push_back(MPI_Wtime() - t0);
    src[static_cast<std::size_t>(rep)] = dst[floats - 1 - static_cast<std::size_t>(rep)];  // keep the copy alive
  }
  r.copy_Bps =
      2.0 * static_cast<double>(floats * sizeof(float)) / std::max(1e-9, *std::min_element(t.begin(), t.end()));
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
