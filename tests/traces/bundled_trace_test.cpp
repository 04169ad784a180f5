// The bundled traces are real training runs: they read cleanly, loss falls, gradient statistics change, every
// pipeline stage has a full 2-D matrix where the trace is meant for compression-error measurements, and they stay
// within their size budgets.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <numeric>
#include <string>

#include "edgc/traces/traces.hpp"

namespace edgc::traces {
namespace {

namespace fs = std::filesystem;

// Mean loss of the first and of the last tenth of the iterations (at least one each).
std::pair<double, double> head_and_tail_loss(const Manifest& m) {
  const std::size_t tenth = std::max<std::size_t>(1, m.iterations.size() / 10);
  double head = 0, tail = 0;
  for (std::size_t i = 0; i < tenth; ++i) {
    EXPECT_TRUE(m.iterations[i].loss.has_value());
    EXPECT_TRUE(m.iterations[m.iterations.size() - 1 - i].loss.has_value());
    head += m.iterations[i].loss.value_or(0.0) / static_cast<double>(tenth);
    tail += m.iterations[m.iterations.size() - 1 - i].loss.value_or(0.0) / static_cast<double>(tenth);
  }
  return {head, tail};
}

// Every stage owns at least one full 2-D matrix of at least `min_dim` rows and columns.
void expect_full_matrix_per_stage(const Manifest& m, std::int64_t min_dim) {
  std::vector<bool> has(static_cast<std::size_t>(m.num_stages), false);
  for (const auto& t : m.tensors)
    if (t.mode == CaptureMode::kFull && t.shape.size() == 2 && t.shape[0] >= min_dim && t.shape[1] >= min_dim)
      has[static_cast<std::size_t>(t.stage)] = true;
  for (int s = 0; s < m.num_stages; ++s) EXPECT_TRUE(has[static_cast<std::size_t>(s)]) << "stage " << s;
}

// Number of tensors whose standard deviation moved by more than 10 % (in log) from the first iteration to the last;
// no NaN or Inf anywhere in either.
int tensors_that_changed(TraceReader& r) {
  IterationData first, last;
  r.read(0, first);
  r.read(r.num_iterations() - 1, last);
  int changed = 0;
  for (std::size_t k = 0; k < r.manifest().tensors.size(); ++k) {
    const TensorStats a = compute_stats(first.tensors[k].values);
    const TensorStats b = compute_stats(last.tensors[k].values);
    EXPECT_EQ(a.nan + a.inf + b.nan + b.inf, 0) << r.manifest().tensors[k].name;
    if (a.std && b.std && std::abs(std::log(*b.std / *a.std)) > 0.1) ++changed;
  }
  return changed;
}

std::uintmax_t directory_bytes(const fs::path& dir) {
  std::uintmax_t bytes = 0;
  for (const auto& e : fs::directory_iterator(dir)) bytes += e.is_regular_file() ? e.file_size() : 0;
  return bytes;
}

TEST(BundledTrace, IsARealTrainingRunWithEvolvingGradients) {
  TraceReader r(EDGC_BUNDLED_TRACE);
  const Manifest& m = r.manifest();
  ASSERT_GE(m.iterations.size(), 200u);
  EXPECT_NE(m.provenance_json.find("command"), std::string::npos);
  EXPECT_NE(m.provenance_json.find("torch"), std::string::npos);
  const auto [head, tail] = head_and_tail_loss(m);
  EXPECT_LT(tail, head - 1.0) << "loss " << head << " -> " << tail;
  expect_full_matrix_per_stage(m, 64);
  EXPECT_GT(tensors_that_changed(r), static_cast<int>(m.tensors.size()) / 2);
  // 17 MB of weight gradients plus 12 MB of stage-boundary messages (format 1.1).
  EXPECT_LE(directory_bytes(EDGC_BUNDLED_TRACE), 32u * 1000 * 1000);
}

// Format 1.1: one boundary gradient per stage s >= 1, one micro-batch (1 sequence of 128 tokens) x hidden 64, whose
// scale moves over training and which is neither zero nor low-rank noise-free (a real message, not a placeholder).
TEST(BundledTrace, RecordsTheStageBoundaryGradientsOfEveryLaterStage) {
  TraceReader r(EDGC_BUNDLED_TRACE);
  const Manifest& m = r.manifest();
  EXPECT_EQ(m.version_string(), "1.1");
  ASSERT_EQ(m.boundaries.size(), static_cast<std::size_t>(m.num_stages - 1));
  for (std::size_t b = 0; b < m.boundaries.size(); ++b) {
    EXPECT_EQ(m.boundaries[b].stage, static_cast<int>(b) + 1);
    EXPECT_EQ(m.boundaries[b].rows, 128);
    EXPECT_EQ(m.boundaries[b].cols, 64);
    EXPECT_EQ(m.boundaries[b].micro_batch, 1);
  }
  IterationData first, last;
  r.read(0, first);
  r.read(r.num_iterations() - 1, last);
  for (std::size_t b = 0; b < m.boundaries.size(); ++b) {
    const TensorStats a = compute_stats(first.boundaries[b]);
    const TensorStats z = compute_stats(last.boundaries[b]);
    EXPECT_EQ(a.nan + a.inf + z.nan + z.inf, 0);
    ASSERT_TRUE(a.std && z.std);
    EXPECT_GT(*a.std, 0.0);
    EXPECT_GT(std::abs(std::log(*z.std / *a.std)), 0.1) << m.boundaries[b].name;
  }
}

const fs::path kGpt2Blocks = fs::path(EDGC_SOURCE_DIR) / "traces/bundled/gpt2s-docs-blocks";
const fs::path kGpt2Full = fs::path(EDGC_SOURCE_DIR) / "traces/bundled/gpt2s-docs-full";

// The GPT-2-small pair: sampled blocks of all 148 parameters over the whole run, and one 768x768 matrix per stage at
// a lower rate, from the same GPU run (same provenance), together within 30 MB.
TEST(BundledTrace, Gpt2SmallPairIsOneGpuRunOfA124MParameterModel) {
  TraceReader blocks(kGpt2Blocks.string());
  TraceReader full(kGpt2Full.string());
  const Manifest& b = blocks.manifest();
  const Manifest& f = full.manifest();
  EXPECT_EQ(b.provenance_json, f.provenance_json);
  EXPECT_NE(b.provenance_json.find("H100"), std::string::npos);
  EXPECT_NE(b.provenance_json.find("linux-doc-6.1"), std::string::npos);
  EXPECT_NE(b.model_json.find("124439808"), std::string::npos);
  EXPECT_NE(f.model_json.find("124439808"), std::string::npos);
  EXPECT_EQ(b.num_stages, 4);
  EXPECT_EQ(b.tensors.size(), 148u);  // 12 blocks of 12 tensors, two embeddings, the final norm's two
  for (const auto& t : b.tensors) EXPECT_EQ(t.mode, CaptureMode::kBlocks) << t.name;
  ASSERT_GE(b.iterations.size(), 70u);
  ASSERT_GE(f.iterations.size(), 3u);
  EXPECT_GE(b.iterations.back().iteration, 2900);  // thousands of steps

  // From the uniform-guess loss ln(50257) = 10.8 down by several nats.
  const auto [head, tail] = head_and_tail_loss(b);
  EXPECT_GT(head, 7.0);
  EXPECT_LT(tail, 3.5) << "loss " << head << " -> " << tail;

  expect_full_matrix_per_stage(f, 768);
  EXPECT_GT(tensors_that_changed(blocks), static_cast<int>(b.tensors.size()) / 2);
  EXPECT_EQ(tensors_that_changed(full), static_cast<int>(f.tensors.size()));
  EXPECT_LE(directory_bytes(kGpt2Blocks) + directory_bytes(kGpt2Full), 30u * 1000 * 1000);
}

}  // namespace
}  // namespace edgc::traces
