// `edgc breakeven --scenario S --vary KEY --target P [--policy edgc] [--lo X --hi Y] [--step S] [--out DIR]`: the
// value of one scenario key at which a policy's training-time saving against none reaches P % and where it reaches
// 0, by a bracketed search over simulate runs (breakeven.hpp); DIR/breakeven.json, DIR/curve.csv and DIR/curve.svg.
#include <iostream>
#include <optional>
#include <thread>

#include "cli.hpp"
#include "edgc/core/atomic_file.hpp"
#include "edgc/core/error.hpp"
#include "edgc/engine/breakeven.hpp"
#include "edgc/report/saving_curve.hpp"
#include "edgc/report/svg.hpp"

namespace edgc::cli {
namespace {

// curve.svg: the simulated savings against the varied key, with the target as the threshold line.
std::string curve_svg(const engine::BreakevenOutcome& o) {
  report::SavingCurve c;
  c.title = "Training-time saving of " + o.request.policy + " vs " + o.request.key;
  c.x_label = o.request.key;
  c.threshold_pct = o.request.target_pct;
  c.threshold_label = "target " + report::fmt_compact(o.request.target_pct, 3) + " %";
  report::SavingCurve::Line line{o.request.policy, {}, {}};
  for (const engine::BreakevenPoint& p : o.curve) line.simulated.emplace_back(p.value, p.saving_pct);
  c.lines.push_back(std::move(line));
  return report::render_saving_curve(c, "breakeven-curve");
}

int run_breakeven_command(const std::vector<std::string>& args) {
  engine::BreakevenRequest r;
  std::string out;
  double lo = 0.0, hi = 0.0;
  r.jobs = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  po::options_description opts;
  opts.add_options()("scenario", po::value(&r.scenario)->required(), "scenario JSON")(
      "vary", po::value(&r.key)->required(), "the varied scenario key, e.g. cluster.inter_node.nic_bandwidth_GBps")(
      "target", po::value(&r.target_pct)->required(), "the sought saving, % of the uncompressed training time")(
      "policy", po::value(&r.policy), "the compressing policy compared with none (default edgc)")(
      "lo", po::value(&lo), "bracket low end (default: the scenario's value / 64)")(
      "hi", po::value(&hi), "bracket high end (default: the scenario's value x 64)")(
      "step", po::value(&r.step),
      "values are multiples of this (default 0: continuous; a batch size needs its granule)")(
      "tolerance", po::value(&r.tolerance_pct),
      "stop when a simulated saving is this many percentage points from the target (default: 0.5 or 5 % of the target, "
      "the smaller)")("max-steps", po::value(&r.max_steps),
                      "simulate runs per crossing beyond the bracket ends (default 8)")(
      "set", po::value(&r.sets)->composing(), "override a scenario key: dotted.key=value (repeatable)")(
      "out", po::value(&out),
      "also write DIR/breakeven.json, DIR/curve.csv and the chart DIR/curve.svg (DIR must not exist or be empty)")(
      "jobs", po::value(&r.jobs), "simulations of one run in parallel (default: the CPU count)");
  po::variables_map vm;
  if (!parse("breakeven",
             "--scenario F --vary KEY --target P [--policy P] [--lo X --hi Y] [--step S] [--tolerance PP] "
             "[--max-steps N] [--set k=v]... [--out DIR] [--jobs N]",
             opts, {}, args, vm))
    return 0;
  if (r.jobs < 1) throw UsageError("--jobs", "must be >= 1, got " + std::to_string(r.jobs));
  if (vm.count("lo") != 0U) r.lo = lo;
  if (vm.count("hi") != 0U) r.hi = hi;
  std::optional<StagingDir> staging;
  if (!out.empty()) staging.emplace(out);  // before the simulations: a busy --out fails fast
  const engine::BreakevenOutcome o = engine::run_breakeven(r);
  for (const std::string& w : o.warnings) std::cerr << "edgc: warning: " << w << "\n";
  if (staging) {
    write_file_atomic(staging->path() / "breakeven.json", engine::breakeven_json(o));
    write_file_atomic(staging->path() / "curve.csv", engine::breakeven_csv(o));
    write_file_atomic(staging->path() / "curve.svg", curve_svg(o));
    staging->commit();
  }
  std::cout << engine::breakeven_text(o);
  if (staging)
    std::cout << "wrote       " << out << "/breakeven.json, " << out << "/curve.csv, " << out << "/curve.svg\n";
  return 0;
}

}  // namespace

void add_breakeven_command(std::vector<Command>& commands) {
  commands.push_back({"breakeven",
                      "the value of a scenario key at which a policy's saving reaches a target (search over simulate)",
                      run_breakeven_command});
}

}  // namespace edgc::cli
