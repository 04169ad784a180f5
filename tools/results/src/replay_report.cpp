#include "edgc/results/replay_report.hpp"

#include <sstream>

#include "edgc/core/entropy.hpp"
#include "edgc/core/rank_rule.hpp"
#include "edgc/results/table.hpp"

namespace edgc::results {
namespace {

using nlohmann::ordered_json;

ordered_json opt(const std::optional<double>& v) { return v ? ordered_json(*v) : ordered_json(nullptr); }
ordered_json opt_int(const std::optional<std::int64_t>& v) { return v ? ordered_json(*v) : ordered_json(nullptr); }

ordered_json boundary_json(const std::optional<ReplayBoundaryWindow>& b) {
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

ordered_json stages_json(const ReplayReport& r) {
  ordered_json stages = ordered_json::array();
  for (std::size_t k = 0; k < r.stages.size(); ++k) {
    const ReplayStageSummary& s = r.stages[k];
    stages.push_back({{"stage", k},
                      {"cqm_matrix", {s.cqm_matrix.first, s.cqm_matrix.second}},
                      {"compressed_tensors", s.compressed_tensors},
                      {"mean_relative_error", s.error_n ? ordered_json(s.error_sum / s.error_n) : nullptr},
                      {"rank_min", s.rank_max ? ordered_json(s.rank_min) : nullptr},
                      {"rank_max", s.rank_max ? ordered_json(s.rank_max) : nullptr}});
    if (const auto& b = s.boundary) {
      stages.back()["boundary"] = {{"name", b->name},
                                   {"matrix", {b->matrix.first, b->matrix.second}},
                                   {"compressed_windows", b->compressed_windows},
                                   {"mean_message_error", opt(b->mean(0))},
                                   {"mean_message_error_without_lazy_error_propagation", opt(b->mean(1))},
                                   {"mean_accumulated_error", opt(b->mean(2))},
                                   {"mean_accumulated_error_without_lazy_error_propagation", opt(b->mean(3))}};
    }
  }
  return stages;
}

ordered_json summary_json(const ReplayReport& r) {
  const auto windows = static_cast<int>(r.windows.size());
  return {{"windows", windows},
          {"warmup_end_iteration", opt_int(r.warmup_end)},
          {"full_sampling_warmup_end_iteration", opt_int(r.full_warmup_end)},
          {"agreement_with_full_sampling",
           r.compare_full && windows ? ordered_json(double(r.agreeing) / windows) : nullptr},
          {"trajectory_agreement_with_full_sampling",
           r.compare_full && windows ? ordered_json(double(r.trajectory_agreeing) / windows) : nullptr},
          {"bindings", r.bindings},
          {"estimation_elements", r.sampled_elements},
          {"full_estimation_elements", r.full_elements},
          {"estimation_seconds", r.sampled_seconds},
          {"full_estimation_seconds", r.full_seconds},
          {"wire_floats", r.wire_floats},
          {"dense_floats", r.dense_floats},
          {"boundary_wire_floats", r.boundary_wire_floats},
          {"boundary_dense_floats", r.boundary_dense_floats}};
}

ordered_json window_json(const ReplayWindow& w) {
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
  return {{"window", w.window},
          {"first_iteration", w.first_iteration},
          {"end_iteration", w.end_iteration},
          {"captured_iterations", w.captured_iterations},
          {"sampled_iterations", w.sampled_iterations},
          {"mean_loss", opt(w.mean_loss)},
          {"warmup", w.warmup},
          {"agrees_with_full_sampling", w.agrees},
          {"trajectory_agrees_with_full_sampling", w.trajectory_agrees},
          {"stages", st}};
}

std::string csv(const std::optional<double>& v) {
  if (!v) return "";
  std::ostringstream os;
  os.precision(9);
  os << *v;
  return os.str();
}

std::string cell(const std::optional<double>& v, int digits = 4) { return v ? fmt_g(*v, digits) : "-"; }
std::string pct(const std::optional<double>& v) { return v ? fmt_f(100.0 * *v, 1) : std::string("-"); }

// The pipeline-boundary table: per window and boundary the rank and the four errors (only when the trace records
// boundary gradients and the policy compresses them in some window).
void print_boundaries(std::ostream& os, const ReplayReport& r) {
  std::vector<std::size_t> with;
  for (std::size_t k = 0; k < r.stages.size(); ++k)
    if (r.stages[k].boundary) with.push_back(k);
  if (with.empty()) return;
  int compressed = 0;
  for (std::size_t k : with) compressed += r.stages[k].boundary->compressed_windows;
  if (compressed == 0) {
    os << "boundaries  the trace records " << with.size()
       << " stage-boundary gradients; this policy sends them uncompressed (edgc-pp compresses them)\n";
    return;
  }
  std::vector<std::string> head = {"window"};
  for (std::size_t k : with) {
    const std::string p = "s" + std::to_string(k) + "->s" + std::to_string(k - 1) + " ";
    for (const char* c : {"H", "r", "msg%", "msg% noLEP", "sum%", "sum% noLEP"}) head.push_back(p + c);
  }
  Table t(head);
  for (const auto& w : r.windows) {
    std::vector<std::string> row = {std::to_string(w.window)};
    for (std::size_t k : with) {
      const auto& b = w.stages[k].boundary;
      row.push_back(b && b->entropy_gaussian ? fmt_g(*b->entropy_gaussian, 3) : "-");
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
    const ReplayBoundarySummary& b = *r.stages[k].boundary;
    os << "s" << k << "->s" << k - 1 << ": msg " << pct(b.mean(0)) << "% (" << pct(b.mean(1)) << "% noLEP), sum "
       << pct(b.mean(2)) << "% (" << pct(b.mean(3)) << "% noLEP)" << (i + 1 < with.size() ? " · " : "\n");
  }
  if (r.boundary_dense_floats > 0)
    os << "            boundary messages sent "
       << fmt_f(100.0 * double(r.boundary_wire_floats) / double(r.boundary_dense_floats), 1)
       << " % of their uncompressed floats over the replay\n";
}

void print_windows(std::ostream& os, const ReplayReport& r) {
  std::vector<std::string> head = {"window", "iterations", "loss"};
  for (std::size_t k = 0; k < r.stages.size(); ++k) {
    const std::string p = "s" + std::to_string(k) + " ";
    for (const char* c : {"Hg", "Hh", "kurt", "r", "err%"}) head.push_back(p + c);
  }
  Table t(head);
  for (const auto& w : r.windows) {
    std::vector<std::string> row = {std::to_string(w.window),
                                    std::to_string(w.first_iteration) + "-" + std::to_string(w.end_iteration - 1),
                                    w.mean_loss ? fmt_f(*w.mean_loss, 3) : "-"};
    for (const auto& x : w.stages) {
      row.push_back(cell(x.entropy_gaussian, 3));
      row.push_back(cell(x.entropy_histogram, 3));
      row.push_back(cell(x.excess_kurtosis, 3));
      row.push_back(w.warmup ? "warm" : x.rank == 0 ? "full" : std::to_string(x.rank));
      row.push_back(x.relative_error && !w.warmup ? fmt_f(100.0 * *x.relative_error, 1) : "-");
    }
    t.add_row(std::move(row));
  }
  t.print(os);
}

}  // namespace

std::optional<double> ReplayBoundarySummary::mean(std::size_t i) const {
  return compressed_windows > 0 ? std::optional<double>(error_sum[i] / compressed_windows) : std::nullopt;
}

ordered_json to_json(const ReplayReport& r) {
  ordered_json j;
  j["schema"] = kReplaySchema;
  j["trace"] = r.trace;
  j["scenario"] = r.scenario;
  j["notes"] = r.notes;
  j["policy"] = r.controller.policy;
  j["estimator"] = core::entropy_estimator_name(r.controller.estimator);
  j["controller_api_version"] = core::kControllerApiVersion;
  j["stages"] = stages_json(r);
  j["summary"] = summary_json(r);
  ordered_json ws = ordered_json::array();
  for (const auto& w : r.windows) ws.push_back(window_json(w));
  j["windows"] = ws;
  return j;
}

std::string windows_csv(const ReplayReport& r) {
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

void print_replay_summary(std::ostream& os, const ReplayReport& r) {
  const core::ControllerConfig& c = r.controller;
  os << "replay      " << r.trace << " · policy " << c.policy << " · estimator "
     << core::entropy_estimator_name(c.estimator) << " · window " << r.gds.window_iters << " it · alpha " << r.gds.alpha
     << " · beta " << r.gds.beta << " · ranks " << c.cqm.r_min << ".." << c.cqm.r_max << " step " << c.cqm.step << " · "
     << r.world_size << " emulated DP ranks" << (r.backend == "cpu" ? "" : " · backend " + r.backend) << "\n";
  os << "warm-up     " << (r.warmup_end ? "ended at iteration " + std::to_string(*r.warmup_end) : "never ended")
     << "\n\n";
  print_windows(os, r);
  os << "\n  per stage sK: Hg / Hh = entropy (nats) of the GDS-sampled gradients, Gaussian-from-std / fixed-bin "
        "histogram;\n  kurt = excess kurtosis; r = PowerSGD rank in force (warm = warm-up, uncompressed); err% = "
        "compressed average vs true average gradient, with error feedback\n\n";
  os << "per stage   ";
  for (std::size_t k = 0; k < r.stages.size(); ++k) {
    const ReplayStageSummary& s = r.stages[k];
    os << "s" << k << " (" << s.cqm_matrix.first << "x" << s.cqm_matrix.second << "): ranks ";
    os << (s.rank_max ? std::to_string(s.rank_min) + ".." + std::to_string(s.rank_max) : "-");
    os << ", mean err " << (s.error_n ? fmt_f(100.0 * s.error_sum / s.error_n, 1) + "%" : "-")
       << (k + 1 < r.stages.size() ? " · " : "\n");
  }
  os << "bindings    ";
  for (const auto& [name, n] : r.bindings) os << name << " " << n << "  ";
  os << "(stage decisions after warm-up; r_min/r_max = clamp bound, step = step limit bound)\n";
  if (r.compare_full) {
    const auto windows = static_cast<int>(r.windows.size());
    os << "sampling    " << r.agreeing << " of " << windows << " windows ("
       << fmt_f(100.0 * r.agreeing / std::max(1, windows), 1)
       << " %) decide the same ranks as full sampling would from the same state (an independent full-sampling "
          "controller follows the same trajectory in "
       << r.trajectory_agreeing << ");\n            "
       << "estimation touched " << r.sampled_elements << " of " << r.full_elements << " elements ("
       << fmt_f(100.0 * (1.0 - double(r.sampled_elements) / std::max<double>(1.0, double(r.full_elements))), 1)
       << " % less), " << fmt_g(r.sampled_seconds, 3) << " s vs " << fmt_g(r.full_seconds, 3) << " s\n";
  }
  print_boundaries(os, r);
  if (r.dense_floats > 0)
    os << "traffic     compressed matrices sent " << fmt_f(100.0 * double(r.wire_floats) / double(r.dense_floats), 1)
       << " % of their uncompressed floats over the replay\n";
}

}  // namespace edgc::results
