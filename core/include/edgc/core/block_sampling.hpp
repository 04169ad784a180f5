#pragma once
// Contiguous-block sampling of a flattened tensor. Memory moves in 32-byte sectors and cache lines, so sampling
// single elements at a low rate still touches most of the memory; whole blocks cut traffic in proportion.
// The choice depends only on (numel, fraction, block size, seed, stream), so every rank and every replay that
// shares the seed samples the same blocks.
#include <cstdint>
#include <span>
#include <vector>

namespace edgc {

/// A contiguous run of elements of a flattened tensor.
struct Block {
  std::int64_t offset = 0;  ///< first element
  std::int64_t length = 0;  ///< number of elements
  friend bool operator==(const Block&, const Block&) = default;
};

/// Chooses max(1, ceil(fraction·numel / block_elems)) distinct blocks on the aligned grid of `block_elems`
/// elements (the last grid cell may be shorter), returned sorted by offset. When that is every cell, returns one
/// block covering the whole tensor. Requires numel ≥ 1, block_elems ≥ 1, 0 < fraction ≤ 1.
std::vector<Block> choose_blocks(std::int64_t numel, double fraction, std::int64_t block_elems, std::uint64_t seed,
                                 std::uint64_t stream);

/// Total number of elements in `blocks`.
std::int64_t total_length(std::span<const Block> blocks) noexcept;

}  // namespace edgc
