#pragma once
// The CPU backend's factory, private to the library; make_backend() is the public way in.
#include <memory>
#include <string_view>

#include "edgc/kernels/backend.hpp"

namespace edgc::kernels::impl {

/// "cpu", "cpu-generic" or "cpu-avx2" (see make_backend). Throws ConfigError when AVX2 kernels are asked for
/// and this build or CPU lacks them.
std::unique_ptr<Backend> make_cpu_backend(std::string_view name, const BackendOptions& options);

/// Whether the AVX2+FMA kernels are compiled in and the CPU runs them.
bool cpu_avx2_available() noexcept;

}  // namespace edgc::kernels::impl
