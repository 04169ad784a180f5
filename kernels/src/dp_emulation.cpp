#include "edgc/kernels/dp_emulation.hpp"

#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>

#include "edgc/core/error.hpp"
#include "edgc/core/random.hpp"
#include "thread_pool.hpp"

namespace edgc::kernels {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Runs body(d) for d in [0, n) on n threads (the emulated ranks). If a call throws, `on_failure` runs (to wake
// the others) and the first exception is rethrown after all have finished.
template <class Body, class OnFailure>
void run_ranks(int n, const Body& body, const OnFailure& on_failure) {
  std::mutex mu;
  std::exception_ptr first;
  const auto guarded = [&](int d) {
    try {
      body(d);
    } catch (...) {
      {
        const std::lock_guard lock(mu);
        if (!first) first = std::current_exception();  // later failures are the others being woken
      }
      on_failure();
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(n - 1));
  try {
    for (int d = 1; d < n; ++d) threads.emplace_back(guarded, d);
  } catch (const std::system_error& e) {  // out of threads: wake and join the ranks started, never terminate()
    on_failure();
    for (auto& t : threads) t.join();
    throw IoError("", "cannot start the thread of emulated rank " + std::to_string(threads.size() + 1) + " of " +
                          std::to_string(n) + ": " + e.what() +
                          " (emulate fewer data-parallel ranks, or raise the process limit: ulimit -u)");
  }
  guarded(0);
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace

double gradient_stddev(const Backend& backend, std::span<const float> g) {
  const double var = backend.moments(g, {}).variance();
  return std::isfinite(var) ? std::sqrt(var) : 0.0;
}

void replica_gradient(std::span<const float> g, double scale, std::uint64_t seed, std::int64_t step, int replica,
                      std::size_t tensor, std::span<float> out) {
  if (out.size() != g.size())
    throw InputError("replica_gradient", "out",
                     std::to_string(out.size()) + " floats for a gradient of " + std::to_string(g.size()));
  if (scale == 0.0) {
    std::memcpy(out.data(), g.data(), g.size() * sizeof(float));
    return;
  }
  // Copy `replica` of tensor `tensor` at step `step` has its own stream, so the noise does not depend on timing.
  Rng rng(seed, mix64(static_cast<std::uint64_t>(step)) ^ mix64((static_cast<std::uint64_t>(replica) << 32) ^ tensor));
  for (std::size_t k = 0; k < g.size(); ++k)
    out[k] = static_cast<float>(static_cast<double>(g[k]) + scale * rng.normal());
}

DataParallelEmulator::DataParallelEmulator(std::string_view backend, std::vector<std::vector<std::int64_t>> shapes,
                                           int world_size, const PowerSgdConfig& config, double perturbation,
                                           std::uint64_t seed, const BackendOptions& options)
    : shapes_(std::move(shapes)), world_size_(world_size), perturbation_(perturbation), seed_(seed) {
  if (world_size < 1) throw ConfigError("", "world_size", "must be at least 1, got " + std::to_string(world_size));
  if (!(perturbation >= 0.0) || !std::isfinite(perturbation))
    throw ConfigError("", "perturbation", "must be finite and >= 0, got " + std::to_string(perturbation));
  for (int d = 0; d < world_size; ++d) {
    backends_.push_back(make_backend(backend, options));
    ranks_.push_back(std::make_unique<PowerSgd>(*backends_.back(), shapes_, config));
  }
  for (std::size_t i = 0; i < shapes_.size(); ++i) {
    offsets_.push_back(total_);
    total_ += ranks_[0]->numel(i);
  }
  group_ = std::make_unique<InProcessGroup>(world_size);
  buffers_.assign(static_cast<std::size_t>(world_size), std::vector<float>(static_cast<std::size_t>(total_)));
  views_.resize(static_cast<std::size_t>(world_size));
  for (int d = 0; d < world_size; ++d) {
    std::vector<float>& buf = buffers_[static_cast<std::size_t>(d)];
    for (std::size_t i = 0; i < shapes_.size(); ++i)
      views_[static_cast<std::size_t>(d)].emplace_back(buf.data() + offsets_[i],
                                                       static_cast<std::size_t>(ranks_[0]->numel(i)));
  }
  average_.resize(static_cast<std::size_t>(total_));
  stddev_.resize(shapes_.size());
  if (backends_[0]->device_memory()) {
    host_backend_ = make_backend("cpu");
    device_views_.resize(static_cast<std::size_t>(world_size));
    for (int d = 0; d < world_size; ++d) {
      const auto du = static_cast<std::size_t>(d);
      device_.emplace_back(*backends_[du], static_cast<std::size_t>(total_));
      for (std::size_t i = 0; i < shapes_.size(); ++i)
        device_views_[du].emplace_back(device_[du].data() + offsets_[i], static_cast<std::size_t>(ranks_[0]->numel(i)));
    }
  }
}

DataParallelEmulator::~DataParallelEmulator() = default;

const PowerSgd& DataParallelEmulator::rank_state(int d) const {
  if (d < 0 || d >= world_size_)
    throw ConfigError("", "rank", std::to_string(d) + " is outside [0, " + std::to_string(world_size_) + ")");
  return *ranks_[static_cast<std::size_t>(d)];
}

std::span<const float> DataParallelEmulator::reconstruction(std::size_t tensor) const {
  if (tensor >= shapes_.size())
    throw ConfigError("", "tensor",
                      "index " + std::to_string(tensor) + " outside [0, " + std::to_string(shapes_.size()) + ")");
  return views_[0][tensor];
}

void DataParallelEmulator::perturb(int d, std::span<const std::span<const float>> grads) {
  for (std::size_t i = 0; i < grads.size(); ++i)
    replica_gradient(grads[i], perturbation_ * stddev_[i], seed_, steps_, d, i, views_[static_cast<std::size_t>(d)][i]);
}

// Tensor i's outcome: rank 0's stats and its reconstruction against the true average.
EmulatedTensor DataParallelEmulator::outcome(std::size_t i, const TensorStepStats& ts) const {
  EmulatedTensor et;
  et.rank = ts.rank;
  et.compressed = ts.compressed;
  et.compression_error = ts.compressed ? ts.relative_error : 0.0;
  et.wire_floats = ts.wire_floats;
  const float* ghat = views_[0][i].data();
  const float* avg = average_.data() + offsets_[i];
  double diff = 0.0;
  double ref = 0.0;
  for (std::int64_t k = 0; k < ranks_[0]->numel(i); ++k) {
    const double a = avg[k];
    const double dk = static_cast<double>(ghat[k]) - a;
    diff += dk * dk;
    ref += a * a;
  }
  et.relative_error = diff == 0.0 ? 0.0 : std::sqrt(diff) / std::sqrt(ref);
  return et;
}

EmulatedStep DataParallelEmulator::step(std::span<const std::span<const float>> grads, std::span<const int> ranks) {
  if (failed_) throw InternalError("DataParallelEmulator: an earlier step failed; the ranks' states disagree");
  const auto t_step = Clock::now();
  if (grads.size() != shapes_.size())
    throw InputError("DataParallelEmulator::step", "grads",
                     std::to_string(grads.size()) + " gradients for " + std::to_string(shapes_.size()) + " tensors");
  for (std::size_t i = 0; i < grads.size(); ++i)
    if (static_cast<std::int64_t>(grads[i].size()) != ranks_[0]->numel(i))
      throw InputError("DataParallelEmulator::step", "grads[" + std::to_string(i) + "]",
                       std::to_string(grads[i].size()) + " floats, tensor has " + std::to_string(ranks_[0]->numel(i)));
  if (!ranks.empty() && ranks.size() != shapes_.size())
    throw InputError("DataParallelEmulator::step", "ranks",
                     std::to_string(ranks.size()) + " ranks for " + std::to_string(shapes_.size()) + " tensors");
  // Tensor by tensor on every rank: an invalid rank throws on rank 0 before any rank changed that tensor, so
  // the ranks never disagree.
  for (std::size_t i = 0; i < ranks.size(); ++i)
    for (auto& r : ranks_) r->set_rank(i, ranks[i]);

  const Backend& host = host_backend_ ? *host_backend_ : *backends_[0];
  for (std::size_t i = 0; i < grads.size(); ++i) stddev_[i] = gradient_stddev(host, grads[i]);
  run_ranks(
      world_size_, [&](int d) { perturb(d, grads); }, [] {});
  // The true average of the D raw copies, in double, ranks added in order.
  run_ranks(
      world_size_,
      [&](int part) {
        const auto [begin, end] = split_range(total_, world_size_, part);
        for (std::int64_t k = begin; k < end; ++k) {
          double s = 0.0;
          for (const auto& b : buffers_) s += b[static_cast<std::size_t>(k)];
          average_[static_cast<std::size_t>(k)] = static_cast<float>(s / world_size_);
        }
      },
      [] {});

  const auto t_compress = Clock::now();
  std::vector<StepStats> stats(static_cast<std::size_t>(world_size_));
  try {
    run_ranks(
        world_size_,
        [&](int d) {
          const auto du = static_cast<std::size_t>(d);
          if (device_.empty()) {
            stats[du] = ranks_[du]->step(views_[du], group_->communicator(d));
            return;
          }
          device_[du].upload(buffers_[du]);
          stats[du] = ranks_[du]->step(device_views_[du], group_->communicator(d));
          device_[du].download(buffers_[du]);
        },
        [this] { group_->abort(); });
  } catch (...) {
    failed_ = true;
    throw;
  }
  EmulatedStep out;
  out.compress_wall_seconds = since(t_compress);

  // Every rank must hold the same reconstruction: P and Q were all-reduced, so any difference is a bug.
  for (int d = 1; d < world_size_; ++d) {
    if (std::memcmp(buffers_[static_cast<std::size_t>(d)].data(), buffers_[0].data(),
                    static_cast<std::size_t>(total_) * sizeof(float)) != 0) {
      failed_ = true;
      throw InternalError("DataParallelEmulator: rank " + std::to_string(d) +
                          "'s reconstruction differs from rank 0's at step " + std::to_string(steps_));
    }
  }

  const StepStats& s0 = stats[0];
  out.tensors.resize(shapes_.size());
  for (std::size_t i = 0; i < shapes_.size(); ++i) out.tensors[i] = outcome(i, s0.tensors[i]);
  out.wire_floats = s0.wire_floats;
  out.dense_floats = s0.dense_floats;
  out.rank0_compute_seconds = s0.compute_seconds;
  ++steps_;
  out.wall_seconds = since(t_step);
  return out;
}

}  // namespace edgc::kernels
