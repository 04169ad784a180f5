#pragma once
// Argument checks every Backend runs before its kernels (backend.hpp: a violated precondition is a caller bug and
// throws edgc::InternalError), shared by the CPU and the CUDA backends so both reject the same calls alike.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "edgc/core/block_sampling.hpp"
#include "edgc/core/error.hpp"

namespace edgc::kernels::impl {

inline void check_batch(const char* what, std::size_t expected, std::size_t got, const char* span_name) {
  if (got != expected)
    throw InternalError(std::string(what) + ": " + span_name + " has " + std::to_string(got) + " entries, the batch " +
                        std::to_string(expected));
}

inline void check_dims(const char* what, std::int64_t a, std::int64_t b, std::int64_t c) {
  if (a < 0 || b < 0 || c < 0)
    throw InternalError(std::string(what) + ": negative dimension (" + std::to_string(a) + ", " + std::to_string(b) +
                        ", " + std::to_string(c) + ")");
}

template <class T>
void check_pointers(const char* what, std::span<T* const> ptrs, const char* span_name) {
  for (std::size_t i = 0; i < ptrs.size(); ++i)
    if (ptrs[i] == nullptr)
      throw InternalError(std::string(what) + ": " + span_name + "[" + std::to_string(i) + "] is null");
}

/// Every block lies inside the `size` sampled values (moments, histogram).
inline void check_blocks(const char* what, std::size_t size, std::span<const Block> blocks) {
  const auto n = static_cast<std::int64_t>(size);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const Block& b = blocks[i];
    if (b.offset < 0 || b.length < 0 || b.offset > n || b.length > n - b.offset)
      throw InternalError(std::string(what) + ": block " + std::to_string(i) + " (offset " + std::to_string(b.offset) +
                          ", length " + std::to_string(b.length) + ") lies outside the " + std::to_string(n) +
                          " values");
  }
}

/// histogram, moments_and_histogram: a finite `lo` and a finite bin_width > 0.
inline void check_histogram_layout(double lo, double bin_width) {
  if (!(bin_width > 0.0) || !std::isfinite(bin_width) || !std::isfinite(lo))
    throw InternalError("histogram: need finite lo and bin_width > 0, got lo " + std::to_string(lo) + ", bin_width " +
                        std::to_string(bin_width));
}

/// moments_and_histogram_batched: one moments entry and one tails entry per tensor, `bins` ≥ 0 counts per tensor, and
/// check_histogram_layout's layout. (moments_batched checks its one span with check_batch.)
inline void check_histogram_batch(const char* what, std::size_t tensors, std::size_t moments, std::int64_t bins,
                                  std::size_t counts, std::size_t tails, double lo, double bin_width) {
  check_batch(what, tensors, moments, "moments");
  if (bins < 0) throw InternalError(std::string(what) + ": negative bin count " + std::to_string(bins));
  check_batch(what, tensors, tails, "tails");
  if (counts != tensors * static_cast<std::size_t>(bins))
    throw InternalError(std::string(what) + ": counts has " + std::to_string(counts) + " entries, " +
                        std::to_string(tensors) + " tensors of " + std::to_string(bins) + " bins need " +
                        std::to_string(tensors * static_cast<std::size_t>(bins)));
  check_histogram_layout(lo, bin_width);
}

/// orthogonalize_batched: rows ≥ cols ≥ 1, a finite eps ≥ 0, no null matrix.
inline void check_orthogonalize_args(std::int64_t rows, std::int64_t cols, std::span<float* const> p, float eps) {
  if (cols < 1 || rows < cols)
    throw InternalError("orthogonalize_batched: need rows >= cols >= 1, got " + std::to_string(rows) + "x" +
                        std::to_string(cols));
  if (!(eps >= 0.0F) || !std::isfinite(eps))
    throw InternalError("orthogonalize_batched: eps must be finite and >= 0, got " + std::to_string(eps));
  check_pointers("orthogonalize_batched", p, "p");
}

/// gemm_batched: sizes ≥ 0, a and b as long as c, no null matrix.
inline void check_gemm_args(std::int64_t m, std::int64_t n, std::int64_t k, std::span<const float* const> a,
                            std::span<const float* const> b, std::span<float* const> c) {
  check_dims("gemm_batched", m, n, k);
  check_batch("gemm_batched", c.size(), a.size(), "a");
  check_batch("gemm_batched", c.size(), b.size(), "b");
  check_pointers("gemm_batched", a, "a");
  check_pointers("gemm_batched", b, "b");
  check_pointers("gemm_batched", c, "c");
}

/// project_batched (G float32 or bf16): sizes ≥ 0; q, p, m_sqnorm (and e when given) as long as g; no null matrix.
template <class G>
void check_project_args(std::int64_t m, std::int64_t n, std::int64_t r, std::span<const G* const> g,
                        std::span<float* const> e, std::span<const float* const> q, std::span<float* const> p,
                        std::span<double> m_sqnorm) {
  check_dims("project_batched", m, n, r);
  check_batch("project_batched", g.size(), q.size(), "q");
  check_batch("project_batched", g.size(), p.size(), "p");
  check_batch("project_batched", g.size(), m_sqnorm.size(), "m_sqnorm");
  if (!e.empty()) check_batch("project_batched", g.size(), e.size(), "e");
  check_pointers("project_batched", g, "g");
  check_pointers("project_batched", e, "e");
  check_pointers("project_batched", q, "q");
  check_pointers("project_batched", p, "p");
}

/// reconstruct_batched (G float32 or bf16): sizes ≥ 0; p, q, err_sqnorm (and e when given) as long as g; no null
/// matrix.
template <class G>
void check_reconstruct_args(std::int64_t m, std::int64_t n, std::int64_t r, std::span<const float* const> p,
                            std::span<const float* const> q, std::span<float* const> e, std::span<G* const> g,
                            std::span<double> err_sqnorm) {
  check_dims("reconstruct_batched", m, n, r);
  check_batch("reconstruct_batched", g.size(), p.size(), "p");
  check_batch("reconstruct_batched", g.size(), q.size(), "q");
  check_batch("reconstruct_batched", g.size(), err_sqnorm.size(), "err_sqnorm");
  if (!e.empty()) check_batch("reconstruct_batched", g.size(), e.size(), "e");
  check_pointers("reconstruct_batched", p, "p");
  check_pointers("reconstruct_batched", q, "q");
  check_pointers("reconstruct_batched", e, "e");
  check_pointers("reconstruct_batched", g, "g");
}

/// The bf16 overloads need float32 error-feedback storage for M (backend.hpp).
inline void check_bf16_feedback(const char* what, std::size_t batch, std::size_t e_size) {
  if (batch > 0 && e_size == 0)
    throw InternalError(std::string(what) + ": bf16 gradients need float32 error-feedback buffers `e` for M");
}

/// add_divide: n ≥ 0, a finite non-zero divisor, no null pointer where elements are read or written.
inline void check_add_divide_args(std::int64_t n, const void* a, const void* out, float divisor) {
  if (n < 0) throw InternalError("add_divide: negative length " + std::to_string(n));
  if (!(divisor != 0.0F) || !std::isfinite(divisor))
    throw InternalError("add_divide: divisor must be finite and non-zero, got " + std::to_string(divisor));
  if (n > 0 && (a == nullptr || out == nullptr)) throw InternalError("add_divide: null a or out");
}

}  // namespace edgc::kernels::impl
