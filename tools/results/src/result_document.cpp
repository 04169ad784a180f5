#include "edgc/results/result_document.hpp"

#include <cmath>
#include <set>
#include <utility>

#include "edgc/core/atomic_file.hpp"
#include "edgc/core/error.hpp"
#include "edgc/results/run_figures.hpp"

namespace edgc::results {
namespace {

using nlohmann::ordered_json;

ordered_json optional_int(const std::optional<std::int64_t>& v) { return v ? ordered_json(*v) : ordered_json(nullptr); }

ordered_json nan_as_null(double v) { return std::isnan(v) ? ordered_json(nullptr) : ordered_json(v); }

ordered_json cluster_json(const ResultCluster& c) {
  return {{"name", c.name},   {"gpus", c.gpus},
          {"nodes", c.nodes}, {"gpus_per_node", c.gpus_per_node},
          {"gpu", c.gpu},     {"price_per_gpu_hour_usd", c.price_per_gpu_hour_usd}};
}

ordered_json parallelism_json(const ResultParallelism& p) {
  ordered_json j = {{"tp", p.tp}, {"pp", p.pp}, {"dp", p.dp}};
  if (p.microbatches > 0) j["microbatches"] = p.microbatches;
  if (!p.schedule.empty()) j["schedule"] = p.schedule;
  if (p.virtual_stages > 0) j["virtual_stages"] = p.virtual_stages;
  if (!p.order.empty()) j["order"] = p.order;
  return j;
}

ordered_json run_settings_json(const ResultRunSettings& r) {
  return {{"iterations", r.iterations}, {"window", r.window}, {"alpha", r.alpha}, {"beta", r.beta},
          {"r_min", r.r_min},           {"r_max", r.r_max},   {"step", r.step}};
}

ordered_json entropy_json(const EntropySeries& e) {
  ordered_json stages = ordered_json::array();
  for (const StageEntropy& s : e.stages) {
    ordered_json g = ordered_json::array();
    ordered_json h = ordered_json::array();
    for (const double v : s.gaussian_nats) g.push_back(nan_as_null(v));
    for (const double v : s.histogram_nats) h.push_back(nan_as_null(v));
    stages.push_back({{"stage", s.stage}, {"gaussian_nats", std::move(g)}, {"histogram_nats", std::move(h)}});
  }
  return {{"iterations", e.iterations}, {"stages", std::move(stages)}};
}

ordered_json run_json(const ResultRun& run) {
  ordered_json j;
  write_figures(run, j);
  if (run.compressed_iterations) j["compressed_iterations"] = *run.compressed_iterations;
  if (!run.stage_comm_latency_s.empty()) j["stage_comm_latency_s"] = run.stage_comm_latency_s;
  if (run.breakdown) j["breakdown"] = breakdown_json(*run.breakdown);
  j["warmup_end_iteration"] = optional_int(run.warmup_end_iteration);
  j["rank_schedule"] = rank_schedule_json(run.rank_schedule);
  for (const auto& [key, value] : run.detail.items()) j[key] = value;
  return j;
}

// ---- reading ----

sim::IterationBreakdown read_breakdown(const JsonNode& b) {
  // embedding_sync_s, optimizer_s, entropy_s and the pp_* figures are absent from documents written before they were
  // modelled: 0 there.
  const auto zero_if_absent = [&](const char* key) {
    const double v = b.optional_number(key);
    return std::isfinite(v) ? v : 0.0;
  };
  return {.compute_s = b.number_at("compute_s"),
          .tp_comm_s = b.number_at("tp_comm_s"),
          .bubble_s = b.number_at("bubble_s"),
          .exposed_dp_comm_s = b.number_at("exposed_dp_comm_s"),
          .embedding_sync_s = zero_if_absent("embedding_sync_s"),
          .optimizer_s = zero_if_absent("optimizer_s"),
          .exposed_compression_s = b.number_at("exposed_compression_s"),
          .entropy_s = zero_if_absent("entropy_s"),
          .compression_s = b.optional_number("compression_s"),
          .pp_comm_s = zero_if_absent("pp_comm_s"),
          .pp_compression_s = zero_if_absent("pp_compression_s"),
          .pp_send_bytes = zero_if_absent("pp_send_bytes"),
          .all_to_all_s = zero_if_absent("all_to_all_s"),
          .expert_sync_s = zero_if_absent("expert_sync_s")};
}

std::vector<RankSegment> read_rank_schedule(const JsonNode& s) {
  std::vector<RankSegment> out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const JsonNode seg = s[i];
    RankSegment rs{seg.at("begin").integer(), seg.at("end").integer(), {}};
    if (rs.end < rs.begin)
      seg.at("end").fail("ends at " + std::to_string(rs.end) + ", before its begin " + std::to_string(rs.begin));
    const JsonNode ranks = seg.at("ranks");
    for (std::size_t k = 0; k < ranks.size(); ++k) {
      rs.ranks.push_back(ranks[k].integer());
      if (rs.ranks.back() < 0) ranks[k].fail("a rank must be >= 0 (0 = uncompressed)");
    }
    out.push_back(std::move(rs));
  }
  return out;
}

ResultRun read_run(const JsonNode& r) {
  ResultRun run;
  read_figures(r, true, run);
  if (const auto c = r.find("compressed_iterations")) run.compressed_iterations = c->integer(0);
  if (const auto s = r.find("stage_comm_latency_s"))
    for (std::size_t i = 0; i < s->size(); ++i) run.stage_comm_latency_s.push_back((*s)[i].number());
  if (const auto b = r.find("breakdown")) run.breakdown = read_breakdown(*b);
  if (const auto w = r.find("warmup_end_iteration")) run.warmup_end_iteration = w->integer();
  if (const auto s = r.find("rank_schedule")) run.rank_schedule = read_rank_schedule(*s);
  const std::set<std::string> typed = {"compressed_iterations", "stage_comm_latency_s", "breakdown",
                                       "warmup_end_iteration", "rank_schedule"};
  for (const std::string& key : r.member_keys())
    if (!is_figure_key(key) && typed.count(key) == 0) run.detail[key] = r.at(key).raw();
  return run;
}

EntropySeries read_entropy(const JsonNode& e) {
  EntropySeries out;
  const JsonNode its = e.at("iterations");
  for (std::size_t i = 0; i < its.size(); ++i) out.iterations.push_back(its[i].integer());
  const JsonNode stages = e.at("stages");
  for (std::size_t s = 0; s < stages.size(); ++s) {
    const JsonNode st = stages[s];
    StageEntropy se;
    se.stage = st.at("stage").integer();
    for (auto [key, values] : {std::pair{"gaussian_nats", &se.gaussian_nats}, {"histogram_nats", &se.histogram_nats}}) {
      const JsonNode arr = st.at(key);
      if (arr.size() != out.iterations.size())
        arr.fail("has " + std::to_string(arr.size()) + " values, expected " + std::to_string(out.iterations.size()) +
                 " (one per entry of entropy_series.iterations)");
      for (std::size_t i = 0; i < arr.size(); ++i) values->push_back(arr[i].number_or_nan());
    }
    out.stages.push_back(std::move(se));
  }
  return out;
}

ResultCluster read_cluster(const JsonNode& c) {
  ResultCluster out;
  out.name = c.optional_string("name");
  out.gpus = c.at("gpus").integer(0);
  out.nodes = c.optional_integer("nodes");
  out.gpus_per_node = c.optional_integer("gpus_per_node");
  out.gpu = c.at("gpu").string();
  if (const auto p = c.find("price_per_gpu_hour_usd")) out.price_per_gpu_hour_usd = p->non_negative();
  return out;
}

ResultParallelism read_parallelism(const JsonNode& p) {
  ResultParallelism out;
  out.tp = p.at("tp").integer(1);
  out.pp = p.at("pp").integer(1);
  out.dp = p.at("dp").integer(1);
  out.microbatches = p.optional_integer("microbatches");
  out.schedule = p.optional_string("schedule");
  out.virtual_stages = p.optional_integer("virtual_stages");
  out.order = p.optional_string("order");
  return out;
}

ResultRunSettings read_run_settings(const JsonNode& r) {
  ResultRunSettings out;
  out.iterations = r.at("iterations").integer(0);
  out.window = r.optional_integer("window");
  if (const auto a = r.find("alpha")) out.alpha = a->number();
  if (const auto b = r.find("beta")) out.beta = b->number();
  out.r_min = r.optional_integer("r_min");
  out.r_max = r.optional_integer("r_max");
  out.step = r.optional_integer("step");
  return out;
}

// The members read into typed fields; every other member is kept in `sections` as written.
const std::set<std::string> kTypedMembers = {"schema",      "source",
                                             "scenario",    "cluster",
                                             "model",       "parallelism",
                                             "run",         "simulations",
                                             "composition", "simulated_iterations",
                                             "runs",        "entropy_series",
                                             "warnings"};

}  // namespace

const ResultRun* ResultDocument::find_run(const std::string& policy) const {
  for (const ResultRun& r : runs)
    if (r.policy == policy) return &r;
  return nullptr;
}

RunFigures figures_vs_baseline(std::string policy, double iteration_time_s, double comm_latency_s,
                               double training_time_s, double base_comm_latency_s, double base_training_time_s) {
  RunFigures f;
  f.policy = std::move(policy);
  f.iteration_time_s = iteration_time_s;
  f.comm_latency_s = comm_latency_s;
  f.training_time_s = training_time_s;
  f.speedup_vs_none = training_time_s > 0 ? base_training_time_s / training_time_s : 0.0;
  f.comm_latency_reduction_vs_none = reduction(base_comm_latency_s, comm_latency_s);
  f.training_time_reduction_vs_none = reduction(base_training_time_s, training_time_s);
  return f;
}

ordered_json rank_schedule_json(const std::vector<RankSegment>& schedule) {
  ordered_json out = ordered_json::array();
  for (const RankSegment& s : schedule) out.push_back({{"begin", s.begin}, {"end", s.end}, {"ranks", s.ranks}});
  return out;
}

ordered_json to_json(const ResultDocument& doc) {
  ordered_json j = {{"schema", kResultSchema}};
  if (doc.source != "simulate") j["source"] = doc.source;
  j["scenario"] = doc.scenario;
  if (doc.cluster) j["cluster"] = cluster_json(*doc.cluster);
  if (doc.model_name) {
    j["model"] = {{"name", *doc.model_name}};
    if (doc.model_parameters) j["model"]["parameters"] = *doc.model_parameters;
    if (!doc.model_architecture.is_null()) j["model"]["architecture"] = doc.model_architecture;
  }
  if (doc.parallelism) j["parallelism"] = parallelism_json(*doc.parallelism);
  if (doc.run) j["run"] = run_settings_json(*doc.run);
  for (const auto& [key, value] : doc.sections.items()) j[key] = value;
  if (doc.simulations) j["simulations"] = *doc.simulations;
  if (!doc.composition.empty()) j["composition"] = doc.composition;
  if (doc.simulated_iterations) j["simulated_iterations"] = *doc.simulated_iterations;
  j["runs"] = ordered_json::array();
  for (const ResultRun& r : doc.runs) j["runs"].push_back(run_json(r));
  if (doc.entropy_series) j["entropy_series"] = entropy_json(*doc.entropy_series);
  if (doc.warnings) j["warnings"] = *doc.warnings;
  return j;
}

ResultDocument parse_result_document(const JsonNode& root) {
  root.check_schema(kResultSchema);
  ResultDocument doc;
  const JsonNode runs = root.at("runs");
  if (runs.size() == 0) runs.fail("is empty: nothing was compared");
  for (std::size_t i = 0; i < runs.size(); ++i) doc.runs.push_back(read_run(runs[i]));
  if (const auto n = root.find("source")) doc.source = n->one_of({"simulate", "live"});
  if (const auto n = root.find("scenario")) doc.scenario = n->string();
  if (const auto n = root.find("cluster")) doc.cluster = read_cluster(*n);
  if (const auto n = root.find("model")) {
    doc.model_name = n->at("name").string();
    if (const auto p = n->find("parameters")) doc.model_parameters = p->non_negative();
    if (const auto a = n->find("architecture")) doc.model_architecture = a->raw();
  }
  if (const auto n = root.find("parallelism")) doc.parallelism = read_parallelism(*n);
  if (const auto n = root.find("run")) doc.run = read_run_settings(*n);
  if (const auto n = root.find("simulations")) doc.simulations = n->integer(0);
  if (const auto n = root.find("composition")) doc.composition = n->one_of({"stage-separable", "exact"});
  if (const auto n = root.find("simulated_iterations")) doc.simulated_iterations = n->integer(0);
  if (const auto n = root.find("entropy_series")) doc.entropy_series = read_entropy(*n);
  if (const auto n = root.find("warnings")) {
    doc.warnings.emplace();
    for (std::size_t i = 0; i < n->size(); ++i) doc.warnings->push_back((*n)[i].string());
  }
  for (const std::string& key : root.member_keys())
    if (kTypedMembers.count(key) == 0) doc.sections[key] = root.at(key).raw();
  return doc;
}

ResultDocument read_result_document(const std::filesystem::path& file) {
  const ordered_json j = read_json_file(file);
  return parse_result_document(JsonNode(j, file.string()));
}

}  // namespace edgc::results
