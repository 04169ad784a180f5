#include "edgc/kernels/backend.hpp"

#include <string>

#include "edgc/core/error.hpp"
#include "impl/backend_checks.hpp"
#include "impl/cpu_backend.hpp"
namespace edgc::kernels {

namespace {
// Every tensor's blocks lie inside it: checked for all before any is read, so a bad call writes nothing.
void check_selections(const char* what, std::span<const SampledTensor> tensors) {
  for (const SampledTensor& t : tensors) impl::check_blocks(what, t.values.size(), t.blocks);
}
}  // namespace

// The batched statistics of a backend that reads each tensor on its own: the single calls, one per tensor.
void Backend::moments_batched(std::span<const SampledTensor> tensors, std::span<MomentSums> out) const {
  impl::check_batch("moments_batched", tensors.size(), out.size(), "out");
  check_selections("moments_batched", tensors);
  for (std::size_t i = 0; i < tensors.size(); ++i) out[i] = moments(tensors[i].values, tensors[i].blocks);
}

void Backend::moments_and_histogram_batched(std::span<const SampledTensor> tensors, double lo, double bin_width,
                                            std::int64_t bins, std::span<MomentSums> moments,
                                            std::span<std::int64_t> counts, std::span<HistogramTails> tails) const {
  impl::check_histogram_batch("moments_and_histogram_batched", tensors.size(), moments.size(), bins, counts.size(),
                              tails.size(), lo, bin_width);
  check_selections("moments_and_histogram_batched", tensors);
  const auto row = static_cast<std::size_t>(bins);
  for (std::size_t i = 0; i < tensors.size(); ++i)
    moments[i] = moments_and_histogram(tensors[i].values, tensors[i].blocks, lo, bin_width,
                                       counts.subspan(i * row, row), tails[i]);
}

#if EDGC_KERNELS_HAVE_CUDA
namespace impl {
// Defined in edgc::kernels_cuda (cuda/cuda_backend.cu). Weak: a program that does not link that library (the
// edgc CLI) resolves it to null and so never loads cudart and cuBLAS, which would add ~0.1 s to every process
// start and to every fork of a sweep. Programs that want "cuda" link edgc::kernels_cuda whole.
__attribute__((weak)) std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options);
// Empty when a CUDA device is usable, else why not (cuda_backend.cu); weak for the same reason.
__attribute__((weak)) std::string cuda_unavailable_reason();
}  // namespace impl
#endif

namespace {
bool is_cpu_name(std::string_view name) {
  return name == "cpu" || name == "cpu-generic" || name == "cpu-avx2" || name == "cpu-avx512";
}
}  // namespace

std::unique_ptr<Backend> make_backend(std::string_view name, const BackendOptions& options) {
  if (options.threads < 1)
    throw ConfigError("", "threads", "must be at least 1, got " + std::to_string(options.threads));
  if (options.fused_project_max_rank < 0)
    throw ConfigError("", "fused_project_max_rank",
                      "must be at least 0, got " + std::to_string(options.fused_project_max_rank));
  if (options.cholesky_spread_max_rank < 0)
    throw ConfigError("", "cholesky_spread_max_rank",
                      "must be at least 0, got " + std::to_string(options.cholesky_spread_max_rank));
  // Registered explicitly: self-registering factories get dropped from static libraries.
  if (is_cpu_name(name)) return impl::make_cpu_backend(name, options);
#if EDGC_KERNELS_HAVE_CUDA
  if (name == "cuda") {
    if (impl::make_cuda_backend == nullptr)
      throw ConfigError("", "backend", "this program was built without the CUDA backend (link edgc::kernels_cuda)");
    return impl::make_cuda_backend(options);
  }
  constexpr const char* kKnown = "cpu, cpu-generic, cpu-avx2, cpu-avx512, cuda";
#else
  constexpr const char* kKnown = "cpu, cpu-generic, cpu-avx2, cpu-avx512 (this build has no CUDA)";
#endif
  throw ConfigError("", "backend", "unknown backend '" + std::string(name) + "' (known: " + kKnown + ")");
}

std::string backend_unavailable_reason(std::string_view name) {
  if (is_cpu_name(name)) return impl::cpu_variant_unavailable_reason(name);
#if EDGC_KERNELS_HAVE_CUDA
  if (name == "cuda") {
    if (impl::make_cuda_backend == nullptr || impl::cuda_unavailable_reason == nullptr)
      return "this program does not link the CUDA backend (edgc::kernels_cuda)";
    return impl::cuda_unavailable_reason();
  }
#else
  if (name == "cuda") return "this build has no CUDA (no CUDA compiler was found, or EDGC_ENABLE_CUDA=OFF)";
#endif
  return "unknown backend '" + std::string(name) + "'";
}

}  // namespace edgc::kernels
