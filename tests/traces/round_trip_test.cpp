#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "edgc/core/error.hpp"
#include "edgc/core/random.hpp"
#include "edgc/traces/traces.hpp"
#include "trace_test_util.hpp"

namespace edgc::traces {
namespace {

using test::TempDir;

Manifest small_manifest(Dtype dtype) {
  Manifest m;
  m.model_name = "unit";
  m.num_stages = 2;
  m.model_json = R"({"name":"unit","num_stages":2,"note":"kept verbatim"})";
  m.sampling = SamplingInfo{8, 0.25, 9};
  m.tensors = {{"a.weight", {7, 5}, dtype, 0, 0, CaptureMode::kFull},
               {"b.weight", {16, 9}, dtype, 1, 1, CaptureMode::kBlocks},
               {"b.bias", {9}, dtype, 1, 1, CaptureMode::kFull},
               {"scale", {}, dtype, 1, -1, CaptureMode::kFull}};
  m.provenance_json = R"({"tool":"round_trip_test","seed":9})";
  return m;
}

// Random values exactly representable in `dtype`, with special values sprinkled in.
std::vector<float> random_values(std::size_t n, Dtype dtype, Rng& rng) {
  std::vector<float> v(n);
  for (auto& x : v) {
    x = static_cast<float>(rng.normal() * std::exp(4.0 * rng.normal()));
    if (dtype == Dtype::kF16) x = half_to_float(float_to_half(x));
    if (dtype == Dtype::kBF16) x = bf16_to_float(float_to_bf16(x));
  }
  if (n > 3) {
    v[1] = std::numeric_limits<float>::infinity();
    v[2] = -0.0f;
    v[3] = std::numeric_limits<float>::quiet_NaN();
  }
  return v;
}

bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    // NaN payloads may be quietened by conversions; compare NaN-ness, all other values bit for bit.
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i])) return false;
  }
  return true;
}

class RoundTrip : public ::testing::TestWithParam<Dtype> {};

TEST_P(RoundTrip, WriteThenReadIsBitIdentical) {
  const Dtype dtype = GetParam();
  TempDir tmp;
  const auto dir = tmp / "trace";
  const Manifest header = small_manifest(dtype);
  Rng rng(17);
  const std::vector<Block> blocks = {{0, 8}, {24, 8}, {136, 8}};
  std::vector<std::vector<std::vector<float>>> written;  // [iteration][tensor]
  {
    TraceWriter w(dir, header);
    for (int it = 0; it < 3; ++it) {
      std::vector<std::vector<float>> vals = {random_values(35, dtype, rng), random_values(24, dtype, rng),
                                              random_values(9, dtype, rng), random_values(1, dtype, rng)};
      const std::vector<TensorView> views = {{vals[0], {}}, {vals[1], blocks}, {vals[2], {}}, {vals[3], {}}};
      w.write_iteration(10 * it, it == 1 ? std::nullopt : std::optional<double>(5.0 - it), views);
      written.push_back(vals);
    }
    w.finish();
  }
  TraceReader r(dir);
  EXPECT_EQ(r.manifest().model_name, "unit");
  EXPECT_NE(r.manifest().model_json.find("kept verbatim"), std::string::npos);
  ASSERT_EQ(r.num_iterations(), 3u);
  EXPECT_FALSE(r.manifest().iterations[1].loss.has_value());
  EXPECT_DOUBLE_EQ(*r.manifest().iterations[2].loss, 3.0);
  IterationData d;
  std::size_t i = 0;
  while (r.next(d)) {
    EXPECT_EQ(d.info->iteration, static_cast<std::int64_t>(10 * i));
    for (std::size_t k = 0; k < 4; ++k) EXPECT_TRUE(bit_equal(d.tensors[k].values, written[i][k])) << i << " " << k;
    EXPECT_EQ(d.tensors[1].blocks, blocks);
    EXPECT_TRUE(d.tensors[0].blocks.empty());
    ++i;
  }
  EXPECT_EQ(i, 3u);
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, RoundTrip, ::testing::Values(Dtype::kF32, Dtype::kF16, Dtype::kBF16));

TEST(RoundTrip, RewritingWhatWasReadGivesByteIdenticalFiles) {
  TempDir tmp;
  SynthOptions o;
  o.layer_shapes = {{32, 48}, {48}};
  o.layers = 2;
  o.iterations = 3;
  o.mode = CaptureMode::kBlocks;
  o.block_elems = 64;
  o.dtype = Dtype::kBF16;
  synthesize_trace(o, tmp / "a");
  TraceReader r(tmp / "a");
  Manifest header = r.manifest();
  header.iterations.clear();
  TraceWriter w(tmp / "b", header);
  IterationData d;
  while (r.next(d)) {
    std::vector<TensorView> views;
    for (const auto& t : d.tensors) views.push_back({t.values, t.blocks});
    w.write_iteration(d.info->iteration, d.info->loss, views);
  }
  w.finish();
  for (const auto& it : r.manifest().iterations)
    EXPECT_EQ(test::read_file(tmp / "a" / it.file), test::read_file(tmp / "b" / it.file)) << it.file;
  EXPECT_EQ(test::read_file(tmp / "a" / "trace.json"), test::read_file(tmp / "b" / "trace.json"));
}

TEST(Synth, SameSeedGivesByteIdenticalTracesAndNoiseEntropyFallsAsConfigured) {
  TempDir tmp;
  SynthOptions o;
  o.layer_shapes = {{64, 256}};
  o.layers = 2;
  o.iterations = 5;
  o.signal_std = 0.0;  // noise only: std must follow noise_std · e^(−decay·t)
  o.noise_std = 1e-2;
  o.entropy_decay_nats = 1.0;
  synthesize_trace(o, tmp / "a");
  synthesize_trace(o, tmp / "b");
  TraceReader r(tmp / "a");
  for (const auto& it : r.manifest().iterations)
    EXPECT_EQ(test::read_file(tmp / "a" / it.file), test::read_file(tmp / "b" / it.file));
  IterationData d;
  while (r.next(d)) {
    const double t = static_cast<double>(d.index) / 4.0;
    const TensorStats s = compute_stats(d.tensors[0].values);
    EXPECT_NEAR(std::log(*s.std), std::log(1e-2) - t, 0.02);
  }
}

TEST(Synth, SignalIsLowRankWhenNoiseIsOff) {
  TempDir tmp;
  SynthOptions o;
  o.layer_shapes = {{12, 10}};
  o.layers = 1;
  o.stages = 1;
  o.iterations = 1;
  o.rank = 2;
  o.noise_std = 0.0;
  synthesize_trace(o, tmp / "t");
  TraceReader r(tmp / "t");
  IterationData d;
  ASSERT_TRUE(r.next(d));
  // Rank ≤ 2 ⇔ every 3×3 minor vanishes; check a few against the matrix scale.
  const auto& v = d.tensors[0].values;
  auto at = [&](int i, int j) { return static_cast<double>(v[static_cast<std::size_t>(i * 10 + j)]); };
  double scale = 0;
  for (float x : v) scale = std::max(scale, std::abs(static_cast<double>(x)));
  for (int base = 0; base < 9; base += 3) {
    const int i = base, j = base % 7;
    const double det = at(i, j) * (at(i + 1, j + 1) * at(i + 2, j + 2) - at(i + 1, j + 2) * at(i + 2, j + 1)) -
                       at(i, j + 1) * (at(i + 1, j) * at(i + 2, j + 2) - at(i + 1, j + 2) * at(i + 2, j)) +
                       at(i, j + 2) * (at(i + 1, j) * at(i + 2, j + 1) - at(i + 1, j + 1) * at(i + 2, j));
    EXPECT_LT(std::abs(det), 1e-5 * scale * scale * scale);
  }
}

TEST(Writer, LeavesNothingBehindWhenNotFinishedAndRefusesNonEmptyOutput) {
  TempDir tmp;
  {
    TraceWriter w(tmp / "t", small_manifest(Dtype::kF32));
    std::vector<float> a(35), b(8), c(9), s(1);
    const std::vector<Block> blocks = {{8, 8}};
    const std::vector<TensorView> views = {{a, {}}, {b, blocks}, {c, {}}, {s, {}}};
    w.write_iteration(0, 1.0, views);
  }
  EXPECT_FALSE(std::filesystem::exists(tmp / "t"));
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(tmp.path())) ++entries;
  EXPECT_EQ(entries, 0u);
  test::write_file(tmp / "x", "occupied");
  std::filesystem::create_directories(tmp / "full");
  test::write_file(tmp / "full" / "f", "x");
  EXPECT_THROW(TraceWriter(tmp / "full", small_manifest(Dtype::kF32)), InputError);
}

}  // namespace
}  // namespace edgc::traces
