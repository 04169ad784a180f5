// Gradient fidelity of rank schedules (fidelity.hpp): equal-energy rank mapping, memoised PowerSGD replays of the
// trace, and the figures combined from them.
#include "edgc/engine/fidelity.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <sstream>

#include "cache_entry.hpp"
#include "edgc/core/atomic_file.hpp"
#include "edgc/core/cqm.hpp"
#include "edgc/core/error.hpp"
#include "edgc/core/memo.hpp"
#include "edgc/engine/trace_health.hpp"
#include "edgc/kernels/backend.hpp"
#include "edgc/kernels/buffer.hpp"
#include "edgc/kernels/communicator.hpp"
#include "edgc/kernels/powersgd.hpp"
#include "edgc/traces/reader.hpp"
#include "fidelity_replay.hpp"

namespace edgc::engine {

using nlohmann::json;
using nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

using replay::Checkpoint;
using replay::checkpoint_of;
using replay::CheckpointMemo;
using replay::fork_lanes;
using replay::Lane;
using replay::PendingReplay;
using replay::replay_key;
using replay::ReplayPoint;
using replay::ReplaySpec;
using replay::squared_distance;
using replay::StageScratch;
using replay::step_lane;

json points_to_json(const std::vector<ReplayPoint>& pts) {
  json out = json::array();
  for (const ReplayPoint& p : pts) out.push_back({p.g2, p.err2, p.ghat2, p.e2});
  return out;
}

// The stored replay, or nullopt when its layout does not match (then it is run again and replaced).
std::optional<std::vector<ReplayPoint>> points_from_json(const json& j, std::size_t points, std::size_t matrices) {
  if (!j.is_object() || !j.contains("points") || !j["points"].is_array() || j["points"].size() != points)
    return std::nullopt;
  std::vector<ReplayPoint> out;
  try {
    for (const json& p : j["points"]) {
      ReplayPoint q{p.at(0).is_null() ? std::nan("") : p.at(0).get<double>(), {}, {}, {}};
      for (auto [k, v] : {std::pair{1, &q.err2}, {2, &q.ghat2}, {3, &q.e2}}) {
        for (const json& x : p.at(static_cast<std::size_t>(k)))
          v->push_back(x.is_null() ? std::nan("") : x.get<double>());
        if (v->size() != matrices) return std::nullopt;
      }
      out.push_back(std::move(q));
    }
  } catch (const json::exception&) {
    return std::nullopt;
  }
  return out;
}

std::optional<double> mean_of(const std::vector<double>& v) {
  if (v.empty()) return std::nullopt;
  double s = 0.0;
  for (const double x : v) s += x;
  return s / static_cast<double>(v.size());
}

// What the replays read of a trace, kept in memory for the process (a sweep worker's next points replay other rank
// sequences on the same trace): per captured point, each trace stage's ‖G‖² and the values of every fully captured
// matrix (indexed like the manifest's tensors; empty for the others). Loaded once, only when it fits the budget.
struct TraceMatrices {
  std::vector<std::vector<double>> stage_g2;            // [point][trace stage]
  std::vector<std::vector<std::vector<float>>> values;  // [point][tensor]
};
constexpr std::uint64_t kTraceMatricesBudget = 256ULL << 20;  // bytes of matrix values held in memory at most
constexpr std::size_t kMaxMemoReplays = 8192;                 // replays held in memory at most (a few kB each)

// The process's memos (core::memo_enabled): replays by key, and the matrices of the last trace replayed.
struct ProcessMemo {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<const std::vector<ReplayPoint>>> replays;
  std::string trace_key;
  std::shared_ptr<const TraceMatrices> trace;
  std::mutex replay_mutex;  // held by a pass that uses the checkpoints (and their backend)
  CheckpointMemo checkpoints;
};
ProcessMemo& process_memo() {
  static ProcessMemo memo;
  return memo;
}

}  // namespace

struct FidelityMeter::State {
  FidelitySetup setup;
  std::string trace_abs;
  std::string trace_id;  // trace_abs and its manifest's size and time: a trace rewritten in place is another trace
  std::optional<traces::Manifest> manifest;
  std::int64_t steps = 0;
  std::vector<std::int64_t> sim_iteration;                       // per captured point
  std::vector<std::vector<std::size_t>> stage_full;              // per trace stage: its fully captured tensors
  std::vector<std::vector<std::size_t>> stage_matrices;          // per trace stage: its fully captured ≥2-D tensors
  std::vector<std::vector<core::RankErrorModel>> matrix_models;  // per trace stage, per matrix
  std::vector<std::optional<core::RankErrorModel>> sim_models;   // per simulated stage
  std::map<std::string, std::shared_ptr<const std::vector<ReplayPoint>>> memo;
  std::map<std::pair<int, int>, std::vector<double>> equal_energy;  // (simulated stage, rank) → r' per matrix
  int replays = 0;
  std::int64_t steps_run = 0;  // PowerSGD steps of the replays

  bool measured() const { return manifest.has_value(); }
  std::size_t points() const { return sim_iteration.size(); }

  const std::vector<double>& mapped(int stage, int rank) {
    auto [it, fresh] = equal_energy.try_emplace({stage, rank});
    if (fresh) {
      const auto ts = static_cast<std::size_t>(setup.stage_map[static_cast<std::size_t>(stage)]);
      for (const core::RankErrorModel& m : matrix_models[ts])
        it->second.push_back(core::equivalent_rank(rank, *sim_models[static_cast<std::size_t>(stage)], m));
    }
    return it->second;
  }

  fs::path entry(const std::string& key) const {
    return fs::path(setup.cache_dir) / ("fidelity-" + hex_digest(key) + ".json");
  }

  void run_missing(const std::vector<std::pair<std::string, ReplaySpec>>& wanted);
  // Returns the PowerSGD steps it took.
  std::int64_t replay_pass(std::vector<PendingReplay>& todo, kernels::Backend& backend, CheckpointMemo* kept) const;
  std::vector<Lane> start_lanes(std::vector<PendingReplay>& todo, CheckpointMemo* kept,
                                const std::function<std::unique_ptr<kernels::PowerSgd>(std::size_t)>& make) const;
  // True when `key`'s points are known without a replay (this meter, the process memo or the cache directory).
  bool recall(const std::string& key, const ReplaySpec& spec);
  std::shared_ptr<const TraceMatrices> trace_matrices() const;
  void remember(const std::string& key, std::shared_ptr<const std::vector<ReplayPoint>> points);

  // Pieces of measure(), in its order.
  struct StagePlan;
  struct PointFigures {  // per captured point: relative error, captured energy, residual
    std::vector<double> rel, cap, res;
  };
  double weight(std::size_t stage) const;  // the stage's share of the parameters
  StagePlan plan_stage(const sim::RunSchedule& schedule, std::size_t stage,
                       std::vector<std::pair<std::string, ReplaySpec>>& wanted);
  StageFidelity measured_stage(std::size_t stage, const StagePlan& plan, PointFigures& figures) const;
  void add_cqm(const sim::RunSchedule& schedule, Fidelity& f);
  void add_run_figures(const std::vector<StagePlan>& plans, const std::vector<PointFigures>& figures,
                       Fidelity& f) const;
};

FidelityMeter::FidelityMeter(FidelitySetup setup) : s_(std::make_unique<State>()) {
  State& s = *s_;
  s.setup = std::move(setup);
  for (const auto& [m, n] : s.setup.shapes)
    s.sim_models.push_back(m > 0 && n > 0 ? std::optional<core::RankErrorModel>(std::in_place, m, n) : std::nullopt);
  if (s.setup.trace_dir.empty()) return;
  traces::Manifest man = s.setup.manifest ? std::move(*s.setup.manifest) : traces::read_manifest(s.setup.trace_dir);
  s.setup.manifest.reset();
  if (man.iterations.empty()) return;
  const auto ns = static_cast<std::size_t>(man.num_stages);
  s.stage_full.resize(ns);
  s.stage_matrices.resize(ns);
  s.matrix_models.resize(ns);
  for (std::size_t k = 0; k < man.tensors.size(); ++k) {
    const traces::TensorInfo& t = man.tensors[k];
    if (t.mode != traces::CaptureMode::kFull) continue;
    const auto st = static_cast<std::size_t>(t.stage);
    s.stage_full[st].push_back(k);
    if (t.shape.size() < 2) continue;
    s.stage_matrices[st].push_back(k);
    s.matrix_models[st].emplace_back(t.shape[0], t.numel() / t.shape[0]);
  }
  // Measured only when every stage the run reads has a whole matrix to compress.
  for (std::size_t st = 0; st < s.setup.stage_map.size(); ++st) {
    const int ts = s.setup.stage_map[st];
    if (ts < 0 || static_cast<std::size_t>(ts) >= ns || s.stage_matrices[static_cast<std::size_t>(ts)].empty() ||
        !s.sim_models[st])
      return;
  }
  s.steps = man.iterations.back().iteration + 1;
  for (const traces::IterationInfo& it : man.iterations) {
    const long double f = static_cast<long double>(it.iteration) / static_cast<long double>(s.steps);
    s.sim_iteration.push_back(
        std::min<std::int64_t>(s.setup.run_iterations - 1, static_cast<std::int64_t>(f * s.setup.run_iterations)));
  }
  s.trace_abs = fs::absolute(s.setup.trace_dir).lexically_normal().string();
  s.trace_id = trace_identity(s.trace_abs);
  s.manifest = std::move(man);
}

FidelityMeter::~FidelityMeter() = default;

int FidelityMeter::replays() const noexcept { return s_->replays; }
std::int64_t FidelityMeter::replayed_steps() const noexcept { return s_->steps_run; }
std::int64_t FidelityMeter::trace_steps() const noexcept { return s_->steps; }
std::int64_t FidelityMeter::trace_points() const noexcept { return static_cast<std::int64_t>(s_->points()); }
double FidelityMeter::trace_parameters() const { return s_->manifest ? traced_model_parameters(*s_->manifest) : 0.0; }

bool FidelityMeter::State::recall(const std::string& key, const ReplaySpec& spec) {
  if (memo.count(key) > 0) return true;
  if (core::memo_enabled()) {
    ProcessMemo& pm = process_memo();
    const std::lock_guard<std::mutex> lock(pm.mutex);
    if (const auto it = pm.replays.find(key); it != pm.replays.end()) {
      memo.emplace(key, it->second);
      return true;
    }
  }
  if (setup.cache_dir.empty()) return false;
  const std::shared_ptr<const json> j = read_json_if_present(entry(key));
  if (!j) return false;
  const std::size_t matrices = stage_matrices[static_cast<std::size_t>(spec.trace_stage)].size();
  auto pts = points_from_json(*j, points(), matrices);
  if (!pts) return false;
  remember(key, std::make_shared<const std::vector<ReplayPoint>>(std::move(*pts)));
  return true;
}

// One pass over the trace for every wanted replay not memoised (replay_pass); each is then stored. With the process's
// memos on, host-backend passes take up where the longest replayed prefix of their ranks left off (CheckpointMemo).
void FidelityMeter::State::run_missing(const std::vector<std::pair<std::string, ReplaySpec>>& wanted) {
  std::vector<PendingReplay> todo;
  for (const auto& want : wanted) {
    const std::string& key = want.first;  // not a structured binding: the lambda below captures it
    const ReplaySpec& spec = want.second;
    if (std::any_of(todo.begin(), todo.end(), [&](const PendingReplay& r) { return r.key == key; }) ||
        recall(key, spec))
      continue;
    todo.push_back({key, &spec, {}, {}});
  }
  if (todo.empty()) return;
  if (core::memo_enabled() && setup.backend == "cpu") {
    ProcessMemo& pm = process_memo();
    const std::lock_guard<std::mutex> lock(pm.replay_mutex);
    steps_run += replay_pass(todo, pm.checkpoints.backend(), &pm.checkpoints);
  } else {
    // Made before the replays, so that their buffers are freed while it still exists.
    const std::unique_ptr<kernels::Backend> backend = kernels::make_backend(setup.backend);
    steps_run += replay_pass(todo, *backend, nullptr);
  }
  for (PendingReplay& r : todo) {
    ++replays;
    if (!setup.cache_dir.empty())
      write_file_atomic(entry(r.key), json{{"points", points_to_json(r.points)}}.dump() + "\n");
    remember(r.key, std::make_shared<const std::vector<ReplayPoint>>(std::move(r.points)));
  }
}

// The pass's first lanes: per trace stage, the replays replayed from the start, and per checkpoint (the longest
// prefix of a replay's ranks the process kept), the replays continuing from it, which start with its points.
std::vector<Lane> FidelityMeter::State::start_lanes(
    std::vector<PendingReplay>& todo, CheckpointMemo* kept,
    const std::function<std::unique_ptr<kernels::PowerSgd>(std::size_t)>& make) const {
  std::vector<Lane> lanes;
  for (std::size_t k = 0; k < todo.size(); ++k) {
    PendingReplay& r = todo[k];
    const auto ts = static_cast<std::size_t>(r.spec->trace_stage);
    const Checkpoint* from = nullptr;
    std::size_t start = 0;
    if (kept != nullptr) {
      r.point_ends = replay_key(trace_id, setup.backend, setup.seed, *r.spec).point_ends;
      for (std::size_t p = points() - 1; p-- > 0 && from == nullptr;) {
        from = kept->find(r.key.substr(0, r.point_ends[p]));
        start = p + 1;
      }
      if (from == nullptr) start = 0;
    }
    const std::string from_key = from != nullptr ? r.key.substr(0, r.point_ends[start - 1]) : std::string();
    if (from != nullptr) r.points = from->points;
    const auto it = std::find_if(lanes.begin(), lanes.end(),
                                 [&](const Lane& l) { return l.trace_stage == ts && l.from == from_key; });
    if (it != lanes.end()) {
      it->replays.push_back(k);
      continue;
    }
    lanes.push_back({ts, start, from_key, make(ts), {k}});
    if (from != nullptr) lanes.back().psgd->copy_state_from(*from->psgd);
  }
  return lanes;
}

// Replays whose ranks agree up to a point share one compressor up to there (a lane) and fork where they part, so a
// prefix common to many rank schedules is replayed once; with `kept` a lane also starts from the longest prefix an
// earlier pass of the process replayed, and leaves its own prefixes there. The figures are bit-identical to one
// compressor per replay from the first point (PowerSgd::copy_state_from). Per captured iteration each lane copies its
// stage's matrices (G) into the stage's buffers, sets the ranks that changed and runs one PowerSGD step on a group of
// one (fidelity.hpp: data-parallel averaging does not change the figures); every replay of the lane gets the point.
std::int64_t FidelityMeter::State::replay_pass(std::vector<PendingReplay>& todo, kernels::Backend& backend,
                                               CheckpointMemo* kept) const {
  kernels::PowerSgdConfig cfg;
  cfg.seed = setup.seed;
  cfg.rank = 0;
  const bool device = backend.device_memory();
  const auto make = [&](std::size_t ts) {
    std::vector<std::vector<std::int64_t>> shapes;
    for (const std::size_t k : stage_matrices[ts]) shapes.push_back(manifest->tensors[k].shape);
    return std::make_unique<kernels::PowerSgd>(backend, shapes, cfg);
  };
  std::vector<Lane> lanes = start_lanes(todo, kept, make);
  std::map<std::size_t, StageScratch> scratch;
  for (const Lane& lane : lanes) {
    if (scratch.count(lane.trace_stage) > 0) continue;
    StageScratch& s = scratch[lane.trace_stage];
    for (const std::size_t m : stage_matrices[lane.trace_stage]) {
      s.host.emplace_back(static_cast<std::size_t>(manifest->tensors[m].numel()));
      if (device) s.device.emplace_back(backend, s.host.back().size());
    }
    for (std::size_t i = 0; i < s.host.size(); ++i)
      s.spans.push_back(device ? s.device[i].span() : std::span<float>(s.host[i]));
  }
  // The trace from memory when the process holds it, else read point by point.
  const std::shared_ptr<const TraceMatrices> held = trace_matrices();
  std::optional<traces::TraceReader> reader;
  if (!held) reader.emplace(setup.trace_dir);
  traces::IterationData data;
  std::vector<double> stage_g2(stage_full.size());
  std::int64_t taken = 0;
  const std::size_t first = std::min_element(lanes.begin(), lanes.end(), [](const Lane& a, const Lane& b) {
                              return a.start < b.start;
                            })->start;
  for (std::size_t p = first; p < points(); ++p) {
    if (held) {
      stage_g2 = held->stage_g2[p];
    } else {
      reader->read(p, data);
      for (std::size_t ts = 0; ts < stage_full.size(); ++ts) {
        stage_g2[ts] = 0.0;
        for (const std::size_t k : stage_full[ts]) stage_g2[ts] += squared_distance(data.tensors[k].values);
      }
    }
    fork_lanes(lanes, todo, p, make);
    for (Lane& lane : lanes) {
      if (lane.start > p) continue;
      std::vector<const std::vector<float>*> g;
      for (const std::size_t k : stage_matrices[lane.trace_stage])
        g.push_back(held ? &held->values[p][k] : &data.tensors[k].values);
      const PendingReplay& front = todo[lane.replays.front()];
      ReplayPoint pt = step_lane(*lane.psgd, front.spec->ranks[p], g, scratch.at(lane.trace_stage), device);
      ++taken;
      pt.g2 = stage_g2[lane.trace_stage];
      for (const std::size_t k : lane.replays) todo[k].points.push_back(pt);
      if (kept == nullptr || p + 1 == points()) continue;
      const std::string prefix = front.key.substr(0, front.point_ends[p]);
      if (!kept->contains(prefix))
        kept->keep(prefix, checkpoint_of(*lane.psgd, front.points, [&] { return make(lane.trace_stage); }));
    }
  }
  return taken;
}

void FidelityMeter::State::remember(const std::string& key, std::shared_ptr<const std::vector<ReplayPoint>> points) {
  if (core::memo_enabled()) {
    ProcessMemo& pm = process_memo();
    const std::lock_guard<std::mutex> lock(pm.mutex);
    if (pm.replays.size() < kMaxMemoReplays) pm.replays.emplace(key, points);
  }
  memo.emplace(key, std::move(points));
}

// The replays' view of the trace held in memory (loaded on first use), or null: memos off, or over the budget.
std::shared_ptr<const TraceMatrices> FidelityMeter::State::trace_matrices() const {
  if (!core::memo_enabled()) return nullptr;
  std::uint64_t bytes = 0;
  for (const std::vector<std::size_t>& mats : stage_matrices)
    for (const std::size_t k : mats) bytes += static_cast<std::uint64_t>(manifest->tensors[k].numel()) * sizeof(float);
  if (bytes * points() > kTraceMatricesBudget) return nullptr;
  const std::string key = trace_id + '|' + std::to_string(points()) + '|' + std::to_string(manifest->tensors.size());
  ProcessMemo& pm = process_memo();
  const std::lock_guard<std::mutex> lock(pm.mutex);
  if (pm.trace && pm.trace_key == key) return pm.trace;
  auto t = std::make_shared<TraceMatrices>();
  traces::TraceReader reader(setup.trace_dir);
  traces::IterationData data;
  for (std::size_t p = 0; p < points(); ++p) {
    reader.read(p, data);
    std::vector<double> g2(stage_full.size(), 0.0);
    for (std::size_t ts = 0; ts < stage_full.size(); ++ts)
      for (const std::size_t k : stage_full[ts]) g2[ts] += squared_distance(data.tensors[k].values);
    t->stage_g2.push_back(std::move(g2));
    std::vector<std::vector<float>> v(manifest->tensors.size());
    for (const std::vector<std::size_t>& mats : stage_matrices)
      for (const std::size_t k : mats) v[k] = std::move(data.tensors[k].values);
    t->values.push_back(std::move(v));
  }
  pm.trace_key = key;
  pm.trace = std::move(t);  // one trace at a time: the previous one's memory goes
  return pm.trace;
}

// One simulated stage of one schedule: the rank at every captured point, and the two replays around each
// equal-energy rank.
struct FidelityMeter::State::StagePlan {
  std::vector<int> ranks;              // simulated rank per point
  std::vector<std::vector<double>> w;  // [point][matrix]: weight of the ⌈r'⌉ replay
  std::vector<std::int64_t> below_one;
  std::string lo_key, hi_key;
};

double FidelityMeter::State::weight(std::size_t stage) const {
  double weight_sum = 0.0;
  for (const double w : setup.stage_parameters) weight_sum += w;
  return weight_sum > 0.0 ? setup.stage_parameters[stage] / weight_sum : 1.0 / static_cast<double>(setup.shapes.size());
}

FidelityMeter::State::StagePlan FidelityMeter::State::plan_stage(
    const sim::RunSchedule& schedule, std::size_t st, std::vector<std::pair<std::string, ReplaySpec>>& wanted) {
  StagePlan sp;
  const int ts = setup.stage_map[st];
  const std::size_t nmat = stage_matrices[static_cast<std::size_t>(ts)].size();
  ReplaySpec lo{ts, {}};
  ReplaySpec hi{ts, {}};
  bool any = false;
  for (std::size_t p = 0; p < points(); ++p) {
    const sim::StageSync& sync = schedule.plan_at(sim_iteration[p])[st];
    const int r = std::max(sync.powersgd_rank, sync.expert_rank);  // a mixture of experts' restricted plans
    sp.ranks.push_back(r);
    std::vector<int> l(nmat, 0);
    std::vector<int> h(nmat, 0);
    std::vector<double> w(nmat, 0.0);
    bool below = false;
    if (r > 0) {
      any = true;
      const std::vector<double>& eq = mapped(static_cast<int>(st), r);
      for (std::size_t i = 0; i < nmat; ++i) {
        const auto cap = static_cast<double>(matrix_models[static_cast<std::size_t>(ts)][i].max_rank());
        double x = std::clamp(eq[i], 1.0, cap);
        if (std::abs(x - std::round(x)) < 1e-6) x = std::round(x);  // a whole rank up to the inverse's precision
        below = below || eq[i] < 1.0;
        l[i] = static_cast<int>(std::floor(x));
        h[i] = static_cast<int>(std::ceil(x));
        w[i] = x - l[i];
      }
    }
    sp.below_one.push_back(below ? 1 : 0);
    lo.ranks.push_back(std::move(l));
    hi.ranks.push_back(std::move(h));
    sp.w.push_back(std::move(w));
  }
  if (!any) return sp;  // never compressed: exact, no replay
  sp.lo_key = replay_key(trace_id, setup.backend, setup.seed, lo).key;
  sp.hi_key = replay_key(trace_id, setup.backend, setup.seed, hi).key;
  wanted.emplace_back(sp.lo_key, std::move(lo));
  wanted.emplace_back(sp.hi_key, std::move(hi));
  return sp;
}

StageFidelity FidelityMeter::State::measured_stage(std::size_t st, const StagePlan& sp, PointFigures& fig) const {
  StageFidelity sf;
  sf.stage = static_cast<int>(st);
  if (!measured()) return sf;
  const std::size_t npoints = points();
  sf.trace_stage = setup.stage_map[st];
  fig.rel.assign(npoints, 0.0);
  fig.cap.assign(npoints, std::nan(""));
  fig.res.assign(npoints, 0.0);
  if (sp.lo_key.empty()) return sf;
  const std::vector<ReplayPoint>& lo = *memo.at(sp.lo_key);
  const std::vector<ReplayPoint>& hi = *memo.at(sp.hi_key);
  std::vector<double> r_c, c_c, e_c;
  for (std::size_t p = 0; p < npoints; ++p) {
    double err2 = 0.0, ghat2 = 0.0, e2 = 0.0;
    for (std::size_t i = 0; i < lo[p].err2.size(); ++i) {
      const double w = sp.w[p][i];
      err2 += (1.0 - w) * lo[p].err2[i] + w * hi[p].err2[i];
      ghat2 += (1.0 - w) * lo[p].ghat2[i] + w * hi[p].ghat2[i];
      e2 += (1.0 - w) * lo[p].e2[i] + w * hi[p].e2[i];
    }
    const double g2 = lo[p].g2;
    const bool ok = std::isfinite(g2) && g2 > 0.0 && std::isfinite(err2) && std::isfinite(e2);
    fig.rel[p] = ok ? std::sqrt(err2 / g2) : std::nan("");
    fig.res[p] = ok ? std::sqrt(e2 / g2) : std::nan("");
    if (sp.ranks[p] == 0 || !ok) continue;
    fig.cap[p] = ghat2 + e2 > 0.0 ? ghat2 / (ghat2 + e2) : 1.0;
    r_c.push_back(fig.rel[p]);
    c_c.push_back(fig.cap[p]);
    e_c.push_back(fig.res[p]);
    sf.below_rank_one += sp.below_one[p];
  }
  sf.points = static_cast<std::int64_t>(r_c.size());
  sf.relative_error = mean_of(r_c);
  if (!r_c.empty()) sf.relative_error_max = *std::max_element(r_c.begin(), r_c.end());
  sf.captured_energy = mean_of(c_c);
  sf.residual = mean_of(e_c);
  return sf;
}

void FidelityMeter::State::add_cqm(const sim::RunSchedule& schedule, Fidelity& f) {
  const std::size_t stages = setup.shapes.size();
  double cqm_sum = 0.0;
  std::int64_t cqm_iters = 0;
  std::vector<double> stage_cqm_sum(stages, 0.0);
  std::vector<std::int64_t> stage_cqm_iters(stages, 0);
  for (const sim::RunSegment& seg : schedule.segments()) {
    double g_run = 0.0;
    bool compressed = false;
    for (std::size_t st = 0; st < stages && st < seg.plan.size(); ++st) {
      const int r = seg.plan[st].powersgd_rank;
      if (r <= 0 || !sim_models[st]) continue;
      compressed = true;
      const double g = sim_models[st]->g(r);
      g_run += weight(st) * g;
      stage_cqm_sum[st] += std::sqrt(g) * static_cast<double>(seg.iterations());
      stage_cqm_iters[st] += seg.iterations();
      StageFidelity& sf = f.stages[st];
      if (std::none_of(sf.ranks.begin(), sf.ranks.end(), [&](const RankMapping& m) { return m.rank == r; })) {
        RankMapping m{r, std::sqrt(g), 0.0, 0.0};
        if (measured()) {
          const std::vector<double>& eq = mapped(static_cast<int>(st), r);
          m.trace_rank_min = *std::min_element(eq.begin(), eq.end());
          m.trace_rank_max = *std::max_element(eq.begin(), eq.end());
        }
        sf.ranks.push_back(m);
      }
    }
    if (!compressed) continue;
    cqm_sum += std::sqrt(g_run) * static_cast<double>(seg.iterations());
    cqm_iters += seg.iterations();
  }
  for (std::size_t st = 0; st < stages; ++st) {
    StageFidelity& sf = f.stages[st];
    std::sort(sf.ranks.begin(), sf.ranks.end(),
              [](const RankMapping& a, const RankMapping& b) { return a.rank < b.rank; });
    if (stage_cqm_iters[st] > 0) sf.cqm_relative_error = stage_cqm_sum[st] / static_cast<double>(stage_cqm_iters[st]);
  }
  if (cqm_iters > 0) f.cqm_relative_error = cqm_sum / static_cast<double>(cqm_iters);
  if (!f.cqm_relative_error && cqm_iters == 0) f.cqm_relative_error = 0.0;
}

// The run's measured figures: per captured point where any stage is compressed, stages weighted by parameters.
void FidelityMeter::State::add_run_figures(const std::vector<StagePlan>& plans, const std::vector<PointFigures>& figs,
                                           Fidelity& f) const {
  std::vector<double> r_c, c_c, e_c;
  for (std::size_t p = 0; p < points(); ++p) {
    bool compressed = false;
    double e2 = 0.0, res2 = 0.0, capw = 0.0, capsum = 0.0;
    for (std::size_t st = 0; st < figs.size(); ++st) {
      compressed = compressed || plans[st].ranks[p] > 0;
      e2 += weight(st) * figs[st].rel[p] * figs[st].rel[p];
      res2 += weight(st) * figs[st].res[p] * figs[st].res[p];
      if (!std::isnan(figs[st].cap[p])) {
        capw += weight(st);
        capsum += weight(st) * figs[st].cap[p];
      }
    }
    if (!compressed) continue;
    if (!std::isfinite(e2) || !std::isfinite(res2)) {
      ++f.unmeasured_points;
      continue;
    }
    r_c.push_back(std::sqrt(e2));
    e_c.push_back(std::sqrt(res2));
    if (capw > 0.0) c_c.push_back(capsum / capw);
  }
  f.points = static_cast<std::int64_t>(r_c.size());
  if (r_c.empty() && f.unmeasured_points > 0) return;  // compressed, but nothing finite to measure: absent
  f.relative_error = r_c.empty() ? std::optional<double>(0.0) : mean_of(r_c);
  f.relative_error_max = r_c.empty() ? 0.0 : *std::max_element(r_c.begin(), r_c.end());
  f.captured_energy = r_c.empty() ? std::optional<double>(1.0) : mean_of(c_c);
  f.residual = r_c.empty() ? std::optional<double>(0.0) : mean_of(e_c);
}

std::vector<Fidelity> FidelityMeter::measure(const std::vector<const sim::RunSchedule*>& schedules) {
  State& s = *s_;
  const std::size_t stages = s.setup.shapes.size();
  std::vector<std::vector<State::StagePlan>> plans(schedules.size(), std::vector<State::StagePlan>(stages));
  if (s.measured()) {
    std::vector<std::pair<std::string, ReplaySpec>> wanted;
    for (std::size_t k = 0; k < schedules.size(); ++k)
      for (std::size_t st = 0; st < stages; ++st) plans[k][st] = s.plan_stage(*schedules[k], st, wanted);
    s.run_missing(wanted);
  }
  std::vector<Fidelity> out;
  for (std::size_t k = 0; k < schedules.size(); ++k) {
    Fidelity f;
    f.source = s.measured() ? "trace" : "cqm";
    // Measured, per point and stage: relative error, captured energy, residual (NaN: not compressed there).
    std::vector<State::PointFigures> figs(stages);
    for (std::size_t st = 0; st < stages; ++st) f.stages.push_back(s.measured_stage(st, plans[k][st], figs[st]));
    s.add_cqm(*schedules[k], f);
    if (s.measured()) s.add_run_figures(plans[k], figs, f);
    out.push_back(std::move(f));
  }
  return out;
}

namespace {

ordered_json opt(const std::optional<double>& v) { return v ? ordered_json(*v) : ordered_json(nullptr); }

void figures_json(const FidelityFigures& f, ordered_json& j) {
  j["points"] = f.points;
  if (f.unmeasured_points > 0) j["unmeasured_points"] = f.unmeasured_points;
  j["relative_error"] = opt(f.relative_error);
  j["relative_error_max"] = opt(f.relative_error_max);
  j["captured_energy"] = opt(f.captured_energy);
  j["residual"] = opt(f.residual);
  j["cqm_relative_error"] = opt(f.cqm_relative_error);
}

}  // namespace

ordered_json to_json(const Fidelity& f) {
  ordered_json j = {{"source", f.source}};
  figures_json(f, j);
  ordered_json stages = ordered_json::array();
  for (const StageFidelity& s : f.stages) {
    ordered_json e = {{"stage", s.stage}, {"trace_stage", s.trace_stage >= 0 ? ordered_json(s.trace_stage) : nullptr}};
    figures_json(s, e);
    e["below_rank_one"] = s.below_rank_one;
    ordered_json ranks = ordered_json::array();
    for (const RankMapping& m : s.ranks) {
      ordered_json r = {{"rank", m.rank}, {"cqm_relative_error", m.cqm_relative_error}};
      if (f.source == "trace") {
        r["trace_rank_min"] = m.trace_rank_min;
        r["trace_rank_max"] = m.trace_rank_max;
      }
      ranks.push_back(std::move(r));
    }
    e["ranks"] = std::move(ranks);
    stages.push_back(std::move(e));
  }
  j["stages"] = std::move(stages);
  return j;
}

}  // namespace edgc::engine
