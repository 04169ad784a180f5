#include "edgc/core/block_sampling.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "edgc/core/error.hpp"
#include "edgc/core/random.hpp"

namespace edgc {

std::vector<Block> choose_blocks(std::int64_t numel, double fraction, std::int64_t block_elems, std::uint64_t seed,
                                 std::uint64_t stream) {
  if (numel < 1 || block_elems < 1 || !(fraction > 0.0 && fraction <= 1.0))
    throw InternalError("choose_blocks: numel and block_elems must be >= 1 and fraction in (0, 1]");
  const std::int64_t cells = (numel + block_elems - 1) / block_elems;
  const auto wanted = std::max<std::int64_t>(
      1,
      static_cast<std::int64_t>(std::ceil(fraction * static_cast<double>(numel) / static_cast<double>(block_elems))));
  if (wanted >= cells) return {{0, numel}};
  // Floyd's algorithm: `wanted` distinct cells with one draw each, independent of `cells`.
  Rng rng(seed, stream);
  std::unordered_set<std::int64_t> picked;
  std::vector<std::int64_t> chosen;
  chosen.reserve(static_cast<std::size_t>(wanted));
  for (std::int64_t j = cells - wanted; j < cells; ++j) {
    const auto t = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(j + 1)));
    const std::int64_t c = picked.insert(t).second ? t : j;
    if (c == j) picked.insert(j);
    chosen.push_back(c);
  }
  std::sort(chosen.begin(), chosen.end());
  std::vector<Block> blocks;
  blocks.reserve(chosen.size());
  for (const std::int64_t c : chosen) {
    const std::int64_t off = c * block_elems;
    blocks.push_back({off, std::min(block_elems, numel - off)});
  }
  return blocks;
}

std::int64_t total_length(std::span<const Block> blocks) noexcept {
  std::int64_t n = 0;
  for (const Block& b : blocks) n += b.length;
  return n;
}

}  // namespace edgc
