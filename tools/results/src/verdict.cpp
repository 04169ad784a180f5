#include "edgc/results/verdict.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "edgc/core/policy_registry.hpp"
#include "edgc/results/result_document.hpp"

namespace edgc::results {
namespace {

constexpr const char* kStaticPolicy = "static";

std::string pct(double fraction) { return fmt_sig3(100.0 * fraction) + " %"; }

// "at 48.5 % gradient error (measured on the trace)", or nothing when unknown. The CQM's figure alone is not quoted
// as the error: it is a structure-free bound (near 90-98 % at realistic ranks whatever the gradients), not evidence of
// what compression costs this model, so the clause says so instead.
std::string error_clause(const VerdictRun& r) {
  if (!std::isfinite(r.error)) return "";
  if (!r.error_measured)
    return "; its gradient error is not known (no trace was replayed, and the CQM's structure-free prediction is not "
           "evidence)";
  if (r.trace_smaller_by > kTraceScaleLimit)
    return "; its gradient error is not known (the trace is of a model " + fmt_sig3(r.trace_smaller_by) +
           "x smaller, so the error measured on it is not evidence)";
  return " at " + pct(r.error) + " gradient error (measured on the trace" +
         (std::isfinite(r.cqm_error) ? "; CQM " + pct(r.cqm_error) : std::string()) + ")";
}

// "saves 0.281 % of training time (0.853 h, $83.5)" or "costs 1.2 % more training time (0.5 h, $40 more)".
std::string saving_clause(const VerdictRun& r) {
  if (!std::isfinite(r.saving)) return "training time unknown";
  const bool saves = r.saving > 0.0;
  std::string s =
      saves ? "saves " + pct(r.saving) + " of training time" : "costs " + pct(-r.saving) + " more training time";
  std::string detail;
  if (std::isfinite(r.hours_saved)) detail += fmt_sig3(std::abs(r.hours_saved)) + " h";
  if (std::isfinite(r.usd_saved))
    detail += (detail.empty() ? "" : ", ") + std::string("$") + fmt_sig3(std::abs(r.usd_saved)) +
              (r.usd_saved >= 0.0 ? "" : " more");
  if (!detail.empty()) s += " (" + detail + ")";
  return s;
}

// An error the comparison may rest on: measured on the trace, and on a trace within kTraceScaleLimit of the model.
bool error_is_evidence(const VerdictRun& r) {
  return std::isfinite(r.error) && r.error_measured && !(r.trace_smaller_by > kTraceScaleLimit);
}

// Which of `run` and `st` is better: the one with less error at equal time, else the faster one when it is no less
// accurate; empty when either error is no evidence (error_is_evidence) or each wins on one side. Sets `equal_time`.
std::string better_of(const VerdictRun& run, const VerdictRun& st, bool& equal_time) {
  equal_time = std::abs(run.saving - st.saving) < kEqualTimeTolerance;
  if (!error_is_evidence(run) || !error_is_evidence(st)) return "";
  if (equal_time) {
    if (run.error < st.error) return run.policy;
    if (st.error < run.error) return st.policy;
    return "";
  }
  const VerdictRun& fast = run.saving > st.saving ? run : st;
  const VerdictRun& slow = run.saving > st.saving ? st : run;
  return fast.error <= slow.error ? fast.policy : "";
}

std::string static_clause(const VerdictRun& run, const VerdictRun& st, std::string& better) {
  if (!std::isfinite(run.saving) || !std::isfinite(st.saving)) return "";
  bool equal_time = false;
  better = better_of(run, st, equal_time);
  std::string s = equal_time ? " At equal time (within " + pct(kEqualTimeTolerance) + " of training time) static rank "
                             : " Static rank ";
  s += (st.saving > 0.0 ? "saves " + pct(st.saving) : "costs " + pct(-st.saving) + " more") + error_clause(st);
  if (!better.empty())
    s += ": " + better + " is better.";
  else if (!error_is_evidence(run) || !error_is_evidence(st))
    s += "; the gradient errors are not both known, so neither is better.";
  else if (equal_time)
    s += ": the same.";
  else
    s += ": a trade-off (" + (run.saving > st.saving ? run.policy : st.policy) + " is faster, " +
         (run.saving > st.saving ? st.policy : run.policy) + " more accurate).";
  return s;
}

}  // namespace

const char* payoff_name(Payoff p) noexcept {
  switch (p) {
    case Payoff::kPays:
      return "pays";
    case Payoff::kMarginal:
      return "marginal";
    case Payoff::kDoesNotPay:
      break;
  }
  return "does not pay";
}

Payoff judge_saving(double saving, double min_saving) noexcept {
  if (!(saving > 0.0)) return Payoff::kDoesNotPay;  // NaN too
  return saving > min_saving ? Payoff::kPays : Payoff::kMarginal;
}

std::string fmt_sig3(double x) {
  if (std::isnan(x)) return "-";
  if (x == 0.0 || !std::isfinite(x)) return x == 0.0 ? "0" : (x > 0 ? "inf" : "-inf");
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2e", x);  // rounds to 3 significant digits first (9.996 -> 1.00e+01)
  const double r = std::strtod(buf, nullptr);
  const int magnitude = static_cast<int>(std::floor(std::log10(std::abs(r))));  // 0 for 1..9.99, 2 for 100..999
  const int decimals = std::max(0, 2 - magnitude);
  std::snprintf(buf, sizeof buf, "%.*f", decimals, r);
  return buf;
}

VerdictRun verdict_run(const RunFigures& run, const RunFigures& none) {
  VerdictRun v;
  v.policy = run.policy;
  if (none.training_time_s > 0.0) v.saving = 1.0 - run.training_time_s / none.training_time_s;
  v.hours_saved = (none.training_time_s - run.training_time_s) / 3600.0;
  v.usd_saved = none.cost_usd - run.cost_usd;
  v.error_measured = std::isfinite(run.gradient_error);
  v.error = v.error_measured ? run.gradient_error : run.cqm_error;
  v.cqm_error = run.cqm_error;
  return v;
}

Verdict judge(const VerdictInput& in, double min_saving) {
  Verdict v;
  v.policy = in.run.policy;
  v.saving = in.run.saving;
  v.min_saving = min_saving;
  v.dp_sync_share = in.dp_sync_share;
  v.payoff = judge_saving(in.run.saving, min_saving);
  v.error_clause = error_clause(in.run);
  v.text = in.run.policy + " " + payoff_name(v.payoff) + ": " + saving_clause(in.run) + v.error_clause + "; " +
           (v.payoff == Payoff::kPays ? "above" : "pays only above") + " " + pct(min_saving) + " (--min-saving).";
  if (std::isfinite(in.dp_sync_share))
    v.text += " The data-parallel sync is " + pct(in.dp_sync_share) + " of the uncompressed iteration.";
  if (in.static_run) v.text += static_clause(in.run, *in.static_run, v.better_than_static);
  return v;
}

std::vector<Verdict> judge_runs(const std::vector<const RunFigures*>& runs, double min_saving,
                                double trace_smaller_by) {
  const RunFigures* none = nullptr;
  const RunFigures* st = nullptr;
  for (const RunFigures* r : runs) {
    if (core::is_baseline_policy(r->policy)) none = r;
    if (r->policy == kStaticPolicy) st = r;
  }
  std::vector<Verdict> out;
  if (none == nullptr) return out;
  for (const RunFigures* r : runs) {
    if (r == none) continue;
    VerdictInput in;
    in.run = verdict_run(*r, *none);
    in.run.trace_smaller_by = trace_smaller_by;
    if (none->iteration_time_s > 0.0) in.dp_sync_share = none->comm_latency_s / none->iteration_time_s;
    if (st != nullptr && r != st) {
      in.static_run = verdict_run(*st, *none);
      in.static_run->trace_smaller_by = trace_smaller_by;
    }
    out.push_back(judge(in, min_saving));
  }
  return out;
}

MemoryWithCompression memory_with_error_feedback(const ResultDocument& doc) {
  MemoryWithCompression out;
  const auto m = doc.sections.find("memory");
  if (m == doc.sections.end() || !m->is_object() || !m->contains("stages") || !(*m)["stages"].is_array()) return out;
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  double simulated = 0.0;
  double buffer = 0.0;
  for (const auto& s : (*m)["stages"]) {
    const double peak = s.value("peak_GiB", 0.0);
    const double ef = s.value("parameters", 0.0) * kErrorFeedbackBytesPerParameter / kGiB;
    if (!std::isfinite(out.peak_GiB) || peak + ef > out.peak_GiB) {
      out.peak_GiB = peak + ef;
      simulated = peak;
      buffer = ef;
    }
  }
  if (!std::isfinite(out.peak_GiB)) return out;
  out.text = "Memory with compression: peak " + fmt_sig3(out.peak_GiB) + " GiB per GPU";
  if ((*m).contains("capacity_GiB") && (*m)["capacity_GiB"].is_number()) {
    const double capacity = (*m)["capacity_GiB"].get<double>();
    out.text += " of " + fmt_sig3(capacity) + " GiB (" + fmt_sig3(capacity - out.peak_GiB) + " GiB headroom)";
  }
  out.text += ": the simulated " + fmt_sig3(simulated) + " GiB plus " + fmt_sig3(buffer) +
              " GiB for PowerSGD's error-feedback buffer (fp32, one value per parameter: assumed).";
  return out;
}

namespace {

// Where a simulated run does not pay and has a data-parallel sync across nodes, the command that finds the NIC
// bandwidth at which it would: for results without simulate's "bandwidth" section (--no-bandwidth-curve, older ones).
std::string breakeven_pointer(const ResultDocument& doc, const Verdict& v) {
  if (v.payoff == Payoff::kPays || doc.source != "simulate" || doc.scenario.empty() || !doc.parallelism ||
      doc.parallelism->dp < 2 || (doc.cluster && doc.cluster->nodes < 2))
    return "";
  return " The NIC bandwidth at which it would pay: edgc breakeven --scenario " + doc.scenario +
         " --vary cluster.inter_node.nic_bandwidth_GBps --target " + fmt_sig3(100.0 * v.min_saving) + " --policy " +
         v.policy + " (with this run's --set).";
}

// "1.83 GB/s per NIC (0.915 GB/s = 7.32 Gb/s per GPU)": a NIC's bandwidth and its share per GPU that uses it.
std::string nic_and_gpu(double per_nic_GBps, double gpus_per_nic) {
  std::string s = fmt_sig3(per_nic_GBps) + " GB/s per NIC";
  if (gpus_per_nic > 0.0)
    s += " (" + fmt_sig3(per_nic_GBps / gpus_per_nic) + " GB/s = " + fmt_sig3(8.0 * per_nic_GBps / gpus_per_nic) +
         " Gb/s per GPU)";
  return s;
}

}  // namespace

std::string bandwidth_clause(const ResultDocument& doc, const Verdict& v) {
  if (v.payoff == Payoff::kPays) return "";
  const auto b = doc.sections.find("bandwidth");
  if (b == doc.sections.end() || !b->is_object() || !b->contains("policies") || !(*b)["policies"].is_array())
    return breakeven_pointer(doc, v);
  const nlohmann::ordered_json* entry = nullptr;
  for (const auto& p : (*b)["policies"])
    if (p.is_object() && p.value("policy", "") == v.policy) entry = &p;
  const auto number = [](const nlohmann::ordered_json& j, const char* key) {
    return j.contains(key) && j[key].is_number() ? j[key].get<double>() : RunFigures::kAbsent;
  };
  const double target = number(*b, "target_saving_pct");
  // The section answers for its own threshold only: a verdict at another keeps the command.
  if (entry == nullptr || entry->value("pays_at_scenario_value", false) ||
      !(std::abs(target - 100.0 * v.min_saving) < 1e-9))
    return breakeven_pointer(doc, v);
  const double per_gpu = number(*b, "gpus_per_nic");
  const double here = number(*b, "scenario_value");
  const std::string against = std::isfinite(here) ? ", against this cluster's " + nic_and_gpu(here, per_gpu) : "";
  if (entry->value("found", false) && entry->value("converged", false)) {
    const double value = number(*entry, "value");
    return " It would pay (save " + fmt_sig3(target) + " %) at a NIC bandwidth of " + nic_and_gpu(value, per_gpu) +
           against + ": simulated, it saves " + fmt_sig3(number(*entry, "saving_pct")) + " % there (within " +
           fmt_sig3(number(*b, "tolerance_pct")) + " points); the curve is result.json's bandwidth.";
  }
  if (entry->value("found", false) && entry->contains("bracket") && (*entry)["bracket"].is_array() &&
      (*entry)["bracket"].size() == 2)
    return " It would pay (save " + fmt_sig3(target) + " %) at a NIC bandwidth between " +
           fmt_sig3((*entry)["bracket"][0].get<double>()) + " and " +
           nic_and_gpu((*entry)["bracket"][1].get<double>(), per_gpu) + against +
           " (the search stopped before it settled: edgc breakeven refines it); the curve is result.json's "
           "bandwidth.";
  const double lo = number(*b, "lo");
  const double at_lo = number(*entry, "saving_pct_at_lo");
  return " No NIC bandwidth down to " + nic_and_gpu(lo, per_gpu) + against + " makes it pay" +
         (std::isfinite(at_lo) ? " (it saves " + fmt_sig3(at_lo) + " % there)" : std::string()) + ".";
}

double trace_smaller_by(const ResultDocument& doc) {
  const auto f = doc.sections.find("fidelity");
  if (f != doc.sections.end() && f->is_object() && f->contains("trace_parameters") &&
      (*f)["trace_parameters"].is_number() && (*f)["trace_parameters"].get<double>() > 0.0 && doc.model_parameters)
    return *doc.model_parameters / (*f)["trace_parameters"].get<double>();
  return RunFigures::kAbsent;
}

std::vector<Verdict> result_verdicts(const ResultDocument& doc, double min_saving) {
  std::vector<const RunFigures*> runs;
  for (const ResultRun& r : doc.runs) runs.push_back(&r);
  std::vector<Verdict> out = judge_runs(runs, min_saving, trace_smaller_by(doc));
  const MemoryWithCompression memory = memory_with_error_feedback(doc);
  for (Verdict& v : out) {
    v.peak_memory_GiB = memory.peak_GiB;
    if (!memory.text.empty()) v.text += " " + memory.text;
    v.text += bandwidth_clause(doc, v);
  }
  return out;
}

nlohmann::ordered_json verdict_section(const std::vector<Verdict>& verdicts, double min_saving) {
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();
  const auto number = [](double x) { return std::isfinite(x) ? nlohmann::ordered_json(x) : nlohmann::ordered_json(); };
  for (const Verdict& v : verdicts)
    runs.push_back({{"policy", v.policy},
                    {"verdict", payoff_name(v.payoff)},
                    {"saving", number(v.saving)},
                    {"dp_sync_share", number(v.dp_sync_share)},
                    {"better_than_static", v.better_than_static.empty() ? nlohmann::ordered_json()
                                                                        : nlohmann::ordered_json(v.better_than_static)},
                    {"peak_memory_GiB", number(v.peak_memory_GiB)},
                    {"text", v.text}});
  return {{"min_saving", min_saving}, {"runs", runs}};
}

std::string break_even_line(const ResultDocument& doc) {
  const auto it = doc.sections.find("break_even");
  if (it == doc.sections.end() || !it->is_object() || !it->contains("stages")) return "";
  const nlohmann::ordered_json& b = *it;
  std::string ranks;
  for (const auto& s : b["stages"]) {
    const std::string kind = s.value("kind", "");
    const double rank = s["rank"].is_number() ? s["rank"].get<double>() : RunFigures::kAbsent;
    // Ranks are counts: whole above 100, else 3 significant digits.
    std::string r = kind == "below_first_probe" ? "none"
                    : !std::isfinite(rank)      ? "-"
                    : rank >= 100.0             ? std::to_string(std::lround(rank))
                                                : fmt_sig3(rank);
    if (kind == "above_last_probe") r = "> " + r;
    if (kind == "all_skipped") r = "<= " + r + " (skip rule)";
    ranks += (ranks.empty() ? "" : ", ") + r;
  }
  std::string line =
      "break-even rank per stage (the compressed DP sync, compression included, as slow as the "
      "uncompressed one; \"skip rule\": faster at every rank that compresses): " +
      ranks;
  if (b.contains("r_max") && b["r_max"].is_number_integer()) {
    line += "; r_max " + b["r_max"].dump() + " from " +
            (b.value("r_max_from", "") == "break_even" ? std::string("the break-even (compression.r_max auto)")
                                                       : std::string("compression.r_max"));
    if (b.value("r_max_from", "") != "break_even" && b.contains("r_max_auto") && b["r_max_auto"].is_number_integer())
      line += " (auto would give " + b["r_max_auto"].dump() + ")";
  }
  return line;
}

double result_min_saving(const ResultDocument& doc) {
  const auto it = doc.sections.find("verdict");
  if (it == doc.sections.end() || !it->is_object()) return kDefaultMinSaving;
  const auto m = it->find("min_saving");
  return m != it->end() && m->is_number() ? m->get<double>() : kDefaultMinSaving;
}

}  // namespace edgc::results
