#include "edgc/results/trace_inspection.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "edgc/results/table.hpp"
#include "edgc/traces/dtype.hpp"

namespace edgc::results {
namespace {

using nlohmann::ordered_json;
using traces::TensorStats;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

ordered_json opt_json(const std::optional<double>& v) { return v ? ordered_json(*v) : ordered_json(nullptr); }

ordered_json stats_json(const TensorStats& s) {
  return {{"count", s.count},       {"mean", opt_json(s.mean)},
          {"std", opt_json(s.std)}, {"excess_kurtosis", opt_json(s.excess_kurtosis)},
          {"min", opt_json(s.min)}, {"max", opt_json(s.max)},
          {"nan", s.nan},           {"inf", s.inf}};
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s;
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s.empty() ? "scalar" : s;
}

// Evenly spaced row indices including the first and the last; all of them when rows == 0 or rows >= n.
std::vector<std::size_t> pick_rows(std::size_t n, std::size_t rows) {
  std::vector<std::size_t> out;
  if (rows == 0 || rows >= n) {
    for (std::size_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t i = rows == 1 ? n - 1 : (r * (n - 1) + (rows - 1) / 2) / (rows - 1);
    if (out.empty() || out.back() != i) out.push_back(i);
  }
  return out;
}

// What the trace holds: model, stages, sizes, iterations, who captured it, non-finite values.
void print_summary(std::ostream& os, const TraceInspection& r) {
  const auto& m = r.manifest;
  std::int64_t params = 0;
  std::int64_t captured = 0;
  for (std::size_t k = 0; k < m.tensors.size(); ++k) {
    params += m.tensors[k].numel();
    captured += r.captured[k];
  }
  const auto& first = m.iterations.front();
  const auto& last = m.iterations.back();
  os << "trace       " << r.trace << "  (edgc.trace v" << m.version_string() << ")\n";
  os << "model       " << m.model_name << " · " << m.num_stages << " pipeline stages · " << m.tensors.size()
     << " tensors · " << with_commas(params) << " parameters, " << with_commas(captured)
     << " values captured per iteration\n";
  os << "iterations  " << m.iterations.size() << " captured, steps " << first.iteration << " .. " << last.iteration;
  if (first.loss && last.loss) os << " · loss " << fmt_f(*first.loss, 3) << " -> " << fmt_f(*last.loss, 3);
  os << "\n";
  const auto prov = nlohmann::json::parse(m.provenance_json);
  if (prov.contains("tool") && prov["tool"].is_string())
    os << "captured by " << prov["tool"].get<std::string>() << "\n";
  if (prov.contains("command") && prov["command"].is_string())
    os << "command     " << prov["command"].get<std::string>() << "\n";

  std::int64_t nan = 0;
  std::int64_t inf = 0;
  std::size_t bad = 0;
  for (const auto& row : r.stats) {
    for (const auto& s : row) {
      nan += s.nan;
      inf += s.inf;
      bad += (s.nan + s.inf) > 0 ? 1 : 0;
    }
  }
  os << "non-finite  " << nan << " NaN, " << inf << " Inf"
     << (bad ? " in " + std::to_string(bad) + " tensor-iterations (excluded from the statistics)" : "") << "\n\n";
}

void print_tensors(std::ostream& os, const TraceInspection& r) {
  const auto& m = r.manifest;
  os << "tensors\n";
  Table tt({"name", "shape", "dtype", "stage", "layer", "mode", "captured"});
  for (std::size_t k = 0; k < m.tensors.size(); ++k) {
    const auto& t = m.tensors[k];
    tt.add_row({t.name, shape_text(t.shape), std::string(traces::manifest_name(t.dtype)), std::to_string(t.stage),
                std::to_string(t.layer), t.mode == traces::CaptureMode::kFull ? "full" : "blocks",
                with_commas(r.captured[k])});
  }
  tt.print(os);
  if (m.boundaries.empty()) return;
  os << "\nstage-boundary gradients (the activation gradient a stage sends backward, one micro-batch, tokens x "
        "hidden; rms at the first and last iteration)\n";
  Table bt({"name", "sent by stage", "to stage", "shape", "micro-batch", "dtype", "rms first", "rms last"});
  for (std::size_t k = 0; k < m.boundaries.size(); ++k) {
    const auto& b = m.boundaries[k];
    const auto rms = [&](const TensorStats& x) {
      return x.count > 0 ? fmt_g(std::sqrt(*x.std * *x.std + *x.mean * *x.mean), 4) : std::string("-");
    };
    bt.add_row({b.name, std::to_string(b.stage), std::to_string(b.stage - 1),
                std::to_string(b.rows) + "x" + std::to_string(b.cols), std::to_string(b.micro_batch),
                std::string(traces::manifest_name(b.dtype)), rms(r.boundary_stats.front()[k]),
                rms(r.boundary_stats.back()[k])});
  }
  bt.print(os);
}

// Per-stage trend: RMS over all captured values of the stage (pooled from per-tensor count, mean and std) and the
// largest excess kurtosis among its tensors.
void print_stage_trend(std::ostream& os, const TraceInspection& r, std::size_t rows) {
  const auto& m = r.manifest;
  const auto picked = pick_rows(m.iterations.size(), rows == 0 ? 0 : std::max<std::size_t>(rows, 2) * 2);
  os << "\nper-stage trend (rms = root mean square of the stage's captured gradient values; kurt = largest excess "
        "kurtosis among its tensors)\n";
  std::vector<std::string> head = {"iteration", "loss"};
  for (int s = 0; s < m.num_stages; ++s) {
    head.push_back("s" + std::to_string(s) + " rms");
    head.push_back("s" + std::to_string(s) + " kurt");
  }
  Table st(head);
  for (std::size_t i : picked) {
    std::vector<std::string> row = {std::to_string(m.iterations[i].iteration),
                                    m.iterations[i].loss ? fmt_f(*m.iterations[i].loss, 3) : "-"};
    for (int s = 0; s < m.num_stages; ++s) {
      double sq = 0.0;
      double n = 0.0;
      double kurt = kNaN;
      for (std::size_t k = 0; k < m.tensors.size(); ++k) {
        const auto& x = r.stats[i][k];
        if (m.tensors[k].stage != s || x.count == 0) continue;
        const auto c = static_cast<double>(x.count);
        sq += c * (*x.std * *x.std + *x.mean * *x.mean);
        n += c;
        if (x.excess_kurtosis && !(*x.excess_kurtosis <= kurt)) kurt = *x.excess_kurtosis;
      }
      row.push_back(n > 0 ? fmt_g(std::sqrt(sq / n), 4) : "-");
      row.push_back(fmt_g(kurt, 4));
    }
    st.add_row(std::move(row));
  }
  st.print(os);
}

void print_tensor_stats(std::ostream& os, const TraceInspection& r, std::size_t rows) {
  const auto& m = r.manifest;
  const auto detail_rows = pick_rows(m.iterations.size(), rows);
  os << "\nper-tensor statistics at " << detail_rows.size() << " of " << m.iterations.size()
     << " iterations (--rows 0 shows all; --json gives every value)\n";
  Table dt({"iteration", "tensor", "mean", "std", "kurt", "min", "max", "nan", "inf"});
  for (std::size_t i : detail_rows) {
    for (std::size_t k = 0; k < m.tensors.size(); ++k) {
      const auto& x = r.stats[i][k];
      dt.add_row({std::to_string(m.iterations[i].iteration), m.tensors[k].name, fmt_g(x.mean.value_or(kNaN)),
                  fmt_g(x.std.value_or(kNaN)), fmt_g(x.excess_kurtosis.value_or(kNaN)), fmt_g(x.min.value_or(kNaN)),
                  fmt_g(x.max.value_or(kNaN)), std::to_string(x.nan), std::to_string(x.inf)});
    }
  }
  dt.print(os);
}

}  // namespace

std::string with_commas(std::int64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

ordered_json to_json(const TraceInspection& r) {
  const auto& m = r.manifest;
  ordered_json j;
  j["schema"] = kTraceInspectSchema;
  j["trace"] = r.trace;
  j["format_version"] = ordered_json::parse(m.version_string());
  j["model"] = ordered_json::parse(m.model_json);
  j["provenance"] = ordered_json::parse(m.provenance_json);
  j["tensors"] = ordered_json::array();
  for (std::size_t k = 0; k < m.tensors.size(); ++k) {
    const auto& t = m.tensors[k];
    j["tensors"].push_back({{"name", t.name},
                            {"shape", t.shape},
                            {"dtype", traces::manifest_name(t.dtype)},
                            {"stage", t.stage},
                            {"layer", t.layer},
                            {"mode", t.mode == traces::CaptureMode::kFull ? "full" : "blocks"},
                            {"numel", t.numel()},
                            {"captured_elems", r.captured[k]}});
  }
  j["boundaries"] = ordered_json::array();
  for (const auto& b : m.boundaries) {
    j["boundaries"].push_back({{"name", b.name},
                               {"stage", b.stage},
                               {"shape", {b.rows, b.cols}},
                               {"dtype", traces::manifest_name(b.dtype)},
                               {"micro_batch", b.micro_batch}});
  }
  ordered_json its = ordered_json::object();
  for (std::size_t i = 0; i < m.iterations.size(); ++i) {
    const auto& info = m.iterations[i];
    ordered_json per = ordered_json::object();
    for (std::size_t k = 0; k < m.tensors.size(); ++k) per[m.tensors[k].name] = stats_json(r.stats[i][k]);
    ordered_json e = {{"loss", opt_json(info.loss)}, {"file", info.file}, {"tensors", per}};
    if (!m.boundaries.empty()) {
      ordered_json bs = ordered_json::object();
      for (std::size_t k = 0; k < m.boundaries.size(); ++k)
        bs[m.boundaries[k].name] = stats_json(r.boundary_stats[i][k]);
      e["boundaries"] = std::move(bs);
    }
    its[std::to_string(info.iteration)] = std::move(e);
  }
  j["iterations"] = std::move(its);
  return j;
}

void print_trace_inspection(std::ostream& os, const TraceInspection& inspection, std::size_t rows) {
  print_summary(os, inspection);
  print_tensors(os, inspection);
  print_stage_trend(os, inspection, rows);
  print_tensor_stats(os, inspection, rows);
}

}  // namespace edgc::results
