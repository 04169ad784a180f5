#include "edgc/engine/validate.hpp"

#include <xbt/log.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

#include "edgc/core/error.hpp"
#include "edgc/results/table.hpp"
#include "edgc/sim/collectives.hpp"

XBT_LOG_NEW_DEFAULT_CATEGORY(edgc_validate, "edgc validate: live step patterns on the simulated cluster");

namespace edgc::engine::validate {
namespace {

using nlohmann::ordered_json;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Everything the rank actors share. Actors are not threads: plain shared data is safe.
struct SimState {
  const results::Measurements* m = nullptr;
  const Patterns* patterns = nullptr;
  const std::vector<std::vector<StageCompute>>* compute = nullptr;
  std::vector<sim::Group> stage_groups;                     // per stage, members by replica
  sim::Group calibration;                                   // the first calibration.ranks members of stage 0's group
  std::vector<results::Calibration::Row> calibration_rows;  // the calibration's rows, then its step rows
  sg4::BarrierPtr world;
  std::vector<std::vector<std::vector<double>>> shortest_s;  // [pattern][stage][collective], min over members
  std::vector<std::vector<double>> sync_s;                   // [pattern][stage], max over members
  std::vector<double> calibration_start_s;
  std::vector<double> calibration_end_s;
};

// One live rank: for every pattern, meet all ranks at the world barrier (live's barrier before each step), then
// synchronise its stage as PowerSgd::step did; then the calibration all-reduces, one per row.
class RankActor {
 public:
  RankActor(SimState* state, int rank) : state_(state), rank_(rank) {}

  void operator()() const {
    const results::RankPlace& place = state_->m->placement[static_cast<std::size_t>(rank_)];
    for (std::size_t p = 0; p < state_->patterns->distinct.size(); ++p) {
      state_->world->wait();
      const double t0 = sg4::Engine::get_clock();
      sync_stage(p, place.stage, place.replica);
      double& sync = state_->sync_s[p][static_cast<std::size_t>(place.stage)];
      sync = std::max(sync, sg4::Engine::get_clock() - t0);
    }
    const auto& rows = state_->calibration_rows;
    const bool member = place.stage == 0 && place.replica < state_->calibration.size();
    for (std::size_t i = 0; i < state_->calibration_start_s.size(); ++i) {
      state_->world->wait();
      state_->calibration_start_s[i] = sg4::Engine::get_clock();  // the same for every rank
      if (!member) continue;
      sim::all_reduce(state_->calibration, place.replica, static_cast<std::uint64_t>(rows[i].bytes));
      state_->calibration_end_s[i] = std::max(state_->calibration_end_s[i], sg4::Engine::get_clock());
    }
  }

 private:
  // The order of sim::StageSync (and of PowerSgd::step): ⅓ of the compression compute before the P all-reduce
  // (M = G + E, P = MQ), ⅓ after it (orthogonalisation, Q = MᵀP), ⅓ after the Q all-reduce (M̂ = PQᵀ, E = M − M̂).
  // The dense all-reduce goes where the stage issued it (PowerSgd sends it first). A third with no P or Q to
  // follow is slept at the end (never happens for live's steps: compute is 0 without compressed matrices).
  void sync_stage(std::size_t p, int stage, int replica) const {
    const auto s = static_cast<std::size_t>(stage);
    const StagePattern& sp = state_->patterns->distinct[p].stages[s];
    const StageCompute& c = (*state_->compute)[p][s];
    const double third_s = c.batch_s / 3.0;
    int thirds_left = 3;
    const auto think = [&] {
      if (third_s > 0) sg4::this_actor::sleep_for(third_s);
      --thirds_left;
    };
    const auto copy_half = [&] {
      if (c.copy_s > 0) sg4::this_actor::sleep_for(c.copy_s / 2);
    };
    int first_p = -1, last_p = -1, last_q = -1, dense = -1;
    for (int i = 0; i < static_cast<int>(sp.collectives.size()); ++i) {
      const std::string& kind = sp.collectives[static_cast<std::size_t>(i)].kind;
      if (kind == "P" && first_p < 0) first_p = i;
      if (kind == "P") last_p = i;
      if (kind == "Q") last_q = i;
      if (kind == "dense" && dense < 0) dense = i;
    }
    if (first_p < 0) think();
    const sim::Group& group = state_->stage_groups[s];
    for (int i = 0; i < static_cast<int>(sp.collectives.size()); ++i) {
      if (i == first_p) think();
      if (i == dense) copy_half();
      const double entered = sg4::Engine::get_clock();
      sim::all_reduce(group, replica, static_cast<std::uint64_t>(sp.collectives[static_cast<std::size_t>(i)].bytes));
      // Live records the SHORTEST duration of a call over the group's ranks: the last rank to arrive waits for
      // nobody, so its duration is the collective itself, not the skew between ranks. The same statistic here is
      // the duration counted from when the LAST member entered (a ring ends for everyone about then + its time),
      // so the compute before it, and a late stage, do not count as communication on either side.
      double& shortest = state_->shortest_s[p][s][static_cast<std::size_t>(i)];
      shortest = std::min(shortest, sg4::Engine::get_clock() - entered);
      if (i == dense) copy_half();
      if (i == last_p) think();
      if (i == last_q) think();
    }
    while (thirds_left > 0) think();
  }

  SimState* state_;
  int rank_;
};

// Row keys in print order: policy (run index), category, stage, collective kind.
enum Category { kCollective = 0, kSync = 1, kIteration = 2, kCompute = 3, kCalibration = 4 };
const char* category_name(int c) {
  static const char* const names[] = {"collective", "sync", "iteration", "compute", "calibration"};
  return names[c];
}
int kind_order(const std::string& kind) { return kind == "P" ? 0 : kind == "Q" ? 1 : 2; }

ordered_json number_or_null(double x) { return std::isfinite(x) ? ordered_json(x) : ordered_json(nullptr); }

ordered_json row_json(const Row& r) {
  ordered_json j = {{"category", r.category}};
  if (!r.policy.empty()) j["policy"] = r.policy;
  if (r.stage >= 0) j["stage"] = r.stage;
  if (!r.kind.empty()) j["kind"] = r.kind;
  j["count"] = r.stats.count;
  j["median_measured_s"] = number_or_null(r.stats.quantile_measured(0.5));
  j["p10_measured_s"] = number_or_null(r.stats.quantile_measured(0.1));
  j["p90_measured_s"] = number_or_null(r.stats.quantile_measured(0.9));
  j["mean_measured_s"] = number_or_null(r.stats.mean_measured());
  j["mean_predicted_s"] = number_or_null(r.stats.mean_predicted());
  j["error_pct"] = number_or_null(r.stats.error_pct());
  j["mape_pct"] = number_or_null(r.stats.mape_pct());
  j["max_ape_pct"] = number_or_null(r.stats.ape_count > 0 ? r.stats.max_ape_pct : kNaN);
  if (r.category == "sync" || r.category == "iteration") {
    const double n = static_cast<double>(r.stats.count);
    j["mean_difference_s"] = {
        {"collectives", r.delta_collectives_s / n}, {"compute", r.delta_compute_s / n}, {"other", r.delta_other_s / n}};
    j["dominant"] = r.dominant();
  }
  return j;
}

// Linear between order statistics (the type-7 quantile of R and numpy); NaN for no values.
double quantile(std::vector<double> v, double q) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const double at = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(at));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (at - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

double ape_pct(double measured, double predicted) {
  return measured > 0 ? std::abs(predicted - measured) / measured * 100.0 : kNaN;
}

std::string ms(double s) { return results::fmt_g(s * 1e3, 4); }

// A number of the report's JSON, NaN for null.
double num(const ordered_json& v) { return v.is_number() ? v.get<double>() : kNaN; }

// "collectives −0.061 ms": the dominant part of a sync or iteration row and its mean predicted − measured.
std::string dominant_text(const Row& r) {
  const std::string d = r.dominant();
  if (d.empty()) return "";
  const double sum = d == "collectives" ? r.delta_collectives_s : d == "compute" ? r.delta_compute_s : r.delta_other_s;
  const double mean_ms = sum / static_cast<double>(r.stats.count) * 1e3;
  return d + " " + (mean_ms >= 0 ? "+" : "") + results::fmt_g(mean_ms, 3) + " ms";
}

void print_rows(std::ostream& os, const std::vector<Row>& rows) {
  results::Table t({"category", "policy", "stage", "kind", "n", "measured ms", "p10-p90 ms", "predicted ms", "error %",
                    "step MAPE %", "dominant difference"});
  for (const Row& r : rows)
    t.add_row({r.category, r.policy.empty() ? "all" : r.policy, r.stage >= 0 ? std::to_string(r.stage) : "all",
               r.kind.empty() ? "" : r.kind, std::to_string(r.stats.count), ms(r.stats.quantile_measured(0.5)),
               ms(r.stats.quantile_measured(0.1)) + "-" + ms(r.stats.quantile_measured(0.9)),
               ms(r.stats.mean_predicted()), results::fmt_f(r.stats.error_pct(), 2),
               results::fmt_f(r.stats.mape_pct(), 2), dominant_text(r)});
  t.print(os);
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
  SimState st;
  st.m = &m;
  st.patterns = &patterns;
  st.compute = &compute;
  const auto groups = stage_groups(m);
  for (std::size_t s = 0; s < groups.size(); ++s) {
    sim::Group& g = st.stage_groups.emplace_back(sim::Group{{}, "val-s" + std::to_string(s)});
    for (int rank : groups[s]) g.hosts.push_back(platform.gpu(gpus[static_cast<std::size_t>(rank)]));
  }
  st.calibration.tag = "val-cal";
  if (m.calibration.ranks >= 2) {
    for (int i = 0; i < m.calibration.ranks; ++i)
      st.calibration.hosts.push_back(st.stage_groups[0].hosts[static_cast<std::size_t>(i)]);
    st.calibration_rows = m.calibration.rows;
    st.calibration_rows.insert(st.calibration_rows.end(), m.calibration.step_rows.begin(),
                               m.calibration.step_rows.end());
    st.calibration_start_s.assign(st.calibration_rows.size(), 0.0);
    st.calibration_end_s.assign(st.calibration_rows.size(), 0.0);
  }
  const std::size_t pp = static_cast<std::size_t>(m.pp);
  for (const StepPattern& p : patterns.distinct) {
    auto& shortest = st.shortest_s.emplace_back();
    for (const StagePattern& s : p.stages)
      shortest.emplace_back(s.collectives.size(), std::numeric_limits<double>::infinity());
  }
  st.sync_s.assign(patterns.distinct.size(), std::vector<double>(pp, 0.0));
  st.world = sg4::Barrier::create(static_cast<unsigned>(m.world_size));
  for (int r = 0; r < m.world_size; ++r)
    sg4::Actor::create("val-rank" + std::to_string(r), platform.gpu(gpus[static_cast<std::size_t>(r)]),
                       RankActor(&st, r));
  XBT_DEBUG("%zu step patterns, %zu calibration rows", patterns.distinct.size(), st.calibration_start_s.size());
  engine.run();

  Simulated out;
  for (std::size_t p = 0; p < patterns.distinct.size(); ++p) {
    Prediction pr;
    pr.collective_s = st.shortest_s[p];
    pr.sync_s = st.sync_s[p];
    for (const StageCompute& c : compute[p]) pr.compute_s.push_back(c.total_s());
    pr.iteration_s = *std::max_element(pr.sync_s.begin(), pr.sync_s.end());
    out.patterns.push_back(std::move(pr));
  }
  for (std::size_t i = 0; i < st.calibration_start_s.size(); ++i)
    out.calibration_s.push_back(st.calibration_end_s[i] - st.calibration_start_s[i]);
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

std::string Row::dominant() const {
  if (category != "sync" && category != "iteration") return "";
  const double c = std::abs(delta_collectives_s), k = std::abs(delta_compute_s), o = std::abs(delta_other_s);
  if (std::max({c, k, o}) <= 1e-9 * std::abs(stats.sum_measured)) return "";  // rounding: nothing to explain
  return c >= k && c >= o ? "collectives" : k >= o ? "compute" : "other";
}

Report compare(const results::Measurements& m, const Patterns& patterns, const Simulated& simulated) {
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
  Report rep;
  for (auto& [key, row] : rows) rep.rows.push_back(std::move(row));

  // The calibration: measured, the ring fit live derived the cluster file from, and the simulation of that file.
  const results::Calibration& cal = m.calibration;
  const double d = cal.ranks;
  rep.calibration = {{"ranks", cal.ranks},
                     {"latency_s", cal.latency_s},
                     {"bandwidth_Bps", cal.bandwidth_Bps},
                     {"rows", ordered_json::array()}};
  Row cal_row{category_name(kCalibration), "", -1, "", {}};
  for (std::size_t i = 0; i < std::min(simulated.calibration_s.size(), cal.rows.size()); ++i) {
    const auto& row = cal.rows[i];
    const double fit_s =
        cal.bandwidth_Bps > 0
            ? 2 * (d - 1) * cal.latency_s + 2 * (d - 1) / d * static_cast<double>(row.bytes) / cal.bandwidth_Bps
            : kNaN;
    cal_row.stats.add(row.time_s, simulated.calibration_s[i], static_cast<std::int64_t>(i));
    rep.calibration["rows"].push_back({{"bytes", row.bytes},
                                       {"measured_s", row.time_s},
                                       {"fit_s", number_or_null(fit_s)},
                                       {"predicted_s", simulated.calibration_s[i]},
                                       {"ape_pct", number_or_null(ape_pct(row.time_s, simulated.calibration_s[i]))}});
  }
  // The probe's in-step all-reduces (simulated after the isolated rows): not part of the calibration row.
  rep.calibration["step_rows"] = ordered_json::array();
  for (std::size_t i = cal.rows.size(); i < simulated.calibration_s.size(); ++i) {
    const auto& row = cal.step_rows[i - cal.rows.size()];
    rep.calibration["step_rows"].push_back(
        {{"bytes", row.bytes},
         {"measured_s", row.time_s},
         {"predicted_s", simulated.calibration_s[i]},
         {"ape_pct", number_or_null(ape_pct(row.time_s, simulated.calibration_s[i]))}});
  }
  rep.calibration["mape_pct"] = number_or_null(cal_row.stats.mape_pct());
  rep.calibration["max_ape_pct"] = number_or_null(cal_row.stats.ape_count > 0 ? cal_row.stats.max_ape_pct : kNaN);
  for (auto& [cat, row] : overall) rep.overall.push_back(std::move(row));
  if (cal_row.stats.count > 0) rep.overall.push_back(std::move(cal_row));

  // T_com at the probed ranks, beside the simulated communication of a step that ran at the same rank (same stage,
  // same rank ⇒ same P, Q and dense sizes). Probed ranks no step ran at have no simulated value.
  rep.tcom = {{"points", ordered_json::array()}, {"fit", ordered_json::array()}};
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
    rep.tcom["points"].push_back({{"stage", pt.stage},
                                  {"rank", pt.rank},
                                  {"measured_comm_s", pt.comm_s},
                                  {"fit_comm_s", number_or_null(fit)},
                                  {"predicted_comm_s", number_or_null(predicted)},
                                  {"ape_pct", number_or_null(ape_pct(pt.comm_s, predicted))}});
  }
  for (const results::TcomFit& f : m.tcom_fit) rep.tcom["fit"].push_back(results::to_json(f));
  return rep;
}

ordered_json report_json(const Report& report, const Patterns& patterns, const Simulated& simulated,
                         ordered_json header) {
  ordered_json j = {{"schema", kValidateSchema}};
  for (auto it = header.begin(); it != header.end(); ++it) j[it.key()] = *it;
  j["rows"] = ordered_json::array();
  for (const Row& r : report.rows) j["rows"].push_back(row_json(r));
  j["overall"] = ordered_json::array();
  for (const Row& r : report.overall) j["overall"].push_back(row_json(r));
  j["calibration"] = report.calibration;
  j["tcom"] = report.tcom;
  j["patterns"] = ordered_json::array();
  for (std::size_t p = 0; p < patterns.distinct.size(); ++p) {
    const Prediction& pr = simulated.patterns[p];
    ordered_json stages = ordered_json::array();
    for (std::size_t s = 0; s < patterns.distinct[p].stages.size(); ++s) {
      const StagePattern& sp = patterns.distinct[p].stages[s];
      ordered_json colls = ordered_json::array();
      for (std::size_t i = 0; i < sp.collectives.size(); ++i)
        colls.push_back({{"kind", sp.collectives[i].kind},
                         {"bytes", sp.collectives[i].bytes},
                         {"predicted_s", pr.collective_s[s][i]}});
      std::int64_t matrices = 0;
      for (const MatrixBatch& b : sp.matrices) matrices += b.count;
      stages.push_back({{"sync_s", pr.sync_s[s]},
                        {"compute_s", pr.compute_s[s]},
                        {"compressed_matrices", matrices},
                        {"collectives", std::move(colls)}});
    }
    j["patterns"].push_back({{"iteration_s", pr.iteration_s}, {"stages", std::move(stages)}});
  }
  j["pattern_of_step"] = patterns.of_step;
  j["verdict"] = verdict(report);
  return j;
}

std::string verdict(const Report& report) {
  std::string fails;
  std::string holds;
  double worst = 0.0;
  for (const Row& r : report.overall) {
    if (r.category == "calibration") continue;
    const double e = r.stats.error_pct();
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
      if (const std::string d = r.dominant(); !d.empty()) fails += ", mostly " + d;
      fails += ")";
    }
  }
  if (holds.empty()) return "nothing to compare";
  if (!fails.empty()) return "predictions do not hold here: " + fails;
  return "predictions hold within " + results::fmt_f(worst, 1) + " % here (" + holds + ")";
}

void print_report(std::ostream& os, const Report& report) {
  os << "error % = |predicted - median measured| / median measured per step pattern, weighted by steps (the model "
        "predicts the typical step; p10-p90 is the measured spread); step MAPE % = the same per step\n";
  print_rows(os, report.rows);
  os << "\noverall\n";
  print_rows(os, report.overall);
  const auto& cal_rows = report.calibration.at("rows");
  if (!cal_rows.empty()) {
    os << "\ncalibration: dense all-reduce over " << report.calibration.at("ranks").get<int>()
       << " ranks of stage 0 (fit = the ring alpha-beta fit, a summary; simulated = the cluster file's network, "
          "which prices the run)\n";
    results::Table t({"bytes", "measured ms", "fit ms", "simulated ms", "APE %"});
    for (const auto& r : cal_rows)
      t.add_row({std::to_string(r.at("bytes").get<std::int64_t>()), ms(num(r.at("measured_s"))), ms(num(r.at("fit_s"))),
                 ms(num(r.at("predicted_s"))), results::fmt_f(num(r.at("ape_pct")), 2)});
    t.print(os);
  }
  const auto& step_rows = report.calibration.at("step_rows");
  if (!step_rows.empty()) {
    os << "\nthe probe's all-reduces inside steps (median per size; the network profile uses these over their size "
          "range)\n";
    results::Table t({"bytes", "measured ms", "simulated ms", "APE %"});
    for (const auto& r : step_rows)
      t.add_row({std::to_string(r.at("bytes").get<std::int64_t>()), ms(num(r.at("measured_s"))),
                 ms(num(r.at("predicted_s"))), results::fmt_f(num(r.at("ape_pct")), 2)});
    t.print(os);
  }
  const auto& points = report.tcom.at("points");
  if (!points.empty()) {
    os << "\nT_com probes: measured P + Q + dense all-reduce time vs the simulated one of a step at the same rank\n";
    results::Table t({"stage", "rank", "measured ms", "fit ms", "simulated ms", "APE %"});
    for (const auto& p : points)
      t.add_row({std::to_string(p.at("stage").get<int>()), std::to_string(p.at("rank").get<int>()),
                 ms(num(p.at("measured_comm_s"))), ms(num(p.at("fit_comm_s"))), ms(num(p.at("predicted_comm_s"))),
                 results::fmt_f(num(p.at("ape_pct")), 2)});
    t.print(os);
    for (const auto& f : report.tcom.at("fit"))
      os << "  fit stage " << f.at("stage").get<int>() << ": T_com(r) = " << ms(f.at("eta_s").get<double>())
         << " ms · r + " << ms(f.at("c_s").get<double>()) << " ms (eta +- " << ms(f.at("eta_stderr_s").get<double>())
         << " ms, R² of P + Q " << results::fmt_f(f.at("r2").get<double>(), 3) << ", " << f.at("points").get<int>()
         << " points)" << (f.at("significant").get<bool>() ? "" : ": the slope is noise, not for DAC") << "\n";
  }
  os << "\nverdict: " << verdict(report) << "\n";
}

}  // namespace edgc::engine::validate
