#include "edgc/traces/synth.hpp"

#include <cmath>
#include <nlohmann/json.hpp>

#include "edgc/core/block_sampling.hpp"
#include "edgc/core/error.hpp"
#include "edgc/core/random.hpp"
#include "edgc/traces/writer.hpp"

namespace edgc::traces {
namespace {

// Fixed low-rank factors of one tensor; the signal at an iteration is U·diag(a_t)·Vᵀ / sqrt(rank).
struct SignalFactors {
  std::int64_t rows = 1;
  std::int64_t cols = 1;
  int rank = 0;
  std::vector<float> u;  // rows × rank
  std::vector<float> v;  // cols × rank
};

SignalFactors make_factors(const std::vector<std::int64_t>& shape, int rank, Rng& rng) {
  SignalFactors f;
  f.cols = shape.back();
  for (std::size_t i = 0; i + 1 < shape.size(); ++i) f.rows *= shape[i];
  f.rank = shape.size() >= 2 ? static_cast<int>(std::min<std::int64_t>({rank, f.rows, f.cols})) : 1;
  f.u.resize(static_cast<std::size_t>(f.rows * f.rank));
  f.v.resize(static_cast<std::size_t>(f.cols * f.rank));
  for (auto& x : f.u) x = static_cast<float>(rng.normal());
  for (auto& x : f.v) x = shape.size() >= 2 ? static_cast<float>(rng.normal()) : 1.0f;
  return f;
}

void fill_tensor(const SignalFactors& f, double signal_std, double noise_std, Rng& rng, std::vector<float>& out) {
  std::vector<double> coef(static_cast<std::size_t>(f.rank));
  const double norm = signal_std / std::sqrt(static_cast<double>(f.rank));
  for (auto& c : coef) c = norm * (1.0 + 0.25 * rng.normal());
  out.resize(static_cast<std::size_t>(f.rows * f.cols));
  std::vector<double> urow(static_cast<std::size_t>(f.rank));
  for (std::int64_t i = 0; i < f.rows; ++i) {
    for (int j = 0; j < f.rank; ++j) urow[j] = coef[j] * f.u[static_cast<std::size_t>(i * f.rank + j)];
    float* row = out.data() + i * f.cols;
    for (std::int64_t k = 0; k < f.cols; ++k) {
      const float* vk = f.v.data() + k * f.rank;
      double s = 0.0;
      for (int j = 0; j < f.rank; ++j) s += urow[j] * vk[j];
      row[k] = static_cast<float>(s + noise_std * rng.normal());
    }
  }
}

}  // namespace

void validate(const SynthOptions& o) {
  if (o.layer_shapes.empty()) throw UsageError("--shapes", "needs at least one shape");
  for (const auto& s : o.layer_shapes) {
    if (s.empty()) throw UsageError("--shapes", "empty shape");
    for (auto d : s)
      if (d < 1) throw UsageError("--shapes", "dimensions must be >= 1");
  }
  if (o.layers < 1) throw UsageError("--layers", "must be >= 1");
  if (o.stages < 1 || o.stages > o.layers) throw UsageError("--stages", "must be between 1 and --layers");
  if (o.iterations < 1) throw UsageError("--iterations", "must be >= 1");
  if (o.iteration_stride < 1) throw UsageError("--stride", "must be >= 1");
  if (o.rank < 1) throw UsageError("--rank", "must be >= 1");
  if (!(o.signal_std >= 0.0) || !(o.noise_std >= 0.0)) throw UsageError("--signal/--noise", "must be >= 0");
  if (!std::isfinite(o.entropy_decay_nats)) throw UsageError("--entropy-decay", "must be finite");
  if (o.dtype == Dtype::kI64) throw UsageError("--dtype", "must be f32, f16 or bf16");
  if (!o.boundary_shape.empty() &&
      (o.boundary_shape.size() != 2 || o.boundary_shape[0] < 1 || o.boundary_shape[1] < 1 || o.stages < 2))
    throw UsageError("--boundaries", "needs a tokens x hidden shape (two positive dimensions) and at least 2 stages");
  if (o.mode == CaptureMode::kBlocks && (!(o.fraction > 0.0 && o.fraction <= 1.0) || o.block_elems < 1))
    throw UsageError("--fraction/--block-elems", "fraction must be in (0, 1] and block size >= 1");
}

Manifest synthesize_trace(const SynthOptions& o, const std::filesystem::path& dir) {
  validate(o);
  Manifest m;
  m.model_name = "synthetic";
  m.num_stages = o.stages;
  nlohmann::json model = {{"name", m.model_name}, {"num_stages", o.stages}, {"num_layers", o.layers}};
  m.model_json = model.dump();
  if (o.mode == CaptureMode::kBlocks) m.sampling = SamplingInfo{o.block_elems, o.fraction, o.seed};
  // Transformer-like names: the 2-D shapes of a layer in order, then generic ones; 1-D tensors are biases.
  const char* matrix_names[] = {"attn.qkv", "attn.proj", "mlp.fc", "mlp.proj"};
  for (int l = 0; l < o.layers; ++l) {
    int matrices = 0;
    for (std::size_t s = 0; s < o.layer_shapes.size(); ++s) {
      TensorInfo t;
      const bool is_matrix = o.layer_shapes[s].size() >= 2;
      const std::string base = is_matrix ? (matrices < 4 ? std::string(matrix_names[matrices]) + ".weight"
                                                         : "matrix" + std::to_string(matrices) + ".weight")
                                         : "bias" + std::to_string(s);
      matrices += is_matrix ? 1 : 0;
      t.name = "layers." + std::to_string(l) + "." + base;
      t.shape = o.layer_shapes[s];
      t.dtype = o.dtype;
      t.layer = l;
      t.stage = static_cast<int>(static_cast<std::int64_t>(l) * o.stages / o.layers);
      t.mode = o.mode;
      m.tensors.push_back(std::move(t));
    }
  }
  if (!o.boundary_shape.empty()) {
    for (int st = 1; st < o.stages; ++st)
      m.boundaries.push_back(
          {"boundary." + std::to_string(st), st, o.boundary_shape[0], o.boundary_shape[1], 1, o.dtype});
  }
  nlohmann::json prov = {{"tool", "edgc trace synth"},
                         {"command", o.command},
                         {"seed", o.seed},
                         {"signal", {{"rank", o.rank}, {"signal_std", o.signal_std}}},
                         {"noise", {{"noise_std", o.noise_std}, {"entropy_decay_nats", o.entropy_decay_nats}}}};
  m.provenance_json = prov.dump();

  const std::size_t nt = m.tensors.size();
  std::vector<SignalFactors> factors;
  std::vector<std::vector<Block>> blocks(nt);
  for (std::size_t k = 0; k < nt; ++k) {
    Rng frng(o.seed, 2 * k);
    factors.push_back(make_factors(m.tensors[k].shape, o.rank, frng));
    if (o.mode == CaptureMode::kBlocks)
      blocks[k] = choose_blocks(m.tensors[k].numel(), o.fraction, o.block_elems, o.seed, k);
  }

  const std::size_t nb = m.boundaries.size();
  std::vector<SignalFactors> boundary_factors;
  for (std::size_t k = 0; k < nb; ++k) {
    Rng frng(o.seed, 2 * (nt + k));
    boundary_factors.push_back(make_factors(o.boundary_shape, o.rank, frng));
  }
  std::vector<std::vector<float>> boundary_values(nb);
  std::vector<std::span<const float>> boundary_views(nb);

  TraceWriter writer(dir, m);
  std::vector<std::vector<float>> full(nt);
  std::vector<std::vector<float>> sampled(nt);
  std::vector<TensorView> views(nt);
  for (int it = 0; it < o.iterations; ++it) {
    const double t = o.iterations > 1 ? static_cast<double>(it) / (o.iterations - 1) : 0.0;
    const double noise = o.noise_std * std::exp(-o.entropy_decay_nats * t);
    for (std::size_t k = 0; k < nt; ++k) {
      Rng rng(o.seed ^ 0x5eed5eedULL, (static_cast<std::uint64_t>(it) << 20) + k);
      fill_tensor(factors[k], o.signal_std, noise, rng, full[k]);
      if (o.mode == CaptureMode::kBlocks) {
        auto& s = sampled[k];
        s.clear();
        for (const Block& b : blocks[k])
          s.insert(s.end(), full[k].begin() + b.offset, full[k].begin() + b.offset + b.length);
        views[k] = {s, blocks[k]};
      } else {
        views[k] = {full[k], {}};
      }
    }
    for (std::size_t k = 0; k < nb; ++k) {
      Rng rng(o.seed ^ 0xb0bdab1eULL, (static_cast<std::uint64_t>(it) << 20) + k);
      fill_tensor(boundary_factors[k], o.signal_std, noise, rng, boundary_values[k]);
      boundary_views[k] = boundary_values[k];
    }
    const double loss = o.loss_end + (o.loss_start - o.loss_end) * std::exp(-4.0 * t);
    writer.write_iteration(static_cast<std::int64_t>(it) * o.iteration_stride, loss, views, boundary_views);
  }
  return writer.finish();
}

}  // namespace edgc::traces
