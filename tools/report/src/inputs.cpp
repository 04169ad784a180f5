#include "edgc/report/inputs.hpp"

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "edgc/core/error.hpp"
#include "edgc/report/svg.hpp"
#include "edgc/results/json_reader.hpp"
#include "edgc/results/sweep_lines.hpp"

namespace edgc::report {
namespace {

namespace fs = std::filesystem;
// Ordered: parameters and fields keep the order of the file in tables and messages.
using json = nlohmann::ordered_json;
using results::JsonNode;

/// Strings as such; numbers labelled exactly when integral, else with 4 significant digits (random sweeps
/// draw values like 0.4807023266571021); anything else (booleans, bundles of settings) by its JSON text.
ParamValue read_param(const JsonNode& n) {
  const json& j = n.raw();
  if (j.is_string()) return {std::nullopt, j.get<std::string>()};
  if (!j.is_number()) return {std::nullopt, j.dump()};
  const double v = n.number();
  const bool integral = j.is_number_integer() || (v == std::floor(v) && std::abs(v) < 1e15);
  return {v, integral ? std::to_string(static_cast<std::int64_t>(v)) : fmt_compact(v, 4)};
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError(file.string(), "", "cannot be read");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The setup line of a simulate result, from whatever descriptive fields are well formed.
std::string describe_setup(const json& r) {
  const auto get = [&](const char* a, const char* b) -> const json* {
    const auto i = r.find(a);
    if (i == r.end() || !i->is_object()) return nullptr;
    const auto k = i->find(b);
    return k == i->end() ? nullptr : &*k;
  };
  std::string out;
  const auto append = [&](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  const json* gpus = get("cluster", "gpus");
  const json* gpu = get("cluster", "gpu");
  if (gpus && gpu && gpus->is_number() && gpu->is_string())
    append(std::to_string(gpus->get<std::int64_t>()) + " \xC3\x97 " + gpu->get<std::string>());
  const json* tp = get("parallelism", "tp");
  const json* pp = get("parallelism", "pp");
  const json* dp = get("parallelism", "dp");
  if (tp && pp && dp && tp->is_number() && pp->is_number() && dp->is_number())
    append("TP " + tp->dump() + " \xC3\x97 PP " + pp->dump() + " \xC3\x97 DP " + dp->dump());
  const json* model = get("model", "name");
  const json* params = get("model", "parameters");
  if (model && model->is_string())
    append("model " + model->get<std::string>() +
           (params && params->is_number() ? " (" + fmt_compact(params->get<double>(), 3) + " parameters)" : ""));
  const json* iters = get("run", "iterations");
  if (iters && iters->is_number()) append(fmt_compact(iters->get<double>(), 4) + " iterations");
  return out;
}

Breakdown read_breakdown(const JsonNode& b) {
  return {b.number_at("compute_s"),
          b.number_at("tp_comm_s"),
          b.number_at("bubble_s"),
          b.number_at("exposed_dp_comm_s"),
          b.number_at("exposed_compression_s"),
          b.optional_number("compression_s")};
}

// The figures every run entry has: policy, training time and speedup are required, and so are the iteration
// time and comm latency when `times_required` (result.json); the rest are optional (NaN when absent).
void read_figures(const JsonNode& r, bool times_required, RunFigures& f) {
  f.policy = r.at("policy").string();
  f.training_time_s = r.number_at("training_time_s");
  f.speedup_vs_none = r.number_at("speedup_vs_none");
  f.iteration_time_s = times_required ? r.number_at("iteration_time_s") : r.optional_number("iteration_time_s");
  f.comm_latency_s = times_required ? r.number_at("comm_latency_s") : r.optional_number("comm_latency_s");
  f.comm_latency_reduction_vs_none = r.optional_number("comm_latency_reduction_vs_none");
  f.training_time_reduction_vs_none = r.optional_number("training_time_reduction_vs_none");
  f.gpu_hours = r.optional_number("gpu_hours");
  f.cost_usd = r.optional_number("cost_usd");
}

SimulatedRun read_run(const JsonNode& r) {
  SimulatedRun run;
  read_figures(r, true, run);
  if (const auto b = r.find("breakdown")) run.breakdown = read_breakdown(*b);
  if (const auto w = r.find("warmup_end_iteration")) run.warmup_end_iteration = w->integer();
  if (const auto s = r.find("rank_schedule")) {
    for (std::size_t i = 0; i < s->size(); ++i) {
      const JsonNode seg = (*s)[i];
      RankSegment rs{seg.at("begin").integer(), seg.at("end").integer(), {}};
      if (rs.end < rs.begin)
        seg.at("end").fail("ends at " + std::to_string(rs.end) + ", before its begin " + std::to_string(rs.begin));
      const JsonNode ranks = seg.at("ranks");
      for (std::size_t k = 0; k < ranks.size(); ++k) {
        rs.ranks.push_back(ranks[k].integer());
        if (rs.ranks.back() < 0) ranks[k].fail("a rank must be >= 0 (0 = uncompressed)");
      }
      run.rank_schedule.push_back(std::move(rs));
    }
  }
  return run;
}

EntropySeries read_entropy(const JsonNode& e) {
  EntropySeries out;
  const JsonNode its = e.at("iterations");
  for (std::size_t i = 0; i < its.size(); ++i) out.iterations.push_back(static_cast<double>(its[i].integer()));
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

SweepRun read_sweep_run(const JsonNode& r) {
  SweepRun run;
  read_figures(r, false, run);
  run.training_time_s_ci95 = r.optional_number("training_time_s_ci95");
  return run;
}

SweepPoint read_sweep_point(const JsonNode& p) {
  SweepPoint out;
  out.point = p.at("point").integer();
  const JsonNode params = p.at("params");
  for (const std::string& key : params.member_keys()) out.params.emplace_back(key, read_param(params.at(key)));
  if (const auto e = p.find("error")) {
    out.error = e->string();
    if (out.error.empty()) out.error = "failed (no message)";
    return out;
  }
  const JsonNode runs = p.at("runs");
  if (runs.size() == 0) runs.fail("is empty");
  for (std::size_t i = 0; i < runs.size(); ++i) out.runs.push_back(read_sweep_run(runs[i]));
  return out;
}

}  // namespace

const ParamValue* SweepPoint::param(const std::string& key) const {
  for (const auto& [k, v] : params)
    if (k == key) return &v;
  return nullptr;
}

SimulateResult read_simulate_result(const fs::path& file) {
  const std::string where = file.string();
  const json j = results::parse_json(read_text(file), where);
  const JsonNode root(j, where);
  root.check_schema("edgc.result/1");
  SimulateResult out;
  out.setup = describe_setup(j);
  const JsonNode runs = root.at("runs");
  if (runs.size() == 0) runs.fail("is empty: nothing was compared");
  for (std::size_t i = 0; i < runs.size(); ++i) out.runs.push_back(read_run(runs[i]));
  if (const auto e = root.find("entropy_series")) out.entropy = read_entropy(*e);
  return out;
}

Sweep read_sweep(const fs::path& dir) {
  const std::string spec_file = (dir / "sweep.json").string();
  const json j = results::parse_json(read_text(spec_file), spec_file);
  const JsonNode root(j, spec_file);
  root.check_schema("edgc.sweep/1");
  Sweep out;
  out.base = root.optional_string("base");
  out.mode = root.optional_string("mode");
  out.planned_points = root.optional_integer("points");
  if (const auto r = root.find("repeats")) out.repeats = r->integer();
  if (const auto ps = root.find("policies"))
    for (std::size_t i = 0; i < ps->size(); ++i) out.policies.push_back((*ps)[i].string());
  const JsonNode axes = root.at("axes");
  for (std::size_t i = 0; i < axes.size(); ++i) {
    SweepAxis a{axes[i].at("key").string(), {}};
    if (const auto vs = axes[i].find("values"))
      for (std::size_t k = 0; k < vs->size(); ++k) a.values.push_back(read_param((*vs)[k]));
    out.axes.push_back(std::move(a));
  }

  const fs::path results = dir / "results.jsonl";
  if (!fs::exists(results)) return out;
  out.has_results = true;
  // The one strict reader of the sweep's lines (also `sweep --resume`'s); the typed reading names the line.
  const results::SweepLines sweep_lines = results::read_sweep_lines(results);
  out.truncated_last_line = sweep_lines.truncated_last_line;
  for (std::size_t i = 0; i < sweep_lines.lines.size(); ++i) {
    const json line = sweep_lines.lines[i];  // the reader's ordered kind (the line's keys are sorted already)
    out.points.push_back(read_sweep_point(
        JsonNode(line, results.string(), results::line_label(static_cast<std::size_t>(sweep_lines.line_numbers[i])))));
  }
  return out;
}

Plan read_plan(const fs::path& file) {
  const std::string where = file.string();
  const json j = results::parse_json(read_text(file), where);
  const JsonNode root(j, where);
  root.check_schema("edgc.plan/1");
  Plan out;
  if (const auto t = root.find("target")) {
    if (const auto it = t->find("iterations"))
      out.target = fmt_compact(static_cast<double>(it->integer()), 4) + " iterations";
    else if (const auto tok = t->find("tokens"))
      out.target = fmt_compact(tok->number(), 4) + " tokens";
  }
  const JsonNode options = root.at("options");
  for (std::size_t i = 0; i < options.size(); ++i) {
    const JsonNode o = options[i];
    PlanOption p;
    p.label = o.at("label").string();
    p.training_time_s = o.number_at("training_time_s");
    p.cost_usd = o.number_at("cost_usd");
    p.speedup_vs_none = o.optional_number("speedup_vs_none");
    p.gpu = o.optional_string("gpu");
    p.policy = o.optional_string("policy");
    p.gpus = o.optional_integer("gpus");
    p.tp = o.optional_integer("tp");
    p.pp = o.optional_integer("pp");
    p.dp = o.optional_integer("dp");
    if (const auto pareto = o.find("pareto")) p.pareto = pareto->boolean();
    out.options.push_back(std::move(p));
  }
  if (const auto v = root.find("verdicts"))
    for (std::size_t i = 0; i < v->size(); ++i) out.verdicts.push_back((*v)[i].string());
  return out;
}

}  // namespace edgc::report
