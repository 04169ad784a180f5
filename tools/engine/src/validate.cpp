#include "edgc/engine/validate.hpp"

#include <xbt/log.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

#include "edgc/core/error.hpp"
#include "edgc/core/median.hpp"
#include "edgc/results/table.hpp"
#include "edgc/sim/step_replay.hpp"

XBT_LOG_NEW_DEFAULT_CATEGORY(edgc_validate, "edgc validate: live step patterns against the simulated cluster");

namespace edgc::engine::validate {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Row keys in print order: policy (run index), category, stage, collective kind.
enum Category { kCollective = 0, kSync = 1, kIteration = 2, kCompute = 3, kCalibration = 4 };
const char* category_name(int c) {
  static const char* const names[] = {"collective", "sync", "iteration", "compute", "calibration"};
  return names[c];
}
int kind_order(const std::string& kind) { return kind == "P" ? 0 : kind == "Q" ? 1 : 2; }

using core::quantile;  // the type-7 quantile, NaN for no values

double ape_pct(double measured, double predicted) {
  return measured > 0 ? std::abs(predicted - measured) / measured * 100.0 : kNaN;
}

}  // namespace

Patterns extract_patterns(const results::Measurements& m) {
  Patterns out;
  std::map<StepPattern, std::size_t> seen;
  for (const results::MeasuredRun& run : m.runs) {
    std::vector<std::size_t>& of_step = out.of_step.emplace_back();
    for (const results::Step& step : run.steps) {
      StepPattern sp;
      for (const results::StageStep& st : step.stages) {
        StagePattern& stage = sp.stages.emplace_back();
        for (const results::Collective& c : st.collectives) stage.collectives.push_back({c.kind, c.bytes});
        for (const results::MatrixGroup& g : st.matrices) stage.matrices.push_back({g.rows, g.cols, g.rank, g.count});
      }
      const auto [it, added] = seen.emplace(std::move(sp), out.distinct.size());
      if (added) out.distinct.push_back(it->first);
      of_step.push_back(it->second);
    }
  }
  return out;
}

std::vector<std::vector<int>> stage_groups(const results::Measurements& m) {
  std::vector<std::vector<int>> groups(static_cast<std::size_t>(m.pp),
                                       std::vector<int>(static_cast<std::size_t>(m.dp), -1));
  for (const results::RankPlace& p : m.placement)
    groups[static_cast<std::size_t>(p.stage)][static_cast<std::size_t>(p.replica)] = p.rank;
  return groups;  // read_measurements guarantees every (stage, replica) exactly once
}

std::vector<int> platform_gpus(const results::Measurements& m, const sim::ClusterSpec& cluster,
                               const std::string& cluster_where) {
  if (cluster.total_gpus() < m.world_size)
    throw ConfigError(cluster_where, "cluster.nodes",
                      "the cluster has " + std::to_string(cluster.total_gpus()) + " GPUs (" +
                          std::to_string(cluster.nodes) + " × " + std::to_string(cluster.gpus_per_node) +
                          "), the measured run had " + std::to_string(m.world_size) + " ranks");
  std::vector<int> gpus;
  for (const results::RankPlace& p : m.placement) {
    const std::string at = " (measurements placement[" + std::to_string(p.rank) + "])";
    if (p.local >= cluster.gpus_per_node)
      throw ConfigError(cluster_where, "cluster.gpus_per_node",
                        "rank " + std::to_string(p.rank) + " ran as local index " + std::to_string(p.local) +
                            " of host '" + p.host + "', but a node has " + std::to_string(cluster.gpus_per_node) +
                            " GPUs" + at);
    if (p.node >= cluster.nodes)
      throw ConfigError(cluster_where, "cluster.nodes",
                        "rank " + std::to_string(p.rank) + " ran on node " + std::to_string(p.node) + " (host '" +
                            p.host + "'), but the cluster has " + std::to_string(cluster.nodes) + " nodes" + at);
    gpus.push_back(p.node * cluster.gpus_per_node + p.local);
  }
  return gpus;
}

StageCompute modelled_compute(const StagePattern& stage, int element_bytes, const sim::GpuSpec& gpu,
                              const sim::CostParams& params) {
  StageCompute c;
  for (const CollectiveShape& coll : stage.collectives) {
    if (coll.kind != "dense") continue;
    c.copy_s += params.copy_profile.empty()
                    ? 4.0 * static_cast<double>(coll.bytes) / (gpu.hbm_GBps * 1e9 * params.hbm_efficiency)
                    : sim::profiled_copy_s(params.copy_profile, coll.bytes);
  }
  for (const MatrixBatch& b : stage.matrices)
    c.batch_s += sim::powersgd_batch_s(b.rows, b.cols, b.rank, b.count, element_bytes, gpu, params);
  return c;
}

Simulated simulate(sg4::Engine& engine, const sim::Platform& platform, const results::Measurements& m,
                   const Patterns& patterns, const std::vector<std::vector<StageCompute>>& compute,
                   const std::vector<int>& gpus) {
  sim::StepReplay replay;
  for (const results::RankPlace& p : m.placement)
    replay.ranks.push_back({p.stage, p.replica, gpus[static_cast<std::size_t>(p.rank)]});
  for (std::size_t p = 0; p < patterns.distinct.size(); ++p) {
    auto& stages = replay.steps.emplace_back();
    for (std::size_t s = 0; s < patterns.distinct[p].stages.size(); ++s) {
      sim::ReplayedStage& stage = stages.emplace_back();
      for (const CollectiveShape& c : patterns.distinct[p].stages[s].collectives)
        stage.collectives.push_back({c.kind == "P"   ? sim::ReplayedAllReduce::kP
                                     : c.kind == "Q" ? sim::ReplayedAllReduce::kQ
                                                     : sim::ReplayedAllReduce::kDense,
                                     static_cast<std::uint64_t>(c.bytes)});
      stage.copy_s = compute[p][s].copy_s;
      stage.batch_s = compute[p][s].batch_s;
    }
  }
  if (m.calibration.ranks >= 2) {
    replay.calibration_ranks = m.calibration.ranks;
    for (const auto* rows : {&m.calibration.rows, &m.calibration.step_rows})
      for (const results::Calibration::Row& row : *rows)
        replay.calibration_bytes.push_back(static_cast<std::uint64_t>(row.bytes));
  }
  XBT_DEBUG("%zu step patterns, %zu calibration rows", patterns.distinct.size(), replay.calibration_bytes.size());
  sim::StepReplayTimes times = sim::replay_steps(engine, platform, replay);

  Simulated out;
  for (std::size_t p = 0; p < patterns.distinct.size(); ++p) {
    Prediction pr;
    pr.collective_s = std::move(times.collective_s[p]);
    pr.sync_s = std::move(times.sync_s[p]);
    for (const StageCompute& c : compute[p]) pr.compute_s.push_back(c.total_s());
    pr.iteration_s = *std::max_element(pr.sync_s.begin(), pr.sync_s.end());
    out.patterns.push_back(std::move(pr));
  }
  out.calibration_s = std::move(times.calibration_s);
  return out;
}

double calibration_drift(const results::Measurements& m, const results::Measurements& other) {
  std::vector<double> ratios;
  const auto compare_rows = [&](const std::vector<results::Calibration::Row>& mine,
                                const std::vector<results::Calibration::Row>& theirs) {
    for (const auto& a : mine)
      for (const auto& b : theirs)
        if (a.bytes == b.bytes && a.time_s > 0 && b.time_s > 0) ratios.push_back(a.time_s / b.time_s);
  };
  compare_rows(m.calibration.rows, other.calibration.rows);
  compare_rows(m.calibration.step_rows, other.calibration.step_rows);
  return ratios.empty() ? kNaN : quantile(ratios, 0.5);
}

SpeedShift speed_shift(const results::Measurements& m, const Patterns& patterns) {
  SpeedShift worst;
  for (std::size_t r = 0; r < m.runs.size(); ++r) {
    std::map<std::size_t, std::vector<double>> by_pattern;
    for (std::size_t k = 0; k < m.runs[r].steps.size(); ++k)
      by_pattern[patterns.of_step[r][k]].push_back(m.runs[r].steps[k].iteration_s);
    for (const auto& [p, times] : by_pattern) {
      if (times.size() < 30) continue;
      const auto third = static_cast<std::ptrdiff_t>(times.size() / 3);
      const double early = quantile(std::vector<double>(times.begin(), times.begin() + third), 0.5);
      const double late = quantile(std::vector<double>(times.end() - third, times.end()), 0.5);
      if (!(early > 0 && late > 0)) continue;
      const double ratio = std::max(early / late, late / early);
      if (ratio > worst.ratio) worst = {ratio, m.runs[r].policy, early, late};
    }
  }
  return worst;
}

void ErrorStats::add(double measured_s, double predicted_s, std::int64_t group) {
  ++count;
  sum_measured += measured_s;
  sum_predicted += predicted_s;
  auto& g = groups[group >= 0 ? group : -count];
  g.first.push_back(measured_s);
  g.second = predicted_s;
  const double ape = ape_pct(measured_s, predicted_s);
  if (std::isnan(ape)) return;
  ++ape_count;
  sum_ape_pct += ape;
  max_ape_pct = std::max(max_ape_pct, ape);
}
double ErrorStats::mean_measured() const { return count > 0 ? sum_measured / static_cast<double>(count) : kNaN; }
double ErrorStats::mean_predicted() const { return count > 0 ? sum_predicted / static_cast<double>(count) : kNaN; }
double ErrorStats::mape_pct() const { return ape_count > 0 ? sum_ape_pct / static_cast<double>(ape_count) : kNaN; }
double ErrorStats::quantile_measured(double q) const {
  std::vector<double> all;
  for (const auto& [key, g] : groups) all.insert(all.end(), g.first.begin(), g.first.end());
  return quantile(std::move(all), q);
}
double ErrorStats::error_pct() const {
  double weighted = 0.0;
  double weight = 0.0;
  for (const auto& [key, g] : groups) {
    const double ape = ape_pct(quantile(g.first, 0.5), g.second);
    if (std::isnan(ape)) continue;
    weighted += ape * static_cast<double>(g.first.size());
    weight += static_cast<double>(g.first.size());
  }
  return weight > 0 ? weighted / weight : kNaN;
}

namespace {

// One row of the report while the steps are compared: its error statistics, and for sync and iteration rows the
// Σ over steps of predicted − measured of the step's parts (its all-reduces, its compute, and the rest: waiting,
// skew and bookkeeping); an iteration's are its slowest measured stage's.
struct Row {
  std::string category;
  std::string policy;
  int stage = -1;
  std::string kind;
  ErrorStats stats;
  double delta_collectives_s = 0.0;
  double delta_compute_s = 0.0;
  double delta_other_s = 0.0;

  // "collectives" | "compute" | "other": the part with the largest mean |difference|; empty for other rows and
  // where every difference is rounding (≤ 1e-9 of the measured total).
  std::string dominant() const {
    if (category != "sync" && category != "iteration") return "";
    const double c = std::abs(delta_collectives_s), k = std::abs(delta_compute_s), o = std::abs(delta_other_s);
    if (std::max({c, k, o}) <= 1e-9 * std::abs(stats.sum_measured)) return "";  // rounding: nothing to explain
    return c >= k && c >= o ? "collectives" : k >= o ? "compute" : "other";
  }

  results::ValidateRow figures() const {
    results::ValidateRow f;
    f.category = category;
    f.policy = policy;
    f.stage = stage;
    f.kind = kind;
    f.count = stats.count;
    f.median_measured_s = stats.quantile_measured(0.5);
    f.p10_measured_s = stats.quantile_measured(0.1);
    f.p90_measured_s = stats.quantile_measured(0.9);
    f.mean_measured_s = stats.mean_measured();
    f.mean_predicted_s = stats.mean_predicted();
    f.error_pct = stats.error_pct();
    f.mape_pct = stats.mape_pct();
    f.max_ape_pct = stats.ape_count > 0 ? stats.max_ape_pct : kNaN;
    if (category == "sync" || category == "iteration") {
      const double n = static_cast<double>(stats.count);
      f.has_parts = true;
      f.mean_difference_collectives_s = delta_collectives_s / n;
      f.mean_difference_compute_s = delta_compute_s / n;
      f.mean_difference_other_s = delta_other_s / n;
      f.dominant = dominant();
    }
    return f;
  }
};

// Every measured step against its pattern's prediction: the per-policy rows (in print order: policy, category,
// stage, collective kind) and one overall row per category.
void compare_steps(const results::Measurements& m, const Patterns& patterns, const Simulated& simulated,
                   results::ValidateReport& rep) {
  std::map<std::tuple<std::size_t, int, int, int>, Row> rows;
  std::map<int, Row> overall;
  // A group of pairs shares one prediction and one policy: a policy's steps of one pattern, a stage's i-th value.
  // (Policies stay apart in the overall rows too: their steps of one pattern ran at different times, and pooling them
  // into one median would let one policy's error hide another's.)
  std::size_t run_index = 0;
  std::map<std::tuple<std::size_t, std::size_t, int, std::size_t>, std::int64_t> group_ids;
  const auto group_of = [&](std::size_t pattern, int stage, std::size_t i) {
    const auto id = static_cast<std::int64_t>(group_ids.size());
    return group_ids.emplace(std::make_tuple(run_index, pattern, stage, i), id).first->second;
  };
  struct Parts {  // predicted − measured of one stage's step
    double collectives = 0, compute = 0, other = 0;
  };
  const auto add = [&](std::size_t run, int cat, int stage, const std::string& kind, double measured, double predicted,
                       std::int64_t group, const Parts* parts) {
    Row& r = rows[{run, cat, stage, kind.empty() ? -1 : kind_order(kind)}];
    if (r.category.empty()) r = Row{category_name(cat), m.runs[run].policy, stage, kind, {}};
    Row& o = overall[cat];
    if (o.category.empty()) o.category = category_name(cat);
    for (Row* x : {&r, &o}) {
      x->stats.add(measured, predicted, group);
      if (!parts) continue;
      x->delta_collectives_s += parts->collectives;
      x->delta_compute_s += parts->compute;
      x->delta_other_s += parts->other;
    }
  };
  for (std::size_t r = 0; r < m.runs.size(); ++r) {
    run_index = r;
    for (std::size_t k = 0; k < m.runs[r].steps.size(); ++k) {
      const results::Step& step = m.runs[r].steps[k];
      const std::size_t pattern = patterns.of_step[r][k];
      const Prediction& pr = simulated.patterns[pattern];
      std::vector<Parts> parts;
      std::size_t slowest = 0;
      for (std::size_t s = 0; s < step.stages.size(); ++s) {
        const results::StageStep& st = step.stages[s];
        const int stage = static_cast<int>(s);
        Parts& d = parts.emplace_back();
        double measured_comm = 0, predicted_comm = 0;
        for (std::size_t i = 0; i < st.collectives.size(); ++i) {
          add(r, kCollective, stage, st.collectives[i].kind, st.collectives[i].time_s, pr.collective_s[s][i],
              group_of(pattern, stage, i), nullptr);
          measured_comm += st.collectives[i].time_s;
          predicted_comm += pr.collective_s[s][i];
        }
        d.collectives = predicted_comm - measured_comm;
        d.compute = pr.compute_s[s] - st.compute_s;
        d.other = (pr.sync_s[s] - predicted_comm - pr.compute_s[s]) - (st.sync_s - measured_comm - st.compute_s);
        add(r, kSync, stage, "", st.sync_s, pr.sync_s[s], group_of(pattern, stage, 0), &d);
        add(r, kCompute, stage, "", st.compute_s, pr.compute_s[s], group_of(pattern, stage, 0), nullptr);
        if (st.sync_s > step.stages[slowest].sync_s) slowest = s;
      }
      add(r, kIteration, -1, "", step.iteration_s, pr.iteration_s, group_of(pattern, 0, 0), &parts[slowest]);
    }
  }
  for (const auto& [key, row] : rows) rep.rows.push_back(row.figures());
  for (const auto& [cat, row] : overall) rep.overall.push_back(row.figures());
}

// The calibration: measured, the ring fit live derived the cluster file from, and the simulation of that file; its
// overall row when it has one.
void compare_calibration(const results::Measurements& m, const Simulated& simulated, results::ValidateReport& rep) {
  const results::Calibration& cal = m.calibration;
  const double d = cal.ranks;
  results::ValidateCalibration& out = rep.calibration;
  out.ranks = cal.ranks;
  out.latency_s = cal.latency_s;
  out.bandwidth_Bps = cal.bandwidth_Bps;
  Row cal_row{category_name(kCalibration), "", -1, "", {}};
  for (std::size_t i = 0; i < std::min(simulated.calibration_s.size(), cal.rows.size()); ++i) {
    const auto& row = cal.rows[i];
    const double fit_s =
        cal.bandwidth_Bps > 0
            ? 2 * (d - 1) * cal.latency_s + 2 * (d - 1) / d * static_cast<double>(row.bytes) / cal.bandwidth_Bps
            : kNaN;
    cal_row.stats.add(row.time_s, simulated.calibration_s[i], static_cast<std::int64_t>(i));
    out.rows.push_back(
        {row.bytes, row.time_s, fit_s, simulated.calibration_s[i], ape_pct(row.time_s, simulated.calibration_s[i])});
  }
  // The probe's in-step all-reduces (simulated after the isolated rows): not part of the calibration row.
  for (std::size_t i = cal.rows.size(); i < simulated.calibration_s.size(); ++i) {
    const auto& row = cal.step_rows[i - cal.rows.size()];
    out.step_rows.push_back(
        {row.bytes, row.time_s, kNaN, simulated.calibration_s[i], ape_pct(row.time_s, simulated.calibration_s[i])});
  }
  out.mape_pct = cal_row.stats.mape_pct();
  out.max_ape_pct = cal_row.stats.ape_count > 0 ? cal_row.stats.max_ape_pct : kNaN;
  if (cal_row.stats.count > 0) rep.overall.push_back(cal_row.figures());
}

// T_com at the probed ranks, beside the simulated communication of a step that ran at the same rank (same stage,
// same rank ⇒ same P, Q and dense sizes). Probed ranks no step ran at have no simulated value.
void compare_tcom(const results::Measurements& m, const Patterns& patterns, const Simulated& simulated,
                  results::ValidateReport& rep) {
  for (const results::TcomPoint& pt : m.tcom_points) {
    double predicted = kNaN;
    for (std::size_t r = 0; r < m.runs.size() && std::isnan(predicted); ++r)
      for (std::size_t k = 0; k < m.runs[r].steps.size() && std::isnan(predicted); ++k)
        if (m.runs[r].steps[k].stages[static_cast<std::size_t>(pt.stage)].rank == pt.rank) {
          const auto& colls =
              simulated.patterns[patterns.of_step[r][k]].collective_s[static_cast<std::size_t>(pt.stage)];
          predicted = 0.0;
          for (double c : colls) predicted += c;
        }
    double fit = kNaN;
    for (const results::TcomFit& f : m.tcom_fit)
      if (f.stage == pt.stage) fit = f.eta_s * pt.rank + f.c_s;
    rep.tcom_points.push_back({pt.stage, pt.rank, pt.comm_s, fit, predicted, ape_pct(pt.comm_s, predicted)});
  }
  rep.tcom_fit = m.tcom_fit;
}

// The prediction of every pattern, as validate.json lists them.
std::vector<results::ValidatePattern> pattern_figures(const Patterns& patterns, const Simulated& simulated) {
  std::vector<results::ValidatePattern> out;
  for (std::size_t p = 0; p < patterns.distinct.size(); ++p) {
    const Prediction& pr = simulated.patterns[p];
    results::ValidatePattern& fig = out.emplace_back();
    fig.iteration_s = pr.iteration_s;
    for (std::size_t s = 0; s < patterns.distinct[p].stages.size(); ++s) {
      const StagePattern& sp = patterns.distinct[p].stages[s];
      results::ValidatePattern::Stage& stage = fig.stages.emplace_back();
      stage.sync_s = pr.sync_s[s];
      stage.compute_s = pr.compute_s[s];
      for (std::size_t i = 0; i < sp.collectives.size(); ++i)
        stage.collectives.push_back({sp.collectives[i].kind, sp.collectives[i].bytes, pr.collective_s[s][i]});
      for (const MatrixBatch& b : sp.matrices) stage.compressed_matrices += b.count;
    }
  }
  return out;
}

}  // namespace

results::ValidateReport compare(const results::Measurements& m, const Patterns& patterns, const Simulated& simulated) {
  results::ValidateReport rep;
  compare_steps(m, patterns, simulated, rep);
  compare_calibration(m, simulated, rep);
  compare_tcom(m, patterns, simulated, rep);
  rep.patterns = pattern_figures(patterns, simulated);
  rep.pattern_of_step = patterns.of_step;
  rep.verdict = verdict(rep.overall);
  return rep;
}

std::string verdict(const std::vector<results::ValidateRow>& overall) {
  std::string fails;
  std::string holds;
  double worst = 0.0;
  for (const results::ValidateRow& r : overall) {
    if (r.category == "calibration") continue;
    const double e = r.error_pct;
    if (std::isnan(e)) continue;
    const double target = r.category == "iteration" || r.category == "sync" ? kIterationTargetPct : kPartTargetPct;
    const std::string name = r.category == "sync"         ? "stage sync"
                             : r.category == "collective" ? "collectives"
                                                          : r.category;
    holds += (holds.empty() ? "" : ", ") + name + " " + results::fmt_f(e, 1) + " %";
    worst = std::max(worst, e);
    if (e > target) {
      fails += (fails.empty() ? "" : "; ") + name + " off by " + results::fmt_f(e, 1) + " % (target " +
               results::fmt_f(target, 0) + " %";
      if (!r.dominant.empty()) fails += ", mostly " + r.dominant;
      fails += ")";
    }
  }
  if (holds.empty()) return "nothing to compare";
  if (!fails.empty()) return "predictions do not hold here: " + fails;
  return "predictions hold within " + results::fmt_f(worst, 1) + " % here (" + holds + ")";
}

}  // namespace edgc::engine::validate
