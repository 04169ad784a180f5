// `edgc trace inspect` and `edgc trace synth`.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli.hpp"
#include "edgc/core/error.hpp"
#include "edgc/results/table.hpp"
#include "edgc/traces/traces.hpp"

namespace edgc::cli {
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

std::string with_commas(std::int64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
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

struct InspectResult {
  traces::Manifest manifest;
  std::vector<std::vector<TensorStats>> stats;           // [iteration][tensor]
  std::vector<std::vector<TensorStats>> boundary_stats;  // [iteration][boundary]
  std::vector<std::int64_t> captured;                    // elements per tensor (last iteration)
};

InspectResult collect(const std::string& dir) {
  traces::TraceReader reader(dir);
  InspectResult r;
  r.manifest = reader.manifest();
  traces::IterationData data;
  r.captured.assign(r.manifest.tensors.size(), 0);
  while (reader.next(data)) {
    std::vector<TensorStats> row;
    row.reserve(data.tensors.size());
    for (std::size_t k = 0; k < data.tensors.size(); ++k) {
      row.push_back(traces::compute_stats(data.tensors[k].values));
      r.captured[k] = static_cast<std::int64_t>(data.tensors[k].values.size());
    }
    r.stats.push_back(std::move(row));
    std::vector<TensorStats> brow;
    for (const auto& b : data.boundaries) brow.push_back(traces::compute_stats(b));
    r.boundary_stats.push_back(std::move(brow));
  }
  return r;
}

std::string inspect_json(const std::string& dir, const InspectResult& r) {
  const auto& m = r.manifest;
  ordered_json j;
  j["schema"] = "edgc.trace_inspect/1";
  j["trace"] = dir;
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
  return j.dump(1) + "\n";
}

std::string inspect_text(const std::string& dir, const InspectResult& r, std::size_t rows) {
  const auto& m = r.manifest;
  std::ostringstream os;
  std::int64_t params = 0;
  std::int64_t captured = 0;
  for (std::size_t k = 0; k < m.tensors.size(); ++k) {
    params += m.tensors[k].numel();
    captured += r.captured[k];
  }
  const auto& first = m.iterations.front();
  const auto& last = m.iterations.back();
  os << "trace       " << dir << "  (edgc.trace v" << m.version_string() << ")\n";
  os << "model       " << m.model_name << " · " << m.num_stages << " pipeline stages · " << m.tensors.size()
     << " tensors · " << with_commas(params) << " parameters, " << with_commas(captured)
     << " values captured per iteration\n";
  os << "iterations  " << m.iterations.size() << " captured, steps " << first.iteration << " .. " << last.iteration;
  if (first.loss && last.loss)
    os << " · loss " << results::fmt_f(*first.loss, 3) << " -> " << results::fmt_f(*last.loss, 3);
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

  os << "tensors\n";
  results::Table tt({"name", "shape", "dtype", "stage", "layer", "mode", "captured"});
  for (std::size_t k = 0; k < m.tensors.size(); ++k) {
    const auto& t = m.tensors[k];
    tt.add_row({t.name, shape_text(t.shape), std::string(traces::manifest_name(t.dtype)), std::to_string(t.stage),
                std::to_string(t.layer), t.mode == traces::CaptureMode::kFull ? "full" : "blocks",
                with_commas(r.captured[k])});
  }
  tt.print(os);
  if (!m.boundaries.empty()) {
    os << "\nstage-boundary gradients (the activation gradient a stage sends backward, one micro-batch, tokens x "
          "hidden; rms at the first and last iteration)\n";
    results::Table bt({"name", "sent by stage", "to stage", "shape", "micro-batch", "dtype", "rms first", "rms last"});
    for (std::size_t k = 0; k < m.boundaries.size(); ++k) {
      const auto& b = m.boundaries[k];
      const auto rms = [&](const TensorStats& x) {
        return x.count > 0 ? results::fmt_g(std::sqrt(*x.std * *x.std + *x.mean * *x.mean), 4) : std::string("-");
      };
      bt.add_row({b.name, std::to_string(b.stage), std::to_string(b.stage - 1),
                  std::to_string(b.rows) + "x" + std::to_string(b.cols), std::to_string(b.micro_batch),
                  std::string(traces::manifest_name(b.dtype)), rms(r.boundary_stats.front()[k]),
                  rms(r.boundary_stats.back()[k])});
    }
    bt.print(os);
  }

  // Per-stage trend: RMS over all captured values of the stage (pooled from per-tensor count, mean and std)
  // and the largest excess kurtosis among its tensors.
  const auto picked = pick_rows(m.iterations.size(), rows == 0 ? 0 : std::max<std::size_t>(rows, 2) * 2);
  os << "\nper-stage trend (rms = root mean square of the stage's captured gradient values; kurt = largest excess "
        "kurtosis among its tensors)\n";
  std::vector<std::string> head = {"iteration", "loss"};
  for (int s = 0; s < m.num_stages; ++s) {
    head.push_back("s" + std::to_string(s) + " rms");
    head.push_back("s" + std::to_string(s) + " kurt");
  }
  results::Table st(head);
  for (std::size_t i : picked) {
    std::vector<std::string> row = {std::to_string(m.iterations[i].iteration),
                                    m.iterations[i].loss ? results::fmt_f(*m.iterations[i].loss, 3) : "-"};
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
      row.push_back(n > 0 ? results::fmt_g(std::sqrt(sq / n), 4) : "-");
      row.push_back(results::fmt_g(kurt, 4));
    }
    st.add_row(std::move(row));
  }
  st.print(os);

  const auto detail_rows = pick_rows(m.iterations.size(), rows);
  os << "\nper-tensor statistics at " << detail_rows.size() << " of " << m.iterations.size()
     << " iterations (--rows 0 shows all; --json gives every value)\n";
  results::Table dt({"iteration", "tensor", "mean", "std", "kurt", "min", "max", "nan", "inf"});
  for (std::size_t i : detail_rows) {
    for (std::size_t k = 0; k < m.tensors.size(); ++k) {
      const auto& x = r.stats[i][k];
      dt.add_row({std::to_string(m.iterations[i].iteration), m.tensors[k].name, results::fmt_g(x.mean.value_or(kNaN)),
                  results::fmt_g(x.std.value_or(kNaN)), results::fmt_g(x.excess_kurtosis.value_or(kNaN)),
                  results::fmt_g(x.min.value_or(kNaN)), results::fmt_g(x.max.value_or(kNaN)), std::to_string(x.nan),
                  std::to_string(x.inf)});
    }
  }
  dt.print(os);
  return os.str();
}

int run_inspect(const std::vector<std::string>& args) {
  po::options_description opts;
  std::string dir;
  std::int64_t rows = 3;
  opts.add_options()("trace", po::value(&dir)->required(), "trace directory (holds trace.json)")(
      "json", "print one JSON document: statistics keyed by iteration and tensor name")(
      "rows", po::value(&rows)->default_value(3), "iterations shown in the per-tensor table (0 = all)");
  po::positional_options_description pos;
  pos.add("trace", 1);
  po::variables_map vm;
  if (!parse("trace inspect", "DIR [--json] [--rows N]", opts, pos, args, vm)) return 0;
  if (rows < 0) throw UsageError("--rows", "must be >= 0 (0 shows every iteration), got " + std::to_string(rows));
  // Everything is read and checked before anything is printed: bad input gives an error and no partial output.
  const InspectResult r = collect(dir);
  std::cout << (vm.count("json") != 0U ? inspect_json(dir, r) : inspect_text(dir, r, static_cast<std::size_t>(rows)));
  return 0;
}

std::vector<std::int64_t> parse_shape(const std::string& text, const std::string& option = "--shapes") {
  std::vector<std::int64_t> shape;
  std::stringstream ss(text);
  std::string dim;
  while (std::getline(ss, dim, 'x')) {
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(dim, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != dim.size() || dim.empty() || v < 1)
      throw UsageError(option, "'" + text + "' is not a shape like 256x768 (positive dimensions)");
    shape.push_back(v);
  }
  if (shape.empty()) throw UsageError(option, "empty shape");
  return shape;
}

int run_synth(const std::vector<std::string>& args) {
  traces::SynthOptions o;
  std::string out;
  std::string shapes = "256x768,256x256,1024x256,256x1024,256";
  std::string dtype = "f32";
  std::string mode = "full";
  po::options_description opts;
  opts.add_options()("out", po::value(&out)->required(), "output trace directory (must not exist or be empty)")(
      "shapes", po::value(&shapes)->default_value(shapes), "comma-separated tensor shapes of one layer")(
      "layers", po::value(&o.layers)->default_value(o.layers), "layers (each holds one tensor per shape)")(
      "stages", po::value(&o.stages)->default_value(o.stages), "pipeline stages (contiguous runs of layers)")(
      "iterations", po::value(&o.iterations)->default_value(o.iterations), "captured iterations")(
      "stride", po::value(&o.iteration_stride)->default_value(o.iteration_stride),
      "training steps between captured iterations")("rank", po::value(&o.rank)->default_value(o.rank),
                                                    "rank of each 2-D tensor's signal part")(
      "signal", po::value(&o.signal_std)->default_value(o.signal_std), "element std of the signal part")(
      "noise", po::value(&o.noise_std)->default_value(o.noise_std), "element std of the noise at the first iteration")(
      "entropy-decay", po::value(&o.entropy_decay_nats)->default_value(o.entropy_decay_nats),
      "fall of the noise's Gaussian entropy over the run, in nats (ln sigma falls linearly)")(
      "dtype", po::value(&dtype)->default_value(dtype), "storage type: f32, f16 or bf16")(
      "mode", po::value(&mode)->default_value(mode), "full tensors or sampled blocks: full | blocks")(
      "fraction", po::value(&o.fraction)->default_value(o.fraction), "share of elements captured in blocks mode")(
      "block-elems", po::value(&o.block_elems)->default_value(o.block_elems), "elements per block in blocks mode")(
      "seed", po::value(&o.seed)->default_value(o.seed), "random seed")(
      "boundaries", po::value<std::string>(),
      "also write stage-boundary gradients of this tokens x hidden shape (e.g. 128x64) for stages 1.. (format 1.1)");
  po::variables_map vm;
  if (!parse("trace synth", "--out DIR [options]", opts, {}, args, vm)) return 0;
  o.layer_shapes.clear();
  std::stringstream ss(shapes);
  std::string one;
  while (std::getline(ss, one, ',')) o.layer_shapes.push_back(parse_shape(one));
  const auto d = traces::parse_manifest_dtype(dtype);
  if (!d || *d == traces::Dtype::kI64) throw UsageError("--dtype", "unknown dtype '" + dtype + "' (f32, f16, bf16)");
  o.dtype = *d;
  if (vm.count("boundaries") != 0U) {
    o.boundary_shape = parse_shape(vm["boundaries"].as<std::string>(), "--boundaries");
    if (o.boundary_shape.size() != 2) throw UsageError("--boundaries", "needs tokens x hidden, e.g. 128x64");
  }
  if (mode != "full" && mode != "blocks") throw UsageError("--mode", "must be full or blocks, got '" + mode + "'");
  o.mode = mode == "full" ? traces::CaptureMode::kFull : traces::CaptureMode::kBlocks;
  o.command = "edgc trace synth";
  for (const auto& a : args) o.command += " " + a;
  const traces::Manifest m = traces::synthesize_trace(o, out);
  std::int64_t params = 0;
  for (const auto& t : m.tensors) params += t.numel();
  std::cout << "wrote " << out << ": " << m.iterations.size() << " iterations, " << m.tensors.size() << " tensors, "
            << with_commas(params) << " parameters, " << m.num_stages << " stages\n";
  return 0;
}

}  // namespace

void add_trace_commands(std::vector<Command>& commands) {
  commands.push_back({"trace inspect", "tensors, stages, iterations and gradient statistics of a trace", run_inspect});
  commands.push_back({"trace synth", "write a synthetic trace (low-rank signal + decaying noise)", run_synth});
}

}  // namespace edgc::cli
