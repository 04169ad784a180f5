#include "edgc/engine/live_calibration.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <tuple>

#include "edgc/core/error.hpp"
#include "edgc/core/median.hpp"

namespace edgc::engine {

RingProfile ring_profile(const results::Calibration& cal) {
  const double d = cal.ranks;
  const double steps = 2.0 * (d - 1.0);
  RingProfile p;
  double floor_s = std::numeric_limits<double>::infinity();
  // The probe's in-step rows where it has them; the isolated rows below and above their sizes. A 0 s row (below
  // the timer's resolution) says nothing.
  std::vector<results::Calibration::Row> rows;
  for (const auto& r : cal.step_rows)
    if (r.time_s > 0) rows.push_back(r);
  const std::int64_t lo = rows.empty() ? 0 : rows.front().bytes;
  const std::int64_t hi = rows.empty() ? 0 : rows.back().bytes;
  for (const auto& r : cal.rows)
    if (r.time_s > 0 && (rows.empty() || r.bytes < lo || r.bytes > hi)) rows.push_back(r);
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
  for (const auto& r : rows) floor_s = std::min(floor_s, r.time_s / steps);
  if (rows.empty()) floor_s = 0.0;
  p.latency_s = std::clamp(cal.latency_s, 0.0, 0.5 * floor_s);
  const auto bandwidth_part = [&](const results::Calibration::Row& r) {  // bytes per second of the transfer part
    return steps / d * static_cast<double>(r.bytes) / (r.time_s - steps * p.latency_s);
  };
  for (const auto& r : rows) p.bandwidth_Bps = std::max(p.bandwidth_Bps, bandwidth_part(r));
  for (const auto& r : rows) {
    const double chunk = static_cast<double>(r.bytes) / d;
    // Positive by construction (the latency is at most half of any row's time per step); no floor beyond that, so
    // that a latency-bound outlier at a tiny size (a rank descheduled on an oversubscribed host) is reproduced too.
    const double eff = std::clamp(bandwidth_part(r) / p.bandwidth_Bps, std::numeric_limits<double>::min(), 1.0);
    if (!p.points.empty() && chunk <= p.points.back().first) continue;  // rows come sorted; a repeat keeps the first
    p.points.emplace_back(chunk, eff);
  }
  return p;
}

sim::NetworkProfile network_of(const RingProfile& p) {
  sim::NetworkProfile n;
  n.kind = sim::NetworkProfileKind::kCalibrated;
  n.algorithm = sim::CollectiveAlgorithm::kRing;
  n.intra.points = p.points;
  n.inter.points = p.points;
  return n;
}

namespace {

// Per size the median of the rows that have it.
std::vector<results::Calibration::Row> pool_rows(
    const std::vector<const std::vector<results::Calibration::Row>*>& all) {
  std::map<std::int64_t, std::vector<double>> by_size;
  for (const auto* rows : all)
    for (const auto& r : *rows) by_size[r.bytes].push_back(r.time_s);
  std::vector<results::Calibration::Row> out;
  for (const auto& [bytes, times] : by_size) out.push_back({bytes, core::median(times)});
  return out;
}

}  // namespace

results::Calibration pool_calibrations(const std::vector<results::Calibration>& cals,
                                       const std::vector<std::string>& paths) {
  results::Calibration out = cals.front();
  std::vector<const std::vector<results::Calibration::Row>*> rows, step_rows;
  std::vector<double> latency, bandwidth;
  for (std::size_t i = 0; i < cals.size(); ++i) {
    if (cals[i].ranks != out.ranks)
      throw ConfigError(paths[i], "calibration.ranks",
                        std::to_string(cals[i].ranks) + " ranks, the first run's calibration had " +
                            std::to_string(out.ranks) + ": pool runs of one configuration");
    rows.push_back(&cals[i].rows);
    step_rows.push_back(&cals[i].step_rows);
    latency.push_back(cals[i].latency_s);
    bandwidth.push_back(cals[i].bandwidth_Bps);
  }
  out.rows = pool_rows(rows);
  out.step_rows = pool_rows(step_rows);
  out.latency_s = core::median(latency);
  out.bandwidth_Bps = core::median(bandwidth);
  return out;
}

scenario::KernelProfile pool_kernel_profiles(const std::vector<scenario::KernelProfile>& profiles) {
  std::map<std::tuple<std::int64_t, std::int64_t, int, int>, std::vector<double>> steps;
  std::map<std::int64_t, std::vector<double>> copies;
  for (const scenario::KernelProfile& p : profiles) {
    for (const sim::KernelTime& k : p.entries) steps[{k.rows, k.cols, k.rank, k.count}].push_back(k.step_s);
    for (const sim::CopyTime& c : p.copies) copies[c.bytes].push_back(c.seconds);
  }
  scenario::KernelProfile out;
  for (const auto& [key, t] : steps)
    out.entries.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), core::median(t), std::get<3>(key)});
  for (const auto& [bytes, t] : copies) out.copies.push_back({bytes, core::median(t)});
  return out;
}

results::Measurements pool_measurements(const std::vector<results::Measurements>& runs,
                                        const std::vector<std::string>& paths) {
  results::Measurements out = runs.front();
  std::vector<results::Calibration> cals;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const results::Measurements& r = runs[i];
    const auto differs = [&](const std::string& field, const std::string& what) {
      throw ConfigError(
          paths[i], field,
          what + " differs from the first run's (" + paths[0] + "): pool only repeated runs of one configuration");
    };
    if (r.world_size != out.world_size) differs("world_size", "the world size");
    if (r.pp != out.pp || r.dp != out.dp) differs("pp", "the layout");
    if (r.element_bytes != out.element_bytes) differs("element_bytes", "the element size");
    for (std::size_t g = 0; g < r.placement.size(); ++g)
      if (r.placement[g].stage != out.placement[g].stage || r.placement[g].replica != out.placement[g].replica)
        differs("placement[" + std::to_string(g) + "]", "the rank's stage or replica");
    if (r.runs.size() != out.runs.size()) differs("runs", "the policies");
    for (std::size_t p = 0; p < r.runs.size(); ++p)
      if (r.runs[p].policy != out.runs[p].policy) differs("runs[" + std::to_string(p) + "].policy", "the policy");
    cals.push_back(r.calibration);
    if (i == 0) continue;
    for (std::size_t p = 0; p < r.runs.size(); ++p)
      for (results::Step s : r.runs[p].steps) {
        s.step = static_cast<std::int64_t>(out.runs[p].steps.size());
        out.runs[p].steps.push_back(std::move(s));
      }
  }
  out.calibration = pool_calibrations(cals, paths);
  return out;
}

}  // namespace edgc::engine
