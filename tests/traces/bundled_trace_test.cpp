// The bundled trace is a real training run: it reads cleanly, loss falls, gradient statistics change, every
// pipeline stage has a full 2-D matrix (for compression-error measurements), and it stays within its size budget.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <numeric>

#include "edgc/traces/traces.hpp"

namespace edgc::traces {
namespace {

namespace fs = std::filesystem;

TEST(BundledTrace, IsARealTrainingRunWithEvolvingGradients) {
  TraceReader r(EDGC_BUNDLED_TRACE);
  const Manifest& m = r.manifest();
  ASSERT_GE(m.iterations.size(), 200u);
  EXPECT_NE(m.provenance_json.find("command"), std::string::npos);
  EXPECT_NE(m.provenance_json.find("torch"), std::string::npos);

  // Loss falls: mean of the last tenth well below the mean of the first tenth.
  const std::size_t tenth = m.iterations.size() / 10;
  double head = 0, tail = 0;
  for (std::size_t i = 0; i < tenth; ++i) {
    ASSERT_TRUE(m.iterations[i].loss.has_value());
    head += *m.iterations[i].loss / static_cast<double>(tenth);
    tail += *m.iterations[m.iterations.size() - 1 - i].loss / static_cast<double>(tenth);
  }
  EXPECT_LT(tail, head - 1.0) << "loss " << head << " -> " << tail;

  // Every stage owns at least one full 2-D matrix.
  std::vector<bool> has_full_matrix(static_cast<std::size_t>(m.num_stages), false);
  for (const auto& t : m.tensors)
    if (t.mode == CaptureMode::kFull && t.shape.size() == 2) has_full_matrix[static_cast<std::size_t>(t.stage)] = true;
  for (int s = 0; s < m.num_stages; ++s) EXPECT_TRUE(has_full_matrix[static_cast<std::size_t>(s)]) << "stage " << s;

  // Statistics change over training: per-tensor std differs between the first and last iterations.
  IterationData first, last;
  r.read(0, first);
  r.read(r.num_iterations() - 1, last);
  int changed = 0;
  for (std::size_t k = 0; k < m.tensors.size(); ++k) {
    const TensorStats a = compute_stats(first.tensors[k].values);
    const TensorStats b = compute_stats(last.tensors[k].values);
    EXPECT_EQ(a.nan + a.inf + b.nan + b.inf, 0) << m.tensors[k].name;
    if (a.std && b.std && std::abs(std::log(*b.std / *a.std)) > 0.1) ++changed;
  }
  EXPECT_GT(changed, static_cast<int>(m.tensors.size()) / 2);

  // Size budget of the repository copy.
  std::uintmax_t bytes = 0;
  for (const auto& e : fs::directory_iterator(EDGC_BUNDLED_TRACE)) bytes += e.is_regular_file() ? e.file_size() : 0;
  EXPECT_LE(bytes, 20u * 1000 * 1000);
}

}  // namespace
}  // namespace edgc::traces
