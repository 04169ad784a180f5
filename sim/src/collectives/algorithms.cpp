// The all-reduce algorithm table and the choice between its entries (network.algorithm): a forced algorithm where it
// can run (else the ring), or auto: the least line-rate estimate among the entries auto weighs for the group, the
// way NCCL's tuner compares its per-algorithm model.
#include "collectives/algorithms.hpp"

#include <optional>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"

namespace edgc::sim {
namespace collectives {

const std::vector<const AllReduceAlgorithm*>& allreduce_algorithms() {
  static const std::vector<const AllReduceAlgorithm*> table = {&ring_algorithm(), &tree_algorithm()};
  return table;
}

namespace {

CollectiveAlgorithm g_algorithm = CollectiveAlgorithm::kAuto;

const AllReduceAlgorithm& entry(CollectiveAlgorithm id) {
  for (const AllReduceAlgorithm* a : allreduce_algorithms())
    if (a->id == id) return *a;
  throw InternalError("collective algorithm " + std::to_string(static_cast<int>(id)) + " has no table entry");
}

// What all_reduce() runs over `group` for `bytes` under the process's setting.
const AllReduceAlgorithm& chosen(const Group& group, std::uint64_t bytes) {
  const AllReduceAlgorithm& ring = ring_algorithm();
  if (group.size() < 2) return ring;
  if (g_algorithm != CollectiveAlgorithm::kAuto) {
    const AllReduceAlgorithm& forced = entry(g_algorithm);
    return forced.runs_over(group) ? forced : ring;
  }
  const AllReduceAlgorithm* best = &ring;
  double best_s = 0.0;
  bool ring_estimated = false;
  for (const AllReduceAlgorithm* a : allreduce_algorithms()) {
    if (a == &ring || !a->auto_weighs(group)) continue;
    if (!ring_estimated) {
      best_s = ring.estimate_s(group, bytes);
      ring_estimated = true;
    }
    if (const double s = a->estimate_s(group, bytes); s < best_s) {
      best = a;
      best_s = s;
    }
  }
  return *best;
}

}  // namespace
}  // namespace collectives

std::optional<CollectiveAlgorithm> allreduce_algorithm_from_name(const std::string& name) {
  if (name == "auto") return CollectiveAlgorithm::kAuto;
  for (const collectives::AllReduceAlgorithm* a : collectives::allreduce_algorithms())
    if (name == a->name) return a->id;
  return std::nullopt;
}

std::string allreduce_algorithm_name(CollectiveAlgorithm algorithm) {
  if (algorithm == CollectiveAlgorithm::kAuto) return "auto";
  for (const collectives::AllReduceAlgorithm* a : collectives::allreduce_algorithms())
    if (a->id == algorithm) return a->name;
  return "?";
}

void set_allreduce_algorithm(CollectiveAlgorithm algorithm) { collectives::g_algorithm = algorithm; }
CollectiveAlgorithm allreduce_algorithm() { return collectives::g_algorithm; }

CollectiveAlgorithm chosen_allreduce_algorithm(const Group& group, std::uint64_t bytes) {
  return collectives::chosen(group, bytes).id;
}

void all_reduce(const Group& group, int my_index, std::uint64_t bytes) {
  collectives::chosen(group, bytes).run(group, my_index, bytes);
}

std::uint64_t allreduce_transfer_bytes(CollectiveAlgorithm algorithm, const Group& group, std::uint64_t bytes) {
  const collectives::AllReduceAlgorithm& a =
      algorithm == CollectiveAlgorithm::kAuto ? collectives::chosen(group, bytes) : collectives::entry(algorithm);
  return a.transfer_bytes(group, bytes);
}

bool allreduce_ring_closed_form(CollectiveAlgorithm setting) {
  if (setting != CollectiveAlgorithm::kAuto) return collectives::entry(setting).ring_closed_form;
  for (const collectives::AllReduceAlgorithm* a : collectives::allreduce_algorithms())
    if (!a->ring_closed_form && a->auto_weighs_spread_groups) return false;
  return true;
}

}  // namespace edgc::sim
