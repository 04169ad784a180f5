#pragma once
// Declarations shared by the translation units of one compiled variant of the CPU kernels. The namespace is
// the variant's name (EDGC_CPU_VARIANT, set by kernels/CMakeLists.txt), so two variants never share a symbol.
#include "cpu_kernels.hpp"

#ifndef EDGC_CPU_VARIANT
#error "EDGC_CPU_VARIANT must name the variant being compiled"
#endif

namespace edgc::kernels::cpu::EDGC_CPU_VARIANT {

MomentSums moments(const float* x, const Block* blocks, std::int64_t num_blocks);
void histogram(const float* x, const Block* blocks, std::int64_t num_blocks, double lo, double bin_width,
               std::int64_t* counts, std::int64_t num_bins, HistogramTails* tails);

// Kernels for small ranks, where Eigen's general GEMM spends more time packing and in loop overhead than in
// arithmetic, and where fusing the element-wise passes makes a step memory-bound. Each returns false (doing
// nothing) when the shape does not suit it; the caller then takes the general path. The rank limits are where
// they stop beating Eigen's path (measured on 1920×7680 with AVX2: project and Mᵀ·P 25–45 % faster at r ≤ 4,
// slower from r ≈ 8; the reconstruction only wins at r ≤ 2, Eigen's row tiles being as lean from r = 4).
inline constexpr std::int64_t kSkinnyMaxRank = 4;
inline constexpr std::int64_t kSkinnyReconstructMaxRank = 2;
bool project_skinny(const ProjectArgs& args);
bool reconstruct_skinny(const ReconstructArgs& args);
bool gemm_tn_skinny(const GemmArgs& args);

// Ranks above kSkinnyMaxRank while a padded n×r panel fits in half the scratch (cpu_panel.cpp): M·Q fused with the
// addition, and Mᵀ·P, without packing M. AVX2 and AVX-512 variants only; false (doing nothing) otherwise.
inline constexpr std::int64_t kPanelMaxRank = 64;
bool project_panel(const ProjectArgs& args);
bool gemm_tn_panel(const GemmArgs& args);

}  // namespace edgc::kernels::cpu::EDGC_CPU_VARIANT
