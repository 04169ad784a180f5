#include "edgc/kernels/powersgd.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <type_traits>

#include "edgc/core/error.hpp"
#include "edgc/core/powersgd_rule.hpp"
#include "edgc/core/random.hpp"

namespace edgc::kernels {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string tensor_name(std::size_t i, std::int64_t m, std::int64_t n) {
  return "tensor " + std::to_string(i) + " (" + std::to_string(m) + "x" + std::to_string(n) + ")";
}

// ‖a‖/‖b‖ from squared norms, with 0/0 = 0: a zero gradient reconstructed as zero has no error.
double ratio(double num_sq, double den_sq) {
  if (num_sq == 0.0) return 0.0;
  return std::sqrt(num_sq) / std::sqrt(den_sq);
}

// Compute time of a stretch of work: the wall clock on host backends, CUDA events around what a device backend
// queued in between (stop_timer waits for it, so the work is done when seconds() returns).
class PhaseClock {
 public:
  explicit PhaseClock(Backend& b) : b_(b), t0_(Clock::now()) { b_.start_timer(); }
  double seconds() {
    const std::optional<double> device = b_.stop_timer();
    return device ? *device : since(t0_);
  }

 private:
  Backend& b_;
  Clock::time_point t0_;
};

template <class T>
constexpr bool kFloat = std::is_same_v<T, float>;

}  // namespace

void check_power_iteration_settings(float orthogonalization_eps, double min_compression_rate) {
  if (!(orthogonalization_eps >= 0.0F) || !std::isfinite(orthogonalization_eps))
    throw ConfigError("", "orthogonalization_eps",
                      "must be finite and >= 0, got " + std::to_string(orthogonalization_eps));
  if (!(min_compression_rate > 0.0) || !std::isfinite(min_compression_rate))
    throw ConfigError("", "min_compression_rate",
                      "must be finite and > 0, got " + std::to_string(min_compression_rate));
}

PowerSgd::PowerSgd(Backend& backend, std::vector<std::vector<std::int64_t>> shapes, const PowerSgdConfig& config)
    : backend_(backend), config_(config) {
  if (config.rank < 0) throw ConfigError("", "rank", "must be >= 0, got " + std::to_string(config.rank));
  check_power_iteration_settings(config.orthogonalization_eps, config.min_compression_rate);
  if (!config.q_ids.empty() && config.q_ids.size() != shapes.size())
    throw ConfigError("", "q_ids",
                      "has " + std::to_string(config.q_ids.size()) + " ids for " + std::to_string(shapes.size()) +
                          " tensors (give one per tensor, or none)");
  tensors_.resize(shapes.size());
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const auto& s = shapes[i];
    for (std::size_t j = 0; j < s.size(); ++j)
      if (s[j] < 1)
        throw ConfigError("", "shapes[" + std::to_string(i) + "][" + std::to_string(j) + "]",
                          "dimension must be >= 1, got " + std::to_string(s[j]));
    Tensor& t = tensors_[i];
    std::int64_t rest = 1;
    for (std::size_t j = 1; j < s.size(); ++j) rest *= s[j];
    if (s.size() >= 2) {
      t.m = s[0];
      t.n = rest;
      t.matrix = true;
      t.rank = static_cast<int>(std::min<std::int64_t>(config.rank, std::min(t.m, t.n)));
    } else {
      t.m = s.empty() ? 1 : s[0];
      t.n = 1;
    }
  }
}

void PowerSgd::check_index(std::size_t tensor) const {
  if (tensor >= tensors_.size())
    throw ConfigError("", "tensor",
                      "index " + std::to_string(tensor) + " outside [0, " + std::to_string(tensors_.size()) + ")");
}

std::int64_t PowerSgd::rows(std::size_t tensor) const {
  check_index(tensor);
  return tensors_[tensor].m;
}
std::int64_t PowerSgd::cols(std::size_t tensor) const {
  check_index(tensor);
  return tensors_[tensor].n;
}
std::int64_t PowerSgd::numel(std::size_t tensor) const {
  check_index(tensor);
  return tensors_[tensor].m * tensors_[tensor].n;
}
int PowerSgd::rank(std::size_t tensor) const {
  check_index(tensor);
  return tensors_[tensor].rank;
}

void PowerSgd::set_rank(std::size_t tensor, int r) {
  check_index(tensor);
  Tensor& t = tensors_[tensor];
  const std::string what = tensor_name(tensor, t.m, t.n);
  if (r < 0) throw ConfigError("", "rank", what + ": rank must be >= 0, got " + std::to_string(r));
  if (!t.matrix && r != 0)
    throw ConfigError("", "rank",
                      what + " has fewer than 2 dims and is never compressed; got rank " + std::to_string(r));
  if (r > std::min(t.m, t.n))
    throw ConfigError(
        "", "rank",
        what + ": rank " + std::to_string(r) + " exceeds min(m, n) = " + std::to_string(std::min(t.m, t.n)));
  if (r == t.rank) return;
  t.rank = r;
  t.q.reset();  // P and Q change shape; E (the gradient the compressor still owes) stays
  planned_ = false;
}

bool PowerSgd::will_compress(std::size_t tensor) const {
  check_index(tensor);
  const Tensor& t = tensors_[tensor];
  if (!t.matrix || t.rank == 0) return false;
  return core::powersgd_compresses(t.m, t.n, t.rank, config_.min_compression_rate);
}

std::span<const float> PowerSgd::error(std::size_t tensor) const {
  check_index(tensor);
  return tensors_[tensor].error.span();
}

std::vector<float> PowerSgd::error_copy(std::size_t tensor) const {
  check_index(tensor);
  return tensors_[tensor].error.to_host();
}

void PowerSgd::reset_error(std::size_t tensor) {
  check_index(tensor);
  tensors_[tensor].error.zero();
}

void PowerSgd::set_error(std::size_t tensor, std::span<const float> e) {
  check_index(tensor);
  if (!config_.error_feedback) throw ConfigError("", "error_feedback", "is off: this compressor keeps no error buffer");
  Tensor& t = tensors_[tensor];
  const auto numel = static_cast<std::size_t>(t.m * t.n);
  if (e.size() != numel)
    throw InputError(
        "PowerSgd::set_error", "e",
        tensor_name(tensor, t.m, t.n) + ": " + std::to_string(e.size()) + " values, expected " + std::to_string(numel));
  if (t.error.empty()) t.error = Buffer<float>(backend_, numel);
  t.error.upload(e);
}

void PowerSgd::copy_state_from(const PowerSgd& from) {
  if (&from == this) return;
  if (&from.backend_ != &backend_) throw ConfigError("", "backend", "copy_state_from needs the same backend object");
  if (from.tensors_.size() != tensors_.size())
    throw ConfigError("", "shapes",
                      "copy_state_from: " + std::to_string(from.tensors_.size()) + " tensors, this compressor has " +
                          std::to_string(tensors_.size()));
  const PowerSgdConfig& a = config_;
  const PowerSgdConfig& b = from.config_;
  // Bitwise float comparison on purpose: the copy must behave exactly as the original.
  if (a.error_feedback != b.error_feedback || a.warm_start != b.warm_start || a.seed != b.seed ||
      a.orthogonalization_eps != b.orthogonalization_eps || a.min_compression_rate != b.min_compression_rate ||
      a.q_ids != b.q_ids)
    throw ConfigError("", "config", "copy_state_from: the two compressors' configurations differ");
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    Tensor& t = tensors_[i];
    const Tensor& f = from.tensors_[i];
    if (t.m != f.m || t.n != f.n || t.matrix != f.matrix)
      throw ConfigError("", "shapes", "copy_state_from: " + tensor_name(i, t.m, t.n) + " differs in shape");
    t.rank = f.rank;
    for (auto [dst, src] : {std::pair{&t.error, &f.error}, {&t.q, &f.q}}) {
      if (src->empty()) {
        dst->reset();
        continue;
      }
      if (dst->size() != src->size()) *dst = Buffer<float>(backend_, src->size());
      backend_.copy(dst->data(), src->data(), src->bytes());
    }
  }
  steps_ = from.steps_;
  planned_ = false;
}

std::span<const float> PowerSgd::warm_start_q(std::size_t tensor) const {
  check_index(tensor);
  return tensors_[tensor].q.span();
}

void PowerSgd::draw_q(std::size_t tensor, std::span<float> q) const {
  // Every rank draws the same Q: the stream depends only on (seed, tensor, rank) and, without warm start, the
  // step counter, which all ranks advance together.
  const auto r = static_cast<std::uint64_t>(tensors_[tensor].rank);
  const std::uint64_t step = config_.warm_start ? 0 : static_cast<std::uint64_t>(steps_) + 1;
  const std::uint64_t id = config_.q_ids.empty() ? static_cast<std::uint64_t>(tensor) : config_.q_ids[tensor];
  Rng rng(config_.seed, mix64(id ^ mix64(r ^ mix64(step))));
  for (float& v : q) v = static_cast<float>(rng.normal());
}

void PowerSgd::plan() {
  groups_.clear();
  dense_.clear();
  std::int64_t p_size = 0;
  std::int64_t q_size = 0;
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    if (!will_compress(i)) {
      dense_.push_back(i);
      continue;
    }
    const Tensor& t = tensors_[i];
    auto it = std::find_if(groups_.begin(), groups_.end(),
                           [&](const Group& g) { return g.m == t.m && g.n == t.n && g.r == t.rank; });
    if (it == groups_.end()) {
      groups_.push_back(Group{t.m, t.n, t.rank, {}, 0, 0});
      it = groups_.end() - 1;
    }
    it->members.push_back(i);
  }
  for (Group& g : groups_) {
    const auto count = static_cast<std::int64_t>(g.members.size());
    g.p_offset = p_size;
    g.q_offset = q_size;
    p_size += count * g.m * g.r;
    q_size += count * g.n * g.r;
  }
  p_all_ = Buffer<float>(backend_, static_cast<std::size_t>(p_size));
  q_all_ = Buffer<float>(backend_, static_cast<std::size_t>(q_size));
  planned_ = true;
}

template <class T>
void PowerSgd::check_grads(std::span<const std::span<T>> grads) const {
  if (grads.size() != tensors_.size())
    throw InputError("PowerSgd::step", "grads",
                     std::to_string(grads.size()) + " gradients for " + std::to_string(tensors_.size()) + " tensors");
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const std::int64_t want = tensors_[i].m * tensors_[i].n;
    if (static_cast<std::int64_t>(grads[i].size()) != want)
      throw InputError("PowerSgd::step", "grads[" + std::to_string(i) + "]",
                       std::to_string(grads[i].size()) + " values, tensor has " + std::to_string(want));
  }
}

// A buffer of the backend's memory summed over the ranks: straight through when the communicator takes that memory
// (host backends; NCCL for a device backend, once the queued kernels are done), else staged through host memory.
void PowerSgd::all_reduce(std::span<float> buf, Communicator& comm, StepStats& st) {
  backend_.synchronize();
  const auto t0 = Clock::now();
  if (!backend_.device_memory() || comm.device_buffers()) {
    comm.all_reduce_sum(buf);
  } else {
    staging_.resize(buf.size());
    backend_.copy_to_host(staging_.data(), buf.data(), buf.size_bytes());
    comm.all_reduce_sum(staging_);
    backend_.copy_to_device(buf.data(), staging_.data(), buf.size_bytes());
  }
  st.communication_seconds += since(t0);
}

// Everything sent uncompressed: one fused all-reduce of G (+ any error left from compressed steps), in float32.
template <class T>
void PowerSgd::dense_step(std::span<const std::span<T>> grads, Communicator& comm, float world, StepStats& st) {
  PhaseClock pack(backend_);
  std::size_t total = 0;
  for (const std::size_t i : dense_) total += grads[i].size();
  if (dense_buf_.size() < total) dense_buf_ = Buffer<float>(backend_, total);
  std::size_t off = 0;
  for (const std::size_t i : dense_) {
    const std::span<T> g = grads[i];
    Buffer<float>& e = tensors_[i].error;
    float* dst = dense_buf_.data() + off;
    const auto n = static_cast<std::int64_t>(g.size());
    if (e.empty()) {
      if constexpr (kFloat<T>) {
        backend_.copy(dst, g.data(), g.size_bytes());
      } else {
        backend_.add_divide(n, g.data(), nullptr, 1.0F, dst);  // widens exactly
      }
    } else {
      backend_.add_divide(n, g.data(), e.data(), 1.0F, dst);  // G + E, exactly
      e.zero();
    }
    off += g.size();
  }
  double copy_s = pack.seconds();
  all_reduce(dense_buf_.span().first(total), comm, st);
  PhaseClock unpack(backend_);
  off = 0;
  for (const std::size_t i : dense_) {
    const std::span<T> g = grads[i];
    backend_.add_divide(static_cast<std::int64_t>(g.size()), dense_buf_.data() + off, nullptr, world, g.data());
    off += g.size();
  }
  copy_s += unpack.seconds();
  for (const std::size_t i : dense_) {
    TensorStepStats& ts = st.tensors[i];
    ts.wire_floats = static_cast<std::int64_t>(grads[i].size());
    ts.compute_seconds = copy_s * static_cast<double>(grads[i].size()) / static_cast<double>(total);
  }
  st.compute_seconds += copy_s;
}

template <class T>
PowerSgd::GradPointers<T>& PowerSgd::grad_pointers() {
  if constexpr (kFloat<T>) {
    return g32_;
  } else {
    return g16_;
  }
}

template <class T>
void PowerSgd::bind_pointers(const Group& g, std::span<const std::span<T>> grads) {
  const std::size_t count = g.members.size();
  // bf16 gradients always go through float32 storage for M: E, or m32 without error feedback.
  const bool with_e = config_.error_feedback || !kFloat<T>;
  GradPointers<T>& gp = grad_pointers<T>();
  gp.in.resize(count);
  gp.out.resize(count);
  ptr_e_.resize(with_e ? count : 0);
  ptr_m_.resize(count);
  ptr_q_.resize(count);
  ptr_q_out_.resize(count);
  ptr_p_.resize(count);
  ptr_p_in_.resize(count);
  norms_m_.resize(count);
  norms_err_.resize(count);
  for (std::size_t j = 0; j < count; ++j) {
    const std::size_t i = g.members[j];
    Tensor& t = tensors_[i];
    gp.in[j] = grads[i].data();
    gp.out[j] = grads[i].data();
    float* m = config_.error_feedback ? t.error.data() : t.m32.data();
    if (with_e) ptr_e_[j] = m;
    if constexpr (kFloat<T>) {
      ptr_m_[j] = config_.error_feedback ? m : grads[i].data();
    } else {
      ptr_m_[j] = m;
    }
    ptr_q_[j] = t.q.data();
    ptr_q_out_[j] = q_all_.data() + g.q_offset + static_cast<std::int64_t>(j) * g.n * g.r;
    ptr_p_[j] = p_all_.data() + g.p_offset + static_cast<std::int64_t>(j) * g.m * g.r;
    ptr_p_in_[j] = ptr_p_[j];
  }
}

// Phase 1: M = G + E and P = M·Q.
template <class T>
void PowerSgd::project_phase(std::span<const std::span<T>> grads) {
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    const Group& g = groups_[gi];
    PhaseClock clock(backend_);
    for (const std::size_t i : g.members) {
      Tensor& t = tensors_[i];
      const auto numel = static_cast<std::size_t>(t.m * t.n);
      if (config_.error_feedback && t.error.empty()) {
        t.error = Buffer<float>(backend_, numel);
        t.error.zero();
      }
      if (!kFloat<T> && !config_.error_feedback) {
        if (t.m32.empty()) t.m32 = Buffer<float>(backend_, numel);
        t.m32.zero();  // M = G + 0
      }
      if (t.q.empty() || !config_.warm_start) {
        if (t.q.empty()) t.q = Buffer<float>(backend_, static_cast<std::size_t>(t.n * t.rank));
        q_host_.resize(t.q.size());
        draw_q(i, q_host_);
        t.q.upload(q_host_);
      }
    }
    bind_pointers(g, grads);
    backend_.project_batched(g.m, g.n, g.r, grad_pointers<T>().in, ptr_e_, ptr_q_, ptr_p_, norms_m_);
    for (std::size_t j = 0; j < g.members.size(); ++j) m_sq_[g.members[j]] = norms_m_[j];
    group_seconds_[gi] += clock.seconds();
  }
}

// Phase 2: orthogonalise P; Q = Mᵀ·P.
template <class T>
void PowerSgd::orthogonalize_phase(std::span<const std::span<T>> grads) {
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    const Group& g = groups_[gi];
    PhaseClock clock(backend_);
    bind_pointers(g, grads);
    backend_.orthogonalize_batched(g.m, g.r, ptr_p_, config_.orthogonalization_eps);
    backend_.gemm_batched(Transpose::kYes, Transpose::kNo, g.n, g.r, g.m, 1.0F, ptr_m_, ptr_p_in_, 0.0F, ptr_q_out_);
    group_seconds_[gi] += clock.seconds();
  }
}

// Phase 3: Ĝ = P·Qᵀ, E = M − Ĝ, and keep Q for the warm start.
template <class T>
void PowerSgd::reconstruct_phase(std::span<const std::span<T>> grads, double scale_s, StepStats& st) {
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    const Group& g = groups_[gi];
    PhaseClock clock(backend_);
    bind_pointers(g, grads);
    std::vector<const float*>& q_in = ptr_q_;
    for (std::size_t j = 0; j < g.members.size(); ++j) q_in[j] = ptr_q_out_[j];
    backend_.reconstruct_batched(g.m, g.n, g.r, ptr_p_in_, q_in, ptr_e_, grad_pointers<T>().out, norms_err_);
    for (std::size_t j = 0; j < g.members.size(); ++j) {
      const std::size_t i = g.members[j];
      Tensor& t = tensors_[i];
      if (config_.warm_start) backend_.copy(t.q.data(), q_in[j], t.q.bytes());
      TensorStepStats& ts = st.tensors[i];
      ts.compressed = true;
      ts.rank = g.r;
      ts.wire_floats = (g.m + g.n) * g.r;
      ts.relative_error = ratio(norms_err_[j], m_sq_[i]);
      ts.error_norm = config_.error_feedback ? std::sqrt(norms_err_[j]) : 0.0;
    }
    group_seconds_[gi] += clock.seconds() + scale_s / static_cast<double>(groups_.size());
    for (const std::size_t i : g.members)
      st.tensors[i].compute_seconds = group_seconds_[gi] / static_cast<double>(g.members.size());
    st.compute_seconds += group_seconds_[gi];
  }
}

template <class T>
StepStats PowerSgd::step_impl(std::span<const std::span<T>> grads, Communicator& comm) {
  const auto t_step = Clock::now();
  check_grads(grads);
  if (!planned_) plan();
  m_sq_.assign(tensors_.size(), 0.0);
  StepStats st;
  st.tensors.resize(tensors_.size());
  const auto world = static_cast<float>(comm.size());
  if (!dense_.empty()) dense_step(grads, comm, world, st);

  // Compressed tensors, batched by (m, n, r): three phases around the P and Q all-reduces.
  group_seconds_.assign(groups_.size(), 0.0);
  project_phase(grads);
  if (!groups_.empty()) {
    all_reduce(p_all_.span(), comm, st);  // a sum: P's scale does not matter to the orthogonalisation
    orthogonalize_phase(grads);
    all_reduce(q_all_.span(), comm, st);
    PhaseClock scale(backend_);
    backend_.add_divide(static_cast<std::int64_t>(q_all_.size()), q_all_.data(), nullptr, world, q_all_.data());
    reconstruct_phase(grads, scale.seconds(), st);
  }

  for (const TensorStepStats& ts : st.tensors) {
    st.wire_floats += ts.wire_floats;
    st.compressed_tensors += ts.compressed ? 1 : 0;
  }
  for (const Tensor& t : tensors_) st.dense_floats += t.m * t.n;
  ++steps_;
  st.wall_seconds = since(t_step);
  return st;
}

StepStats PowerSgd::step(std::span<const std::span<float>> grads, Communicator& comm) { return step_impl(grads, comm); }

StepStats PowerSgd::step(std::span<const std::span<std::uint16_t>> grads, Communicator& comm) {
  return step_impl(grads, comm);
}

}  // namespace edgc::kernels
