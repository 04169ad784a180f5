// The fidelity meter's replay pieces (fidelity_replay.hpp).
#include "fidelity_replay.hpp"

#include <algorithm>
#include <sstream>

#include "edgc/kernels/communicator.hpp"

namespace edgc::engine::replay {

ReplayKey replay_key(const std::string& trace, const std::string& backend, std::uint64_t seed, const ReplaySpec& r) {
  std::ostringstream os;
  os << "fidelity/1|" << trace << '|' << backend << '|' << seed << '|' << r.trace_stage;
  ReplayKey out;
  for (const std::vector<int>& p : r.ranks) {
    os << '|';
    for (const int k : p) os << k << ',';
    out.point_ends.push_back(static_cast<std::size_t>(os.tellp()));
  }
  out.key = os.str();
  return out;
}

namespace {

// Σ (a − b)² (or Σ a² without kDiff) and, with kNorm, Σ a² too, in double: four partial sums (element i into sum
// i mod 4, added as ((s0 + s1) + (s2 + s3))), so that the additions do not wait on each other, held two to a vector
// register. The order of every addition is fixed, so the sums do not depend on how the loop compiles.
using Double2 = double __attribute__((vector_size(16)));
template <bool kDiff, bool kNorm>
std::pair<double, double> sums_of_squares(std::span<const float> a, std::span<const float> b) {
  Double2 d_lo = {0.0, 0.0}, d_hi = {0.0, 0.0}, q_lo = {0.0, 0.0}, q_hi = {0.0, 0.0};
  const std::size_t n = a.size();
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const Double2 x_lo = {static_cast<double>(a[i]), static_cast<double>(a[i + 1])};
    const Double2 x_hi = {static_cast<double>(a[i + 2]), static_cast<double>(a[i + 3])};
    Double2 y_lo = x_lo, y_hi = x_hi;
    if constexpr (kDiff) {
      y_lo -= Double2{static_cast<double>(b[i]), static_cast<double>(b[i + 1])};
      y_hi -= Double2{static_cast<double>(b[i + 2]), static_cast<double>(b[i + 3])};
    }
    d_lo += y_lo * y_lo;
    d_hi += y_hi * y_hi;
    if constexpr (kNorm) {
      q_lo += x_lo * x_lo;
      q_hi += x_hi * x_hi;
    }
  }
  for (; i < n; ++i) {
    const auto x = static_cast<double>(a[i]);
    const double y = kDiff ? x - b[i] : x;
    d_lo[0] += y * y;
    if constexpr (kNorm) q_lo[0] += x * x;
  }
  return {(d_lo[0] + d_lo[1]) + (d_hi[0] + d_hi[1]), (q_lo[0] + q_lo[1]) + (q_hi[0] + q_hi[1])};
}

}  // namespace

// Σ (a − b)², or Σ a² when b is empty.
double squared_distance(std::span<const float> a, std::span<const float> b) {
  return b.empty() ? sums_of_squares<false, false>(a, b).first : sums_of_squares<true, false>(a, b).first;
}

// Σ (a − b)² and Σ a² in one pass, each summed exactly as squared_distance sums it.
std::pair<double, double> distance_and_norm(std::span<const float> a, std::span<const float> b) {
  return sums_of_squares<true, true>(a, b);
}

void fork_lanes(std::vector<Lane>& lanes, const std::vector<PendingReplay>& todo, std::size_t p,
                const std::function<std::unique_ptr<kernels::PowerSgd>(std::size_t)>& make) {
  const std::size_t before = lanes.size();
  for (std::size_t l = 0; l < before; ++l) {
    if (lanes[l].start > p) continue;
    std::vector<const std::vector<int>*> ranks;
    std::vector<std::vector<std::size_t>> groups;
    for (const std::size_t k : lanes[l].replays) {
      const std::vector<int>& r = todo[k].spec->ranks[p];
      const auto it = std::find_if(ranks.begin(), ranks.end(), [&](const std::vector<int>* x) { return *x == r; });
      if (it == ranks.end()) {
        ranks.push_back(&r);
        groups.push_back({k});
      } else {
        groups[static_cast<std::size_t>(it - ranks.begin())].push_back(k);
      }
    }
    if (groups.size() < 2) continue;
    lanes[l].replays = std::move(groups[0]);
    for (std::size_t g = 1; g < groups.size(); ++g) {
      Lane fork{lanes[l].trace_stage, p, {}, make(lanes[l].trace_stage), std::move(groups[g])};
      fork.psgd->copy_state_from(*lanes[l].psgd);
      lanes.push_back(std::move(fork));
    }
  }
}

ReplayPoint step_lane(kernels::PowerSgd& psgd, const std::vector<int>& ranks,
                      const std::vector<const std::vector<float>*>& g, StageScratch& s, bool device) {
  kernels::LocalCommunicator solo;
  ReplayPoint pt;
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (ranks[i] != psgd.rank(i)) psgd.set_rank(i, ranks[i]);
    if (device)
      s.device[i].upload(*g[i]);
    else
      std::copy(g[i]->begin(), g[i]->end(), s.host[i].begin());
  }
  psgd.step(std::span<const std::span<float>>(s.spans), solo);
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (device) s.device[i].download(s.host[i]);
    const auto [err2, ghat2] = distance_and_norm(s.host[i], *g[i]);
    pt.err2.push_back(err2);
    pt.ghat2.push_back(ghat2);
    pt.e2.push_back(squared_distance(device ? psgd.error_copy(i) : psgd.error(i)));
  }
  return pt;
}

Checkpoint checkpoint_of(const kernels::PowerSgd& psgd, const std::vector<ReplayPoint>& points,
                         const std::function<std::unique_ptr<kernels::PowerSgd>()>& make) {
  Checkpoint c{make(), points, 0};
  c.psgd->copy_state_from(psgd);
  for (std::size_t i = 0; i < psgd.num_tensors(); ++i)
    c.bytes += (psgd.error(i).size() + psgd.warm_start_q(i).size()) * sizeof(float);
  for (const ReplayPoint& p : points) c.bytes += (1 + 3 * p.err2.size()) * sizeof(double);
  return c;
}

}  // namespace edgc::engine::replay
