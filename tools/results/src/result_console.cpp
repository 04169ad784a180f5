#include "edgc/results/result_console.hpp"

#include <cmath>
#include <string>

#include "edgc/core/error.hpp"
#include "edgc/results/table.hpp"

namespace edgc::results {
namespace {

// Hours, GPU-hours and dollars: whole numbers when large, 4 significant digits when small.
std::string fmt_amount(double x) { return x >= 100.0 ? fmt_f(x, 0) : fmt_g(x, 4); }

std::string pct(double fraction) { return fmt_f(100.0 * fraction, 2); }

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
  os << "\n\n";
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
    if (f->value("source", "") == "trace")
      os << "grad err: relative error of the averaged gradient, PowerSGD with error feedback replayed on "
         << f->value("trace", "") << " (mean over compressed iterations; ranks mapped by equal CQM energy). "
         << "CQM err: the structure-free prediction for the simulated shapes.\n";
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
}

}  // namespace edgc::results
