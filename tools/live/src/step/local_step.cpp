#include "local_step.hpp"

#include <cstddef>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "edgc/core/error.hpp"

namespace edgc::live {

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
  // A tensor's compute_seconds is its share of its batch's kernels, or of the dense buffer's copies.
  std::map<std::tuple<std::int64_t, std::int64_t, int>, std::pair<int, double>> groups;
  for (std::size_t i = 0; i < st.tensors.size(); ++i) {
    const kernels::TensorStepStats& t = st.tensors[i];
    if (!t.compressed) {
      s.copy_s += t.compute_seconds;
      continue;
    }
    auto& [count, seconds] = groups[{psgd.rows(i), psgd.cols(i), t.rank}];
    ++count;
    seconds += t.compute_seconds;
  }
  for (const auto& [key, g] : groups) {
    s.matrices.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), g.first});
    s.batch_s.push_back(g.second);
  }
  return s;
}

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

}  // namespace edgc::live
