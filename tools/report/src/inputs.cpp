#include "edgc/report/inputs.hpp"

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "edgc/core/error.hpp"
#include "edgc/report/svg.hpp"
#include "edgc/results/sweep_lines.hpp"

namespace edgc::report {
namespace {

namespace fs = std::filesystem;
// Ordered: parameters and fields keep the order of the file in tables and messages.
using json = nlohmann::ordered_json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A JSON value with its place in the input ("runs[2].breakdown.compute_s" in "out/result.json", line 5 for
// JSON lines), so that every complaint names file, line and field.
class Node {
 public:
  Node(const json& j, std::string file, std::string line = "", std::string path = "")
      : j_(&j), file_(std::move(file)), line_(std::move(line)), path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& detail) const {
    std::string field = line_;
    if (!path_.empty()) field += (field.empty() ? "" : ": ") + path_;
    throw ConfigError(file_, field, detail);
  }
  const json& raw() const { return *j_; }
  bool is_null() const { return j_->is_null(); }

  Node at(const std::string& key) const {
    require_object();
    const auto it = j_->find(key);
    if (it == j_->end()) child(key, kMissing_).fail("missing");
    return child(key, *it);
  }
  /// The member, or nothing when it is absent or null.
  std::optional<Node> find(const std::string& key) const {
    require_object();
    const auto it = j_->find(key);
    if (it == j_->end() || it->is_null()) return std::nullopt;
    return child(key, *it);
  }
  std::size_t size() const {
    if (!j_->is_array()) fail("expected an array, got " + describe());
    return j_->size();
  }
  Node operator[](std::size_t i) const { return {(*j_)[i], file_, line_, path_ + "[" + std::to_string(i) + "]"}; }

  double number() const {
    if (!j_->is_number()) fail("expected a number, got " + describe());
    const double v = j_->get<double>();
    if (!std::isfinite(v)) fail("expected a finite number, got " + describe());
    return v;
  }
  /// A number, or NaN for null (arrays with gaps).
  double number_or_nan() const { return is_null() ? kNaN : number(); }
  std::int64_t integer() const {
    if (j_->is_number_integer()) return j_->get<std::int64_t>();
    const double v = number();
    if (v != std::floor(v) || std::abs(v) > 9e15) fail("expected an integer, got " + describe());
    return static_cast<std::int64_t>(v);
  }
  std::string string() const {
    if (!j_->is_string()) fail("expected a string, got " + describe());
    return j_->get<std::string>();
  }
  bool boolean() const {
    if (!j_->is_boolean()) fail("expected true or false, got " + describe());
    return j_->get<bool>();
  }
  /// Strings as such; numbers labelled exactly when integral, else with 4 significant digits (random sweeps
  /// draw values like 0.4807023266571021); anything else (booleans, bundles of settings) by its JSON text.
  ParamValue param() const {
    if (j_->is_string()) return {std::nullopt, j_->get<std::string>()};
    if (!j_->is_number()) return {std::nullopt, j_->dump()};
    const double v = number();
    const bool integral = j_->is_number_integer() || (v == std::floor(v) && std::abs(v) < 1e15);
    return {v, integral ? std::to_string(static_cast<std::int64_t>(v)) : fmt_compact(v, 4)};
  }

  double number_at(const std::string& key) const { return at(key).number(); }
  double optional_number(const std::string& key) const {
    const auto n = find(key);
    return n ? n->number() : kNaN;
  }
  std::string optional_string(const std::string& key) const {
    const auto n = find(key);
    return n ? n->string() : std::string();
  }
  std::int64_t optional_integer(const std::string& key) const {
    const auto n = find(key);
    return n ? n->integer() : 0;
  }

 private:
  void require_object() const {
    if (!j_->is_object()) fail("expected an object, got " + describe());
  }
  Node child(const std::string& key, const json& j) const {
    return {j, file_, line_, path_.empty() ? key : path_ + "." + key};
  }
  std::string describe() const {
    std::string text = j_->dump();
    if (text.size() > 40) text = text.substr(0, 37) + "...";
    return std::string(j_->type_name()) + " " + text;
  }

  static inline const json kMissing_ = nullptr;
  const json* j_;
  std::string file_;
  std::string line_;
  std::string path_;
};

json parse_json(const std::string& text, const std::string& file, const std::string& line = "") {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    if (const auto at = what.find("] "); at != std::string::npos) what = what.substr(at + 2);  // drop the exception id
    throw ConfigError(file, line, "not valid JSON: " + what);
  }
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError(file.string(), "", "cannot be read");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void check_schema(const Node& root, const std::string& expected) {
  const std::string schema = root.at("schema").string();
  if (schema != expected) root.at("schema").fail("expected \"" + expected + "\", got \"" + schema + "\"");
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

Breakdown read_breakdown(const Node& b) {
  return {b.number_at("compute_s"),
          b.number_at("tp_comm_s"),
          b.number_at("bubble_s"),
          b.number_at("exposed_dp_comm_s"),
          b.number_at("exposed_compression_s"),
          b.optional_number("compression_s")};
}

// The figures every run entry has: policy, training time and speedup are required, and so are the iteration
// time and comm latency when `times_required` (result.json); the rest are optional (NaN when absent).
void read_figures(const Node& r, bool times_required, RunFigures& f) {
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

SimulatedRun read_run(const Node& r) {
  SimulatedRun run;
  read_figures(r, true, run);
  if (const auto b = r.find("breakdown")) run.breakdown = read_breakdown(*b);
  if (const auto w = r.find("warmup_end_iteration")) run.warmup_end_iteration = w->integer();
  if (const auto s = r.find("rank_schedule")) {
    for (std::size_t i = 0; i < s->size(); ++i) {
      const Node seg = (*s)[i];
      RankSegment rs{seg.at("begin").integer(), seg.at("end").integer(), {}};
      if (rs.end < rs.begin)
        seg.at("end").fail("ends at " + std::to_string(rs.end) + ", before its begin " + std::to_string(rs.begin));
      const Node ranks = seg.at("ranks");
      for (std::size_t k = 0; k < ranks.size(); ++k) {
        rs.ranks.push_back(ranks[k].integer());
        if (rs.ranks.back() < 0) ranks[k].fail("a rank must be >= 0 (0 = uncompressed)");
      }
      run.rank_schedule.push_back(std::move(rs));
    }
  }
  return run;
}

EntropySeries read_entropy(const Node& e) {
  EntropySeries out;
  const Node its = e.at("iterations");
  for (std::size_t i = 0; i < its.size(); ++i) out.iterations.push_back(static_cast<double>(its[i].integer()));
  const Node stages = e.at("stages");
  for (std::size_t s = 0; s < stages.size(); ++s) {
    const Node st = stages[s];
    StageEntropy se;
    se.stage = st.at("stage").integer();
    for (auto [key, values] : {std::pair{"gaussian_nats", &se.gaussian_nats}, {"histogram_nats", &se.histogram_nats}}) {
      const Node arr = st.at(key);
      if (arr.size() != out.iterations.size())
        arr.fail("has " + std::to_string(arr.size()) + " values, expected " + std::to_string(out.iterations.size()) +
                 " (one per entry of entropy_series.iterations)");
      for (std::size_t i = 0; i < arr.size(); ++i) values->push_back(arr[i].number_or_nan());
    }
    out.stages.push_back(std::move(se));
  }
  return out;
}

SweepRun read_sweep_run(const Node& r) {
  SweepRun run;
  read_figures(r, false, run);
  run.training_time_s_ci95 = r.optional_number("training_time_s_ci95");
  return run;
}

SweepPoint read_sweep_point(const Node& p) {
  SweepPoint out;
  out.point = p.at("point").integer();
  const Node params = p.at("params");
  if (!params.raw().is_object()) params.fail("expected an object, got " + std::string(params.raw().type_name()));
  for (const auto& [key, value] : params.raw().items()) out.params.emplace_back(key, params.at(key).param());
  if (const auto e = p.find("error")) {
    out.error = e->string();
    if (out.error.empty()) out.error = "failed (no message)";
    return out;
  }
  const Node runs = p.at("runs");
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
  const json j = parse_json(read_text(file), where);
  const Node root(j, where);
  check_schema(root, "edgc.result/1");
  SimulateResult out;
  out.setup = describe_setup(j);
  const Node runs = root.at("runs");
  if (runs.size() == 0) runs.fail("is empty: nothing was compared");
  for (std::size_t i = 0; i < runs.size(); ++i) out.runs.push_back(read_run(runs[i]));
  if (const auto e = root.find("entropy_series")) out.entropy = read_entropy(*e);
  return out;
}

Sweep read_sweep(const fs::path& dir) {
  const std::string spec_file = (dir / "sweep.json").string();
  const json j = parse_json(read_text(spec_file), spec_file);
  const Node root(j, spec_file);
  check_schema(root, "edgc.sweep/1");
  Sweep out;
  out.base = root.optional_string("base");
  out.mode = root.optional_string("mode");
  out.planned_points = root.optional_integer("points");
  if (const auto r = root.find("repeats")) out.repeats = r->integer();
  if (const auto ps = root.find("policies"))
    for (std::size_t i = 0; i < ps->size(); ++i) out.policies.push_back((*ps)[i].string());
  const Node axes = root.at("axes");
  for (std::size_t i = 0; i < axes.size(); ++i) {
    SweepAxis a{axes[i].at("key").string(), {}};
    if (const auto vs = axes[i].find("values"))
      for (std::size_t k = 0; k < vs->size(); ++k) a.values.push_back((*vs)[k].param());
    out.axes.push_back(std::move(a));
  }

  const fs::path results = dir / "results.jsonl";
  if (!fs::exists(results)) return out;
  out.has_results = true;
  // The one strict reader of the sweep's lines (also `sweep --resume`'s); the typed reading names the line.
  const results::SweepLines sweep_lines = results::read_sweep_lines(results);
  out.truncated_last_line = sweep_lines.truncated_last_line;
  for (std::size_t i = 0; i < sweep_lines.lines.size(); ++i)
    out.points.push_back(read_sweep_point(
        Node(sweep_lines.lines[i], results.string(), "line " + std::to_string(sweep_lines.line_numbers[i]))));
  return out;
}

Plan read_plan(const fs::path& file) {
  const std::string where = file.string();
  const json j = parse_json(read_text(file), where);
  const Node root(j, where);
  check_schema(root, "edgc.plan/1");
  Plan out;
  if (const auto t = root.find("target")) {
    if (const auto it = t->find("iterations"))
      out.target = fmt_compact(static_cast<double>(it->integer()), 4) + " iterations";
    else if (const auto tok = t->find("tokens"))
      out.target = fmt_compact(tok->number(), 4) + " tokens";
  }
  const Node options = root.at("options");
  for (std::size_t i = 0; i < options.size(); ++i) {
    const Node o = options[i];
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
