#pragma once
// PowerSGD's skip rule, the one copy the kernels (PowerSgd, BoundaryCompressor) and the simulator's cost model
// share. Compressing a rows×cols matrix at rank r sends its factors P (rows×r) and Q (cols×r) instead: worth it
// only when they are enough smaller than the matrix. PyTorch's powerSGD_hook (min_compression_rate, default 2)
// sends a matrix compressed only when (rows + cols)·r·min_compression_rate < rows·cols; at 2, when compression at
// least halves its bytes. Every other matrix travels whole, with the uncompressed tensors.
#include <cstdint>

namespace edgc::core {

/// PowerSGD's default min_compression_rate (PyTorch's): the factors must be under half the matrix.
inline constexpr double kPowerSgdMinCompressionRate = 2.0;

/// Whether a rows×cols matrix is sent compressed at `rank`: (rows + cols)·rank·min_compression_rate < rows·cols.
/// The formula alone: callers that allow rank 0 check it first (rank 0 means uncompressed). Evaluated in double,
/// exact while the products stay below 2^53.
inline bool powersgd_compresses(std::int64_t rows, std::int64_t cols, int rank,
                                double min_compression_rate = kPowerSgdMinCompressionRate) noexcept {
  const auto m = static_cast<double>(rows);
  const auto n = static_cast<double>(cols);
  return (m + n) * rank * min_compression_rate < m * n;
}

}  // namespace edgc::core
