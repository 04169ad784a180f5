#pragma once
// The CPU kernels behind CpuBackend, compiled once per instruction set and reached through a table of plain
// function pointers.
//
// Why a table: Eigen is header-only, so its speed is fixed by the flags of the translation unit that
// instantiates it (SSE2 in a portable build; AVX2+FMA triples GEMM throughput, AVX-512 adds 1.3-1.5x where a core
// has two 512-bit FMA units). The same sources are compiled again per instruction set into an object whose every
// symbol except its table accessor is made local (kernels/CMakeLists.txt), so no inline Eigen or standard-library
// code compiled for a wider ISA can be merged into the portable code by the linker. CpuBackend picks a table at
// run time from what the CPU supports. The hand-written small-rank kernels (cpu_skinny.cpp) stay eight floats wide
// in the AVX-512 variant; the rank panels (cpu_panel.cpp) use its 16-float vectors.
//
// Everything here works on raw pointers and never throws: the backend validates arguments before calling.
#include <cstdint>

#include "edgc/core/block_sampling.hpp"
#include "edgc/kernels/histogram.hpp"
#include "edgc/kernels/moments.hpp"

namespace edgc::kernels::cpu {

/// C = alpha·op(A)·op(B) + beta·C, row-major, with leading dimensions (elements between rows as stored).
struct GemmArgs {
  bool trans_a = false;
  bool trans_b = false;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  float alpha = 1.0F;
  const float* a = nullptr;
  std::int64_t lda = 0;
  const float* b = nullptr;
  std::int64_t ldb = 0;
  float beta = 0.0F;
  float* c = nullptr;
  std::int64_t ldc = 0;
  float* scratch = nullptr;  // kScratchFloats, for the skinny kernels
};

/// A band of rows [row0, row0 + rows) of one m×n PowerSGD matrix; every pointer already points at row0.
struct ProjectArgs {
  std::int64_t rows = 0;
  std::int64_t n = 0;
  std::int64_t r = 0;
  const float* g = nullptr;    // rows×n
  float* e = nullptr;          // rows×n, or null without error feedback
  const float* q = nullptr;    // n×r (the whole Q)
  float* p = nullptr;          // rows×r
  float* scratch = nullptr;    // kScratchFloats
  double* m_sqnorm = nullptr;  // out: ‖M band‖²
};

struct ReconstructArgs {
  std::int64_t rows = 0;
  std::int64_t n = 0;
  std::int64_t r = 0;
  const float* p = nullptr;      // rows×r
  const float* q = nullptr;      // n×r (the whole Q)
  float* e = nullptr;            // rows×n (holds M), or null: M is read from g
  float* g = nullptr;            // rows×n, receives Ĝ
  float* scratch = nullptr;      // kScratchFloats
  double* err_sqnorm = nullptr;  // out: ‖M − Ĝ band‖²
};

/// Ĝ is formed tile by tile in L2-sized scratch; tile_rows × tile_cols for an m×n matrix of rank r. Small ranks
/// take whole rows (up to 8192 columns): the GEMM is cheap and the streams over G and E then run through long
/// contiguous stretches (hardware prefetchers stop at page boundaries, so short per-row segments start cold on
/// every page). Large ranks take taller tiles: Eigen repacks Qᵀ for every tile, and that repacking is amortised
/// over the tile's rows.
struct TileShape {
  std::int64_t rows;
  std::int64_t cols;
};
/// Scratch each thread of a kernel call gets (2 MiB, about one core's L2).
inline constexpr std::int64_t kScratchFloats = std::int64_t{1} << 19;
inline TileShape reconstruct_tile(std::int64_t n, std::int64_t r) {
  const std::int64_t cols = n < (r >= 32 ? 4096 : 8192) ? n : (r >= 32 ? 4096 : 8192);
  const std::int64_t budget = r >= 32 ? kScratchFloats : kScratchFloats / 2;
  const std::int64_t rows = budget / cols;
  return {rows < 1 ? 1 : rows, cols};
}

/// Scratch of orthogonalize for a rows×cols matrix: floats and doubles.
constexpr std::int64_t orthogonalize_work_floats(std::int64_t rows, std::int64_t cols) {
  return rows * cols + cols * cols;
}
constexpr std::int64_t orthogonalize_work_doubles(std::int64_t cols) { return 2 * cols * cols + cols; }

struct KernelTable {
  const char* isa;
  MomentSums (*moments)(const float* x, const Block* blocks, std::int64_t num_blocks);
  void (*histogram)(const float* x, const Block* blocks, std::int64_t num_blocks, double lo, double bin_width,
                    std::int64_t* counts, std::int64_t num_bins, HistogramTails* tails);
  void (*gemm)(const GemmArgs& args);
  void (*orthogonalize)(float* p, std::int64_t rows, std::int64_t cols, float eps, float* fwork, double* dwork);
  void (*project)(const ProjectArgs& args);
  void (*reconstruct)(const ReconstructArgs& args);
};

}  // namespace edgc::kernels::cpu

// One accessor per compiled variant; C linkage keeps the names plain for the symbol-localising step.
extern "C" const edgc::kernels::cpu::KernelTable* edgc_kernels_cpu_generic();
extern "C" const edgc::kernels::cpu::KernelTable* edgc_kernels_cpu_avx2();
extern "C" const edgc::kernels::cpu::KernelTable* edgc_kernels_cpu_avx512();
