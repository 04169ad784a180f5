#include "edgc/kernels/backend.hpp"

#include <string>

#include "edgc/core/error.hpp"
#include "impl/cpu_backend.hpp"
#if EDGC_KERNELS_HAVE_CUDA
#include "cuda/cuda_backend.hpp"
#endif

namespace edgc::kernels {

std::unique_ptr<Backend> make_backend(std::string_view name, const BackendOptions& options) {
  if (options.threads < 1)
    throw ConfigError("", "threads", "must be at least 1, got " + std::to_string(options.threads));
  // Registered explicitly: self-registering factories get dropped from static libraries.
  if (name == "cpu" || name == "cpu-generic" || name == "cpu-avx2") return impl::make_cpu_backend(name, options);
#if EDGC_KERNELS_HAVE_CUDA
  if (name == "cuda") return impl::make_cuda_backend(options);
  constexpr const char* kKnown = "cpu, cpu-generic, cpu-avx2, cuda";
#else
  constexpr const char* kKnown = "cpu, cpu-generic, cpu-avx2 (this build has no CUDA)";
#endif
  throw ConfigError("", "backend", "unknown backend '" + std::string(name) + "' (known: " + kKnown + ")");
}

}  // namespace edgc::kernels
