#include "edgc/kernels/boundary_compression.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>

#include "edgc/core/error.hpp"
#include "edgc/core/powersgd_rule.hpp"
#include "edgc/core/random.hpp"
#include "edgc/kernels/powersgd.hpp"

namespace edgc::kernels {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

BoundaryCompressor::BoundaryCompressor(Backend& backend, const BoundaryShape& shape, const BoundaryConfig& config)
    : backend_(backend), shape_(shape), config_(config) {
  if (shape.rows < 1) throw ConfigError("", "rows", "must be >= 1, got " + std::to_string(shape.rows));
  if (shape.cols < 1) throw ConfigError("", "cols", "must be >= 1, got " + std::to_string(shape.cols));
  if (shape.shards < 1) throw ConfigError("", "shards", "must be >= 1, got " + std::to_string(shape.shards));
  check_power_iteration_settings(config.orthogonalization_eps, config.min_compression_rate);
  const auto k = static_cast<std::size_t>(shape.shards);
  error_.resize(k);
  q_.resize(k);
  set_rank(config.rank);
}

void BoundaryCompressor::set_rank(int r) {
  const std::int64_t limit = std::min(shape_.rows, shape_.cols);
  if (r < 0 || r > limit)
    throw ConfigError("", "rank",
                      "must be in [0, " + std::to_string(limit) + "] for a " + std::to_string(shape_.rows) + "x" +
                          std::to_string(shape_.cols) + " boundary tensor, got " + std::to_string(r));
  if (r != rank_)
    for (Buffer<float>& q : q_) q.reset();
  rank_ = r;
}

bool BoundaryCompressor::compressed() const noexcept {
  if (rank_ < 1) return false;
  return core::powersgd_compresses(shape_.rows, shape_.cols, rank_, config_.min_compression_rate);
}

std::int64_t BoundaryCompressor::wire_floats() const noexcept {
  const std::int64_t per = compressed() ? (shape_.rows + shape_.cols) * rank_ : shape_.rows * shape_.cols;
  return per * shape_.shards;
}

void BoundaryCompressor::check_spans(std::size_t count, std::size_t each, std::size_t wire, std::size_t wire_expected,
                                     const char* what) const {
  const auto k = static_cast<std::size_t>(shape_.shards);
  const auto numel = static_cast<std::size_t>(shape_.rows * shape_.cols);
  if (count != k)
    throw InputError("", what, "expected " + std::to_string(k) + " shard(s), got " + std::to_string(count));
  if (each != numel)
    throw InputError("", what, "a shard must hold " + std::to_string(numel) + " floats, got " + std::to_string(each));
  if (wire != wire_expected)
    throw InputError("", "wire",
                     "the message must hold " + std::to_string(wire_expected) + " floats, got " + std::to_string(wire));
}

void BoundaryCompressor::draw_q(int shard) {
  // The sender alone draws Q (the receiver gets it on the wire): a stream per (seed, shard, rank) and, without warm
  // start, per message.
  const auto r = static_cast<std::uint64_t>(rank_);
  const std::uint64_t msg = config_.warm_start ? 0 : static_cast<std::uint64_t>(messages_) + 1;
  Rng rng(config_.seed, mix64(static_cast<std::uint64_t>(shard) ^ mix64(r ^ mix64(msg))));
  q_host_.resize(static_cast<std::size_t>(shape_.cols * rank_));
  for (float& v : q_host_) v = static_cast<float>(rng.normal());
  Buffer<float>& q = q_[static_cast<std::size_t>(shard)];
  if (q.size() != q_host_.size()) q = Buffer<float>(backend_, q_host_.size());
  q.upload(q_host_);
}

BoundaryStats BoundaryCompressor::compress(std::span<const std::span<float>> shards, std::span<float> wire) {
  const std::size_t each = shards.empty() ? 0 : shards.front().size();
  for (const auto& s : shards)
    if (s.size() != each) throw InputError("", "shards", "every shard must have the same size");
  check_spans(shards.size(), each, wire.size(), static_cast<std::size_t>(wire_floats()), "shards");
  const auto t0 = Clock::now();
  backend_.start_timer();
  const std::int64_t m = shape_.rows;
  const std::int64_t n = shape_.cols;
  const auto k = static_cast<std::size_t>(shape_.shards);
  const auto numel = static_cast<std::size_t>(m * n);
  const bool lazy = config_.lazy_error_propagation;
  BoundaryStats st;
  st.dense_floats = static_cast<std::int64_t>(numel * k);
  st.wire_floats = wire_floats();

  if (!compressed()) {
    // M = G + E goes out as it is; the carried error is delivered with it.
    for (std::size_t s = 0; s < k; ++s) {
      float* out = wire.data() + s * numel;
      const float* e = lazy && !error_[s].empty() ? error_[s].data() : nullptr;
      backend_.add_divide(static_cast<std::int64_t>(numel), shards[s].data(), e, 1.0F, out);
      backend_.copy(shards[s].data(), out, numel * sizeof(float));
      if (e != nullptr) error_[s].zero();
    }
  } else {
    const std::int64_t r = rank_;
    ptr_g_.resize(k);
    ptr_g_out_.resize(k);
    ptr_e_.clear();
    ptr_m_.resize(k);
    ptr_q_.resize(k);
    ptr_p_.resize(k);
    ptr_p_in_.resize(k);
    ptr_q_out_.resize(k);
    ptr_q_in_.resize(k);
    m_sq_.assign(k, 0.0);
    err_sq_.assign(k, 0.0);
    for (std::size_t s = 0; s < k; ++s) {
      if (lazy && error_[s].empty()) {
        error_[s] = Buffer<float>(backend_, numel);
        error_[s].zero();
      }
      if (q_[s].empty() || !config_.warm_start) draw_q(static_cast<int>(s));
      float* p = wire.data() + s * static_cast<std::size_t>(m * r);
      float* q_out = wire.data() + k * static_cast<std::size_t>(m * r) + s * static_cast<std::size_t>(n * r);
      ptr_g_[s] = shards[s].data();
      ptr_g_out_[s] = shards[s].data();
      if (lazy) ptr_e_.push_back(error_[s].data());
      ptr_m_[s] = lazy ? error_[s].data() : shards[s].data();  // M after the projection
      ptr_q_[s] = q_[s].data();
      ptr_p_[s] = p;
      ptr_p_in_[s] = p;
      ptr_q_out_[s] = q_out;
      ptr_q_in_[s] = q_out;
    }
    backend_.project_batched(m, n, r, ptr_g_, ptr_e_, ptr_q_, ptr_p_, m_sq_);
    backend_.orthogonalize_batched(m, r, ptr_p_, config_.orthogonalization_eps);
    backend_.gemm_batched(Transpose::kYes, Transpose::kNo, n, r, m, 1.0F, ptr_m_, ptr_p_in_, 0.0F, ptr_q_out_);
    backend_.reconstruct_batched(m, n, r, ptr_p_in_, ptr_q_in_, ptr_e_, ptr_g_out_, err_sq_);
    if (config_.warm_start)
      for (std::size_t s = 0; s < k; ++s) backend_.copy(q_[s].data(), ptr_q_in_[s], q_[s].bytes());
    double m_total = 0.0;
    double e_total = 0.0;
    for (std::size_t s = 0; s < k; ++s) {
      m_total += m_sq_[s];
      e_total += err_sq_[s];
    }
    st.compressed = true;
    st.rank = rank_;
    st.relative_error = e_total == 0.0 ? 0.0 : std::sqrt(e_total) / std::sqrt(m_total);
    st.carried_error_norm = lazy ? std::sqrt(e_total) : 0.0;
  }
  const std::optional<double> device = backend_.stop_timer();
  st.compute_seconds = device ? *device : std::chrono::duration<double>(Clock::now() - t0).count();
  ++messages_;
  return st;
}

void BoundaryCompressor::decompress(std::span<const float> wire, std::span<const std::span<float>> out) {
  const std::size_t each = out.empty() ? 0 : out.front().size();
  for (const auto& s : out)
    if (s.size() != each) throw InputError("", "out", "every shard must have the same size");
  check_spans(out.size(), each, wire.size(), static_cast<std::size_t>(wire_floats()), "out");
  const std::int64_t m = shape_.rows;
  const std::int64_t n = shape_.cols;
  const auto k = static_cast<std::size_t>(shape_.shards);
  const auto numel = static_cast<std::size_t>(m * n);
  if (!compressed()) {
    for (std::size_t s = 0; s < k; ++s) backend_.copy(out[s].data(), wire.data() + s * numel, numel * sizeof(float));
    return;
  }
  const std::int64_t r = rank_;
  ptr_p_in_.resize(k);
  ptr_q_in_.resize(k);
  ptr_g_out_.resize(k);
  for (std::size_t s = 0; s < k; ++s) {
    ptr_p_in_[s] = wire.data() + s * static_cast<std::size_t>(m * r);
    ptr_q_in_[s] = wire.data() + k * static_cast<std::size_t>(m * r) + s * static_cast<std::size_t>(n * r);
    ptr_g_out_[s] = out[s].data();
  }
  backend_.gemm_batched(Transpose::kNo, Transpose::kYes, m, n, r, 1.0F, ptr_p_in_, ptr_q_in_, 0.0F, ptr_g_out_);
}

std::vector<float> BoundaryCompressor::carried_error(int s) const {
  if (s < 0 || s >= shape_.shards) throw InternalError("carried_error: shard " + std::to_string(s) + " out of range");
  const Buffer<float>& e = error_[static_cast<std::size_t>(s)];
  if (e.empty()) return std::vector<float>(static_cast<std::size_t>(shape_.rows * shape_.cols), 0.0F);
  return e.to_host();
}

void BoundaryCompressor::reset_error() {
  for (Buffer<float>& e : error_)
    if (!e.empty()) e.zero();
}

}  // namespace edgc::kernels
