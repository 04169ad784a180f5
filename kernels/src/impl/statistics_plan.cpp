#include "statistics_plan.hpp"

#include <algorithm>
#include <string>

#include "backend_checks.hpp"
#include "edgc/core/error.hpp"

namespace edgc::kernels::impl {

std::span<const Block> selection_of(const SampledTensor& t, Block& whole) {
  whole = Block{0, static_cast<std::int64_t>(t.values.size())};
  return t.blocks.empty() ? std::span<const Block>(&whole, 1) : t.blocks;
}

std::int64_t pieces_of(std::span<const Block> selection) {
  std::int64_t pieces = 0;
  for (const Block& b : selection) pieces += (b.length + kStatisticsPieceElems - 1) / kStatisticsPieceElems;
  return pieces;
}

void add_pieces(std::span<const Block> selection, std::vector<std::uint64_t>& words) {
  for (const Block& b : selection)
    for (std::int64_t at = 0; at < b.length; at += kStatisticsPieceElems) {
      words.push_back(static_cast<std::uint64_t>(b.offset + at));
      words.push_back(static_cast<std::uint64_t>(std::min(kStatisticsPieceElems, b.length - at)));
    }
}

void add_histograms(const unsigned long long* words, std::span<std::int64_t> counts, std::span<HistogramTails> tails) {
  for (std::size_t t = 0; t < tails.size(); ++t) {
    tails[t].below += static_cast<std::int64_t>(words[3 * t]);
    tails[t].above += static_cast<std::int64_t>(words[3 * t + 1]);
    tails[t].non_finite += static_cast<std::int64_t>(words[3 * t + 2]);
  }
  const unsigned long long* rows = words + 3 * tails.size();
  for (std::size_t i = 0; i < counts.size(); ++i) counts[i] += static_cast<std::int64_t>(rows[i]);
}

BatchedPlan plan_batched_statistics(const char* what, std::span<const SampledTensor> tensors, std::int64_t target_tiles,
                                    std::int64_t warps) {
  BatchedPlan plan;
  plan.tensors = static_cast<std::int64_t>(tensors.size());
  std::vector<std::int64_t> pieces(tensors.size(), 0);
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    Block whole{};
    const std::span<const Block> sel = selection_of(tensors[t], whole);
    check_blocks(what, tensors[t].values.size(), sel);
    pieces[t] = pieces_of(sel);
    if (pieces[t] > 0 && tensors[t].values.data() == nullptr)
      throw InternalError(std::string(what) + ": tensor " + std::to_string(t) + " is null");
    plan.pieces += pieces[t];
  }
  target_tiles = std::max<std::int64_t>(1, target_tiles);
  warps = std::max<std::int64_t>(1, warps);
  plan.per_tile = std::max(warps, ((plan.pieces + target_tiles - 1) / target_tiles + warps - 1) / warps * warps);
  std::vector<std::uint64_t>& w = plan.words;
  for (const SampledTensor& t : tensors) w.push_back(reinterpret_cast<std::uintptr_t>(t.values.data()));
  for (const std::int64_t p : pieces) {
    w.push_back(static_cast<std::uint64_t>(plan.tiles));
    plan.tiles += (p + plan.per_tile - 1) / plan.per_tile;
  }
  w.push_back(static_cast<std::uint64_t>(plan.tiles));
  std::int64_t before = 0;  // pieces of the tensors before this one
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    for (std::int64_t first = 0; first < pieces[t]; first += plan.per_tile) {
      w.push_back(static_cast<std::uint64_t>(before + first));
      w.push_back(static_cast<std::uint64_t>(before + std::min(pieces[t], first + plan.per_tile)));
      w.push_back(static_cast<std::uint64_t>(t));
    }
    before += pieces[t];
  }
  for (const SampledTensor& t : tensors) {
    Block whole{};
    add_pieces(selection_of(t, whole), w);
  }
  return plan;
}

}  // namespace edgc::kernels::impl
