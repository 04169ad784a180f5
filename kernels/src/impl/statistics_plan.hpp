#pragma once
// The work list of a device statistics call (moments, histogram), built on the host: the selected blocks cut into
// pieces of at most kStatisticsPieceElems, and for a batched call (several tensors) the pieces grouped into tiles of
// one tensor each. Plain C++ so that the CPU tests check it; the CUDA backend uploads it as one array of 8-byte
// words (cuda/cuda_kernels.hpp reads the same layout as Piece and Tile).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "edgc/core/block_sampling.hpp"
#include "edgc/kernels/backend.hpp"

namespace edgc::kernels::impl {

/// Elements per piece: one warp reads a piece, so a large block (a whole tensor) still spreads over the GPU.
inline constexpr std::int64_t kStatisticsPieceElems = std::int64_t{1} << 13;

/// A tensor's selected blocks: its blocks, or `whole` set to all of it when it has none.
std::span<const Block> selection_of(const SampledTensor& t, Block& whole);

/// Pieces of a selection: ceil(length / kStatisticsPieceElems) per block.
std::int64_t pieces_of(std::span<const Block> selection);

/// Appends the selection's pieces to `words` as (offset, length) pairs, in block order.
void add_pieces(std::span<const Block> selection, std::vector<std::uint64_t>& words);

/// The moments a device kernel summed (its partial-sum struct: s1..s4, count, nan, inf) as MomentSums.
template <class Partial>
MomentSums moment_sums_of(const Partial& p) {
  MomentSums m;
  m.sum = p.s1;
  m.sum_sq = p.s2;
  m.sum_cube = p.s3;
  m.sum_quad = p.s4;
  m.count = p.count;
  m.nan = p.nan;
  m.inf = p.inf;
  return m;
}

/// Adds the histograms a device call returned — per tensor three tails (below, above, non-finite), then per tensor
/// `bins` counts — to `counts` (tensors × bins) and `tails` (one per tensor).
void add_histograms(const unsigned long long* words, std::span<std::int64_t> counts, std::span<HistogramTails> tails);

/// A batched call's work list, as words: [tensors' addresses: T][tile_begin: T + 1][tiles: (first, end, tensor) ×
/// tiles][pieces: (offset, length) × pieces]. Tiles are runs of `per_tile` pieces (the last of a tensor shorter) of
/// one tensor, in tensor order; tensor t's are tile_begin[t] .. tile_begin[t + 1), and their pieces, numbered over
/// the whole list, are its selection's in block order. per_tile: total pieces over `target_tiles`, rounded up to a
/// multiple of `warps` (the pieces a CTA reads at once), at least `warps`.
struct BatchedPlan {
  std::vector<std::uint64_t> words;
  std::int64_t tensors = 0;
  std::int64_t tiles = 0;
  std::int64_t pieces = 0;
  std::int64_t per_tile = 0;
  std::size_t tile_begin_at() const { return static_cast<std::size_t>(tensors); }
  std::size_t tiles_at() const { return static_cast<std::size_t>(2 * tensors + 1); }
  std::size_t pieces_at() const { return static_cast<std::size_t>(2 * tensors + 1 + 3 * tiles); }
};

/// Checks every tensor's blocks (InternalError naming `what`, as Backend's statistics do; a tensor with a piece and
/// no data too) and builds the plan. target_tiles ≥ 1, warps ≥ 1.
BatchedPlan plan_batched_statistics(const char* what, std::span<const SampledTensor> tensors, std::int64_t target_tiles,
                                    std::int64_t warps);

}  // namespace edgc::kernels::impl
