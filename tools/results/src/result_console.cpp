#include "edgc/results/result_console.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "edgc/core/error.hpp"
#include "edgc/results/convergence.hpp"
#include "edgc/results/table.hpp"
#include "edgc/results/verdict.hpp"

namespace edgc::results {
namespace {

// Hours, GPU-hours and dollars: whole numbers when large, 4 significant digits when small.
std::string fmt_amount(double x) { return x >= 100.0 ? fmt_f(x, 0) : fmt_g(x, 4); }

std::string pct(double fraction) { return fmt_f(100.0 * fraction, 2); }

// The model's size and the memory headroom per GPU (a planner's first question), from result.json's "model" and
// "memory" sections.
void print_model(std::ostream& os, const ResultDocument& r) {
  if (!r.model_name || !r.model_parameters) return;
  os << "model       " << *r.model_name << ": " << fmt_g(*r.model_parameters / 1e9, 4) << " B parameters";
  if (r.model_architecture.is_object() && r.model_architecture.contains("mixture_of_experts")) {
    const auto& moe = r.model_architecture["mixture_of_experts"];
    os << " (" << fmt_g(moe.value("active_parameters", 0.0) / 1e9, 4) << " B active; " << moe.value("experts", 0)
       << " experts, top " << moe.value("top_k", 0) << ", ep " << moe.value("ep", 1) << ", expert DP "
       << moe.value("expert_dp", 1);
    if (moe.contains("moe_layers")) os << ", " << moe.value("moe_layers", 0) << " MoE layers";
    os << ")";
  }
  const auto memory = r.sections.find("memory");
  if (memory == r.sections.end() || !memory->is_object() || !memory->contains("stages")) {
    os << "\n";
    return;
  }
  double lo = 0.0, hi = 0.0;
  const auto& stages = (*memory)["stages"];
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const double p = stages[i].value("parameters", 0.0);
    lo = i == 0 ? p : std::min(lo, p);
    hi = std::max(hi, p);
  }
  os << ", " << fmt_g(lo / 1e9, 3);
  if (hi > lo) os << "-" << fmt_g(hi / 1e9, 3);
  os << " B per GPU over " << stages.size() << (stages.size() == 1 ? " stage" : " stages");
  const double peak = memory->value("peak_GiB", 0.0);
  os << "; peak memory " << fmt_f(peak, 1) << " GiB per GPU (stage " << memory->value("peak_stage", 0) << ")";
  if ((*memory)["capacity_GiB"].is_number()) {
    const double cap = (*memory)["capacity_GiB"].get<double>();
    os << " of " << fmt_g(cap, 4) << " GiB, " << fmt_f(cap - peak, 1) << " GiB headroom";
  }
  os << "\n";
}

void print_setup(std::ostream& os, const ResultDocument& r) {
  if (!r.cluster || !r.parallelism || !r.run || !r.simulations || !r.simulated_iterations)
    throw InternalError("print_result_summary: the result has no cluster, parallelism, run or simulation counts");
  const ResultParallelism& par = *r.parallelism;
  os << "simulate    " << r.scenario << ": " << r.cluster->gpus << " x " << r.cluster->gpu << ", tp " << par.tp
     << " pp " << par.pp << " dp " << par.dp << ", " << r.run->iterations << " iterations, " << *r.simulations
     << " distinct rank vectors";
  if (r.composition == "stage-separable")
    os << " composed from " << *r.simulated_iterations << " simulated uniform-rank iterations";
  else
    os << " simulated";
  os << "\n";
  print_model(os, r);
  if (const std::string b = break_even_line(r); !b.empty()) os << b << "\n";
  os << "\n";
}

// A mixture of experts: the token all-to-alls (inside bubble+PP above) and the dense and expert gradient syncs
// (the communication latency is the longer stage's dense sync plus its expert sync).
void print_experts(std::ostream& os, const ResultDocument& r) {
  const bool moe = std::any_of(r.runs.begin(), r.runs.end(), [](const ResultRun& x) {
    return x.breakdown && (x.breakdown->all_to_all_s > 0 || x.breakdown->expert_sync_s > 0);
  });
  if (!moe) return;
  os << "\nmixture of experts, per iteration (mean over the run), seconds\n";
  Table t({"policy", "token all-to-all", "dense sync", "expert sync"});
  for (const ResultRun& x : r.runs) {
    if (!x.breakdown) continue;
    const sim::IterationBreakdown& d = *x.breakdown;
    t.add_row({x.policy, fmt_f(d.all_to_all_s, 3), fmt_f(std::max(0.0, x.comm_latency_s - d.expert_sync_s), 3),
               fmt_f(d.expert_sync_s, 3)});
  }
  t.print(os);
}

}  // namespace

void print_result_summary(std::ostream& os, const ResultDocument& r) {
  print_setup(os, r);
  const double price = r.cluster->price_per_gpu_hour_usd;
  Table t({"policy", "iter s", "comm latency s", "comm -%", "train h", "train -%", "speedup", "GPU-h", "cost $",
           "warm-up end", "grad err %", "CQM err %"});
  const auto error_pct = [](double e) { return std::isfinite(e) ? fmt_f(100.0 * e, 1) : std::string("-"); };
  for (const ResultRun& x : r.runs)
    t.add_row({x.policy, fmt_f(x.iteration_time_s, 3), fmt_f(x.comm_latency_s, 3),
               pct(x.comm_latency_reduction_vs_none), fmt_amount(x.training_time_s / 3600.0),
               pct(x.training_time_reduction_vs_none), fmt_f(x.speedup_vs_none, 3), fmt_amount(x.gpu_hours),
               fmt_amount(x.gpu_hours * price),
               x.warmup_end_iteration ? std::to_string(*x.warmup_end_iteration) : std::string("-"),
               error_pct(x.gradient_error), error_pct(x.cqm_error)});
  t.print(os);
  if (const auto f = r.sections.find("fidelity"); f != r.sections.end() && f->is_object()) {
    // With trace.error_path the two sides read different traces: both are named.
    const auto e = r.sections.find("entropy");
    const std::string entropy_trace = f->value("trace_key", "") == "trace.error_path" && e != r.sections.end() &&
                                              e->is_object() && e->value("source", "") == "trace"
                                          ? "; the entropy came from " + e->value("path", std::string("?"))
                                          : std::string();
    if (f->value("source", "") == "trace")
      os << "grad err: relative error of the averaged gradient, PowerSGD with error feedback replayed on "
         << f->value("trace", "") << " (mean over compressed iterations; ranks mapped by equal CQM energy"
         << entropy_trace << "). CQM err: the structure-free prediction for the simulated shapes.\n";
    else
      os << "CQM err: the structure-free prediction for the simulated shapes (" << f->value("note", "") << ").\n";
  }
  os << "\nper iteration (mean over the run), seconds\n";
  Table b({"policy", "compute", "TP comm", "bubble+PP", "exposed DP", "embedding", "optimizer", "exposed compress",
           "entropy", "compress total", "PP transfers", "PP compress", "PP MB sent"});
  for (const ResultRun& x : r.runs) {
    if (!x.breakdown) continue;
    const sim::IterationBreakdown& d = *x.breakdown;
    b.add_row({x.policy, fmt_f(d.compute_s, 3), fmt_f(d.tp_comm_s, 3), fmt_f(d.bubble_s, 3),
               fmt_f(d.exposed_dp_comm_s, 3), fmt_f(d.embedding_sync_s, 3), fmt_f(d.optimizer_s, 3),
               fmt_f(d.exposed_compression_s, 4), fmt_f(d.entropy_s, 5), fmt_f(d.compression_s, 4),
               fmt_f(d.pp_comm_s, 3), fmt_f(d.pp_compression_s, 4), fmt_f(d.pp_send_bytes / 1e6, 1)});
  }
  b.print(os);
  print_experts(os, r);
  const std::vector<Verdict> verdicts = result_verdicts(r, result_min_saving(r));
  if (!verdicts.empty()) os << "\nverdict against no compression\n";
  for (const Verdict& v : verdicts) os << "- " << v.text << "\n";
  const std::vector<std::string> loss = convergence_lines(r);
  if (!loss.empty()) os << "\nmeasured loss (convergence records matching model and settings; tools/README.md)\n";
  for (const std::string& l : loss) os << "- " << l << "\n";
}

}  // namespace edgc::results
