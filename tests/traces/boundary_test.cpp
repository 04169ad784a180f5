// Format 1.1: stage-boundary activation gradients. Round trips, version handling and every rejection.
#include <gtest/gtest.h>

#include <cstring>

#include "edgc/core/error.hpp"
#include "edgc/core/random.hpp"
#include "edgc/traces/traces.hpp"
#include "read_error.hpp"
#include "trace_test_util.hpp"

namespace edgc::traces {
namespace {

using test::read_error;
using test::TempDir;
using test::write_file;
using test::write_raw_safetensors;

const char* kManifest11 = R"({"format": "edgc.trace", "version": 1.1,
  "model": {"name": "m", "num_stages": 2},
  "tensors": [{"name": "w", "shape": [2, 3], "dtype": "f32", "stage": 0, "layer": 0, "mode": "full"}],
  "boundaries": [{"name": "boundary.1", "stage": 1, "shape": [4, 2], "dtype": "f32", "micro_batch": 2}],
  "iterations": [{"iteration": 0, "file": "iter_000000.safetensors", "loss": 1.5}],
  "provenance": {}})";

const std::string kGoodHeader11 = R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
  "boundary.1": {"dtype": "F32", "shape": [4, 2], "data_offsets": [24, 56]}})";

std::string f32_bytes(int n) {
  std::string s(static_cast<std::size_t>(n) * 4, '\0');
  for (int i = 0; i < n; ++i) {
    const float f = static_cast<float>(i) - 2.25f;
    std::memcpy(s.data() + 4 * i, &f, 4);
  }
  return s;
}

class Boundary : public ::testing::Test {
 protected:
  std::string with(const std::string& from, const std::string& to, const std::string& header = kGoodHeader11) {
    std::string m = kManifest11;
    if (!from.empty()) m.replace(m.find(from), from.size(), to);
    write_file(tmp_ / "trace.json", m);
    write_raw_safetensors(tmp_ / "iter_000000.safetensors", header, f32_bytes(14));
    return read_error(tmp_.path());
  }
  TempDir tmp_;
};

TEST_F(Boundary, VersionOnePointOneIsReadWithItsBoundaryMatrix) {
  ASSERT_EQ(with("", ""), "");
  TraceReader r(tmp_.path());
  const Manifest& m = r.manifest();
  EXPECT_EQ(m.version_string(), "1.1");
  ASSERT_EQ(m.boundaries.size(), 1u);
  EXPECT_EQ(m.boundaries[0].stage, 1);
  EXPECT_EQ(m.boundaries[0].rows, 4);
  EXPECT_EQ(m.boundaries[0].cols, 2);
  EXPECT_EQ(m.boundaries[0].micro_batch, 2);
  IterationData d;
  ASSERT_TRUE(r.next(d));
  ASSERT_EQ(d.boundaries.size(), 1u);
  ASSERT_EQ(d.boundaries[0].size(), 8u);
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(d.boundaries[0][static_cast<std::size_t>(i)], static_cast<float>(i + 6) - 2.25f);
  // The manifest written back is version 1.1 again, with the boundary, and reads identically.
  const std::string text = manifest_to_json(m);
  EXPECT_NE(text.find("\"version\": 1.1"), std::string::npos) << text;
  EXPECT_NE(text.find("\"boundaries\""), std::string::npos) << text;
}

TEST_F(Boundary, VersionOneTracesStillReadAndHaveNoBoundaries) {
  const std::string v1 = R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}})";
  std::string m = kManifest11;
  m.replace(m.find("1.1"), 3, "1");
  const std::string b = m.substr(m.find("  \"boundaries\""), m.find("  \"iterations\"") - m.find("  \"boundaries\""));
  m.replace(m.find(b), b.size(), "");
  write_file(tmp_ / "trace.json", m);
  write_raw_safetensors(tmp_ / "iter_000000.safetensors", v1, f32_bytes(6));
  ASSERT_EQ(read_error(tmp_.path()), "");
  TraceReader r(tmp_.path());
  EXPECT_EQ(r.manifest().version_string(), "1");
  EXPECT_TRUE(r.manifest().boundaries.empty());
  IterationData d;
  ASSERT_TRUE(r.next(d));
  EXPECT_TRUE(d.boundaries.empty());
  EXPECT_NE(manifest_to_json(r.manifest()).find("\"version\": 1,"), std::string::npos);
}

TEST_F(Boundary, EveryBadBoundaryIsRefusedNamingFileAndField) {
  EXPECT_NE(with("\"version\": 1.1", "\"version\": 1").find("trace.json: boundaries: stage-boundary gradients need"),
            std::string::npos);
  EXPECT_NE(with("\"version\": 1.1", "\"version\": 1.2").find("version: unsupported trace format version 1.2"),
            std::string::npos);
  EXPECT_NE(with("\"version\": 1.1", "\"version\": \"1.1\"").find("version: unsupported"), std::string::npos);
  EXPECT_NE(with("\"stage\": 1, \"shape\": [4, 2]", "\"stage\": 0, \"shape\": [4, 2]")
                .find("boundaries[0].stage: must be in [1, 65535], got 0"),
            std::string::npos);
  EXPECT_NE(with("\"stage\": 1, \"shape\": [4, 2]", "\"stage\": 2, \"shape\": [4, 2]")
                .find("boundaries[0].stage: 2 must be in [1, model.num_stages = 2)"),
            std::string::npos);
  EXPECT_NE(with("[4, 2]", "[4, 2, 1]").find("boundaries[0].shape: expected [tokens, hidden]"), std::string::npos);
  EXPECT_NE(with("\"micro_batch\": 2", "\"micro_batch\": 3").find("boundaries[0].micro_batch: 3 does not divide"),
            std::string::npos);
  EXPECT_NE(with("\"name\": \"boundary.1\"", "\"name\": \"w\"").find("boundaries[0].name: duplicate name 'w'"),
            std::string::npos);
  EXPECT_NE(
      with("\"micro_batch\": 2}", "\"micro_batch\": 2, \"mode\": \"blocks\"}").find("boundaries[0].mode: unknown key"),
      std::string::npos);
  const std::string two = R"({"name": "b2", "stage": 1, "shape": [4, 2], "dtype": "f32", "micro_batch": 1})";
  EXPECT_NE(with("\"micro_batch\": 2}", "\"micro_batch\": 2}, " + two)
                .find("boundaries[1].stage: boundaries must be listed by strictly increasing stage"),
            std::string::npos);
  // Iteration files: the boundary entry missing, of another shape or dtype.
  const std::string iter = (tmp_ / "iter_000000.safetensors").string();
  const std::string only_w = R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}})";
  EXPECT_NE(with("", "", only_w).find(iter + ": boundary.1: boundary gradient listed in the manifest is missing"),
            std::string::npos);
  std::string wrong_shape = kGoodHeader11;
  wrong_shape.replace(wrong_shape.find("[4, 2]"), 6, "[2, 4]");
  EXPECT_NE(with("", "", wrong_shape).find(iter + ": boundary.1.shape: [2, 4] does not match"), std::string::npos);
  std::string wrong_dtype = R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
  "boundary.1": {"dtype": "F16", "shape": [4, 2], "data_offsets": [24, 40]}})";
  EXPECT_NE(with("", "", wrong_dtype).find(iter + ": boundary.1.dtype: F16 does not match the manifest's f32"),
            std::string::npos);
  std::string blocks_entry = R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
  "boundary.1@blocks": {"dtype": "F32", "shape": [4, 2], "data_offsets": [24, 56]}})";
  EXPECT_NE(with("", "", blocks_entry).find(iter + ": boundary.1@blocks: entry is not in the trace manifest"),
            std::string::npos);
}

TEST(BoundaryRoundTrip, SynthesisedBoundariesWriteAndReadBitIdenticallyAcrossDtypes) {
  for (const Dtype dtype : {Dtype::kF32, Dtype::kF16, Dtype::kBF16}) {
    TempDir tmp;
    SynthOptions o;
    o.layer_shapes = {{16, 8}, {8}};
    o.layers = 3;
    o.stages = 3;
    o.iterations = 4;
    o.dtype = dtype;
    o.boundary_shape = {12, 8};
    const Manifest written = synthesize_trace(o, tmp / "a");
    ASSERT_EQ(written.boundaries.size(), 2u);
    EXPECT_EQ(written.minor, 1);
    TraceReader r(tmp / "a");
    EXPECT_EQ(r.manifest().boundaries[1].name, "boundary.2");
    EXPECT_EQ(r.manifest().boundaries[1].stage, 2);
    // Read everything, write it again, compare the files byte for byte.
    Manifest header = r.manifest();
    header.iterations.clear();
    TraceWriter w(tmp / "b", header);
    IterationData d;
    while (r.next(d)) {
      ASSERT_EQ(d.boundaries.size(), 2u);
      EXPECT_EQ(d.boundaries[0].size(), 96u);
      std::vector<TensorView> views;
      for (const auto& t : d.tensors) views.push_back({t.values, t.blocks});
      std::vector<std::span<const float>> bviews(d.boundaries.begin(), d.boundaries.end());
      w.write_iteration(d.info->iteration, d.info->loss, views, bviews);
    }
    w.finish();
    for (const auto& it : r.manifest().iterations)
      EXPECT_EQ(test::read_file(tmp / "a" / it.file), test::read_file(tmp / "b" / it.file)) << it.file;
    EXPECT_EQ(test::read_file(tmp / "a" / "trace.json"), test::read_file(tmp / "b" / "trace.json"));
  }
}

TEST(BoundaryRoundTrip, WriterRefusesWrongBoundaryCountsAndSizes) {
  TempDir tmp;
  Manifest m;
  m.model_name = "m";
  m.num_stages = 2;
  m.tensors = {{"w", {2, 2}, Dtype::kF32, 0, 0, CaptureMode::kFull}};
  m.boundaries = {{"boundary.1", 1, 3, 2, 1, Dtype::kF32}};
  TraceWriter w(tmp / "t", m);
  const std::vector<float> wv(4, 1.0f);
  const std::vector<TensorView> views = {{wv, {}}};
  EXPECT_THROW(w.write_iteration(0, 1.0, views), InternalError);
  const std::vector<float> short_b(5, 1.0f);
  const std::vector<std::span<const float>> bad = {short_b};
  EXPECT_THROW(w.write_iteration(0, 1.0, views, bad), InternalError);
}

}  // namespace
}  // namespace edgc::traces
