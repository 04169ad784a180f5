#pragma once
// The CUDA backend's factory, private to the library; make_backend("cuda") is the public way in.
#include <memory>
#include <string>

#include "edgc/kernels/backend.hpp"

namespace edgc::kernels::impl {

/// Creates the CUDA backend on GPU `options.device` with a stream, a cuBLAS handle and workspace of its own.
/// Throws ConfigError when no CUDA device can be used (no GPU, no driver, an ordinal out of range).
std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options);

/// Empty when a CUDA device can be used, else why not ("no usable CUDA device (cudaErrorNoDevice: …)"). Creates no
/// context.
std::string cuda_unavailable_reason();

}  // namespace edgc::kernels::impl
