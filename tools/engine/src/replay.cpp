#include "edgc/engine/replay.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <span>
#include <sstream>

#include "edgc/core/error.hpp"
#include "edgc/core/policy_registry.hpp"
#include "edgc/core/powersgd_rule.hpp"
#include "edgc/core/window_accumulator.hpp"
#include "edgc/engine/trace_health.hpp"
#include "edgc/kernels/boundary_compression.hpp"
#include "edgc/kernels/kernels.hpp"
#include "edgc/kernels/stage_entropy.hpp"
#include "edgc/scenario/compression_config.hpp"
#include "edgc/traces/reader.hpp"

namespace edgc::engine {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// One estimation pipeline: a sampler, its controller, the fixed histogram layout per stage, and what it
// measured in the current window.
struct Track {
  Track(const core::GdsConfig& g, const core::ControllerConfig& c, int stages, bool full_sampling,
        const std::string& where)
      : gds(g),
        controller(core::make_controller(c, where.c_str())),
        full(full_sampling),
        window(stages),
        boundary_window(stages) {
    layouts.resize(static_cast<std::size_t>(stages));
    boundary_layouts.resize(static_cast<std::size_t>(stages));
    seconds.resize(static_cast<std::size_t>(stages));
  }

  core::GradientDataSampler gds;
  std::unique_ptr<core::Controller> controller;
  bool full;
  std::vector<std::optional<core::HistogramLayout>> layouts;
  core::WindowAccumulator window;  ///< the window's estimates so far
  std::vector<std::optional<core::HistogramLayout>> boundary_layouts;
  core::WindowAccumulator boundary_window;  ///< per stage: the estimates of the boundary messages it sends
  std::vector<double> seconds;              ///< per stage: estimation time this window
  int sampled_iterations = 0;
  std::optional<std::int64_t> warmup_end;
  core::WindowDecision in_force;  // decided at the end of the previous window
};

struct TraceLayout {
  std::vector<std::vector<std::size_t>> stage_tensors;  // manifest indices per stage
  std::vector<std::size_t> compressible;                // full-capture ≥2-D tensors (PowerSGD candidates)
  std::vector<std::vector<std::int64_t>> compressible_shapes;
  std::vector<std::pair<std::int64_t, std::int64_t>> stage_shapes;  // CQM matrix per stage
  /// Per (merged) stage: the trace boundary whose messages it sends backward, or -1 (stage 0, a boundary merged
  /// away, or a version 1 trace).
  std::vector<int> stage_boundary;
};

std::pair<std::int64_t, std::int64_t> as_matrix(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return {shape[0], n};
}

// Pipeline stage of every tensor when the trace's stages are merged into `stages` (0 = keep the trace's).
std::vector<int> stage_of_tensors(const traces::Manifest& m, int stages) {
  std::vector<int> out;
  for (const auto& t : m.tensors) out.push_back(stages > 0 ? traces::merged_stage(m, t.stage, stages) : t.stage);
  return out;
}

TraceLayout analyse(const traces::Manifest& m, const std::vector<int>& stage_of, int stages) {
  TraceLayout l;
  const auto ns = static_cast<std::size_t>(stages);
  l.stage_tensors.resize(ns);
  l.stage_shapes.assign(ns, {0, 0});
  std::vector<std::int64_t> best(ns, -1);
  for (std::size_t k = 0; k < m.tensors.size(); ++k) {
    const auto& t = m.tensors[k];
    const auto s = static_cast<std::size_t>(stage_of[k]);
    l.stage_tensors[s].push_back(k);
    if (t.shape.size() < 2) continue;
    const bool full = t.mode == traces::CaptureMode::kFull;
    if (full) {
      l.compressible.push_back(k);
      l.compressible_shapes.push_back(t.shape);
    }
    // The CQM reasons about the stage's largest matrix, preferring fully captured ones (those are compressed).
    const std::int64_t score = t.numel() + (full ? (std::int64_t{1} << 40) : 0);
    if (score > best[s]) {
      best[s] = score;
      l.stage_shapes[s] = as_matrix(t.shape);
    }
  }
  for (std::size_t s = 0; s < l.stage_shapes.size(); ++s) {
    if (best[s] < 0)
      throw TraceFormatError(m.model_name, "tensors", "pipeline stage " + std::to_string(s) + " has no 2-D tensor");
  }
  l.stage_boundary = traces::stage_boundaries(m, stages);
  return l;
}

TraceLayout analyse(const traces::Manifest& m) { return analyse(m, stage_of_tensors(m, 0), m.num_stages); }

// An iteration's tensor values where the backend's kernels read them: the trace's own host vectors for host
// backends, a device copy otherwise (uploaded once per iteration into buffers kept from one to the next).
class ValueMirror {
 public:
  std::span<const std::span<const float>> of(kernels::Backend& backend, const traces::IterationData& d) {
    views_.resize(d.tensors.size());
    if (!backend.device_memory()) {
      for (std::size_t i = 0; i < d.tensors.size(); ++i) views_[i] = d.tensors[i].values;
      return views_;
    }
    buffers_.resize(d.tensors.size());
    for (std::size_t i = 0; i < d.tensors.size(); ++i) {
      const std::vector<float>& v = d.tensors[i].values;
      if (buffers_[i].size() != v.size()) buffers_[i] = kernels::Buffer<float>(backend, v.size());
      buffers_[i].upload(v);
      views_[i] = buffers_[i].span();
    }
    return views_;
  }

 private:
  std::vector<kernels::Buffer<float>> buffers_;
  std::vector<std::span<const float>> views_;
};

// One sampled iteration of every stage: the stage entropy kernels on the blocks the sampler picks (or on every
// value for the full-sampling track), added to the window. `values[k]`: tensor k's values in the backend's memory.
void measure(Track& t, const traces::IterationData& d, std::span<const std::span<const float>> values,
             const TraceLayout& layout, const kernels::Backend& backend, double bins_per_sigma) {
  ++t.sampled_iterations;
  std::vector<std::vector<Block>> blocks;
  std::vector<kernels::StageTensor> tensors;
  for (std::size_t s = 0; s < layout.stage_tensors.size(); ++s) {
    const auto t0 = Clock::now();
    const auto& members = layout.stage_tensors[s];
    blocks.assign(members.size(), {});
    tensors.assign(members.size(), {});
    for (std::size_t i = 0; i < members.size(); ++i) {
      const std::span<const float> v = values[members[i]];
      if (!t.full) blocks[i] = t.gds.blocks(members[i], static_cast<std::int64_t>(v.size()), d.info->iteration);
      tensors[i] = {v, blocks[i]};
    }
    const core::StageObservation sample =
        kernels::measure_stage_entropy(backend, tensors, t.full, t.layouts[s], bins_per_sigma);
    t.seconds[s] += seconds_since(t0);
    t.window.add(s, sample);
  }
}

// The same for the boundary messages each stage sends (host memory; GDS block ids after the trace's tensors).
void measure_boundaries(Track& t, const traces::IterationData& d, const TraceLayout& layout,
                        const kernels::Backend& host, double bins_per_sigma) {
  for (std::size_t s = 0; s < layout.stage_boundary.size(); ++s) {
    const int b = layout.stage_boundary[s];
    if (b < 0) continue;
    const std::vector<float>& v = d.boundaries[static_cast<std::size_t>(b)];
    std::vector<Block> blocks;
    if (!t.full)
      blocks = t.gds.blocks(d.tensors.size() + static_cast<std::size_t>(b), static_cast<std::int64_t>(v.size()),
                            d.info->iteration);
    const kernels::StageTensor one[] = {{v, blocks}};
    t.boundary_window.add(s, kernels::measure_stage_entropy(host, one, t.full, t.boundary_layouts[s], bins_per_sigma));
  }
}

core::WindowObservation observe(Track& t, const WindowRow& row) {
  core::WindowObservation o;
  o.window = row.window;
  o.first_iteration = row.first_iteration;
  o.end_iteration = row.end_iteration;
  o.sampled_iterations = t.sampled_iterations;
  o.mean_loss = row.mean_loss;
  o.stages = t.window.means();
  o.boundaries = t.boundary_window.means();
  return o;
}

void reset_window(Track& t) {
  t.sampled_iterations = 0;
  t.window.reset();
  t.boundary_window.reset();
  std::fill(t.seconds.begin(), t.seconds.end(), 0.0);
}

int rank_in_force(const Track& t, std::size_t stage) {
  return t.in_force.stages.empty() ? 0 : t.in_force.stages[stage].rank;
}

// This machine's physical memory in bytes (0 when unknown).
double physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

std::string gigabytes(double bytes) {
  std::ostringstream os;
  os.precision(3);
  os << bytes / 1e9 << " GB";
  return os.str();
}

// replay.world_size against what the emulation of that many ranks does: a thread per rank (kMaxEmulatedRanks), and per
// rank a copy of the compressible gradients, their error-feedback buffers and P and Q at r_max — checked before any
// iteration is read, so a typo fails at once instead of after minutes of thread and memory growth.
void check_world_size(const ReplayOptions& o, const traces::Manifest& m, const TraceLayout& layout) {
  const std::string key = "replay.world_size";
  const std::string ws = std::to_string(o.world_size);
  if (o.world_size < 1) throw ConfigError(o.where, key, "must be >= 1, got " + ws);
  if (o.on_iteration || layout.compressible.empty()) return;  // no emulated ranks
  if (o.world_size > kMaxEmulatedRanks)
    throw ConfigError(o.where, key,
                      ws + " emulated data-parallel ranks is beyond the supported maximum " +
                          std::to_string(kMaxEmulatedRanks) +
                          " (each is a thread with its own PowerSGD state and gradient copy, and every replayed "
                          "iteration runs that many PowerSGD steps on this machine): set it to at most " +
                          std::to_string(kMaxEmulatedRanks));
  double per_rank = 0.0;
  double values = 0.0;
  for (const std::size_t k : layout.compressible) {
    const auto [rows, cols] = as_matrix(m.tensors[k].shape);
    const auto numel = static_cast<double>(m.tensors[k].numel());
    const auto r = static_cast<double>(std::min<std::int64_t>({o.controller.cqm.r_max, rows, cols}));
    per_rank += 4.0 * (2.0 * numel + static_cast<double>(rows + cols) * r);  // float32: copy + error, P + Q
    values += numel;
  }
  const double need = per_rank * o.world_size;
  const double have = physical_memory_bytes();
  if (have > 0.0 && need > 0.5 * have) {
    const auto fits = static_cast<std::int64_t>(0.5 * have / per_rank);
    throw ConfigError(o.where, key,
                      ws + " emulated ranks need about " + gigabytes(need) + " (" + gigabytes(per_rank) +
                          " each: a copy of the trace's " + std::to_string(static_cast<std::int64_t>(values)) +
                          " compressible gradient values, their error-feedback buffers and P and Q at r_max), more "
                          "than half of this machine's " +
                          gigabytes(have) + ": " +
                          (fits >= 1 ? "set it to at most " + std::to_string(fits)
                                     : std::string("not even one fits, replay this trace on a larger machine")));
  }
}

// The largest rank at which PowerSGD's skip rule (core/powersgd_rule.hpp: factors under half the matrix) still
// sends a rows × cols matrix compressed; 0 when no rank does.
std::int64_t largest_compressing_rank(std::int64_t rows, std::int64_t cols) {
  std::int64_t r = (rows * cols - 1) / (2 * (rows + cols));
  while (r > 0 && !core::powersgd_compresses(rows, cols, static_cast<int>(r))) --r;
  return r;
}

// A default r_max (nobody chose it) at which PowerSGD's skip rule would send some stage's matrix uncompressed:
// lowered to the largest multiple of the quantum that still compresses every stage, with r_min and step when they
// no longer fit under it. Returns the note, or "" when nothing changed.
std::string fit_default_rank_bounds(core::ControllerConfig& cc, const TraceLayout& layout, bool r_max_given) {
  core::CqmConfig& q = cc.cqm;
  std::optional<std::int64_t> fits;  // the largest compressing rank of the tightest stage
  for (const auto& [rows, cols] : layout.stage_shapes)
    if (rows > 0 && cols > 0) fits = std::min(fits.value_or(rows * cols), largest_compressing_rank(rows, cols));
  if (r_max_given || !fits) return {};
  *fits = *fits / q.quantum * q.quantum;
  if (q.r_max <= *fits || *fits < q.quantum) return {};  // too small a matrix: r_max is refused later
  const int before = q.r_max;
  q.r_max = static_cast<int>(*fits);
  std::string note = "compression.r_max lowered from its default " + std::to_string(before) + " to " +
                     std::to_string(q.r_max) +
                     ", the largest rank PowerSGD's skip rule still compresses on every stage of this trace (factors "
                     "under half the matrix)";
  if (q.r_min > q.r_max) {
    q.r_min = std::max(q.quantum, q.r_max / 4 / q.quantum * q.quantum);
    note += "; r_min to " + std::to_string(q.r_min) + " (r_max / 4)";
  }
  if (q.step > q.r_max - q.r_min && q.r_max > q.r_min) {
    q.step = std::max(q.quantum, (q.r_max - q.r_min) / 4 / q.quantum * q.quantum);
    note += "; step to " + std::to_string(q.step);
  }
  return note + " (set compression.r_max to choose)";
}

// Checks the options against the trace and completes the controller's configuration (stages, shapes, warm-up).
void prepare(ReplayOptions& o, const traces::Manifest& m, const TraceLayout& layout, int stages, std::int64_t run_iters,
             std::vector<std::string>& notes) {
  core::ControllerConfig& cc = o.controller;
  cc.stages = stages;
  cc.stage_shapes = layout.stage_shapes;
  if (std::string note = fit_default_rank_bounds(cc, layout, o.r_max_given); !note.empty())
    notes.push_back(std::move(note));
  cc.pipeline_shapes.assign(static_cast<std::size_t>(stages), {0, 0});
  bool any_boundary = false;
  for (std::size_t s = 0; s < layout.stage_boundary.size(); ++s) {
    const int b = layout.stage_boundary[s];
    if (b < 0) continue;
    cc.pipeline_shapes[s] = {m.boundaries[static_cast<std::size_t>(b)].rows,
                             m.boundaries[static_cast<std::size_t>(b)].cols};
    any_boundary = true;
  }
  const core::PolicyInfo* info = core::find_policy(cc.policy);
  if (info != nullptr && info->compresses_pipeline && cc.pipeline_rank_mode == core::PipelineRankMode::kEntropy &&
      !any_boundary)
    throw ConfigError(o.where, "compression.pp_rank_mode",
                      "entropy needs the trace's stage-boundary gradients (trace format 1.1), and " + o.trace_dir +
                          " records none" + (m.boundaries.empty() ? "" : " between the run's stages") +
                          ": use static, or a trace captured with boundaries (tools/README.md, capturing traces)");
  scenario::apply_warmup_bounds(cc.warmup, o.warmup_floor_fraction, o.warmup_ceiling_fraction, run_iters, o.where);
  check_world_size(o, m, layout);
  if (!(o.perturbation >= 0.0)) throw ConfigError(o.where, "replay.perturbation", "must be >= 0");
}

// Pipeline-boundary compression on the trace's boundary gradients: per boundary two compressors at the policy's
// pipeline rank, one with lazy error propagation and one without, fed the same messages.
class BoundaryEmulation {
 public:
  // `stage_boundary`: TraceLayout::stage_boundary; `host`: a host backend that outlives this object.
  BoundaryEmulation(kernels::Backend& host, const traces::Manifest& m, const std::vector<int>& stage_boundary,
                    std::uint64_t seed) {
    for (std::size_t to = 0; to < stage_boundary.size(); ++to) {
      const int b = stage_boundary[to];
      if (b < 0) continue;
      const auto& info = m.boundaries[static_cast<std::size_t>(b)];
      kernels::BoundaryConfig lep;
      lep.rank = 0;
      lep.seed = seed + static_cast<std::uint64_t>(b);
      kernels::BoundaryConfig plain = lep;
      plain.lazy_error_propagation = false;
      const kernels::BoundaryShape shape{info.rows, info.cols, 1};
      sides_.push_back(Side{static_cast<std::size_t>(b), to, kernels::BoundaryCompressor(host, shape, lep),
                            kernels::BoundaryCompressor(host, shape, plain)});
    }
  }

  void open_window(std::vector<StageWindow>& stages, const core::WindowDecision& in_force) {
    for (auto& b : sides_) {
      const int rank = in_force.pipeline_rank(b.stage);
      stages[b.stage].boundary = BoundaryWindow{};
      stages[b.stage].boundary->rank = b.lep.usable_rank(rank);
      b.sum_true.assign(b.sum_true.size(), 0.0);
      b.sum_lep.assign(b.sum_true.size(), 0.0);
      b.sum_plain.assign(b.sum_true.size(), 0.0);
      b.err_lep = b.err_plain = 0.0;
    }
  }

  void message(const traces::IterationData& d, std::vector<StageWindow>& stages) {
    for (auto& b : sides_) {
      BoundaryWindow& w = *stages[b.stage].boundary;
      const std::vector<float>& g = d.boundaries[b.index];
      ++w.messages;
      w.dense_floats += static_cast<std::int64_t>(g.size());
      b.sum_true.resize(g.size(), 0.0);
      b.sum_lep.resize(g.size(), 0.0);
      b.sum_plain.resize(g.size(), 0.0);
      for (std::size_t i = 0; i < g.size(); ++i) b.sum_true[i] += g[i];
      if (w.rank == 0) {
        w.wire_floats += static_cast<std::int64_t>(g.size());
        continue;
      }
      w.wire_floats += run(b.lep, w.rank, g, b.sum_lep, b.err_lep);
      run(b.plain, w.rank, g, b.sum_plain, b.err_plain);
    }
  }

  void close_window(std::vector<StageWindow>& stages) {
    for (auto& b : sides_) {
      BoundaryWindow& w = *stages[b.stage].boundary;
      if (w.rank == 0 || w.messages == 0) continue;
      w.message_error = b.err_lep / w.messages;
      w.message_error_plain = b.err_plain / w.messages;
      w.accumulated_error = relative_distance(b.sum_lep, b.sum_true);
      w.accumulated_error_plain = relative_distance(b.sum_plain, b.sum_true);
    }
  }

 private:
  struct Side {
    std::size_t index;  // into the manifest's boundaries
    std::size_t stage;  // merged sender stage
    kernels::BoundaryCompressor lep;
    kernels::BoundaryCompressor plain;
    std::vector<double> sum_true = {}, sum_lep = {}, sum_plain = {};
    double err_lep = 0.0;
    double err_plain = 0.0;
  };

  static double relative_distance(const std::vector<double>& a, const std::vector<double>& b) {
    double num = 0.0;
    double den = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      num += (a[i] - b[i]) * (a[i] - b[i]);
      den += b[i] * b[i];
    }
    return den > 0.0 ? std::sqrt(num / den) : 0.0;
  }

  // Compresses one message; adds the delivered Ĝ to `sum` and ‖Ĝ − G‖/‖G‖ to `err`. Returns the wire floats.
  std::int64_t run(kernels::BoundaryCompressor& c, int rank, const std::vector<float>& g, std::vector<double>& sum,
                   double& err) {
    c.set_rank(rank);
    shard_.assign(g.begin(), g.end());
    wire_.resize(static_cast<std::size_t>(c.wire_floats()));
    const std::span<float> one[] = {shard_};
    const kernels::BoundaryStats st = c.compress(one, wire_);
    double num = 0.0;
    double den = 0.0;
    for (std::size_t i = 0; i < g.size(); ++i) {
      const double diff = static_cast<double>(shard_[i]) - g[i];
      num += diff * diff;
      den += static_cast<double>(g[i]) * g[i];
      sum[i] += shard_[i];
    }
    err += den > 0.0 ? std::sqrt(num / den) : 0.0;
    return st.wire_floats;
  }

  std::vector<Side> sides_;
  std::vector<float> shard_;
  std::vector<float> wire_;
};

// One replay: windows opened and closed as the trace's iterations arrive; the sampled track drives the controller,
// the optional full-sampling track is the comparison; the emulator runs PowerSGD at the ranks in force.
class ReplayRun {
 public:
  ReplayRun(ReplayOptions& o, const traces::Manifest& m, int stages, std::vector<int> stage_of,
            const TraceLayout& layout)
      : o_(o),
        m_(m),
        stages_(static_cast<std::size_t>(stages)),
        stage_of_(std::move(stage_of)),
        layout_(layout),
        backend_(kernels::make_backend(o.backend)),
        host_(kernels::make_backend("cpu")),
        sampled_(o.gds, o.controller, stages, false, o.where),
        err_sum_(stages_),
        step_sum_(stages_),
        err_n_(stages_),
        grads_(layout.compressible.size()),
        ranks_(layout.compressible.size()),
        stage_ranks_(stages_) {
    core::GdsConfig full_gds = o.gds;
    full_gds.alpha = 1.0;
    full_gds.beta = 1.0;
    if (o.compare_full) full_.emplace(full_gds, o.controller, stages, true, o.where);
    kernels::PowerSgdConfig pcfg;
    pcfg.rank = o.controller.cqm.r_max;
    pcfg.seed = o.seed;
    if (!layout.compressible.empty() && !o.on_iteration)
      emulator_ = std::make_unique<kernels::DataParallelEmulator>(o.backend, layout.compressible_shapes, o.world_size,
                                                                  pcfg, o.perturbation, o.seed);
    result_.stage_shapes = layout.stage_shapes;
    result_.compressed_tensors_per_stage.assign(stages_, 0);
    for (std::size_t k : layout.compressible)
      ++result_.compressed_tensors_per_stage[static_cast<std::size_t>(stage_of_[k])];
    result_.tensor_stage = stage_of_;
    if (!m.boundaries.empty() && !o.on_iteration) boundaries_.emplace(*host_, m, layout.stage_boundary, o.seed);
    result_.stage_boundary = layout.stage_boundary;
    for (const auto& b : m.boundaries) {
      result_.boundary_names.push_back(b.name);
      result_.boundary_shapes.emplace_back(b.rows, b.cols);
    }
  }

  ReplayResult run(traces::TraceReader& reader, std::size_t captured) {
    traces::IterationData data;
    std::int64_t current = -1;
    for (std::size_t read = 0; read < captured && reader.next(data); ++read) {
      const std::int64_t it = data.info->iteration;
      const std::int64_t w = sampled_.gds.window_of(it);
      if (current < 0) open_window(w);
      while (current >= 0 && w > current) {  // also closes windows without captured iterations (fallback)
        close_window();
        open_window(++current);
      }
      current = w;
      iteration(data, it);
    }
    close_window();
    result_.warnings = health_.warnings(o_.trace_dir);
    // A trace shorter than one window is one partial window: no trend, no decision past warm-up.
    if (m_.iterations.size() > 1) {  // one captured iteration has its own warning (health_)
      const std::int64_t steps = m_.iterations.back().iteration + 1;
      if (steps < o_.gds.window_iters)
        result_.warnings.push_back(
            o_.trace_dir + ": the trace's " + std::to_string(steps) + " steps are fewer than one window of " +
            std::to_string(o_.gds.window_iters) +
            " iterations: the whole replay is one partial warm-up window, so no entropy trend and no rank decision "
            "is measured (set compression.window below " +
            std::to_string(steps) + ")");
    }
    result_.warmup_end = sampled_.warmup_end;
    if (full_) result_.full_warmup_end = full_->warmup_end;
    return std::move(result_);
  }

 private:
  void iteration(const traces::IterationData& data, std::int64_t it) {
    ++row_.captured_iterations;
    health_.add(data);
    if (data.info->loss) {
      loss_sum_ += *data.info->loss;
      ++loss_n_;
    }
    const bool sample = sampled_.gds.samples_iteration(it);
    if (sample || full_) {
      const auto values = mirror_.of(*backend_, data);
      if (sample) {
        measure(sampled_, data, values, layout_, *backend_, o_.bins_per_sigma);
        measure_boundaries(sampled_, data, layout_, *host_, o_.bins_per_sigma);
      }
      if (full_) {
        measure(*full_, data, values, layout_, *backend_, o_.bins_per_sigma);
        measure_boundaries(*full_, data, layout_, *host_, o_.bins_per_sigma);
      }
    }
    if (o_.on_iteration) {
      for (std::size_t s = 0; s < stage_ranks_.size(); ++s) stage_ranks_[s] = rank_in_force(sampled_, s);
      o_.on_iteration(data, stage_ranks_, sampled_.in_force);
    }
    if (emulator_) emulate(data);
    if (boundaries_) boundaries_->message(data, row_.stages);
  }

  void emulate(const traces::IterationData& data) {
    for (std::size_t i = 0; i < layout_.compressible.size(); ++i) {
      const std::size_t k = layout_.compressible[i];
      grads_[i] = data.tensors[k].values;
      const auto [rows, cols] = as_matrix(m_.tensors[k].shape);
      const int r = rank_in_force(sampled_, static_cast<std::size_t>(stage_of_[k]));
      ranks_[i] = r < std::min(rows, cols) ? r : 0;  // a rank at or past full rank is no compression
    }
    const kernels::EmulatedStep step = emulator_->step(grads_, ranks_);
    for (std::size_t i = 0; i < layout_.compressible.size(); ++i) {
      const auto s = static_cast<std::size_t>(stage_of_[layout_.compressible[i]]);
      const auto& r = step.tensors[i];
      err_sum_[s] += r.relative_error;
      step_sum_[s] += r.compression_error;
      ++err_n_[s];
      row_.stages[s].wire_floats += r.wire_floats;
      row_.stages[s].dense_floats += m_.tensors[layout_.compressible[i]].numel();
    }
  }

  void open_window(std::int64_t w) {
    const std::int64_t w_iters = o_.gds.window_iters;
    row_ = WindowRow{};
    row_.window = w;
    row_.first_iteration = w * w_iters;
    row_.end_iteration = (w + 1) * w_iters;
    row_.stages.resize(stages_);
    row_.warmup = sampled_.in_force.warmup;
    for (std::size_t s = 0; s < row_.stages.size(); ++s) row_.stages[s].rank = rank_in_force(sampled_, s);
    if (boundaries_) boundaries_->open_window(row_.stages, sampled_.in_force);
    loss_sum_ = 0.0;
    loss_n_ = 0;
    std::fill(err_sum_.begin(), err_sum_.end(), 0.0);
    std::fill(step_sum_.begin(), step_sum_.end(), 0.0);
    std::fill(err_n_.begin(), err_n_.end(), 0);
  }

  void close_window() {
    if (loss_n_ > 0) row_.mean_loss = loss_sum_ / loss_n_;
    if (boundaries_) boundaries_->close_window(row_.stages);
    row_.sampled_iterations = sampled_.sampled_iterations;
    const core::WindowObservation obs = observe(sampled_, row_);
    // What the controller, in exactly its current state, would decide from full-sampling observations.
    std::optional<core::WindowDecision> counterfactual;
    if (full_) {
      const core::WindowObservation full_obs = observe(*full_, row_);
      counterfactual = sampled_.controller->clone()->decide(full_obs);
      full_->in_force = full_->controller->decide(full_obs);  // the independent full-sampling trajectory
      if (!full_->in_force.warmup && !full_->warmup_end) full_->warmup_end = row_.end_iteration;
    }
    sampled_.in_force = sampled_.controller->decide(obs);
    if (!sampled_.in_force.warmup && !sampled_.warmup_end) sampled_.warmup_end = row_.end_iteration;
    row_.agrees = true;
    row_.trajectory_agrees = true;
    for (std::size_t s = 0; s < row_.stages.size(); ++s) fill_stage(s, obs, counterfactual);
    result_.windows.push_back(row_);
    reset_window(sampled_);
    if (full_) reset_window(*full_);
  }

  void fill_stage(std::size_t s, const core::WindowObservation& obs,
                  const std::optional<core::WindowDecision>& counterfactual) {
    StageWindow& sw = row_.stages[s];
    const core::StageObservation& so = obs.stages[s];
    sw.entropy_gaussian = so.entropy_gaussian;
    sw.entropy_histogram = so.entropy_histogram;
    sw.excess_kurtosis = so.excess_kurtosis;
    sw.sampled_elements = sampled_.window.elements(s);
    sw.estimation_seconds = sampled_.seconds[s];
    if (full_) {
      sw.full_elements = full_->window.elements(s);
      sw.full_estimation_seconds = full_->seconds[s];
      sw.full_next_rank = counterfactual->stages[s].rank;
      sw.trajectory_full_rank = full_->in_force.stages[s].rank;
      row_.agrees = row_.agrees && *sw.full_next_rank == sampled_.in_force.stages[s].rank;
      row_.trajectory_agrees = row_.trajectory_agrees && *sw.trajectory_full_rank == sampled_.in_force.stages[s].rank;
    }
    sw.next = sampled_.in_force.stages[s];
    if (sw.boundary && s < obs.boundaries.size()) {
      sw.boundary->entropy_gaussian = obs.boundaries[s].entropy_gaussian;
      sw.boundary->entropy_histogram = obs.boundaries[s].entropy_histogram;
    }
    if (err_n_[s] > 0) {
      sw.relative_error = err_sum_[s] / err_n_[s];
      sw.step_error = step_sum_[s] / err_n_[s];
    }
  }

  ReplayOptions& o_;
  const traces::Manifest& m_;
  std::size_t stages_;
  std::vector<int> stage_of_;
  const TraceLayout& layout_;
  std::unique_ptr<kernels::Backend> backend_;
  std::unique_ptr<kernels::Backend> host_;  // boundary entropy and compression: boundaries stay in host memory
  ValueMirror mirror_;
  TraceHealth health_;
  Track sampled_;
  std::optional<Track> full_;
  std::unique_ptr<kernels::DataParallelEmulator> emulator_;
  std::optional<BoundaryEmulation> boundaries_;
  ReplayResult result_;
  WindowRow row_;
  double loss_sum_ = 0.0;
  int loss_n_ = 0;
  std::vector<double> err_sum_;
  std::vector<double> step_sum_;
  std::vector<int> err_n_;
  std::vector<std::span<const float>> grads_;
  std::vector<int> ranks_;
  std::vector<int> stage_ranks_;
};

}  // namespace

ReplayResult run_replay(ReplayOptions& o) {
  traces::TraceReader reader(o.trace_dir);
  const traces::Manifest& m = reader.manifest();
  if (o.stages < 0 || o.stages > m.num_stages)
    throw ConfigError(o.where, "replay.stages",
                      std::to_string(o.stages) + " is outside [1, " + std::to_string(m.num_stages) +
                          "] (the trace's pipeline stages can be merged, not split)");
  if (o.max_iterations < 0) throw ConfigError(o.where, "max_iterations", "must be >= 0");
  const int stages = o.stages > 0 ? o.stages : m.num_stages;
  std::vector<int> stage_of = stage_of_tensors(m, o.stages);
  const TraceLayout layout = analyse(m, stage_of, stages);
  const std::size_t captured = o.max_iterations > 0
                                   ? std::min(m.iterations.size(), static_cast<std::size_t>(o.max_iterations))
                                   : m.iterations.size();
  std::vector<std::string> notes;
  prepare(o, m, layout, stages, m.iterations[captured - 1].iteration + 1, notes);
  ReplayRun run(o, m, stages, std::move(stage_of), layout);
  ReplayResult result = run.run(reader, captured);
  result.notes = std::move(notes);
  return result;
}

void check_bins_per_sigma(double bins_per_sigma, const std::string& where, const std::string& key) {
  if (!(bins_per_sigma > 0.0 && bins_per_sigma <= kMaxBinsPerSigma)) {
    std::ostringstream os;
    os << "must be in (0, " << kMaxBinsPerSigma << "], got " << bins_per_sigma
       << " (the histogram spans +-64 sigma: finer bins than that outnumber the sampled values)";
    throw ConfigError(where, key, os.str());
  }
}

void require_backend(const std::string& backend, const std::string& where, const std::string& field) {
  const std::string why = kernels::backend_unavailable_reason(backend);
  if (why.empty()) return;
  std::string hint;
  if (backend == "cuda" && why.find("does not link") != std::string::npos)
    hint = "; use edgc-nccl, which does (built next to edgc where CUDA, MPI and NCCL are found)";
  throw ConfigError(where, field, backend + ": " + why + hint);
}

TraceEntropy measure_trace_entropy(const std::string& trace_dir, const core::GdsConfig& gds, double bins_per_sigma,
                                   const std::string& backend_name) {
  check_bins_per_sigma(bins_per_sigma, trace_dir, "entropy.bins_per_sigma");
  traces::TraceReader reader(trace_dir);
  const traces::Manifest& m = reader.manifest();
  const TraceLayout layout = analyse(m);
  core::GdsConfig every = gds;
  every.window_iters = 1;
  every.alpha = 1.0;
  core::validate(every, trace_dir.c_str());
  core::ControllerConfig none;
  none.policy = std::string(core::baseline_policy().name);
  none.stages = m.num_stages;
  none.stage_shapes = layout.stage_shapes;
  Track track(every, none, m.num_stages, gds.beta >= 1.0, trace_dir);
  const auto backend = kernels::make_backend(backend_name);
  ValueMirror mirror;

  TraceEntropy out;
  out.path = trace_dir;
  out.steps = m.iterations.back().iteration + 1;
  out.stage_elements = traces::stage_elements(m);
  for (const auto& b : m.boundaries) out.boundary_stages.push_back(b.stage);
  const auto host = kernels::make_backend("cpu");
  traces::IterationData data;
  WindowRow row;
  while (reader.next(data)) {
    reset_window(track);
    measure(track, data, mirror.of(*backend, data), layout, *backend, bins_per_sigma);
    measure_boundaries(track, data, layout, *host, bins_per_sigma);
    row.window = row.first_iteration = data.info->iteration;
    row.end_iteration = row.first_iteration + 1;
    TraceEntropyPoint p;
    p.iteration = data.info->iteration;
    p.loss = data.info->loss;
    core::WindowObservation obs = observe(track, row);
    p.stages = std::move(obs.stages);
    // The trace's stages are not merged here, so every boundary is the one its own stage sends.
    for (const auto& b : m.boundaries) p.boundaries.push_back(obs.boundaries[static_cast<std::size_t>(b.stage)]);
    out.points.push_back(std::move(p));
  }
  return out;
}

}  // namespace edgc::engine
