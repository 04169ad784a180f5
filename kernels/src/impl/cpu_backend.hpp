#pragma once
// The CPU backend's factory, private to the library; make_backend() is the public way in.
#include <memory>
#include <string>
#include <string_view>

#include "edgc/kernels/backend.hpp"

namespace edgc::kernels::impl {

/// "cpu", "cpu-generic", "cpu-avx2" or "cpu-avx512" (see make_backend). Throws ConfigError when a SIMD variant is
/// asked for and this build or CPU lacks it.
std::unique_ptr<Backend> make_cpu_backend(std::string_view name, const BackendOptions& options);

/// Why the CPU backend `name` (one of make_cpu_backend's) cannot run here, or "" when it can: a SIMD variant
/// this build leaves out or this CPU does not run.
std::string cpu_variant_unavailable_reason(std::string_view name);

}  // namespace edgc::kernels::impl
