#include "hook_engine.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "edgc/core/checked_int.hpp"
#include "edgc/core/error.hpp"
#include "edgc/core/policy_registry.hpp"
#include "edgc/kernels/stage_entropy.hpp"

namespace edgc::torch_ext {
namespace {

constexpr std::size_t kPerStage = 4;  // gaussian, histogram, kurtosis, elements
// Elements of one tensor: the bound of a trace's tensors (traces/manifest.hpp kMaxTensorElements), so that sums
// and byte counts of the gradients stay in int64.
constexpr std::int64_t kMaxElements = std::int64_t{1} << 42;
const double kNaN = std::numeric_limits<double>::quiet_NaN();

double or_nan(const std::optional<double>& v) { return v ? *v : kNaN; }
std::optional<double> from_nan(double v) { return std::isnan(v) ? std::nullopt : std::optional<double>(v); }

std::pair<std::int64_t, std::int64_t> as_matrix(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return {shape[0], n};
}

}  // namespace

// One PowerSgd over the tensors of one bucket composition.
struct HookEngine::Compressor {
  std::vector<std::size_t> ids;
  std::unique_ptr<kernels::PowerSgd> powersgd;
};

HookEngine::HookEngine(HookSettings settings, std::vector<HookTensor> tensors)
    : settings_(std::move(settings)),
      tensors_(std::move(tensors)),
      gds_(settings_.gds),
      accumulator_(std::max(1, settings_.controller.stages)) {
  core::ControllerConfig& cc = settings_.controller;
  if (cc.stages < 1) throw ConfigError("", "stages", "must be >= 1, got " + std::to_string(cc.stages));
  if (tensors_.empty()) throw ConfigError("", "tensors", "the model has no parameters to synchronise");
  if (!(settings_.bins_per_sigma > 0.0 && settings_.bins_per_sigma <= 4096.0))
    throw ConfigError("", "bins_per_sigma", "must be in (0, 4096], got " + std::to_string(settings_.bins_per_sigma));
  const auto stages = static_cast<std::size_t>(cc.stages);
  stage_members_.resize(stages);
  cc.stage_shapes.assign(stages, {0, 0});
  std::vector<std::int64_t> best(stages, -1);
  std::uint64_t matrices = 0;
  for (std::size_t k = 0; k < tensors_.size(); ++k) {
    const HookTensor& t = tensors_[k];
    const std::string field = "tensors[" + std::to_string(k) + "]";
    if (t.stage < 0 || t.stage >= cc.stages)
      throw ConfigError("", field,
                        "stage " + std::to_string(t.stage) + " outside [0, " + std::to_string(cc.stages) + ")");
    for (const std::int64_t d : t.shape)
      if (d < 1) throw ConfigError("", field, "has a dimension < 1");
    const std::optional<std::int64_t> elements = checked_product(t.shape, kMaxElements);
    if (!elements) throw ConfigError("", field, "has more than 2^42 elements: larger than any tensor edgc can hold");
    const std::int64_t numel = *elements;
    numel_.push_back(numel);
    q_id_.push_back(t.shape.size() >= 2 ? matrices++ : 0);
    const auto s = static_cast<std::size_t>(t.stage);
    stage_members_[s].push_back(k);
    // As replay: the CQM reasons about each stage's largest matrix.
    if (t.shape.size() >= 2 && numel > best[s]) {
      best[s] = numel;
      cc.stage_shapes[s] = as_matrix(t.shape);
    }
  }
  for (std::size_t s = 0; s < stages; ++s)
    if (best[s] < 0)
      throw ConfigError("", "stages", "stage " + std::to_string(s) + " has no parameter with 2 or more dims");
  controller_ = core::make_controller(cc, "");
  reads_entropy_ = core::reads_entropy(cc.policy, cc);
  kernels::BackendOptions bo;
  bo.threads = settings_.threads;
  bo.device = settings_.device;
  backend_ = kernels::make_backend(settings_.backend, bo);
  layouts_.resize(stages);
  stash_.resize(tensors_.size());
  stashed_.assign(tensors_.size(), false);
  owner_.assign(tensors_.size(), nullptr);
  open_window();
}

HookEngine::~HookEngine() = default;

void HookEngine::open_window() {
  const std::size_t stages = stage_members_.size();
  current_ = HookWindow{};
  current_.window = window_;
  current_.first_iteration = window_ * settings_.gds.window_iters;
  current_.end_iteration = (window_ + 1) * settings_.gds.window_iters;
  current_.warmup = in_force_.warmup;
  current_.ranks.resize(stages);
  for (std::size_t s = 0; s < stages; ++s) current_.ranks[s] = stage_rank(s);
  current_.step_error.assign(stages, std::nullopt);
  current_.wire_floats.assign(stages, 0);
  current_.dense_floats.assign(stages, 0);
  err_sum_.assign(stages, 0.0);
  err_n_.assign(stages, 0);
  accumulator_.reset();
  sampled_iterations_ = 0;
  loss_sum_ = 0.0;
  loss_n_ = 0;
}

bool HookEngine::window_closes() const noexcept { return gds_.window_of(iteration_) > window_; }

bool HookEngine::samples_iteration() const noexcept {
  const bool entropy_warmup =
      settings_.controller.warmup.mode == core::WarmupConfig::Mode::kEntropy && in_force_.warmup;
  return (reads_entropy_ || entropy_warmup) && gds_.samples_iteration(iteration_);
}

std::vector<double> HookEngine::observation() const {
  std::vector<double> flat;
  for (const core::StageObservation& o : accumulator_.means()) {
    flat.push_back(or_nan(o.entropy_gaussian));
    flat.push_back(or_nan(o.entropy_histogram));
    flat.push_back(or_nan(o.excess_kurtosis));
    flat.push_back(static_cast<double>(o.elements));
  }
  flat.push_back(static_cast<double>(sampled_iterations_));
  flat.push_back(loss_n_ > 0 ? loss_sum_ / loss_n_ : kNaN);
  return flat;
}

const HookWindow& HookEngine::close_window(std::span<const double> flat) {
  const std::size_t stages = stage_members_.size();
  if (flat.size() != stages * kPerStage + 2)
    throw InputError("close_window", "observation",
                     std::to_string(flat.size()) + " values, expected " + std::to_string(stages * kPerStage + 2));
  core::WindowObservation& obs = current_.observation;
  obs.window = current_.window;
  obs.first_iteration = current_.first_iteration;
  obs.end_iteration = current_.end_iteration;
  obs.stages.resize(stages);
  for (std::size_t s = 0; s < stages; ++s) {
    const double* v = flat.data() + s * kPerStage;
    obs.stages[s] =
        core::StageObservation{from_nan(v[0]), from_nan(v[1]), from_nan(v[2]), static_cast<std::int64_t>(v[3])};
  }
  obs.sampled_iterations = static_cast<int>(flat[stages * kPerStage]);
  obs.mean_loss = from_nan(flat[stages * kPerStage + 1]);
  for (std::size_t s = 0; s < stages; ++s)
    if (err_n_[s] > 0) current_.step_error[s] = err_sum_[s] / err_n_[s];
  in_force_ = controller_->decide(obs);
  current_.next = in_force_;
  windows_.push_back(std::move(current_));
  ++window_;
  open_window();
  return windows_.back();
}

void HookEngine::check_ids(std::span<const std::size_t> ids, std::size_t grads) const {
  if (ids.size() != grads)
    throw InputError("edgc_torch", "bucket",
                     std::to_string(ids.size()) + " ids for " + std::to_string(grads) + " gradients");
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] >= tensors_.size())
      throw InputError("edgc_torch", "bucket",
                       "tensor id " + std::to_string(ids[i]) + " outside [0, " + std::to_string(tensors_.size()) + ")");
}

void HookEngine::stash(std::span<const std::size_t> ids, std::span<const std::span<const float>> grads) {
  check_ids(ids, grads.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (static_cast<std::int64_t>(grads[i].size()) != numel_[ids[i]])
      throw InputError("edgc_torch", "bucket", "tensor " + std::to_string(ids[i]) + ": gradient size mismatch");
    kernels::Buffer<float>& copy = stash_[ids[i]];
    if (copy.size() != grads[i].size()) copy = kernels::Buffer<float>(*backend_, grads[i].size());
    if (!grads[i].empty()) backend_->copy(copy.data(), grads[i].data(), grads[i].size_bytes());
    stashed_[ids[i]] = true;
  }
  backend_->synchronize();  // a device backend's copies are done: the caller may free or overwrite the sources
}

void HookEngine::add_loss(double loss) {
  if (!std::isfinite(loss)) return;  // as the trace recorder: a non-finite loss is not recorded
  loss_sum_ += loss;
  ++loss_n_;
}

int HookEngine::stage_rank(std::size_t stage) const {
  if (stage >= stage_members_.size()) throw ConfigError("", "stage", std::to_string(stage) + " out of range");
  return in_force_.stages.empty() ? 0 : in_force_.stages[stage].rank;
}

int HookEngine::tensor_rank(std::size_t id) const {
  const HookTensor& t = tensors_.at(id);
  if (t.shape.size() < 2) return 0;
  const auto [rows, cols] = as_matrix(t.shape);
  const int r = stage_rank(static_cast<std::size_t>(t.stage));
  return r < std::min(rows, cols) ? r : 0;  // as replay: a rank at or past full rank is no compression
}

HookEngine::Compressor& HookEngine::compressor_for(std::span<const std::size_t> ids) {
  std::vector<std::size_t> key(ids.begin(), ids.end());
  if (auto it = compressors_.find(key); it != compressors_.end()) return *it->second;
  // A new bucket composition (DDP rebuilds its buckets after the first iteration): its tensors' error feedback moves
  // over from the compressors that held them, and a compressor none of whose tensors is left is dropped.
  auto c = std::make_unique<Compressor>();
  c->ids = key;
  std::vector<std::vector<std::int64_t>> shapes;
  kernels::PowerSgdConfig pc = settings_.powersgd;
  pc.rank = 0;
  pc.q_ids.clear();
  for (const std::size_t id : key) {
    shapes.push_back(tensors_[id].shape);
    pc.q_ids.push_back(q_id_[id]);
  }
  c->powersgd = std::make_unique<kernels::PowerSgd>(*backend_, shapes, pc);
  std::vector<const std::vector<std::size_t>*> old_keys;
  for (std::size_t i = 0; i < key.size(); ++i) {
    const std::vector<std::size_t>* old = owner_[key[i]];
    if (old == nullptr) continue;
    const Compressor& prev = *compressors_.at(*old);
    const auto pos = static_cast<std::size_t>(std::find(prev.ids.begin(), prev.ids.end(), key[i]) - prev.ids.begin());
    if (pc.error_feedback) {
      const std::vector<float> e = prev.powersgd->error_copy(pos);
      if (!e.empty()) c->powersgd->set_error(i, e);
    }
    old_keys.push_back(old);
  }
  auto [it, inserted] = compressors_.emplace(std::move(key), std::move(c));
  for (const std::size_t id : it->first) owner_[id] = &it->first;
  for (const std::vector<std::size_t>* old : old_keys) {
    const auto o = compressors_.find(*old);
    if (o == compressors_.end()) continue;
    const bool used = std::any_of(o->first.begin(), o->first.end(), [&](std::size_t id) { return owner_[id] == old; });
    if (!used) compressors_.erase(o);
  }
  return *it->second;
}

BucketResult HookEngine::compress(std::span<const std::size_t> ids, std::span<const std::span<float>> grads,
                                  kernels::Communicator& comm) {
  check_ids(ids, grads.size());
  Compressor& c = compressor_for(ids);
  for (std::size_t i = 0; i < ids.size(); ++i) c.powersgd->set_rank(i, tensor_rank(ids[i]));
  const kernels::StepStats st = c.powersgd->step(grads, comm);
  backend_->synchronize();  // the caller reads the averaged gradients next (a device backend's stream)
  BucketResult out;
  out.wire_floats = st.wire_floats;
  out.dense_floats = st.dense_floats;
  out.compressed_tensors = st.compressed_tensors;
  out.compute_seconds = st.compute_seconds;
  out.communication_seconds = st.communication_seconds;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const HookTensor& t = tensors_[ids[i]];
    const auto s = static_cast<std::size_t>(t.stage);
    current_.wire_floats[s] += st.tensors[i].wire_floats;
    current_.dense_floats[s] += numel_[ids[i]];
    if (t.shape.size() >= 2) {
      err_sum_[s] += st.tensors[i].relative_error;
      ++err_n_[s];
    }
  }
  total_wire_ += st.wire_floats;
  total_dense_ += st.dense_floats;
  ++bucket_calls_;
  return out;
}

void HookEngine::end_iteration() {
  if (samples_iteration()) {
    ++sampled_iterations_;
    std::vector<std::vector<Block>> blocks;
    std::vector<kernels::StageTensor> members;
    for (std::size_t s = 0; s < stage_members_.size(); ++s) {
      const std::vector<std::size_t>& ids = stage_members_[s];
      blocks.assign(ids.size(), {});
      members.assign(ids.size(), {});
      for (std::size_t i = 0; i < ids.size(); ++i) {
        if (!stashed_[ids[i]])
          throw InputError("edgc_torch", "bucket",
                           "tensor " + std::to_string(ids[i]) + " reached no bucket at sampled iteration " +
                               std::to_string(iteration_) + " (every parameter must get a gradient)");
        const std::span<const float> v = stash_[ids[i]].span();
        blocks[i] = gds_.blocks(ids[i], static_cast<std::int64_t>(v.size()), iteration_);
        members[i] = {v, blocks[i]};
      }
      accumulator_.add(
          s, kernels::measure_stage_entropy(*backend_, members, false, layouts_[s], settings_.bins_per_sigma));
    }
  }
  std::fill(stashed_.begin(), stashed_.end(), false);
  ++iteration_;
}

std::vector<float> HookEngine::error(std::size_t id) const {
  if (id >= tensors_.size()) throw ConfigError("", "tensor", "id " + std::to_string(id) + " out of range");
  if (owner_[id] == nullptr) return {};
  const Compressor& c = *compressors_.at(*owner_[id]);
  const auto pos = static_cast<std::size_t>(std::find(c.ids.begin(), c.ids.end(), id) - c.ids.begin());
  return c.powersgd->error_copy(pos);
}

}  // namespace edgc::torch_ext
