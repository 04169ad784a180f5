#include "edgc/engine/whole_run_plan.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "edgc/core/error.hpp"
#include "edgc/core/isolated.hpp"
#include "edgc/sim/engine_info.hpp"
#include "edgc/sim/layout.hpp"
#include "edgc/sim/platform.hpp"

namespace edgc::engine {
namespace {

// A progress line on stderr for a simulation that takes a while, when stderr is a terminal: from 2 s on, once a
// second, "edgc: simulating 3/15 (64/64/64/full, 4096 GPUs): 100 % of passes, 1024 of 4096 GPUs through the syncs,
// 12 s", erased when the run ends (sim::IterationProgress).
class ProgressLine {
 public:
  using Clock = std::chrono::steady_clock;
  explicit ProgressLine(std::string label) : label_(std::move(label)) {}
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine() {
    if (shown_) std::fputs("\r\033[K", stderr);
  }
  void operator()(const sim::IterationProgress& p) {
    const Clock::time_point now = Clock::now();
    if (now < next_) return;
    next_ = now + std::chrono::seconds(1);
    shown_ = true;
    const double percent =
        p.passes_total > 0 ? 100.0 * static_cast<double>(p.passes_done) / static_cast<double>(p.passes_total) : 0.0;
    std::fprintf(stderr, "\r\033[Kedgc: simulating %s: %.0f %% of passes, %lld of %lld GPUs through the syncs, %.0f s",
                 label_.c_str(), percent, static_cast<long long>(p.gpus_done), static_cast<long long>(p.gpus_total),
                 std::chrono::duration<double>(now - start_).count());
    std::fflush(stderr);
  }

 private:
  std::string label_;
  Clock::time_point start_ = Clock::now();
  Clock::time_point next_ = start_ + std::chrono::seconds(2);
  bool shown_ = false;
};

}  // namespace

using nlohmann::ordered_json;

ordered_json iteration_to_json(const sim::IterationResult& r, bool with_timeline) {
  ordered_json j = {
      {"iteration_s", r.iteration_s}, {"pipeline_end_s", r.pipeline_end_s}, {"stages", ordered_json::array()}};
  for (const sim::StageResult& s : r.stages)
    j["stages"].push_back({{"powersgd_rank", s.powersgd_rank},
                           {"last_backward_end_s", s.last_backward_end_s},
                           {"dp_sync_s", s.dp_sync_s},
                           {"finish_s", s.finish_s},
                           {"dp_comm_s", s.dp_comm_s},
                           {"exposed_comm_s", s.exposed_comm_s},
                           {"compression_s", s.compression_s},
                           {"compute_s", s.compute_s},
                           {"tp_comm_s", s.tp_comm_s},
                           {"bubble_s", s.bubble_s},
                           {"bubble_fraction", s.bubble_fraction},
                           {"sync_end_s", s.sync_end_s},
                           {"embedding_sync_s", s.embedding_sync_s},
                           {"optimizer_s", s.optimizer_s},
                           {"pp_rank", s.pp_rank},
                           {"pp_send_bytes", s.pp_send_bytes},
                           {"pp_comm_s", s.pp_comm_s},
                           {"pp_compression_s", s.pp_compression_s},
                           {"param_gather_wait_s", s.param_gather_wait_s}});
  for (std::size_t i = 0; i < r.stages.size(); ++i) {  // a mixture of experts' figures, only where there are any
    const sim::StageResult& s = r.stages[i];
    if (s.all_to_all_s > 0 || s.expert_sync_s > 0 || s.expert_param_gather_s > 0) {
      ordered_json& x = j["stages"][i];
      x["all_to_all_s"] = s.all_to_all_s;
      x["expert_sync_s"] = s.expert_sync_s;
      x["expert_param_gather_s"] = s.expert_param_gather_s;
      x["expert_rank"] = s.expert_rank;
    }
  }
  if (with_timeline) {
    ordered_json ev = ordered_json::array();
    for (const sim::TimelineEvent& e : r.timeline) ev.push_back({e.rank, e.name, e.category, e.start_s, e.end_s});
    j["timeline"] = std::move(ev);
  }
  return j;
}

sim::IterationResult iteration_from_json(const nlohmann::json& j) {
  sim::IterationResult r;
  r.iteration_s = j.at("iteration_s").get<double>();
  r.pipeline_end_s = j.at("pipeline_end_s").get<double>();
  for (const auto& s : j.at("stages")) {
    sim::StageResult x;
    x.powersgd_rank = s.at("powersgd_rank").get<int>();
    x.last_backward_end_s = s.at("last_backward_end_s").get<double>();
    x.dp_sync_s = s.at("dp_sync_s").get<double>();
    x.finish_s = s.at("finish_s").get<double>();
    x.dp_comm_s = s.at("dp_comm_s").get<double>();
    x.exposed_comm_s = s.at("exposed_comm_s").get<double>();
    x.compression_s = s.at("compression_s").get<double>();
    x.compute_s = s.at("compute_s").get<double>();
    x.tp_comm_s = s.at("tp_comm_s").get<double>();
    x.bubble_s = s.at("bubble_s").get<double>();
    x.bubble_fraction = s.at("bubble_fraction").get<double>();
    x.sync_end_s = s.at("sync_end_s").get<double>();
    x.embedding_sync_s = s.at("embedding_sync_s").get<double>();
    x.optimizer_s = s.at("optimizer_s").get<double>();
    x.pp_rank = s.at("pp_rank").get<int>();
    x.pp_send_bytes = s.at("pp_send_bytes").get<double>();
    x.param_gather_wait_s = s.at("param_gather_wait_s").get<double>();
    x.pp_comm_s = s.at("pp_comm_s").get<double>();
    x.pp_compression_s = s.at("pp_compression_s").get<double>();
    x.all_to_all_s = s.value("all_to_all_s", 0.0);
    x.expert_sync_s = s.value("expert_sync_s", 0.0);
    x.expert_param_gather_s = s.value("expert_param_gather_s", 0.0);
    x.expert_rank = s.value("expert_rank", 0);
    r.stages.push_back(x);
  }
  if (j.contains("timeline"))
    for (const auto& e : j.at("timeline"))
      r.timeline.push_back({e.at(0).get<int>(), e.at(1).get<std::string>(), e.at(2).get<std::string>(),
                            e.at(3).get<double>(), e.at(4).get<double>()});
  return r;
}

std::vector<sim::IterationResult> simulate_plans(const SimulationSetup& setup,
                                                 const std::vector<sim::DpSyncPlan>& plans, bool timeline, int jobs) {
  std::vector<std::function<std::string()>> work;
  const bool on_terminal = ::isatty(STDERR_FILENO) == 1;
  for (std::size_t i = 0; i < plans.size(); ++i)
    work.emplace_back([&setup, plan = plans[i], timeline, on_terminal, i, n = plans.size()]() {
      const std::unique_ptr<sim::sg4::Engine> engine_ptr = sim::boot_engine(setup.guard_pages);
      sim::sg4::Engine& engine = *engine_ptr;
      sim::IterationOptions options;
      options.record_timeline = timeline;
      options.variability = setup.variability;
      options.where = setup.where;
      const sim::Platform platform =
          sim::build_folding_platform(engine, setup.cluster, setup.network, setup.parallel, options);
      std::optional<ProgressLine> progress;
      if (on_terminal) {
        progress.emplace(std::to_string(i + 1) + "/" + std::to_string(n) + " (" + plan_label(plan) + ", " +
                         std::to_string(setup.cluster.total_gpus()) + " GPUs)");
        options.on_progress = [&progress](const sim::IterationProgress& p) { (*progress)(p); };
      }
      const sim::IterationResult r =
          sim::simulate_iteration(engine, platform, setup.model, setup.parallel, setup.cost, plan, options);
      return iteration_to_json(r, timeline).dump();
    });
  const std::vector<std::string> out = core::run_isolated(work, jobs);
  std::vector<sim::IterationResult> results;
  results.reserve(out.size());
  for (const std::string& s : out) results.push_back(iteration_from_json(nlohmann::json::parse(s)));
  return results;
}

std::string plan_label(const sim::DpSyncPlan& plan) {
  std::string out;
  for (const sim::StageSync& s : plan) {
    if (!out.empty()) out += '/';
    out += s.powersgd_rank == 0 ? std::string("full") : std::to_string(s.powersgd_rank);
  }
  return out;
}

ordered_json chrome_trace(const std::vector<sim::DpSyncPlan>& plans, const std::vector<sim::IterationResult>& results,
                          const sim::ParallelSpec& parallel, int gpus_per_node) {
  const sim::Layout layout(parallel, gpus_per_node);
  ordered_json events = ordered_json::array();
  for (std::size_t p = 0; p < plans.size(); ++p) {
    events.push_back({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", p},
                      {"args",
                       {{"name", "ranks " + plan_label(plans[p]) + " (iteration " +
                                     std::to_string(results[p].iteration_s) + " s)"}}}});
    events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", p}, {"args", {{"sort_index", p}}}});
    for (int r = 0; r < layout.world_size(); ++r) {
      const sim::RankCoord c = layout.coord_of(r);
      events.push_back({{"ph", "M"},
                        {"name", "thread_name"},
                        {"pid", p},
                        {"tid", r},
                        {"args",
                         {{"name", "gpu " + std::to_string(r) + " (stage " + std::to_string(c.pp) + ", dp " +
                                       std::to_string(c.dp) + ", tp " + std::to_string(c.tp) + ")"}}}});
    }
    for (const sim::TimelineEvent& e : results[p].timeline)
      events.push_back({{"ph", "X"},
                        {"name", e.name},
                        {"cat", e.category},
                        {"pid", p},
                        {"tid", e.rank},
                        {"ts", e.start_s * 1e6},
                        {"dur", (e.end_s - e.start_s) * 1e6}});
  }
  return {{"displayTimeUnit", "ms"}, {"traceEvents", std::move(events)}};
}

}  // namespace edgc::engine
