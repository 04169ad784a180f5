// The section of a simulate result: the verdict and settings, what each policy costs in time and in gradient
// fidelity, where an iteration's time goes (communication also at its own scale), how entropy evolves per stage,
// and the ranks the policies chose from it.
#include <algorithm>
#include <cctype>
#include <cmath>

#include "edgc/core/policy_registry.hpp"
#include "edgc/report/charts.hpp"
#include "edgc/report/saving_curve.hpp"
#include "edgc/report/sections.hpp"
#include "edgc/report/svg.hpp"

namespace edgc::report {
namespace {

// Seconds shown in the unit that keeps the largest value between 1 and 1000.
struct TimeUnit {
  const char* name;
  double per_second;
};
TimeUnit time_unit(double max_seconds) {
  if (max_seconds >= 1.0) return {"s", 1.0};
  if (max_seconds >= 1e-3) return {"ms", 1e3};
  return {"\xC2\xB5s", 1e6};
}

std::string hours(double seconds) { return fmt_compact(seconds / 3600.0, 4); }

const SimulatedRun* find_run(const SimulateResult& r, const std::string& policy) {
  for (const SimulatedRun& run : r.runs)
    if (run.policy == policy) return &run;
  return nullptr;
}

TableBlock summary_table(const SimulateResult& r) {
  double slowest = 0.0;
  for (const SimulatedRun& run : r.runs) slowest = std::max(slowest, run.iteration_time_s);
  const TimeUnit u = time_unit(slowest);
  const std::string unit = std::string(" (") + u.name + ")";
  TableBlock t{"Compared policies (means over the whole run)",
               {"policy", "iteration" + unit, "comm latency" + unit, "comm latency reduction", "training time (h)",
                "training time reduction", "speedup vs none (\xC3\x97)", "GPU-hours", "cost (USD)",
                "gradient error (measured)", "gradient error (CQM)", "warm-up end"},
               {}};
  for (const SimulatedRun& run : r.runs)
    t.rows.push_back({run.policy, fmt_compact(run.iteration_time_s * u.per_second, 4),
                      fmt_compact(run.comm_latency_s * u.per_second, 4),
                      fmt_percent(run.comm_latency_reduction_vs_none), hours(run.training_time_s),
                      fmt_percent(run.training_time_reduction_vs_none), fmt_compact(run.speedup_vs_none, 4),
                      fmt_compact(run.gpu_hours, 4), fmt_compact(run.cost_usd, 4), fmt_percent(run.gradient_error),
                      fmt_percent(run.cqm_error),
                      run.warmup_end_iteration ? std::to_string(*run.warmup_end_iteration) : "\xE2\x80\x93"});
  return t;
}

// The parts of the iteration-time breakdown, bottom to top; they add up to the iteration time. `communication`:
// drawn again at its own scale, where compression can shorten it.
struct Part {
  const char* name;
  const char* colour;
  double Breakdown::*field;
  bool communication;
};
const Part kParts[] = {{"compute", "#4e79a7", &Breakdown::compute_s, false},
                       {"TP comm", "#76b7b2", &Breakdown::tp_comm_s, true},
                       {"pipeline bubble", "#bab0ac", &Breakdown::bubble_s, false},
                       {"exposed DP comm", "#e15759", &Breakdown::exposed_dp_comm_s, true},
                       {"embedding sync", "#9c755f", &Breakdown::embedding_sync_s, true},
                       {"optimizer step", "#59a14f", &Breakdown::optimizer_s, false},
                       {"exposed compression", "#f28e2b", &Breakdown::exposed_compression_s, true},
                       {"entropy (GDS)", "#b07aa1", &Breakdown::entropy_s, true},
                       {"token all-to-all", "#edc948", &Breakdown::all_to_all_s, true}};

// Whether `part` is drawn: every part but the token all-to-all, which only a mixture of experts has.
bool drawn(const Part& part, const SimulateResult& r, bool communication_only) {
  if (communication_only && !part.communication) return false;
  if (part.field != &Breakdown::all_to_all_s) return true;
  return std::any_of(r.runs.begin(), r.runs.end(),
                     [](const SimulatedRun& run) { return run.breakdown && run.breakdown->all_to_all_s > 0; });
}

// Every policy's breakdown as stacked bars: all parts, or the communication parts only.
StackedBarChart breakdown_chart(const SimulateResult& r, const TimeUnit& u, bool communication_only) {
  StackedBarChart c;
  c.title = communication_only ? "Exposed communication per iteration" : "Where an iteration's time goes";
  c.y_label = std::string("time per iteration (") + u.name + ")";
  for (const Part& part : kParts)
    if (drawn(part, r, communication_only)) {
      c.components.push_back(part.name);
      c.colours.push_back(part.colour);
    }
  for (const SimulatedRun& run : r.runs) {
    c.categories.push_back(run.policy);
    std::vector<double>& values = c.values.emplace_back();
    for (const Part& part : kParts)
      if (drawn(part, r, communication_only)) values.push_back(*run.breakdown.*part.field * u.per_second);
  }
  return c;
}

void add_breakdown(Section& s, const SimulateResult& r) {
  for (const SimulatedRun& run : r.runs)
    if (!run.breakdown) {
      s.blocks.emplace_back(
          Note{"No iteration-time breakdown: the run of policy '" + run.policy + "' has no breakdown."});
      return;
    }
  double slowest = 0.0;
  for (const SimulatedRun& run : r.runs) slowest = std::max(slowest, run.iteration_time_s);
  const TimeUnit u = time_unit(slowest);
  std::string compression;
  for (const SimulatedRun& run : r.runs)
    if (!core::is_baseline_policy(run.policy) && std::isfinite(run.breakdown->compression_s))
      compression += (compression.empty() ? "" : ", ") + run.policy + " " +
                     fmt_compact(run.breakdown->compression_s * u.per_second, 3) + " " + u.name;
  s.blocks.emplace_back(
      FigureGroup{{{"simulate-breakdown", render(breakdown_chart(r, u, false), "simulate-breakdown"),
                    "Mean per iteration over the whole run; the eight parts add up to the "
                    "iteration time. Only the compression compute that the pipeline cannot "
                    "hide is stacked."},
                   {"simulate-communication", render(breakdown_chart(r, u, true), "simulate-communication"),
                    "The communication parts of the bars beside, at their own scale: what "
                    "compression can shorten."}}});
  if (!compression.empty())
    s.blocks.emplace_back(Note{"Compression compute per iteration in total, hidden or exposed: " + compression + "."});
}

// Each policy's training time against its gradient error, measured on the trace and as the CQM predicts it.
void add_time_error(Section& s, const SimulateResult& r) {
  ScatterChart c;
  c.title = "Training time vs gradient error, per policy";
  c.x_label = "training time (h)";
  c.y_label = "gradient error (%)";
  c.groups = {{"measured on the trace", "#4e79a7", 6.0, true, false}, {"CQM prediction", "#f28e2b", 5.5, true, true}};
  c.x_scale = AxisScale::kLinear;
  c.y_scale = AxisScale::kLinear;
  bool any = false;
  for (const SimulatedRun& run : r.runs) {
    const double hours = run.training_time_s / 3600.0;
    if (std::isfinite(run.gradient_error)) c.points.push_back({hours, 100.0 * run.gradient_error, run.policy, 0});
    if (std::isfinite(run.cqm_error) && !core::is_baseline_policy(run.policy))
      c.points.push_back({hours, 100.0 * run.cqm_error, run.policy + " (CQM)", 1});
    any = any || (!core::is_baseline_policy(run.policy) &&
                  (std::isfinite(run.gradient_error) || std::isfinite(run.cqm_error)));
  }
  if (!any) {
    s.blocks.emplace_back(
        Note{"No time\xE2\x80\x93"
             "error chart: no compressing policy has a gradient error "
             "(result.json written by an older edgc)."});
    return;
  }
  s.blocks.emplace_back(FigureGroup{
      {{"simulate-time-error", render(c, "simulate-time-error"),
        "What each policy's time saving costs in gradient fidelity: relative error of the compressed averaged "
        "gradient over the compressed iterations, measured by replaying the policy's ranks through PowerSGD on the "
        "trace (filled), and the CQM's prediction for the simulated model's shapes (rings)."}}});
}

// The saving against the inter-node NIC bandwidth (result.json's "bandwidth"): where the policies would pay.
void add_bandwidth(Section& s, const SimulateResult& r) {
  if (!r.bandwidth.is_object()) {
    s.blocks.emplace_back(
        Note{"No bandwidth curve: simulate ran with --no-bandwidth-curve, or the run has no "
             "data-parallel sync across nodes (or was written by an older edgc)."});
    return;
  }
  const double here = r.bandwidth.value("scenario_value", 0.0);
  s.blocks.emplace_back(FigureGroup{
      {{"simulate-bandwidth", render_saving_curve(bandwidth_saving_curve(r.bandwidth), "simulate-bandwidth"),
        "Each policy's training-time saving against no compression as the inter-node NIC bandwidth varies (this "
        "cluster: " +
            fmt_compact(here, 3) +
            " GB/s per NIC). Filled: whole simulate runs (the scenario's own and the search for the bandwidth at "
            "which a policy that does not pay would); rings: a linear model of this run's breakdown (exposed "
            "data-parallel sync proportional to 1 / bandwidth), a guide between them."}}});
}

// The measured validation loss where a convergence record matches (results/convergence.hpp): the change per policy
// and each matching record's training-loss curves.
void add_measured_loss(Section& s, const SimulateResult& r) {
  if (r.measured_loss.empty() || !r.convergence.is_object()) return;
  s.blocks.emplace_back(
      ListBlock{"Measured validation loss against none (convergence records matching the model and "
                "the compression settings)",
                r.measured_loss});
  FigureGroup group;
  std::size_t index = 0;
  for (const auto& rec : r.convergence.value("records", nlohmann::ordered_json::array())) {
    ++index;
    if (!rec.is_object() || !rec.contains("loss_curves") || !rec["loss_curves"].is_object()) continue;
    if (!rec.contains("matches") || !rec["matches"].is_object() || rec["matches"].empty()) continue;
    LineChart c;
    c.title = "Training loss per step, seed " + std::to_string(rec.value("seed", std::int64_t{0}));
    c.x_label = "step";
    c.y_label = "training loss (nats)";
    c.width = 460;
    c.height = 280;
    for (const auto& [policy, curve] : rec["loss_curves"].items()) {
      Series line{policy, {}, {}, "", false, false, 1.5};
      for (std::size_t k = 0; k < curve.size(); ++k) {
        line.x.push_back(static_cast<double>(k));
        line.y.push_back(curve[k].is_number() ? curve[k].get<double>() : kNoValue);
      }
      c.series.push_back(std::move(line));
    }
    const std::string name = "simulate-loss-" + std::to_string(index);
    group.figures.push_back({name, render(c, name),
                             "Rank 0's training loss per step of each policy in " + rec.value("file", std::string()) +
                                 " (" + rec.value("model", std::string()) + "); the same seed, data and schedule."});
  }
  if (!group.figures.empty()) s.blocks.emplace_back(std::move(group));
}

void add_entropy(Section& s, const SimulateResult& r) {
  if (!r.entropy) {
    s.blocks.emplace_back(Note{"No entropy chart: result.json has no entropy_series (written by an older edgc)."});
    return;
  }
  const EntropySeries& e = *r.entropy;
  std::vector<Marker> markers;
  if (const SimulatedRun* edgc = find_run(r, "edgc"); edgc && edgc->warmup_end_iteration)
    markers.push_back({static_cast<double>(*edgc->warmup_end_iteration), "warm-up ends (edgc)"});
  struct Estimator {
    const char* stem;
    const char* title;
    std::vector<double> StageEntropy::*values;
    const char* caption;
  };
  const Estimator estimators[] = {
      {"gaussian", "Gaussian estimator", &StageEntropy::gaussian_nats,
       "Differential entropy of a Gaussian with the sampled standard deviation, ln \xCF\x83 + \xC2\xBD ln(2\xCF\x80"
       "e), per pipeline stage; lines join the sampled iterations."},
      {"histogram", "histogram estimator", &StageEntropy::histogram_nats,
       "Shannon entropy of a histogram with a bin width fixed at warm-up, per pipeline stage; unlike the Gaussian "
       "estimate it does not assume light tails."}};
  FigureGroup group;
  for (const Estimator& est : estimators) {
    LineChart c;
    c.title = std::string("Gradient entropy per stage, ") + est.title;
    c.x_label = "iteration";
    c.y_label = "entropy (nats)";
    c.markers = markers;
    const std::vector<double> xs(e.iterations.begin(), e.iterations.end());
    for (const StageEntropy& st : e.stages) {
      const std::vector<double>& v = st.*est.values;
      if (std::none_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); })) continue;
      c.series.push_back({"stage " + std::to_string(st.stage), xs, v, "", false, false});
    }
    const std::string name = std::string("simulate-entropy-") + est.stem;
    if (c.series.empty())
      s.blocks.emplace_back(Note{std::string("No ") + est.title + " values in entropy_series."});
    else
      group.figures.push_back({name, render(c, name), est.caption});
  }
  if (!group.figures.empty()) s.blocks.emplace_back(std::move(group));
}

void add_rank_schedules(Section& s, const SimulateResult& r) {
  FigureGroup group;
  for (std::size_t i = 0; i < r.runs.size(); ++i) {
    const SimulatedRun& run = r.runs[i];
    if (core::is_baseline_policy(run.policy) || run.rank_schedule.empty()) continue;
    std::size_t stages = 0;
    for (const RankSegment& seg : run.rank_schedule) stages = std::max(stages, seg.ranks.size());
    LineChart c;
    c.title = "PowerSGD rank per stage, " + run.policy;
    c.x_label = "iteration";
    c.y_label = "rank (0 = uncompressed)";
    c.y_from_zero = true;
    c.width = 460;
    c.height = 280;
    if (run.warmup_end_iteration) c.markers.push_back({static_cast<double>(*run.warmup_end_iteration), "warm-up ends"});
    for (std::size_t st = 0; st < stages; ++st) {
      // Stage 0 widest, the last stage narrowest: stages that share a rank show as nested lines.
      const double width =
          2.0 + 3.0 * static_cast<double>(stages - 1 - st) / static_cast<double>(std::max<std::size_t>(1, stages - 1));
      Series series{"stage " + std::to_string(st), {}, {}, "", false, true, width};
      for (const RankSegment& seg : run.rank_schedule) {
        series.x.push_back(static_cast<double>(seg.begin));
        series.y.push_back(st < seg.ranks.size() ? static_cast<double>(seg.ranks[st]) : kNoValue);
      }
      series.x.push_back(static_cast<double>(run.rank_schedule.back().end));  // hold the last rank to the end
      series.y.push_back(series.y.back());
      c.series.push_back(std::move(series));
    }
    const std::string stem = file_stem(run.policy);
    const std::string name = "simulate-ranks-" + stem + (stem == run.policy ? "" : "-" + std::to_string(i));
    group.figures.push_back({name, render(c, name),
                             "Rank of each stage's data-parallel sync over the run; where stages share a rank "
                             "their lines nest (stage 0 widest)."});
  }
  if (group.figures.empty())
    s.blocks.emplace_back(Note{"No rank schedules: no compressing policy was compared."});
  else
    s.blocks.emplace_back(std::move(group));
}

}  // namespace

std::string file_stem(const std::string& text) {
  std::string out = text;
  for (char& ch : out)
    if (std::isalnum(static_cast<unsigned char>(ch)) == 0 && ch != '.' && ch != '_' && ch != '-') ch = '_';
  return out;
}

Section simulate_section(const SimulateResult& result, const std::string& source) {
  Section s{"simulate", "Simulated training run", source, result.setup, {}};
  if (!result.verdicts.empty()) s.blocks.emplace_back(ListBlock{"Verdict (against no compression)", result.verdicts});
  if (!result.settings.empty()) s.blocks.emplace_back(ListBlock{"Settings", result.settings});
  if (!result.warnings.empty())
    s.blocks.emplace_back(ListBlock{"Warnings (simulate printed them too)", result.warnings});
  s.blocks.emplace_back(summary_table(result));
  add_time_error(s, result);
  add_measured_loss(s, result);
  add_breakdown(s, result);
  add_bandwidth(s, result);
  add_entropy(s, result);
  add_rank_schedules(s, result);
  return s;
}

}  // namespace edgc::report
