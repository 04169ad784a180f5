#pragma once
// What cluster.json says about the machine a rank runs on: the rates it reaches (timed here, on this rank) and
// the CPU's name.
#include <string>

#include "edgc/kernels/backend.hpp"

namespace edgc::live {

struct Rates {
  double gemm_flops = 0.0;  // achieved fp32 GEMM rate of the backend
  double copy_Bps = 0.0;    // memory copy, bytes read + written per second
};

/// Times a 384^3 GEMM on `backend` and a 32 MiB copy in its memory (host, or device to device), best of 5 each.
Rates measure_rates(kernels::Backend& backend);

/// The "model name" of /proc/cpuinfo, or "cpu" when there is none.
std::string cpu_model_name();

}  // namespace edgc::live
