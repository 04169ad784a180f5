// `edgc replay --trace DIR [--scenario F] [--set k=v]... --out DIR`.
#include <array>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli.hpp"
#include "edgc/core/atomic_file.hpp"
#include "edgc/core/error.hpp"
#include "edgc/engine/replay.hpp"
#include "edgc/results/table.hpp"
#include "edgc/scenario/compression_config.hpp"
#include "edgc/scenario/config.hpp"

namespace edgc::cli {
namespace {

using nlohmann::ordered_json;
namespace fs = std::filesystem;

ordered_json opt(const std::optional<double>& v) { return v ? ordered_json(*v) : ordered_json(nullptr); }

ordered_json boundary_json(const std::optional<engine::BoundaryWindow>& b) {
  if (!b) return nullptr;
  return {{"pp_rank", b->rank},
          {"messages", b->messages},
          {"entropy_gaussian", opt(b->entropy_gaussian)},
          {"entropy_histogram", opt(b->entropy_histogram)},
          {"message_error", opt(b->message_error)},
          {"message_error_without_lazy_error_propagation", opt(b->message_error_plain)},
          {"accumulated_error", opt(b->accumulated_error)},
          {"accumulated_error_without_lazy_error_propagation", opt(b->accumulated_error_plain)},
          {"wire_floats", b->wire_floats},
          {"dense_floats", b->dense_floats}};
}

// Mean of boundary error `i` (0 message, 1 message without LEP, 2 accumulated, 3 accumulated without LEP) of stage k.
std::optional<double> boundary_mean(const std::vector<std::array<double, 4>>& sum, const std::vector<int>& n,
                                    std::size_t k, std::size_t i) {
  return n[k] > 0 ? std::optional<double>(sum[k][i] / n[k]) : std::nullopt;
}
std::string csv(const std::optional<double>& v) {
  if (!v) return "";
  std::ostringstream os;
  os.precision(9);
  os << *v;
  return os.str();
}
std::string cell(const std::optional<double>& v, int digits = 4) { return v ? results::fmt_g(*v, digits) : "-"; }

// Reads the compression and replay sections of the scenario (file + overrides) into typed options.
engine::ReplayOptions read_options(scenario::Scenario& sc) {
  engine::ReplayOptions o;
  const std::string w = sc.where();
  o.where = w;
  scenario::CompressionSettings c = scenario::read_compression(sc);
  o.controller = c.controller;
  o.r_max_given = sc.has("compression.r_max");
  o.gds = c.gds;
  o.warmup_floor_fraction = c.warmup_floor_fraction;
  o.warmup_ceiling_fraction = c.warmup_ceiling_fraction;
  o.world_size = sc.int32("replay.world_size", 4);
  o.perturbation = sc.number("replay.perturbation", 0.1);
  o.backend = sc.string("replay.backend", "cpu");
  o.bins_per_sigma = sc.number("replay.bins_per_sigma", 8.0);
  engine::check_bins_per_sigma(o.bins_per_sigma, w, "replay.bins_per_sigma");
  o.compare_full = sc.boolean("replay.compare_full", true);
  o.seed = static_cast<std::uint64_t>(sc.integer("replay.seed", 0));
  o.stages = sc.int32("replay.stages", 0);
  if (o.stages < 0) throw ConfigError(w, "replay.stages", "must be >= 0 (0 = the trace's pipeline stages)");
  return o;
}

std::string windows_csv(const engine::ReplayResult& r) {
  std::ostringstream os;
  os << "window,first_iteration,end_iteration,stage,captured_iterations,sampled_iterations,mean_loss,warmup,"
        "entropy_gaussian,entropy_histogram,excess_kurtosis,rank,next_rank,next_binding,next_continuous_rank,"
        "full_next_rank,agrees,trajectory_full_rank,trajectory_agrees,relative_error,step_error,wire_floats,dense_"
        "floats,sampled_elements,full_elements,pp_rank,boundary_entropy_gaussian,boundary_message_error,boundary_"
        "message_error_plain,"
        "boundary_accumulated_error,boundary_accumulated_error_plain,boundary_wire_floats,boundary_dense_floats,"
        "estimation_seconds,full_estimation_seconds\n";
  for (const auto& w : r.windows) {
    for (std::size_t s = 0; s < w.stages.size(); ++s) {
      const auto& x = w.stages[s];
      os << w.window << ',' << w.first_iteration << ',' << w.end_iteration << ',' << s << ',' << w.captured_iterations
         << ',' << w.sampled_iterations << ',' << csv(w.mean_loss) << ',' << (w.warmup ? 1 : 0) << ','
         << csv(x.entropy_gaussian) << ',' << csv(x.entropy_histogram) << ',' << csv(x.excess_kurtosis) << ',' << x.rank
         << ',' << x.next.rank << ',' << core::rank_binding_name(x.next.binding) << ',' << csv(x.next.continuous) << ','
         << (x.full_next_rank ? std::to_string(*x.full_next_rank) : "") << ',' << (w.agrees ? 1 : 0) << ','
         << (x.trajectory_full_rank ? std::to_string(*x.trajectory_full_rank) : "") << ','
         << (w.trajectory_agrees ? 1 : 0) << ',' << csv(x.relative_error) << ',' << csv(x.step_error) << ','
         << x.wire_floats << ',' << x.dense_floats << ',' << x.sampled_elements << ',' << x.full_elements << ',';
      if (x.boundary) {
        const auto& b = *x.boundary;
        os << b.rank << ',' << csv(b.entropy_gaussian) << ',' << csv(b.message_error) << ','
           << csv(b.message_error_plain) << ',' << csv(b.accumulated_error) << ',' << csv(b.accumulated_error_plain)
           << ',' << b.wire_floats << ',' << b.dense_floats << ',';
      } else {
        os << ",,,,,,,,";
      }
      os << csv(x.estimation_seconds) << ',' << csv(x.full_estimation_seconds) << '\n';
    }
  }
  return os.str();
}

struct Summary {
  int windows = 0;
  int agreeing = 0;
  int trajectory_agreeing = 0;
  std::int64_t sampled_elements = 0;
  std::int64_t full_elements = 0;
  double sampled_seconds = 0.0;
  double full_seconds = 0.0;
  std::map<std::string, int> bindings;  // over post-warm-up stage decisions
  std::vector<int> rank_min, rank_max;
  std::vector<double> error_sum;
  std::vector<int> error_n;
  std::int64_t wire = 0;
  std::int64_t dense = 0;
  // Per stage, over compressed windows of its boundary: sums of the four boundary errors, and the count.
  std::vector<std::array<double, 4>> boundary_sum;
  std::vector<int> boundary_n;
  std::int64_t boundary_wire = 0;
  std::int64_t boundary_dense = 0;
};

Summary summarise(const engine::ReplayResult& r, std::size_t stages) {
  Summary s;
  s.rank_min.assign(stages, 1 << 30);
  s.rank_max.assign(stages, 0);
  s.error_sum.assign(stages, 0.0);
  s.error_n.assign(stages, 0);
  s.boundary_sum.assign(stages, {0.0, 0.0, 0.0, 0.0});
  s.boundary_n.assign(stages, 0);
  for (const auto& w : r.windows) {
    ++s.windows;
    s.agreeing += w.agrees ? 1 : 0;
    s.trajectory_agreeing += w.trajectory_agrees ? 1 : 0;
    for (std::size_t k = 0; k < w.stages.size(); ++k) {
      const auto& x = w.stages[k];
      s.sampled_elements += x.sampled_elements;
      s.full_elements += x.full_elements;
      s.sampled_seconds += x.estimation_seconds;
      s.full_seconds += x.full_estimation_seconds;
      s.wire += x.wire_floats;
      s.dense += x.dense_floats;
      if (x.next.binding != core::RankBinding::kWarmup)
        ++s.bindings[std::string(core::rank_binding_name(x.next.binding))];
      if (!w.warmup && x.rank > 0) {
        s.rank_min[k] = std::min(s.rank_min[k], x.rank);
        s.rank_max[k] = std::max(s.rank_max[k], x.rank);
      }
      if (!w.warmup && x.relative_error) {
        s.error_sum[k] += *x.relative_error;
        ++s.error_n[k];
      }
      if (x.boundary) {
        s.boundary_wire += x.boundary->wire_floats;
        s.boundary_dense += x.boundary->dense_floats;
        if (x.boundary->message_error) {
          s.boundary_sum[k][0] += *x.boundary->message_error;
          s.boundary_sum[k][1] += *x.boundary->message_error_plain;
          s.boundary_sum[k][2] += *x.boundary->accumulated_error;
          s.boundary_sum[k][3] += *x.boundary->accumulated_error_plain;
          ++s.boundary_n[k];
        }
      }
    }
  }
  return s;
}

std::string replay_json(const engine::ReplayOptions& o, const engine::ReplayResult& r, const Summary& s,
                        const scenario::Scenario& sc) {
  ordered_json j;
  j["schema"] = "edgc.replay/1";
  j["trace"] = o.trace_dir;
  j["scenario"] = sc.json();
  j["notes"] = r.notes;
  j["policy"] = o.controller.policy;
  j["estimator"] = core::entropy_estimator_name(o.controller.estimator);
  j["controller_api_version"] = core::kControllerApiVersion;
  ordered_json stages = ordered_json::array();
  for (std::size_t k = 0; k < r.stage_shapes.size(); ++k) {
    stages.push_back({{"stage", k},
                      {"cqm_matrix", {r.stage_shapes[k].first, r.stage_shapes[k].second}},
                      {"compressed_tensors", r.compressed_tensors_per_stage[k]},
                      {"mean_relative_error", s.error_n[k] ? ordered_json(s.error_sum[k] / s.error_n[k]) : nullptr},
                      {"rank_min", s.rank_max[k] ? ordered_json(s.rank_min[k]) : nullptr},
                      {"rank_max", s.rank_max[k] ? ordered_json(s.rank_max[k]) : nullptr}});
    const int b = r.stage_boundary[k];
    if (b >= 0) {
      stages.back()["boundary"] = {
          {"name", r.boundary_names[static_cast<std::size_t>(b)]},
          {"matrix",
           {r.boundary_shapes[static_cast<std::size_t>(b)].first,
            r.boundary_shapes[static_cast<std::size_t>(b)].second}},
          {"compressed_windows", s.boundary_n[k]},
          {"mean_message_error", opt(boundary_mean(s.boundary_sum, s.boundary_n, k, 0))},
          {"mean_message_error_without_lazy_error_propagation", opt(boundary_mean(s.boundary_sum, s.boundary_n, k, 1))},
          {"mean_accumulated_error", opt(boundary_mean(s.boundary_sum, s.boundary_n, k, 2))},
          {"mean_accumulated_error_without_lazy_error_propagation",
           opt(boundary_mean(s.boundary_sum, s.boundary_n, k, 3))}};
    }
  }
  j["stages"] = stages;
  j["summary"] = {
      {"windows", s.windows},
      {"warmup_end_iteration", r.warmup_end ? ordered_json(*r.warmup_end) : nullptr},
      {"full_sampling_warmup_end_iteration", r.full_warmup_end ? ordered_json(*r.full_warmup_end) : nullptr},
      {"agreement_with_full_sampling",
       o.compare_full && s.windows ? ordered_json(double(s.agreeing) / s.windows) : nullptr},
      {"trajectory_agreement_with_full_sampling",
       o.compare_full && s.windows ? ordered_json(double(s.trajectory_agreeing) / s.windows) : nullptr},
      {"bindings", s.bindings},
      {"estimation_elements", s.sampled_elements},
      {"full_estimation_elements", s.full_elements},
      {"estimation_seconds", s.sampled_seconds},
      {"full_estimation_seconds", s.full_seconds},
      {"wire_floats", s.wire},
      {"dense_floats", s.dense},
      {"boundary_wire_floats", s.boundary_wire},
      {"boundary_dense_floats", s.boundary_dense}};
  ordered_json ws = ordered_json::array();
  for (const auto& w : r.windows) {
    ordered_json st = ordered_json::array();
    for (const auto& x : w.stages) {
      st.push_back({{"entropy_gaussian", opt(x.entropy_gaussian)},
                    {"entropy_histogram", opt(x.entropy_histogram)},
                    {"excess_kurtosis", opt(x.excess_kurtosis)},
                    {"rank", x.rank},
                    {"next_rank", x.next.rank},
                    {"next_binding", core::rank_binding_name(x.next.binding)},
                    {"next_continuous_rank", x.next.continuous},
                    {"full_next_rank", x.full_next_rank ? ordered_json(*x.full_next_rank) : nullptr},
                    {"trajectory_full_rank", x.trajectory_full_rank ? ordered_json(*x.trajectory_full_rank) : nullptr},
                    {"relative_error", opt(x.relative_error)},
                    {"step_error", opt(x.step_error)},
                    {"wire_floats", x.wire_floats},
                    {"dense_floats", x.dense_floats},
                    {"sampled_elements", x.sampled_elements},
                    {"full_elements", x.full_elements},
                    {"estimation_seconds", x.estimation_seconds},
                    {"full_estimation_seconds", x.full_estimation_seconds},
                    {"boundary", boundary_json(x.boundary)}});
    }
    ws.push_back({{"window", w.window},
                  {"first_iteration", w.first_iteration},
                  {"end_iteration", w.end_iteration},
                  {"captured_iterations", w.captured_iterations},
                  {"sampled_iterations", w.sampled_iterations},
                  {"mean_loss", opt(w.mean_loss)},
                  {"warmup", w.warmup},
                  {"agrees_with_full_sampling", w.agrees},
                  {"trajectory_agrees_with_full_sampling", w.trajectory_agrees},
                  {"stages", st}});
  }
  j["windows"] = ws;
  return j.dump(1) + "\n";
}

// The pipeline-boundary table: per window and boundary the rank and the four errors (only when the trace records
// boundary gradients and the policy compresses them in some window).
void print_boundaries(std::ostream& os, const engine::ReplayResult& r, const Summary& s) {
  std::vector<std::size_t> with;
  for (std::size_t k = 0; k < r.stage_boundary.size(); ++k)
    if (r.stage_boundary[k] >= 0) with.push_back(k);
  if (with.empty()) return;
  int compressed = 0;
  for (std::size_t k : with) compressed += s.boundary_n[k];
  if (compressed == 0) {
    os << "boundaries  the trace records " << with.size()
       << " stage-boundary gradients; this policy sends them uncompressed (edgc-pp compresses them)\n";
    return;
  }
  const auto pct = [](const std::optional<double>& v) { return v ? results::fmt_f(100.0 * *v, 1) : std::string("-"); };
  std::vector<std::string> head = {"window"};
  for (std::size_t k : with) {
    const std::string p = "s" + std::to_string(k) + "->s" + std::to_string(k - 1) + " ";
    for (const char* c : {"H", "r", "msg%", "msg% noLEP", "sum%", "sum% noLEP"}) head.push_back(p + c);
  }
  results::Table t(head);
  for (const auto& w : r.windows) {
    std::vector<std::string> row = {std::to_string(w.window)};
    for (std::size_t k : with) {
      const auto& b = w.stages[k].boundary;
      row.push_back(b && b->entropy_gaussian ? results::fmt_g(*b->entropy_gaussian, 3) : "-");
      row.push_back(!b || b->rank == 0 ? "full" : std::to_string(b->rank));
      row.push_back(b ? pct(b->message_error) : "-");
      row.push_back(b ? pct(b->message_error_plain) : "-");
      row.push_back(b ? pct(b->accumulated_error) : "-");
      row.push_back(b ? pct(b->accumulated_error_plain) : "-");
    }
    t.add_row(std::move(row));
  }
  os << "\npipeline boundaries: the activation gradient stage k sends to stage k-1, one captured iteration = one "
        "message\n";
  t.print(os);
  os << "  H = entropy of the sampled messages (nats, Gaussian estimator); r = pipeline rank in force; msg% = mean "
        "||G^ - G||/||G|| per message; sum% = ||sum G^ - sum G||/||sum G|| "
        "over the\n  window's messages (what a weight gradient summed over micro-batches sees); noLEP = without lazy "
        "error propagation\n";
  os << "boundaries  ";
  for (std::size_t i = 0; i < with.size(); ++i) {
    const std::size_t k = with[i];
    os << "s" << k << "->s" << k - 1 << ": msg " << pct(boundary_mean(s.boundary_sum, s.boundary_n, k, 0)) << "% ("
       << pct(boundary_mean(s.boundary_sum, s.boundary_n, k, 1)) << "% noLEP), sum "
       << pct(boundary_mean(s.boundary_sum, s.boundary_n, k, 2)) << "% ("
       << pct(boundary_mean(s.boundary_sum, s.boundary_n, k, 3)) << "% noLEP)" << (i + 1 < with.size() ? " · " : "\n");
  }
  if (s.boundary_dense > 0)
    os << "            boundary messages sent "
       << results::fmt_f(100.0 * double(s.boundary_wire) / double(s.boundary_dense), 1)
       << " % of their uncompressed floats over the replay\n";
}

void print_summary(std::ostream& os, const engine::ReplayOptions& o, const engine::ReplayResult& r, const Summary& s,
                   const std::string& out) {
  const std::size_t stages = r.stage_shapes.size();
  os << "replay      " << o.trace_dir << " · policy " << o.controller.policy << " · estimator "
     << core::entropy_estimator_name(o.controller.estimator) << " · window " << o.gds.window_iters << " it · alpha "
     << o.gds.alpha << " · beta " << o.gds.beta << " · ranks " << o.controller.cqm.r_min << ".."
     << o.controller.cqm.r_max << " step " << o.controller.cqm.step << " · " << o.world_size << " emulated DP ranks"
     << (o.backend == "cpu" ? "" : " · backend " + o.backend) << "\n";
  os << "warm-up     " << (r.warmup_end ? "ended at iteration " + std::to_string(*r.warmup_end) : "never ended")
     << "\n\n";
  std::vector<std::string> head = {"window", "iterations", "loss"};
  for (std::size_t k = 0; k < stages; ++k) {
    const std::string p = "s" + std::to_string(k) + " ";
    for (const char* c : {"Hg", "Hh", "kurt", "r", "err%"}) head.push_back(p + c);
  }
  results::Table t(head);
  for (const auto& w : r.windows) {
    std::vector<std::string> row = {std::to_string(w.window),
                                    std::to_string(w.first_iteration) + "-" + std::to_string(w.end_iteration - 1),
                                    w.mean_loss ? results::fmt_f(*w.mean_loss, 3) : "-"};
    for (const auto& x : w.stages) {
      row.push_back(cell(x.entropy_gaussian, 3));
      row.push_back(cell(x.entropy_histogram, 3));
      row.push_back(cell(x.excess_kurtosis, 3));
      row.push_back(w.warmup ? "warm" : x.rank == 0 ? "full" : std::to_string(x.rank));
      row.push_back(x.relative_error && !w.warmup ? results::fmt_f(100.0 * *x.relative_error, 1) : "-");
    }
    t.add_row(std::move(row));
  }
  t.print(os);
  os << "\n  per stage sK: Hg / Hh = entropy (nats) of the GDS-sampled gradients, Gaussian-from-std / fixed-bin "
        "histogram;\n  kurt = excess kurtosis; r = PowerSGD rank in force (warm = warm-up, uncompressed); err% = "
        "compressed average vs true average gradient, with error feedback\n\n";
  os << "per stage   ";
  for (std::size_t k = 0; k < stages; ++k) {
    os << "s" << k << " (" << r.stage_shapes[k].first << "x" << r.stage_shapes[k].second << "): ranks ";
    os << (s.rank_max[k] ? std::to_string(s.rank_min[k]) + ".." + std::to_string(s.rank_max[k]) : "-");
    os << ", mean err " << (s.error_n[k] ? results::fmt_f(100.0 * s.error_sum[k] / s.error_n[k], 1) + "%" : "-")
       << (k + 1 < stages ? " · " : "\n");
  }
  os << "bindings    ";
  for (const auto& [name, n] : s.bindings) os << name << " " << n << "  ";
  os << "(stage decisions after warm-up; r_min/r_max = clamp bound, step = step limit bound)\n";
  if (o.compare_full) {
    os << "sampling    " << s.agreeing << " of " << s.windows << " windows ("
       << results::fmt_f(100.0 * s.agreeing / std::max(1, s.windows), 1)
       << " %) decide the same ranks as full sampling would from the same state (an independent full-sampling "
          "controller follows the same trajectory in "
       << s.trajectory_agreeing << ");\n            "
       << "estimation touched " << s.sampled_elements << " of " << s.full_elements << " elements ("
       << results::fmt_f(100.0 * (1.0 - double(s.sampled_elements) / std::max<double>(1.0, double(s.full_elements))), 1)
       << " % less), " << results::fmt_g(s.sampled_seconds, 3) << " s vs " << results::fmt_g(s.full_seconds, 3)
       << " s\n";
  }
  print_boundaries(os, r, s);
  if (s.dense > 0)
    os << "traffic     compressed matrices sent " << results::fmt_f(100.0 * double(s.wire) / double(s.dense), 1)
       << " % of their uncompressed floats over the replay\n";
  os << "wrote       " << out << "/windows.csv, " << out << "/replay.json\n";
}

int run_replay_command(const std::vector<std::string>& args) {
  std::string trace;
  std::string scenario;
  std::string out;
  std::string backend;
  std::vector<std::string> sets;
  po::options_description opts;
  opts.add_options()("trace", po::value(&trace), "trace directory (default: the scenario's trace.path)")(
      "scenario", po::value(&scenario), "scenario JSON (compression and replay sections are used)")(
      "set", po::value(&sets)->composing(), "override a scenario key: dotted.key=value (repeatable)")(
      "out", po::value(&out)->required(), "output directory (must not exist or be empty)")(
      "backend", po::value(&backend),
      "kernels: cpu | cuda (default: replay.backend, else cpu; cuda needs edgc-nccl and a GPU)")(
      "quiet", "print only the output paths");
  po::variables_map vm;
  if (!parse("replay", "--trace DIR [--scenario F] [--set k=v]... [--backend cpu|cuda] --out DIR", opts, {}, args, vm))
    return 0;
  scenario::Scenario sc;
  if (scenario.empty()) {
    for (const auto& s : sets) sc.set(s);
  } else {
    sc = scenario::load_scenario(scenario, sets);
  }
  // --backend is replay.backend given on the command line; set in the scenario, result files record it.
  if (!backend.empty()) sc.set("replay.backend=" + ordered_json(backend).dump());
  engine::ReplayOptions o = read_options(sc);
  const std::string trace_key = sc.string("trace.path", "");
  if (trace.empty() && !trace_key.empty()) trace = fs::path(sc.resolve(trace_key)).lexically_normal().string();
  if (trace.empty()) throw UsageError("--trace", "no trace given (use --trace DIR or trace.path in the scenario)");
  o.trace_dir = trace;
  sc.reject_unknown({"compression", "replay", "trace"});
  // A live scenario replays as it is (its live section is what replay does not read).
  sc.reject_unknown_sections({"compression", "replay", "trace", "live"});
  if (backend.empty()) {
    engine::require_backend(o.backend, sc.where(), "replay.backend");
  } else {
    engine::require_backend(o.backend, "", "--backend");
  }

  StagingDir staging(out);  // before the run: a busy --out fails fast
  const engine::ReplayResult r = engine::run_replay(o);
  for (const std::string& w : r.warnings) std::cerr << "edgc: warning: " << w << "\n";
  for (const std::string& n : r.notes) std::cerr << "edgc: note: " << o.where << ": " << n << "\n";
  const Summary s = summarise(r, r.stage_shapes.size());
  write_file_atomic(staging.path() / "windows.csv", windows_csv(r));
  write_file_atomic(staging.path() / "replay.json", replay_json(o, r, s, sc));
  staging.commit();
  if (vm.count("quiet") != 0U) {
    std::cout << out << "/windows.csv\n" << out << "/replay.json\n";
  } else {
    print_summary(std::cout, o, r, s, out);
  }
  return 0;
}

}  // namespace

void add_replay_command(std::vector<Command>& commands) {
  commands.push_back(
      {"replay", "run the rank controller over a gradient trace (entropy, ranks, errors)", run_replay_command});
}

}  // namespace edgc::cli
