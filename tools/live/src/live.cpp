#include "edgc/live/live.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "edgc/core/atomic_file.hpp"
#include "edgc/core/error.hpp"
#include "edgc/engine/replay.hpp"
#include "edgc/kernels/dp_emulation.hpp"
#include "edgc/kernels/kernels.hpp"
#include "edgc/results/measurements.hpp"
#include "edgc/results/table.hpp"
#include "edgc/scenario/config.hpp"
#include "edgc/traces/reader.hpp"

#if EDGC_BUILT_WITH_MPI
#include <mpi.h>

#include "edgc/kernels/mpi_communicator.hpp"
#endif

namespace edgc::live {

namespace {

std::vector<int> parse_rank_list(const std::string& text, const std::string& where, const std::string& key) {
  std::vector<int> out;
  for (const std::string& item : scenario::split_list(text)) {
    std::size_t used = 0;
    int r = -1;
    try {
      r = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || r < 1)
      throw ConfigError(where, key, "expected a comma-separated list of ranks >= 1, got '" + text + "'");
    out.push_back(r);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

void read_live_options(scenario::Scenario& sc, LiveOptions& o) {
  const std::string w = sc.where();
  o.compression = scenario::read_compression(sc);
  const std::string trace_key = sc.string("trace.path", "");  // read even when --trace wins, so it is known
  if (o.trace_dir.empty() && !trace_key.empty())
    o.trace_dir = std::filesystem::path(sc.resolve(trace_key)).lexically_normal().string();
  o.pp = sc.int32("live.pp", 0);
  if (o.pp < 0) throw ConfigError(w, "live.pp", "must be >= 0 (0 = automatic)");
  o.max_iterations = sc.integer("live.max_iterations", 0);
  if (o.max_iterations < 0) throw ConfigError(w, "live.max_iterations", "must be >= 0 (0 = all)");
  o.perturbation = sc.number("live.perturbation", 0.1);
  if (!(o.perturbation >= 0.0) || !std::isfinite(o.perturbation))
    throw ConfigError(w, "live.perturbation", "must be finite and >= 0");
  o.seed = static_cast<std::uint64_t>(sc.integer("live.seed", 0));
  const std::string backend = sc.string("live.backend", "cpu");  // read even when the command line wins
  const std::string comm = sc.string("live.comm", "mpi");
  if (o.backend.empty()) o.backend = backend;
  if (o.comm.empty()) o.comm = comm;
  o.bins_per_sigma = sc.number("live.bins_per_sigma", 8.0);
  if (!(o.bins_per_sigma > 0.0)) throw ConfigError(w, "live.bins_per_sigma", "must be > 0");
  o.verify = sc.boolean("live.verify", o.verify);
  o.calibration_min_bytes = sc.integer("live.calibration.min_bytes", 4);
  o.calibration_max_bytes = sc.integer("live.calibration.max_bytes", std::int64_t{4} << 20);
  if (o.calibration_min_bytes < 4 || o.calibration_max_bytes < o.calibration_min_bytes ||
      o.calibration_max_bytes > (std::int64_t{1} << 31))
    throw ConfigError(w, "live.calibration.max_bytes", "need 4 <= min_bytes <= max_bytes <= 2 GiB");
  o.calibration_repeats = sc.int32("live.calibration.repeats", 5);
  if (o.calibration_repeats < 1) throw ConfigError(w, "live.calibration.repeats", "must be >= 1");
  if (sc.has("live.probe.ranks"))
    o.probe_ranks = parse_rank_list(sc.string("live.probe.ranks", ""), w, "live.probe.ranks");
  o.probe_repeats = sc.int32("live.probe.repeats", 5);
  if (o.probe_repeats < 1) throw ConfigError(w, "live.probe.repeats", "must be >= 1");
  if (o.comm != "mpi" && o.comm != "nccl")
    throw ConfigError(w, "live.comm", "expected mpi or nccl, got '" + o.comm + "'");
  if (o.backend != "cpu" && o.backend != "cuda")
    throw ConfigError(w, "live.backend", "expected cpu or cuda, got '" + o.backend + "'");
}

#if !EDGC_BUILT_WITH_MPI

int run_live(const LiveOptions&) {
  throw UsageError("live", "this edgc was built without MPI (install an MPI and rebuild with EDGC_ENABLE_MPI=ON)");
}

#else

namespace {

using nlohmann::ordered_json;

void mpi_ok(int rc, const char* call) { kernels::check_mpi(rc, call); }

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Who this process is and the communicators it talks on.
struct World {
  int rank = 0;
  int size = 1;
  int pp = 1;
  int dp = 1;
  int stage = 0;
  int replica = 0;
  MPI_Comm group = MPI_COMM_NULL;  // the stage's DP group, replica order

  void barrier() const { mpi_ok(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }
  // Element-wise MIN or MAX over the DP group, in place.
  void group_reduce(std::vector<double>& v, MPI_Op op) const {
    if (v.empty()) return;
    mpi_ok(MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, op, group), "MPI_Allreduce");
  }
  void world_reduce(std::vector<double>& v, MPI_Op op) const {
    if (v.empty()) return;
    mpi_ok(MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, op, MPI_COMM_WORLD),
           "MPI_Allreduce");
  }
  // Every rank's string at rank 0 (empty elsewhere).
  std::vector<std::string> gather(const std::string& mine) const {
    int len = static_cast<int>(mine.size());
    std::vector<int> lens(static_cast<std::size_t>(size));
    mpi_ok(MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather");
    std::vector<int> displs(static_cast<std::size_t>(size), 0);
    for (int i = 1; i < size; ++i)
      displs[static_cast<std::size_t>(i)] =
          displs[static_cast<std::size_t>(i - 1)] + lens[static_cast<std::size_t>(i - 1)];
    std::string all(rank == 0 ? static_cast<std::size_t>(displs.back() + lens.back()) : 0, '\0');
    mpi_ok(MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0, MPI_COMM_WORLD),
           "MPI_Gatherv");
    std::vector<std::string> out;
    if (rank == 0)
      for (int i = 0; i < size; ++i)
        out.push_back(all.substr(static_cast<std::size_t>(displs[static_cast<std::size_t>(i)]),
                                 static_cast<std::size_t>(lens[static_cast<std::size_t>(i)])));
    return out;
  }
};

// Records the float count and duration of every all-reduce that passes through it.
class TimedCommunicator final : public kernels::Communicator {
 public:
  struct Call {
    std::int64_t floats = 0;
    double seconds = 0.0;
  };
  explicit TimedCommunicator(kernels::Communicator& inner) : inner_(inner) {}
  int rank() const noexcept override { return inner_.rank(); }
  int size() const noexcept override { return inner_.size(); }
  void all_reduce_sum(std::span<float> data) override {
    const double t0 = MPI_Wtime();
    inner_.all_reduce_sum(data);
    const double wall = MPI_Wtime() - t0;
    // NCCL measures the collective itself with CUDA events (staging copies excluded); MPI only has the wall clock.
    calls_.push_back({static_cast<std::int64_t>(data.size()), inner_.last_device_seconds().value_or(wall)});
  }
  std::vector<Call> take() { return std::exchange(calls_, {}); }

 private:
  kernels::Communicator& inner_;
  std::vector<Call> calls_;
};

// ---- the stage's tensors and their per-replica gradients ----

struct StageTensors {
  std::vector<std::size_t> trace_index;            // manifest index of each of the stage's tensors
  std::vector<std::vector<std::int64_t> > shapes;  // as PowerSgd sees them
  std::vector<bool> compressible;                  // ≥2-D and fully captured
  std::vector<std::vector<float> > raw;            // the trace gradient (blocks-captured: zeros off the blocks)
  std::vector<std::vector<float> > mine;           // this replica's copy, replaced by the step's result
  std::vector<std::span<float> > views;
  std::vector<std::span<const float> > raw_views;

  std::int64_t min_dim(std::size_t i) const {
    return shapes[i].size() < 2 ? 0 : std::min(shapes[i][0], [&] {
      std::int64_t n = 1;
      for (std::size_t d = 1; d < shapes[i].size(); ++d) n *= shapes[i][d];
      return n;
    }());
  }
};

StageTensors stage_tensors(const traces::Manifest& m, const std::vector<int>& tensor_stage, int stage) {
  StageTensors t;
  for (std::size_t k = 0; k < m.tensors.size(); ++k) {
    if (tensor_stage[k] != stage) continue;
    t.trace_index.push_back(k);
    t.shapes.push_back(m.tensors[k].shape);
    t.compressible.push_back(m.tensors[k].shape.size() >= 2 && m.tensors[k].mode == traces::CaptureMode::kFull);
    t.raw.emplace_back(static_cast<std::size_t>(m.tensors[k].numel()), 0.0F);
  }
  t.mine = t.raw;
  for (std::size_t i = 0; i < t.raw.size(); ++i) {
    t.views.emplace_back(t.mine[i]);
    t.raw_views.emplace_back(t.raw[i]);
  }
  return t;
}

// Copies iteration data into the stage's full-size raw buffers.
void load_raw(StageTensors& t, const traces::IterationData& d) {
  for (std::size_t i = 0; i < t.trace_index.size(); ++i) {
    const traces::TensorData& src = d.tensors[t.trace_index[i]];
    std::vector<float>& dst = t.raw[i];
    if (src.blocks.empty()) {
      std::copy(src.values.begin(), src.values.end(), dst.begin());
      continue;
    }
    std::fill(dst.begin(), dst.end(), 0.0F);
    std::size_t at = 0;
    for (const Block& b : src.blocks) {
      std::copy_n(src.values.begin() + static_cast<std::ptrdiff_t>(at), b.length,
                  dst.begin() + static_cast<std::ptrdiff_t>(b.offset));
      at += static_cast<std::size_t>(b.length);
    }
  }
}

// This replica's gradients for step `step`: the raw ones plus replica noise (kernels::replica_gradient).
void make_replica(StageTensors& t, const kernels::Backend& backend, double perturbation, std::uint64_t seed,
                  std::int64_t step, int replica) {
  for (std::size_t i = 0; i < t.raw.size(); ++i) {
    const double scale = perturbation * kernels::gradient_stddev(backend, t.raw[i]);
    kernels::replica_gradient(t.raw[i], scale, seed, step, replica, i, t.mine[i]);
  }
}

// The per-tensor rank for a stage rank: 0 (uncompressed) for tensors PowerSGD cannot compress at it.
std::vector<int> tensor_ranks(const StageTensors& t, int stage_rank) {
  std::vector<int> r(t.shapes.size(), 0);
  for (std::size_t i = 0; i < r.size(); ++i)
    if (t.compressible[i] && stage_rank > 0 && stage_rank < t.min_dim(i)) r[i] = stage_rank;
  return r;
}

// One rank's record of one step before the group reduction.
struct LocalStep {
  std::int64_t iteration = 0;
  int rank = 0;
  double sync_s = 0.0;
  double compute_s = 0.0;
  std::int64_t wire_bytes = 0;
  std::int64_t dense_bytes = 0;
  std::vector<results::Collective> collectives;
  std::vector<results::MatrixGroup> matrices;
};

constexpr int kElementBytes = 4;

LocalStep describe(const kernels::StepStats& st, const kernels::PowerSgd& psgd,
                   std::vector<TimedCommunicator::Call> calls) {
  LocalStep s;
  s.compute_s = st.compute_seconds;
  s.wire_bytes = st.wire_floats * kElementBytes;
  s.dense_bytes = st.dense_floats * kElementBytes;
  // PowerSgd::step issues the fused uncompressed all-reduce first (when some tensor is sent uncompressed),
  // then P and Q (when some tensor is compressed).
  const bool dense = st.compressed_tensors < static_cast<int>(st.tensors.size());
  const bool compressed = st.compressed_tensors > 0;
  const std::size_t want = (dense ? 1U : 0U) + (compressed ? 2U : 0U);
  if (calls.size() != want)
    throw InternalError("live: PowerSgd::step made " + std::to_string(calls.size()) + " all-reduces, expected " +
                        std::to_string(want));
  std::size_t c = 0;
  if (dense) {
    s.collectives.push_back({"dense", calls[c].floats * kElementBytes, calls[c].seconds});
    ++c;
  }
  if (compressed) {
    s.collectives.push_back({"P", calls[c].floats * kElementBytes, calls[c].seconds});
    s.collectives.push_back({"Q", calls[c + 1].floats * kElementBytes, calls[c + 1].seconds});
  }
  std::map<std::tuple<std::int64_t, std::int64_t, int>, int> groups;
  for (std::size_t i = 0; i < st.tensors.size(); ++i)
    if (st.tensors[i].compressed) ++groups[{psgd.rows(i), psgd.cols(i), st.tensors[i].rank}];
  for (const auto& [key, count] : groups)
    s.matrices.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), count});
  return s;
}

std::uint64_t fnv1a(const StageTensors& t) {
  std::uint64_t h = 1469598103934665603ULL;
  for (const auto& v : t.mine) {
    const auto* p = reinterpret_cast<const unsigned char*>(v.data());
    for (std::size_t k = 0; k < v.size() * sizeof(float); ++k) h = (h ^ p[k]) * 1099511628211ULL;
  }
  return h;
}

// Verification of one step on this rank (live.verify): error feedback holds, every replica of the group ended
// with the same bits, and replica 0 holds exactly what the in-process emulation of the group computes.
struct Verifier {
  std::unique_ptr<kernels::DataParallelEmulator> emulator;  // replica 0 only
  std::vector<std::vector<float> > m_before;                // M = G + E per tensor, before the step
  double worst_ef = 0.0;
  std::int64_t steps = 0;

  void before(const StageTensors& t, const kernels::PowerSgd& psgd) {
    m_before.resize(t.mine.size());
    for (std::size_t i = 0; i < t.mine.size(); ++i) {
      m_before[i] = t.mine[i];
      const auto e = psgd.error(i);
      for (std::size_t k = 0; k < e.size(); ++k) m_before[i][k] += e[k];
    }
  }

  void after(const World& w, const StageTensors& t, const kernels::PowerSgd& psgd, const kernels::StepStats& st,
             const std::vector<int>& ranks) {
    // Error feedback: a compressed tensor keeps E = M − Ĝ; an uncompressed one delivers its error and clears it.
    for (std::size_t i = 0; i < t.mine.size(); ++i) {
      const auto e = psgd.error(i);
      if (!st.tensors[i].compressed) {
        for (float x : e)
          if (x != 0.0F) throw InternalError("live verify: an uncompressed tensor kept a non-zero error buffer");
        continue;
      }
      double worst = 0.0;
      double scale = 0.0;
      for (std::size_t k = 0; k < e.size(); ++k) {
        const double m = m_before[i][k];
        worst = std::max(worst, std::abs(m - static_cast<double>(t.mine[i][k]) - static_cast<double>(e[k])));
        scale = std::max(scale, std::abs(m));
      }
      const double rel = scale > 0.0 ? worst / scale : worst;
      worst_ef = std::max(worst_ef, rel);
      if (rel > 1e-5)
        throw InternalError("live verify: error feedback broken on tensor " + std::to_string(i) +
                            ": max |M - G^ - E| / max |M| = " + std::to_string(rel));
    }
    // Bit-identical replicas.
    const std::uint64_t h = fnv1a(t);
    std::uint64_t lo = h;
    std::uint64_t hi = h;
    mpi_ok(MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, w.group), "MPI_Allreduce");
    mpi_ok(MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, w.group), "MPI_Allreduce");
    if (lo != hi)
      throw InternalError("live verify: the replicas of stage " + std::to_string(w.stage) +
                          " hold different reconstructions");
    // The in-process emulation of the same group.
    if (emulator) {
      emulator->step(t.raw_views, ranks);
      for (std::size_t i = 0; i < t.mine.size(); ++i) {
        const auto ref = emulator->reconstruction(i);
        if (std::memcmp(ref.data(), t.mine[i].data(), ref.size() * sizeof(float)) != 0)
          throw InternalError("live verify: stage " + std::to_string(w.stage) + " tensor " + std::to_string(i) +
                              " differs from the in-process emulation");
      }
    }
    ++steps;
  }
};

// Reduces every rank's steps over its DP group (collectives: MIN, sync and compute: MAX); the group's replica 0
// returns them, the others an empty list.
std::vector<results::StageStep> reduce_steps(const World& w, const std::vector<LocalStep>& local) {
  std::vector<double> maxes;
  std::vector<double> mins;
  for (const LocalStep& s : local) {
    maxes.push_back(s.sync_s);
    maxes.push_back(s.compute_s);
    for (const auto& c : s.collectives) mins.push_back(c.time_s);
  }
  w.group_reduce(maxes, MPI_MAX);
  w.group_reduce(mins, MPI_MIN);
  std::vector<results::StageStep> out;
  if (w.replica != 0) return out;
  std::size_t a = 0;
  std::size_t b = 0;
  for (const LocalStep& s : local) {
    results::StageStep x;
    x.rank = s.rank;
    x.sync_s = maxes[a++];
    x.compute_s = maxes[a++];
    x.wire_bytes = s.wire_bytes;
    x.dense_bytes = s.dense_bytes;
    x.collectives = s.collectives;
    for (auto& c : x.collectives) c.time_s = mins[b++];
    x.matrices = s.matrices;
    out.push_back(std::move(x));
  }
  return out;
}

// ---- machine rates ----

struct Rates {
  double gemm_flops = 0.0;  // achieved fp32 GEMM rate of the backend
  double copy_Bps = 0.0;    // memory copy, bytes read + written per second
};

Rates measure_rates(kernels::Backend& backend) {
  Rates r;
  constexpr std::int64_t n = 384;
  std::vector<float> a(n * n, 1.0F), b(n * n, 0.5F), c(n * n, 0.0F);
  const float* pa = a.data();
  const float* pb = b.data();
  float* pc = c.data();
  std::vector<double> t;
  for (int rep = 0; rep < 5; ++rep) {
    const double t0 = MPI_Wtime();
    backend.gemm_batched(kernels::Transpose::kNo, kernels::Transpose::kNo, n, n, n, 1.0F, {&pa, 1}, {&pb, 1}, 0.0F,
                         {&pc, 1});
    t.push_back(MPI_Wtime() - t0);
  }
  r.gemm_flops = 2.0 * n * n * n / std::max(1e-9, *std::min_element(t.begin(), t.end()));
  const std::size_t floats = std::size_t{8} << 20;  // 32 MiB
  std::vector<float> src(floats, 1.0F), dst(floats, 0.0F);
  t.clear();
  for (int rep = 0; rep < 5; ++rep) {
    const double t0 = MPI_Wtime();
    std::memcpy(dst.data(), src.data(), floats * sizeof(float));
    t.push_back(MPI_Wtime() - t0);
    src[static_cast<std::size_t>(rep)] = dst[floats - 1 - static_cast<std::size_t>(rep)];  // keep the copy alive
  }
  r.copy_Bps =
      2.0 * static_cast<double>(floats * sizeof(float)) / std::max(1e-9, *std::min_element(t.begin(), t.end()));
  return r;
}

// ---- calibration and fits ----

// Weighted least squares of t = a + b·S with weights 1/t² (relative error), a, b ≥ 0.
std::pair<double, double> fit_affine_relative(const std::vector<results::Calibration::Row>& rows) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& r : rows) {
    const double w = 1.0 / (r.time_s * r.time_s);
    const double x = static_cast<double>(r.bytes);
    sw += w, sx += w * x, sy += w * r.time_s, sxx += w * x * x, sxy += w * x * r.time_s;
  }
  const double det = sw * sxx - sx * sx;
  double a = det != 0.0 ? (sxx * sy - sx * sxy) / det : 0.0;
  double b = det != 0.0 ? (sw * sxy - sx * sy) / det : 0.0;
  if (a < 0.0 || !std::isfinite(a)) {
    a = 0.0;
    b = sxx > 0.0 ? sxy / sxx : 0.0;
  }
  if (b <= 0.0 || !std::isfinite(b)) {
    b = 0.0;
    a = sw > 0.0 ? sy / sw : 0.0;
  }
  return {a, b};
}

results::TcomFit fit_line(int stage, const std::vector<results::TcomPoint>& pts) {
  results::TcomFit f;
  f.stage = stage;
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& p : pts) {
    if (p.stage != stage) continue;
    n += 1, sx += p.rank, sy += p.comm_s, sxx += double(p.rank) * p.rank, sxy += p.rank * p.comm_s;
  }
  f.points = static_cast<int>(n);
  if (n < 2) {
    f.c_s = n > 0 ? sy / n : 0.0;
    f.r2 = n > 0 ? 1.0 : 0.0;
    return f;
  }
  const double det = n * sxx - sx * sx;
  f.eta_s = det != 0.0 ? (n * sxy - sx * sy) / det : 0.0;
  f.c_s = (sy - f.eta_s * sx) / n;
  double ss_res = 0, ss_tot = 0;
  const double mean = sy / n;
  for (const auto& p : pts) {
    if (p.stage != stage) continue;
    const double e = p.comm_s - (f.eta_s * p.rank + f.c_s);
    ss_res += e * e;
    ss_tot += (p.comm_s - mean) * (p.comm_s - mean);
  }
  f.r2 = ss_tot > 0.0 ? 1.0 - ss_res / ss_tot : 1.0;
  return f;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(colon + 1);
        name.erase(0, name.find_first_not_of(' '));
        return name;
      }
    }
  }
  return "cpu";
}

int auto_pp(int world, int trace_stages) {
  int best = 1;
  for (int p = 1; p <= std::min(world, trace_stages); ++p)
    if (world % p == 0 && world / p >= 2) best = p;
  return world == 1 ? 1 : best;
}

// ---- outputs ----

ordered_json cluster_json(const results::Measurements& m, const Rates& rates, const std::string& gpu_name) {
  int nodes = 0;
  int per_node = 0;
  std::map<int, int> count;
  for (const auto& p : m.placement) ++count[p.node];
  nodes = static_cast<int>(count.size());
  for (const auto& [node, c] : count) per_node = std::max(per_node, c);
  const double latency_us = std::max(1e-3, m.calibration.latency_s * 1e6);
  const double bw_GBps = m.calibration.bandwidth_Bps / 1e9;
  ordered_json sources = {
      {"cluster.gpu.peak_tflops",
       "fp32 GEMM rate the " + m.backend +
           " backend reached on a 384^3 product, median over ranks, divided by the "
           "cost model's default compute_efficiency 0.4 so that the default model predicts the measured rate"},
      {"cluster.gpu.hbm_GBps",
       "memory copy (bytes read + written per second) of 32 MiB, median over ranks, divided by "
       "the default hbm_efficiency 0.85"},
      {"cluster.intra_node", "ring alpha-beta fit of the dense all-reduce calibration over one DP group of " +
                                 std::to_string(m.calibration.ranks) + " ranks (measurements.json calibration)"},
      {"cluster.inter_node", "the same fit (one host: unused; several hosts: the groups' rings crossed hosts)"}};
  return {{"description", "The machines `edgc live` ran on, as measured by it: " + std::to_string(m.world_size) +
                              " ranks (" + m.comm + ", " + m.backend + " backend) on " + std::to_string(nodes) +
                              " host(s)."},
          {"sources", sources},
          {"cluster",
           {{"name", "live-" + (m.placement.empty() ? std::string("host") : m.placement[0].host)},
            {"gpus_per_node", per_node},
            {"nodes", nodes},
            {"gpu",
             {{"name", gpu_name},
              {"peak_tflops", rates.gemm_flops / 0.4 / 1e12},
              {"hbm_GBps", rates.copy_Bps / 0.85 / 1e9}}},
            {"intra_node", {{"topology", "switch"}, {"bandwidth_GBps", bw_GBps}, {"latency_us", latency_us}}},
            {"inter_node",
             {{"nics_per_node", 1}, {"nic_bandwidth_GBps", bw_GBps}, {"latency_us", latency_us}, {"fabric", "star"}}},
            {"price_per_gpu_hour_usd", 0.0}}}};
}

struct PolicyOutcome {
  std::string policy;
  engine::ReplayResult replay;
};

double reduction(double base, double x) { return base > 0.0 ? 1.0 - x / base : 0.0; }

ordered_json result_json(const LiveOptions& o, const results::Measurements& m,
                         const std::vector<PolicyOutcome>& outcomes) {
  ordered_json j = {{"schema", "edgc.result/1"},
                    {"source", "live"},
                    {"scenario", o.scenario_path},
                    {"trace", m.trace},
                    {"note",
                     "live mode times the data-parallel gradient sync of every stage (compression compute "
                     "and real all-reduces); forward and backward compute are not run, so iteration_time_s "
                     "and training_time_s cover the sync only (training_time_s = the sum over replayed steps)"},
                    {"layout", {{"tp", 1}, {"pp", m.pp}, {"dp", m.dp}}},
                    {"runs", ordered_json::array()}};
  struct Totals {
    double iter = 0, comm = 0, train = 0, compute = 0;
    std::vector<double> stage;
  };
  std::vector<Totals> totals;
  for (const auto& run : m.runs) {
    Totals t;
    t.stage.assign(static_cast<std::size_t>(m.pp), 0.0);
    for (const auto& s : run.steps) {
      t.train += s.iteration_s;
      double worst_compute = 0;
      for (std::size_t k = 0; k < s.stages.size(); ++k) {
        t.stage[k] += s.stages[k].sync_s;
        worst_compute = std::max(worst_compute, s.stages[k].compute_s);
      }
      t.compute += worst_compute;
    }
    const double n = static_cast<double>(std::max<std::size_t>(1, run.steps.size()));
    t.iter = t.train / n;
    t.comm = t.iter;  // the longest stage sync per step, as simulate's comm_latency_s
    t.compute /= n;
    for (auto& x : t.stage) x /= n;
    totals.push_back(t);
  }
  const Totals& base = totals.front();
  for (std::size_t i = 0; i < m.runs.size(); ++i) {
    const Totals& t = totals[i];
    ordered_json schedule = ordered_json::array();
    for (const auto& w : outcomes[i].replay.windows) {
      std::vector<int> ranks;
      for (const auto& s : w.stages) ranks.push_back(s.rank);
      if (!schedule.empty() && schedule.back()["ranks"] == ordered_json(ranks))
        schedule.back()["end"] = w.end_iteration;
      else
        schedule.push_back({{"begin", w.first_iteration}, {"end", w.end_iteration}, {"ranks", ranks}});
    }
    std::int64_t wire = 0;
    std::int64_t dense = 0;
    for (const auto& s : m.runs[i].steps)
      for (const auto& st : s.stages) wire += st.wire_bytes, dense += st.dense_bytes;
    j["runs"].push_back(
        {{"policy", m.runs[i].policy},
         {"steps", m.runs[i].steps.size()},
         {"iteration_time_s", t.iter},
         {"comm_latency_s", t.comm},
         {"training_time_s", t.train},
         {"speedup_vs_none", t.train > 0 ? base.train / t.train : 0.0},
         {"comm_latency_reduction_vs_none", reduction(base.comm, t.comm)},
         {"training_time_reduction_vs_none", reduction(base.train, t.train)},
         {"compression_compute_s", t.compute},
         {"wire_bytes_ratio", dense > 0 ? static_cast<double>(wire) / static_cast<double>(dense) : 1.0},
         {"stage_comm_latency_s", t.stage},
         {"warmup_end_iteration",
          outcomes[i].replay.warmup_end ? ordered_json(*outcomes[i].replay.warmup_end) : ordered_json(nullptr)},
         {"rank_schedule", schedule}});
  }
  ordered_json fits = ordered_json::array();
  for (const auto& f : m.tcom_fit)
    fits.push_back({{"stage", f.stage}, {"eta_s", f.eta_s}, {"c_s", f.c_s}, {"r2", f.r2}});
  j["tcom_fit"] = fits;
  return j;
}

void print_summary(const results::Measurements& m, const ordered_json& result, const std::string& out_dir) {
  std::cout << "# edgc live: " << m.world_size << " ranks (pp " << m.pp << " x dp " << m.dp << "), " << m.comm
            << " all-reduces, " << m.backend << " backend; trace " << m.trace << "\n";
  std::cout << "# calibration (dense all-reduce over " << m.calibration.ranks << " ranks): latency "
            << results::fmt_f(m.calibration.latency_s * 1e6, 2) << " us per ring step, bandwidth "
            << results::fmt_f(m.calibration.bandwidth_Bps / 1e9, 3) << " GB/s\n";
  results::Table t({"policy", "steps", "sync/step(ms)", "compute(ms)", "wire/dense", "sync vs none"});
  for (const auto& r : result["runs"])
    t.add_row({r["policy"].get<std::string>(), std::to_string(r["steps"].get<std::size_t>()),
               results::fmt_f(r["iteration_time_s"].get<double>() * 1e3, 3),
               results::fmt_f(r["compression_compute_s"].get<double>() * 1e3, 3),
               results::fmt_f(r["wire_bytes_ratio"].get<double>(), 3),
               results::fmt_f(-100.0 * r["comm_latency_reduction_vs_none"].get<double>(), 1) + " %"});
  t.print(std::cout);
  results::Table f({"stage", "T_com(r) = eta*r + c", "eta(us/rank)", "c(us)", "r2", "points"});
  for (const auto& x : m.tcom_fit)
    f.add_row({std::to_string(x.stage), "", results::fmt_f(x.eta_s * 1e6, 3), results::fmt_f(x.c_s * 1e6, 2),
               results::fmt_f(x.r2, 3), std::to_string(x.points)});
  f.print(std::cout);
  std::cout << "wrote " << out_dir << "/measurements.json, " << out_dir << "/cluster.json, " << out_dir
            << "/result.json\n";
}

// ---- the run ----

class LiveRun {
 public:
  LiveRun(const LiveOptions& o, World& w) : o_(o), w_(w) {}

  void run() {
    traces::TraceReader reader(o_.trace_dir);
    const traces::Manifest& man = reader.manifest();
    tensor_stage_.clear();
    for (const auto& t : man.tensors) tensor_stage_.push_back(t.stage * w_.pp / man.num_stages);
    tensors_ = stage_tensors(man, tensor_stage_, w_.stage);
    kernels::BackendOptions bo;
    bo.threads = 1;
    backend_ = kernels::make_backend(o_.backend, bo);
    if (o_.comm == "nccl")
      inner_ = kernels::make_nccl_communicator(w_.group);
    else
      inner_ = std::make_unique<kernels::MpiCommunicator>(w_.group);
    comm_ = std::make_unique<TimedCommunicator>(*inner_);

    rates_ = measure_rates(*backend_);
    calibrate();
    traces::IterationData first;
    reader.read(0, first);
    load_raw(tensors_, first);
    probe();
    for (const std::string& p : o_.policies) run_policy(p);
  }

  // Rank 0 only, after run(): what to write.
  void write_outputs(const std::filesystem::path& dir) {
    std::vector<double> rates = {rates_.gemm_flops, rates_.copy_Bps};
    std::vector<std::string> all = w_.gather(ordered_json(rates).dump());
    std::vector<std::string> names = w_.gather(host_);
    if (w_.rank != 0) return;
    std::vector<double> flops;
    std::vector<double> copy;
    for (const auto& s : all) {
      const auto v = nlohmann::json::parse(s);
      flops.push_back(v[0].get<double>());
      copy.push_back(v[1].get<double>());
    }
    Rates med{median(flops), median(copy)};
    meas_.world_size = w_.size;
    meas_.pp = w_.pp;
    meas_.dp = w_.dp;
    meas_.comm = o_.comm;
    meas_.backend = o_.backend;
    meas_.element_bytes = kElementBytes;
    meas_.trace = o_.trace_dir;
    std::map<std::string, int> node_of;
    std::map<std::string, int> used;
    for (int g = 0; g < w_.size; ++g) {
      const std::string& h = names[static_cast<std::size_t>(g)];
      if (!node_of.count(h)) node_of[h] = static_cast<int>(node_of.size());
      meas_.placement.push_back({g, h, node_of[h], used[h]++, g / w_.dp, g % w_.dp});
    }
    const std::string gpu_name = o_.backend == "cpu" ? "cpu: " + cpu_model_name() : std::string(backend_->isa());
    const ordered_json cluster = cluster_json(meas_, med, gpu_name);
    const ordered_json result = result_json(o_, meas_, outcomes_);
    write_file_atomic(dir / "cluster.json", cluster.dump(1) + "\n");
    write_file_atomic(dir / "measurements.json", to_json(meas_).dump(1) + "\n");
    write_file_atomic(dir / "result.json", result.dump(1) + "\n");
    summary_ = result;
  }

  void set_host(std::string h) { host_ = std::move(h); }
  void print() const { print_summary(meas_, summary_, o_.out_dir); }

 private:
  // Dense all-reduces over every DP group at once (so the network is loaded as in a step); stage 0's group's
  // figures, which rank 0 holds after the group reduction, are the calibration rank 0 writes.
  void calibrate() {
    results::Calibration& cal = meas_.calibration;
    cal.ranks = w_.dp;
    std::vector<float> buf;
    for (std::int64_t bytes = o_.calibration_min_bytes; bytes <= o_.calibration_max_bytes; bytes *= 4) {
      buf.assign(static_cast<std::size_t>(std::max<std::int64_t>(1, bytes / kElementBytes)), 1.0F);
      std::vector<double> times;
      for (int rep = -1; rep < o_.calibration_repeats; ++rep) {
        w_.barrier();
        comm_->all_reduce_sum(buf);
        std::vector<double> t = {comm_->take().back().seconds};
        w_.group_reduce(t, MPI_MIN);
        if (rep >= 0) times.push_back(t[0]);
      }
      cal.rows.push_back({static_cast<std::int64_t>(buf.size()) * kElementBytes, median(times)});
      if (bytes > o_.calibration_max_bytes / 4) break;
    }
    const int d = w_.dp;
    if (d < 2) {
      cal.latency_s = 0.0;
      cal.bandwidth_Bps = rates_.copy_Bps;
      return;
    }
    const auto [a, b] = fit_affine_relative(cal.rows);
    cal.latency_s = a / (2.0 * (d - 1));
    cal.bandwidth_Bps = b > 0.0 ? 2.0 * (d - 1) / d / b : rates_.copy_Bps;
  }

  // A fresh PowerSgd for this rank's stage.
  std::unique_ptr<kernels::PowerSgd> make_psgd(int initial_rank) const {
    kernels::PowerSgdConfig cfg;
    cfg.rank = 0;
    cfg.seed = o_.seed;
    auto p = std::make_unique<kernels::PowerSgd>(*backend_, tensors_.shapes, cfg);
    const auto r = tensor_ranks(tensors_, initial_rank);
    for (std::size_t i = 0; i < r.size(); ++i) p->set_rank(i, r[i]);
    return p;
  }

  // Timed step of every stage at once: barrier, step, record. `ranks` per tensor.
  LocalStep timed_step(kernels::PowerSgd& psgd, const std::vector<int>& ranks, int stage_rank, Verifier* verify) {
    for (std::size_t i = 0; i < ranks.size(); ++i) psgd.set_rank(i, ranks[i]);
    if (verify) verify->before(tensors_, psgd);
    w_.barrier();
    const double t0 = MPI_Wtime();
    const kernels::StepStats st = psgd.step(tensors_.views, *comm_);
    const double sync = MPI_Wtime() - t0;
    LocalStep s = describe(st, psgd, comm_->take());
    s.rank = stage_rank;
    s.sync_s = sync;
    if (verify) verify->after(w_, tensors_, psgd, st, ranks);
    return s;
  }

  void probe() {
    std::vector<double> comm_med;
    std::vector<double> compute_med;
    std::vector<int> used;
    for (const int r : o_.probe_ranks) {
      const auto ranks = tensor_ranks(tensors_, r);
      // Every group must agree to use this rank (the smallest stage decides whether anything is compressed).
      std::vector<double> any = {std::any_of(ranks.begin(), ranks.end(), [](int x) { return x > 0; }) ? 1.0 : 0.0};
      w_.world_reduce(any, MPI_MIN);
      if (any[0] == 0.0) continue;
      auto psgd = make_psgd(r);
      std::vector<LocalStep> steps;
      for (int rep = -1; rep < o_.probe_repeats; ++rep) {
        make_replica(tensors_, *backend_, o_.perturbation, o_.seed, 0, w_.replica);
        LocalStep s = timed_step(*psgd, ranks, r, nullptr);
        if (rep >= 0) steps.push_back(std::move(s));
      }
      const auto reduced = reduce_steps(w_, steps);
      std::vector<double> comm;
      std::vector<double> compute;
      for (const auto& s : reduced) {
        double c = 0;
        for (const auto& x : s.collectives) c += x.time_s;
        comm.push_back(c);
        compute.push_back(s.compute_s);
      }
      used.push_back(r);
      comm_med.push_back(median(comm));
      compute_med.push_back(median(compute));
    }
    // Stage roots send their points to rank 0.
    ordered_json mine = ordered_json::array();
    if (w_.replica == 0)
      for (std::size_t i = 0; i < used.size(); ++i) mine.push_back({used[i], comm_med[i], compute_med[i]});
    const auto all = w_.gather(mine.dump());
    if (w_.rank != 0) return;
    for (int g = 0; g < w_.size; ++g) {
      if (g % w_.dp != 0) continue;
      for (const auto& p : nlohmann::json::parse(all[static_cast<std::size_t>(g)]))
        meas_.tcom_points.push_back({g / w_.dp, p[0].get<int>(), p[1].get<double>(), p[2].get<double>()});
    }
    for (int s = 0; s < w_.pp; ++s) meas_.tcom_fit.push_back(fit_line(s, meas_.tcom_points));
  }

  void run_policy(const std::string& policy) {
    engine::ReplayOptions ro;
    ro.trace_dir = o_.trace_dir;
    ro.controller = o_.compression.controller;
    ro.controller.policy = policy;
    ro.gds = o_.compression.gds;
    ro.warmup_floor_fraction = o_.compression.warmup_floor_fraction;
    ro.warmup_ceiling_fraction = o_.compression.warmup_ceiling_fraction;
    ro.backend = o_.backend;
    ro.bins_per_sigma = o_.bins_per_sigma;
    ro.compare_full = false;
    ro.seed = o_.seed;
    ro.stages = w_.pp;
    ro.max_iterations = o_.max_iterations;

    auto psgd = make_psgd(0);
    Verifier verifier;
    if (o_.verify && w_.replica == 0) {
      kernels::PowerSgdConfig cfg;
      cfg.rank = 0;
      cfg.seed = o_.seed;
      verifier.emulator =
          std::make_unique<kernels::DataParallelEmulator>("cpu", tensors_.shapes, w_.dp, cfg, o_.perturbation, o_.seed);
    }
    std::vector<LocalStep> local;
    std::int64_t step = 0;
    ro.on_iteration = [&](const traces::IterationData& data, std::span<const int> stage_ranks) {
      // Every rank took the same decisions (it runs the same deterministic controller on the same data).
      std::vector<double> lo(stage_ranks.begin(), stage_ranks.end());
      std::vector<double> hi = lo;
      w_.world_reduce(lo, MPI_MIN);
      w_.world_reduce(hi, MPI_MAX);
      if (lo != hi)
        throw InternalError("live: the ranks' controllers disagree at iteration " +
                            std::to_string(data.info->iteration));
      load_raw(tensors_, data);
      make_replica(tensors_, *backend_, o_.perturbation, o_.seed, step, w_.replica);
      const int r = stage_ranks[static_cast<std::size_t>(w_.stage)];
      LocalStep s = timed_step(*psgd, tensor_ranks(tensors_, r), r, o_.verify ? &verifier : nullptr);
      s.iteration = data.info->iteration;
      local.push_back(std::move(s));
      ++step;
    };
    PolicyOutcome outcome{policy, engine::run_replay(ro)};
    if (o_.verify) {
      std::vector<double> worst = {verifier.worst_ef};
      w_.world_reduce(worst, MPI_MAX);
      worst_ef_ = std::max(worst_ef_, worst[0]);
      verified_steps_ += verifier.steps;
    }
    const auto reduced = reduce_steps(w_, local);
    ordered_json mine = ordered_json::array();
    for (const auto& s : reduced) mine.push_back(results::to_json(s));
    const auto all = w_.gather(mine.dump());
    if (w_.rank == 0) {
      results::PolicyRun run;
      run.policy = policy;
      for (std::size_t k = 0; k < local.size(); ++k) {
        results::Step st;
        st.step = static_cast<std::int64_t>(k);
        st.iteration = local[k].iteration;
        run.steps.push_back(st);
      }
      for (int s = 0; s < w_.pp; ++s) {
        const auto stage_steps = nlohmann::json::parse(all[static_cast<std::size_t>(s * w_.dp)]);
        if (stage_steps.size() != run.steps.size())
          throw InternalError("live: stage " + std::to_string(s) + " reported a different number of steps");
        for (std::size_t k = 0; k < run.steps.size(); ++k)
          run.steps[k].stages.push_back(
              results::stage_step_from_json(stage_steps[k], "live: rank " + std::to_string(s * w_.dp)));
      }
      for (auto& st : run.steps)
        for (const auto& x : st.stages) st.iteration_s = std::max(st.iteration_s, x.sync_s);
      meas_.runs.push_back(std::move(run));
    }
    outcomes_.push_back(std::move(outcome));
  }

 public:
  double worst_ef() const { return worst_ef_; }
  std::int64_t verified_steps() const { return verified_steps_; }

 private:
  const LiveOptions& o_;
  World& w_;
  std::string host_;
  std::vector<int> tensor_stage_;
  StageTensors tensors_;
  std::unique_ptr<kernels::Backend> backend_;
  std::unique_ptr<kernels::Communicator> inner_;
  std::unique_ptr<TimedCommunicator> comm_;
  Rates rates_;
  results::Measurements meas_;
  std::vector<PolicyOutcome> outcomes_;
  ordered_json summary_;
  double worst_ef_ = 0.0;
  std::int64_t verified_steps_ = 0;
};

}  // namespace

int run_live(const LiveOptions& o) {
  if (o.comm == "nccl" && !kernels::nccl_available())
    throw UsageError("--comm", "nccl needs the edgc-nccl binary (a build with CUDA, MPI and NCCL); this is plain edgc");
  if (o.backend != "cpu")
    throw UsageError("--backend", "live mode runs PowerSGD on host buffers; only the cpu backend is supported");
  if (o.out_dir.empty()) throw UsageError("--out", "is required");
  // A bad trace is found before any rank communicates: every rank checks the same things.
  const int trace_stages = traces::TraceReader(o.trace_dir).manifest().num_stages;
  kernels::MpiRuntime runtime;
  World w;
  mpi_ok(MPI_Comm_rank(MPI_COMM_WORLD, &w.rank), "MPI_Comm_rank");
  mpi_ok(MPI_Comm_size(MPI_COMM_WORLD, &w.size), "MPI_Comm_size");
  try {
    w.pp = o.pp > 0 ? o.pp : auto_pp(w.size, trace_stages);
    if (w.size % w.pp != 0)
      throw ConfigError(o.scenario_path, "live.pp",
                        std::to_string(w.pp) + " does not divide the " + std::to_string(w.size) + " ranks");
    if (w.pp > trace_stages)
      throw ConfigError(
          o.scenario_path, "live.pp",
          std::to_string(w.pp) + " exceeds the trace's " + std::to_string(trace_stages) + " pipeline stages");
    w.dp = w.size / w.pp;
    w.stage = w.rank / w.dp;
    w.replica = w.rank % w.dp;
    mpi_ok(MPI_Comm_split(MPI_COMM_WORLD, w.stage, w.replica, &w.group), "MPI_Comm_split");
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    mpi_ok(MPI_Get_processor_name(name, &len), "MPI_Get_processor_name");
    std::optional<StagingDir> staging;
    if (w.rank == 0) staging.emplace(o.out_dir);  // a busy --out fails before the run
    LiveRun run(o, w);
    run.set_host(std::string(name, static_cast<std::size_t>(len)));
    run.run();
    run.write_outputs(staging ? staging->path() : std::filesystem::path());
    if (staging) staging->commit();
    if (w.rank == 0 && !o.quiet) run.print();
    if (w.rank == 0 && o.verify && !o.quiet)
      std::cout << "verify: " << run.verified_steps() << " steps per rank bit-identical across replicas and to the "
                << "in-process emulation; error feedback holds (max |M - G^ - E| / max |M| = " << run.worst_ef()
                << ")\n";
    mpi_ok(MPI_Comm_free(&w.group), "MPI_Comm_free");
  } catch (const std::exception& e) {
    if (w.size > 1) {
      std::cerr << "edgc live: rank " << w.rank << ": " << e.what() << "\n";
      MPI_Abort(MPI_COMM_WORLD, dynamic_cast<const InputError*>(&e) != nullptr ? 2 : 1);
    }
    throw;
  }
  return 0;
}

#endif

}  // namespace edgc::live
