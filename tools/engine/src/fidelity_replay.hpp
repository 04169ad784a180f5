#pragma once
// Private to the engine: the pieces of the fidelity meter's PowerSGD replays (fidelity.cpp). A replay is one trace
// stage's matrices stepped through PowerSGD at given ranks over the trace's captured iterations. Replays whose ranks
// agree up to a point share one compressor (a lane) and fork where they part; a process keeps replay states
// (checkpoints) so that a later replay continues from the longest prefix of its ranks already replayed.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "edgc/kernels/backend.hpp"
#include "edgc/kernels/buffer.hpp"
#include "edgc/kernels/powersgd.hpp"

namespace edgc::engine::replay {

// One captured iteration of one replay: the stage's ‖G‖² (its fully captured tensors), and per compressed matrix
// ‖Ĝ − G‖², ‖Ĝ‖² and ‖E‖² after the step.
struct ReplayPoint {
  double g2 = 0.0;
  std::vector<double> err2, ghat2, e2;
};

// A replay to run: a trace stage and its matrices' whole ranks at every captured iteration (0 = uncompressed).
struct ReplaySpec {
  int trace_stage = 0;
  std::vector<std::vector<int>> ranks;  // [point][matrix]
};

// A replay's memo key, "fidelity/1|trace|backend|seed|stage" then per point "|" and its ranks, each followed by ",",
// and where each point's part ends: key.substr(0, point_ends[p]) is the key of a replay of points 0..p alone (a
// checkpoint's key).
struct ReplayKey {
  std::string key;
  std::vector<std::size_t> point_ends;
};
ReplayKey replay_key(const std::string& trace, const std::string& backend, std::uint64_t seed, const ReplaySpec& r);

// Σ (a − b)², or Σ a² when b is empty, in double: four partial sums (element i into sum i mod 4, added as
// ((s0 + s1) + (s2 + s3))), held two to a vector register. The order of every addition is fixed, so the sums do not
// depend on how the loop compiles.
double squared_distance(std::span<const float> a, std::span<const float> b = {});
// Σ (a − b)² and Σ a² in one pass, each summed exactly as squared_distance sums it.
std::pair<double, double> distance_and_norm(std::span<const float> a, std::span<const float> b);

// A replay's state after its first points: its compressor (ranks, error buffers, warm-start Q) and its points so far.
struct Checkpoint {
  std::unique_ptr<kernels::PowerSgd> psgd;
  std::vector<ReplayPoint> points;
  std::uint64_t bytes = 0;
};

// Checkpoints by the key of the ranks so far (ReplayKey::point_ends), least recently used out first beyond a byte
// budget, so that a replay starting with ranks another one already replayed (a sweep's next point, with another window
// or rate) continues from there. Its compressors all use its own host backend.
class CheckpointMemo {
 public:
  kernels::Backend& backend() {
    if (!backend_) backend_ = kernels::make_backend("cpu");
    return *backend_;
  }
  // The checkpoint of `key` (now the most recently used), or null.
  const Checkpoint* find(const std::string& key) {
    const auto it = entries_.find(key);
    if (it == entries_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second.second);
    return &it->second.first;
  }
  bool contains(const std::string& key) const { return entries_.count(key) > 0; }
  // Keeps `c` under `key`, dropping the least recently used ones until it fits (nothing when it alone does not).
  void keep(const std::string& key, Checkpoint c) {
    if (c.bytes > kBudget || contains(key)) return;
    while (bytes_ + c.bytes > kBudget && !order_.empty()) {
      const auto it = entries_.find(order_.back());
      bytes_ -= it->second.first.bytes;
      entries_.erase(it);
      order_.pop_back();
    }
    bytes_ += c.bytes;
    order_.push_front(key);
    entries_.emplace(key, std::make_pair(std::move(c), order_.begin()));
  }

 private:
  static constexpr std::uint64_t kBudget = 64ULL << 20;  // bytes of checkpoints held at most
  std::unique_ptr<kernels::Backend> backend_;            // declared first: outlives the checkpoints' buffers
  std::list<std::string> order_;                         // most recently used first
  std::map<std::string, std::pair<Checkpoint, std::list<std::string>::iterator>> entries_;
  std::uint64_t bytes_ = 0;
};

// A replay a pass runs, and the points it gives.
struct PendingReplay {
  std::string key;
  const ReplaySpec* spec = nullptr;
  std::vector<ReplayPoint> points;
  std::vector<std::size_t> point_ends;  // ReplayKey::point_ends of `key`, where the pass keeps checkpoints
};

// The replays of a pass that have had the same ranks at every point so far, and the one compressor whose state is
// all of theirs.
struct Lane {
  std::size_t trace_stage = 0;
  std::size_t start = 0;  // the first point it steps (after a checkpoint's points)
  std::string from;       // the checkpoint it started from, empty for none
  std::unique_ptr<kernels::PowerSgd> psgd;
  std::vector<std::size_t> replays;  // indices into the pass's replays
};

// A trace stage's step buffers, shared by its lanes (each step overwrites them): G in, Ĝ out, per matrix.
struct StageScratch {
  std::vector<std::vector<float>> host;        // host copy on a device backend
  std::vector<kernels::Buffer<float>> device;  // device backends only
  std::vector<std::span<float>> spans;         // what step() reads and overwrites
};

// Splits every lane whose replays' ranks part at point p: the first rank vector met keeps the lane's compressor, each
// other one starts from a copy of its state (PowerSgd::copy_state_from), so what they shared is replayed once.
void fork_lanes(std::vector<Lane>& lanes, const std::vector<PendingReplay>& todo, std::size_t p,
                const std::function<std::unique_ptr<kernels::PowerSgd>(std::size_t)>& make);

// One PowerSGD step of a lane at its ranks on one point's matrices `g` (per matrix), through the stage's buffers.
ReplayPoint step_lane(kernels::PowerSgd& psgd, const std::vector<int>& ranks,
                      const std::vector<const std::vector<float>*>& g, StageScratch& s, bool device);

// A copy of a lane's state after its points so far, as the memo keeps it (on `make`'s backend).
Checkpoint checkpoint_of(const kernels::PowerSgd& psgd, const std::vector<ReplayPoint>& points,
                         const std::function<std::unique_ptr<kernels::PowerSgd>()>& make);

}  // namespace edgc::engine::replay
