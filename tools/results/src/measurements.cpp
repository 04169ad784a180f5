#include "edgc/results/measurements.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "edgc/core/atomic_file.hpp"
#include "edgc/core/error.hpp"
#include "edgc/results/json_reader.hpp"

namespace edgc::results {
namespace {

using nlohmann::ordered_json;

RankPlace read_place(const JsonNode& n, const Measurements& m) {
  const bool cores = n.find("host_cores").has_value();  // absent in files of older live runs
  if (cores)
    n.keys({"rank", "host", "node", "local", "stage", "replica", "host_cores"});
  else
    n.keys({"rank", "host", "node", "local", "stage", "replica"});
  RankPlace p;
  if (cores) p.host_cores = n.at("host_cores").int32(0);
  p.rank = n.at("rank").int32(0);
  p.host = n.at("host").string();
  p.node = n.at("node").int32(0);
  p.local = n.at("local").int32(0);
  p.stage = n.at("stage").int32(0, m.pp - 1);
  p.replica = n.at("replica").int32(0, m.dp - 1);
  return p;
}

Calibration read_calibration(const JsonNode& n, const Measurements& m) {
  const std::optional<JsonNode> step_rows = n.find("step_rows");  // absent in files of older live runs
  if (step_rows)
    n.keys({"ranks", "rows", "step_rows", "latency_s", "bandwidth_Bps"});
  else
    n.keys({"ranks", "rows", "latency_s", "bandwidth_Bps"});
  Calibration c;
  c.ranks = n.at("ranks").int32(0, m.dp);  // over one DP group (stage 0's); 0 or 1 when nothing could be timed
  const auto read_rows = [](const JsonNode& rows, std::vector<Calibration::Row>& out) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const JsonNode r = rows[i];
      r.keys({"bytes", "time_s"});
      out.push_back({r.at("bytes").integer(0), r.at("time_s").non_negative()});
    }
  };
  read_rows(n.at("rows"), c.rows);
  if (step_rows) read_rows(*step_rows, c.step_rows);
  c.latency_s = n.at("latency_s").non_negative();
  c.bandwidth_Bps = n.at("bandwidth_Bps").non_negative();
  return c;
}

StageStep read_stage_step(const JsonNode& n) {
  n.keys({"rank", "sync_s", "compute_s", "wire_bytes", "dense_bytes", "collectives", "matrices"});
  StageStep s;
  s.rank = n.at("rank").int32(0);
  s.sync_s = n.at("sync_s").non_negative();
  s.compute_s = n.at("compute_s").non_negative();
  s.wire_bytes = n.at("wire_bytes").integer(0);
  s.dense_bytes = n.at("dense_bytes").integer(0);
  const JsonNode colls = n.at("collectives");
  for (std::size_t i = 0; i < colls.size(); ++i) {
    const JsonNode c = colls[i];
    c.keys({"kind", "bytes", "time_s"});
    s.collectives.push_back(
        {c.at("kind").one_of({"P", "Q", "dense"}), c.at("bytes").integer(0), c.at("time_s").non_negative()});
  }
  const JsonNode mats = n.at("matrices");
  for (std::size_t i = 0; i < mats.size(); ++i) {
    const JsonNode g = mats[i];
    g.keys({"rows", "cols", "rank", "count"});
    s.matrices.push_back(
        {g.at("rows").integer(1), g.at("cols").integer(1), g.at("rank").int32(1), g.at("count").int32(1)});
  }
  return s;
}

Step read_step(const JsonNode& n, const Measurements& m) {
  n.keys({"step", "iteration", "iteration_s", "stages"});
  Step s;
  s.step = n.at("step").integer(0);
  s.iteration = n.at("iteration").integer(0);
  s.iteration_s = n.at("iteration_s").non_negative();
  const JsonNode stages = n.at("stages");
  if (stages.size() != static_cast<std::size_t>(m.pp))
    stages.fail("expected one entry per pipeline stage (pp = " + std::to_string(m.pp) + "), got " +
                std::to_string(stages.size()));
  for (std::size_t i = 0; i < stages.size(); ++i) s.stages.push_back(read_stage_step(stages[i]));
  return s;
}

ordered_json place_json(const RankPlace& p) {
  return {{"rank", p.rank},
          {"host", p.host},
          {"node", p.node},
          {"local", p.local},
          {"stage", p.stage},
          {"replica", p.replica},
          {"host_cores", p.host_cores}};
}

ordered_json stage_json(const StageStep& s) {
  ordered_json colls = ordered_json::array();
  for (const Collective& c : s.collectives)
    colls.push_back({{"kind", c.kind}, {"bytes", c.bytes}, {"time_s", c.time_s}});
  ordered_json mats = ordered_json::array();
  for (const MatrixGroup& g : s.matrices)
    mats.push_back({{"rows", g.rows}, {"cols", g.cols}, {"rank", g.rank}, {"count", g.count}});
  return {{"rank", s.rank},
          {"sync_s", s.sync_s},
          {"compute_s", s.compute_s},
          {"wire_bytes", s.wire_bytes},
          {"dense_bytes", s.dense_bytes},
          {"collectives", std::move(colls)},
          {"matrices", std::move(mats)}};
}

}  // namespace

ordered_json to_json(const StageStep& s) { return stage_json(s); }

StageStep stage_step_from_json(const nlohmann::json& j, const std::string& where) {
  const JsonNode::Json stage = j;  // the reader's (ordered) kind of document
  return read_stage_step(JsonNode(stage, where, "", "stage"));
}

ordered_json to_json(const TcomFit& f) {
  return {{"stage", f.stage},
          {"eta_s", f.eta_s},
          {"c_s", f.c_s},
          {"r2", f.r2},
          {"points", f.points},
          {"eta_stderr_s", f.eta_stderr_s},
          {"significant", f.significant}};
}

ordered_json to_json(const Measurements& m) {
  ordered_json j = {{"schema", kMeasurementsSchema},
                    {"world_size", m.world_size},
                    {"pp", m.pp},
                    {"dp", m.dp},
                    {"comm", m.comm},
                    {"backend", m.backend},
                    {"element_bytes", m.element_bytes},
                    {"cluster_file", m.cluster_file},
                    {"trace", m.trace}};
  ordered_json placement = ordered_json::array();
  for (const RankPlace& p : m.placement) placement.push_back(place_json(p));
  j["placement"] = std::move(placement);
  ordered_json cal_rows = ordered_json::array();
  for (const auto& r : m.calibration.rows) cal_rows.push_back({{"bytes", r.bytes}, {"time_s", r.time_s}});
  ordered_json step_rows = ordered_json::array();
  for (const auto& r : m.calibration.step_rows) step_rows.push_back({{"bytes", r.bytes}, {"time_s", r.time_s}});
  j["calibration"] = {{"ranks", m.calibration.ranks},
                      {"rows", std::move(cal_rows)},
                      {"step_rows", std::move(step_rows)},
                      {"latency_s", m.calibration.latency_s},
                      {"bandwidth_Bps", m.calibration.bandwidth_Bps}};
  ordered_json runs = ordered_json::array();
  for (const MeasuredRun& run : m.runs) {
    ordered_json steps = ordered_json::array();
    for (const Step& s : run.steps) {
      ordered_json stages = ordered_json::array();
      for (const StageStep& st : s.stages) stages.push_back(stage_json(st));
      steps.push_back({{"step", s.step},
                       {"iteration", s.iteration},
                       {"iteration_s", s.iteration_s},
                       {"stages", std::move(stages)}});
    }
    runs.push_back({{"policy", run.policy}, {"steps", std::move(steps)}});
  }
  j["runs"] = std::move(runs);
  ordered_json points = ordered_json::array();
  for (const TcomPoint& p : m.tcom_points)
    points.push_back({{"stage", p.stage},
                      {"rank", p.rank},
                      {"comm_s", p.comm_s},
                      {"compute_s", p.compute_s},
                      {"compressed_comm_s", p.compressed_comm_s}});
  j["tcom_points"] = std::move(points);
  ordered_json fits = ordered_json::array();
  for (const TcomFit& f : m.tcom_fit) fits.push_back(to_json(f));
  j["tcom_fit"] = std::move(fits);
  return j;
}

Measurements read_measurements(const std::string& path) {
  const std::optional<std::string> text = read_file_bounded(path, "measurements file");
  if (!text) throw ConfigError(path, "", "cannot open the measurements file (written by 'edgc live')");
  // "invalid JSON", not the reader's "not valid JSON": the wording `edgc validate` has always printed here.
  const ordered_json doc = parse_json(*text, path, "", "invalid JSON");
  reject_duplicate_keys(*text, path);
  const JsonNode root(doc, path);
  root.check_schema(kMeasurementsSchema);
  root.keys({"schema", "world_size", "pp", "dp", "comm", "backend", "element_bytes", "cluster_file", "trace",
             "placement", "calibration", "runs", "tcom_points", "tcom_fit"});
  Measurements m;
  m.world_size = root.at("world_size").int32(1);
  m.pp = root.at("pp").int32(1);
  m.dp = root.at("dp").int32(1);
  if (static_cast<std::int64_t>(m.pp) * m.dp != m.world_size)
    root.at("world_size")
        .fail("must equal pp · dp = " + std::to_string(m.pp) + " · " + std::to_string(m.dp) + ", got " +
              std::to_string(m.world_size));
  m.comm = root.at("comm").one_of({"mpi", "nccl"});
  m.backend = root.at("backend").one_of({"cpu", "cuda"});
  m.element_bytes = root.at("element_bytes").int32(1, 16);
  m.cluster_file = root.at("cluster_file").string();
  if (m.cluster_file.empty()) root.at("cluster_file").fail("must name the cluster file");
  m.trace = root.at("trace").string();

  const JsonNode placement = root.at("placement");
  if (placement.size() != static_cast<std::size_t>(m.world_size))
    placement.fail("expected one entry per rank (world_size = " + std::to_string(m.world_size) + "), got " +
                   std::to_string(placement.size()));
  std::set<std::pair<int, int>> slots;   // (node, local)
  std::set<std::pair<int, int>> coords;  // (stage, replica)
  for (std::size_t i = 0; i < placement.size(); ++i) {
    const JsonNode n = placement[i];
    RankPlace p = read_place(n, m);
    if (p.rank != static_cast<int>(i)) n.at("rank").fail("expected " + std::to_string(i) + " (entries by rank)");
    if (!slots.insert({p.node, p.local}).second)
      n.at("local").fail("node " + std::to_string(p.node) + " local " + std::to_string(p.local) + " holds two ranks");
    if (!coords.insert({p.stage, p.replica}).second)
      n.at("replica").fail("stage " + std::to_string(p.stage) + " replica " + std::to_string(p.replica) +
                           " is played by two ranks");
    m.placement.push_back(std::move(p));
  }

  m.calibration = read_calibration(root.at("calibration"), m);

  const JsonNode runs = root.at("runs");
  std::set<std::string> policies;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const JsonNode r = runs[i];
    r.keys({"policy", "steps"});
    MeasuredRun run;
    run.policy = r.at("policy").string();
    if (run.policy.empty()) r.at("policy").fail("must not be empty");
    if (!policies.insert(run.policy).second) r.at("policy").fail("\"" + run.policy + "\" has two runs");
    const JsonNode steps = r.at("steps");
    for (std::size_t k = 0; k < steps.size(); ++k) run.steps.push_back(read_step(steps[k], m));
    m.runs.push_back(std::move(run));
  }

  const JsonNode points = root.at("tcom_points");
  for (std::size_t i = 0; i < points.size(); ++i) {
    const JsonNode p = points[i];
    const bool pq = p.find("compressed_comm_s").has_value();  // absent in files of older live runs
    if (pq)
      p.keys({"stage", "rank", "comm_s", "compute_s", "compressed_comm_s"});
    else
      p.keys({"stage", "rank", "comm_s", "compute_s"});
    m.tcom_points.push_back({p.at("stage").int32(0, m.pp - 1), p.at("rank").int32(0), p.at("comm_s").non_negative(),
                             p.at("compute_s").non_negative(), pq ? p.at("compressed_comm_s").non_negative() : 0.0});
  }
  const JsonNode fits = root.at("tcom_fit");
  for (std::size_t i = 0; i < fits.size(); ++i) {
    const JsonNode f = fits[i];
    const bool se = f.find("eta_stderr_s").has_value();  // absent in files of older live runs
    if (se)
      f.keys({"stage", "eta_s", "c_s", "r2", "points", "eta_stderr_s", "significant"});
    else
      f.keys({"stage", "eta_s", "c_s", "r2", "points"});
    TcomFit fit{f.at("stage").int32(0, m.pp - 1), f.at("eta_s").number(), f.at("c_s").number(), f.at("r2").number(),
                f.at("points").int32(0)};
    if (se) {
      fit.eta_stderr_s = f.at("eta_stderr_s").non_negative();
      fit.significant = f.at("significant").boolean();
    }
    m.tcom_fit.push_back(fit);
  }
  return m;
}

std::vector<Oversubscribed> oversubscribed_hosts(const Measurements& m) {
  std::map<int, Oversubscribed> hosts;
  for (const RankPlace& p : m.placement) {
    Oversubscribed& h = hosts[p.node];
    h.node = p.node;
    h.host = p.host;
    h.cores = std::max(h.cores, p.host_cores);
    ++h.ranks;
  }
  std::vector<Oversubscribed> out;
  for (const auto& [node, h] : hosts)
    if (h.cores > 0 && h.ranks > h.cores) out.push_back(h);
  return out;
}

std::string oversubscription_caveat(const Measurements& m) {
  std::string text;
  for (const Oversubscribed& h : oversubscribed_hosts(m))
    text += (text.empty() ? "" : "; ") + std::to_string(h.ranks) + " ranks on " + std::to_string(h.cores) +
            " cores of '" + h.host + "'";
  if (text.empty()) return "";
  return "oversubscribed: " + text +
         ". Ranks that share a core wait for the scheduler (MPI busy-polls), so collectives and steps are timed "
         "longer and noisier than on one core per rank; use this run to check correctness, not the model's "
         "accuracy";
}

}  // namespace edgc::results
