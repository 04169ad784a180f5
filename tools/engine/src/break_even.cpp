#include "break_even.hpp"

#include <algorithm>
#include <cmath>

#include "edgc/core/error.hpp"
#include "edgc/results/table.hpp"

namespace edgc::engine {

std::vector<int> break_even_probe_ranks(int cap) {
  std::vector<int> out;
  for (int r = 2; r <= cap && r > 0; r *= 2) out.push_back(r);
  return out;
}

StageBreakEven stage_break_even(const std::vector<int>& ranks, const std::vector<double>& times,
                                double uncompressed_s) {
  if (ranks.empty() || ranks.size() != times.size())
    throw InternalError("stage_break_even: one time per probe rank is needed");
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    // The same time as uncompressed: nothing was compressed at this rank (a compressed sync never ties exactly).
    if (std::abs(times[i] - uncompressed_s) <= 1e-9 * uncompressed_s)
      return {i == 0 ? StageBreakEven::Kind::kBelowFirst : StageBreakEven::Kind::kSkipped,
              i == 0 ? 0.0 : static_cast<double>(ranks[i])};
    if (times[i] < uncompressed_s) continue;
    if (i == 0) return {StageBreakEven::Kind::kBelowFirst, 0.0};
    const double r0 = ranks[i - 1], r1 = ranks[i], t0 = times[i - 1], t1 = times[i];
    return {StageBreakEven::Kind::kCrossed, r0 + (uncompressed_s - t0) * (r1 - r0) / (t1 - t0)};
  }
  return {StageBreakEven::Kind::kAboveLast, static_cast<double>(ranks.back())};
}

int floor_to_multiple(double r, int quantum) {
  if (!(r >= quantum)) return 0;
  return static_cast<int>(std::floor(r / quantum)) * quantum;
}

std::optional<int> BreakEven::r_max(int quantum) const {
  std::optional<double> lowest;
  for (const StageBreakEven& s : stages) {
    if (s.kind == StageBreakEven::Kind::kBelowFirst) return std::nullopt;
    lowest = lowest ? std::min(*lowest, s.rank) : s.rank;
  }
  if (!lowest) return std::nullopt;
  const int r = floor_to_multiple(*lowest, quantum);
  return r > 0 ? std::optional<int>(r) : std::nullopt;
}

int auto_r_max(const BreakEven& b, const core::CqmConfig& cqm, const std::string& where) {
  for (std::size_t s = 0; s < b.stages.size(); ++s)
    if (b.stages[s].kind == StageBreakEven::Kind::kBelowFirst)
      throw ConfigError(where, "compression.r_max",
                        "auto: stage " + std::to_string(s) + "'s compressed sync at rank " +
                            std::to_string(b.ranks.front()) + " (" + results::fmt_g(b.sync_s[s].front(), 4) +
                            " s) is no faster than the uncompressed one (" +
                            results::fmt_g(b.uncompressed_sync_s[s], 4) +
                            " s): no rank shortens the sync here; give a rank to compress anyway");
  const std::optional<int> r = b.r_max(cqm.quantum);
  if (!r || *r < cqm.r_min)
    throw ConfigError(where, "compression.r_max",
                      "auto: the break-even rank floored to a multiple of " + std::to_string(cqm.quantum) + " is " +
                          std::to_string(r.value_or(0)) + ", below compression.r_min " + std::to_string(cqm.r_min) +
                          ": lower r_min or give r_max");
  return *r;
}

BreakEven find_break_even(
    int pp, int cap,
    const std::function<std::vector<sim::IterationResult>(const std::vector<sim::DpSyncPlan>&)>& simulate) {
  BreakEven b;
  b.ranks = break_even_probe_ranks(cap);
  if (b.ranks.empty()) throw InternalError("find_break_even: no probe rank below the cap " + std::to_string(cap));
  std::vector<sim::DpSyncPlan> plans{sim::uncompressed_plan(pp)};
  for (const int r : b.ranks) plans.push_back(sim::powersgd_plan(pp, r));
  const std::vector<sim::IterationResult> results = simulate(plans);
  if (results.size() != plans.size()) throw InternalError("find_break_even: one result per plan is needed");
  for (int s = 0; s < pp; ++s) {
    const auto stage = static_cast<std::size_t>(s);
    b.uncompressed_sync_s.push_back(results[0].stages.at(stage).dp_sync_s);
    std::vector<double> times;
    for (std::size_t i = 1; i < results.size(); ++i) times.push_back(results[i].stages.at(stage).dp_sync_s);
    b.stages.push_back(stage_break_even(b.ranks, times, b.uncompressed_sync_s.back()));
    b.sync_s.push_back(std::move(times));
  }
  return b;
}

nlohmann::ordered_json break_even_json(const BreakEven& b, int quantum) {
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (std::size_t s = 0; s < b.stages.size(); ++s) {
    const StageBreakEven& x = b.stages[s];
    const char* kind = x.kind == StageBreakEven::Kind::kCrossed      ? "crossed"
                       : x.kind == StageBreakEven::Kind::kBelowFirst ? "below_first_probe"
                       : x.kind == StageBreakEven::Kind::kSkipped    ? "all_skipped"
                                                                     : "above_last_probe";
    stages.push_back({{"stage", s},
                      {"rank", x.kind == StageBreakEven::Kind::kBelowFirst ? nlohmann::ordered_json()
                                                                           : nlohmann::ordered_json(x.rank)},
                      {"kind", kind},
                      {"uncompressed_sync_s", b.uncompressed_sync_s[s]},
                      {"sync_s", b.sync_s[s]}});
  }
  const std::optional<int> auto_r = b.r_max(quantum);
  return {{"probe_ranks", b.ranks},
          {"stages", stages},
          {"r_max_auto", auto_r ? nlohmann::ordered_json(*auto_r) : nlohmann::ordered_json()}};
}

}  // namespace edgc::engine
