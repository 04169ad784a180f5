// Every malformed trace is rejected with a TraceFormatError that names the file and the field.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "edgc/core/error.hpp"
#include "edgc/traces/traces.hpp"
#include "read_error.hpp"
#include "trace_test_util.hpp"

namespace edgc::traces {
namespace {

using test::read_error;
using test::TempDir;
using test::write_file;
using test::write_raw_safetensors;

const char* kManifest = R"({"format": "edgc.trace", "version": 1,
  "model": {"name": "m", "num_stages": 1},
  "tensors": [{"name": "w", "shape": [2, 3], "dtype": "f32", "stage": 0, "layer": 0, "mode": "full"}],
  "iterations": [{"iteration": 0, "file": "iter_000000.safetensors", "loss": 1.5}],
  "provenance": {}})";

std::string f32_bytes(int n) {
  std::string s(static_cast<std::size_t>(n) * 4, '\0');
  for (int i = 0; i < n; ++i) {
    const float f = static_cast<float>(i) + 0.5f;
    std::memcpy(s.data() + 4 * i, &f, 4);
  }
  return s;
}

const std::string kGoodHeader = R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}})";

class Reject : public ::testing::Test {
 protected:
  void SetUp() override { write_file(tmp_ / "trace.json", kManifest); }
  std::filesystem::path iter_file() const { return tmp_ / "iter_000000.safetensors"; }
  std::string iter_name() const { return iter_file().string(); }
  // The error of the baseline trace with `from` in its manifest replaced by `to` ("" when accepted).
  std::string with(const std::string& from, const std::string& to) {
    std::string m = kManifest;
    m.replace(m.find(from), from.size(), to);
    write_file(tmp_ / "trace.json", m);
    write_raw_safetensors(iter_file(), kGoodHeader, f32_bytes(6));
    return read_error(tmp_.path());
  }
  TempDir tmp_;
};

TEST_F(Reject, AcceptsTheValidBaseline) {
  write_raw_safetensors(iter_file(), kGoodHeader, f32_bytes(6));
  EXPECT_EQ(read_error(tmp_.path()), "");
  TraceReader r(tmp_.path());
  IterationData d;
  r.read(0, d);
  EXPECT_EQ(d.tensors[0].values[5], 5.5f);
}

TEST_F(Reject, FileShorterThanTheHeaderLength) {
  write_file(iter_file(), "abc");
  const auto e = read_error(tmp_.path());
  EXPECT_NE(e.find(iter_name()), std::string::npos) << e;
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
}

TEST_F(Reject, TruncatedData) {
  std::string data = f32_bytes(6);
  data.resize(20);
  write_raw_safetensors(iter_file(), kGoodHeader, data);
  const auto e = read_error(tmp_.path());
  EXPECT_NE(e.find(iter_name()), std::string::npos) << e;
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
  EXPECT_NE(e.find("header.w.data_offsets"), std::string::npos) << e;
}

TEST_F(Reject, HeaderLengthPastEndOfFile) {
  write_raw_safetensors(iter_file(), kGoodHeader, f32_bytes(6), 1'000'000);
  const auto e = read_error(tmp_.path());
  EXPECT_NE(e.find(iter_name() + ": header length: 1000000 bytes runs past the end"), std::string::npos) << e;
}

TEST_F(Reject, InvalidHeaderJson) {
  write_raw_safetensors(iter_file(), R"({"w": {"dtype": "F32", )", f32_bytes(6));
  const auto e = read_error(tmp_.path());
  EXPECT_NE(e.find(iter_name() + ": header: invalid JSON"), std::string::npos) << e;
}

TEST_F(Reject, HeaderThatIsNotAnObject) {
  write_raw_safetensors(iter_file(), "[1, 2]", f32_bytes(6));
  EXPECT_NE(read_error(tmp_.path()).find("header: expected a JSON object"), std::string::npos);
}

TEST_F(Reject, UnknownDtype) {
  write_raw_safetensors(iter_file(), R"({"w": {"dtype": "F64", "shape": [2, 3], "data_offsets": [0, 48]}})",
                        f32_bytes(12));
  const auto e = read_error(tmp_.path());
  EXPECT_NE(e.find(iter_name() + ": header.w.dtype: unknown dtype 'F64'"), std::string::npos) << e;
}

TEST_F(Reject, ByteCountNotMatchingShape) {
  write_raw_safetensors(iter_file(), R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 20]}})",
                        f32_bytes(6));
  const auto e = read_error(tmp_.path());
  EXPECT_NE(e.find(iter_name() + ": header.w.data_offsets: 20 bytes do not match shape [2, 3]"), std::string::npos)
      << e;
}

TEST_F(Reject, DuplicateKeyInHeader) {
  write_raw_safetensors(iter_file(),
                        R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
                            "w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}})",
                        f32_bytes(6));
  EXPECT_NE(read_error(tmp_.path()).find("duplicate key 'w'"), std::string::npos);
}

TEST_F(Reject, OverlappingDataRegions) {
  write_file(tmp_ / "trace.json",
             std::string(kManifest).replace(std::string(kManifest).find("\"tensors\": ["), 12,
                                            R"("tensors": [{"name": "v", "shape": [2], "dtype": "f32", "stage": 0},)"));
  write_raw_safetensors(iter_file(), R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
                                         "v": {"dtype": "F32", "shape": [2], "data_offsets": [16, 24]}})",
                        f32_bytes(6));
  EXPECT_NE(read_error(tmp_.path()).find("overlaps"), std::string::npos);
}

TEST_F(Reject, EntryNotInManifestTensorMissingDtypeOrShapeMismatch) {
  write_raw_safetensors(iter_file(), R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
                                         "extra": {"dtype": "F32", "shape": [1], "data_offsets": [24, 28]}})",
                        f32_bytes(7));
  EXPECT_NE(read_error(tmp_.path()).find(": extra: entry is not in the trace manifest"), std::string::npos);
  write_raw_safetensors(iter_file(), R"({"x": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}})",
                        f32_bytes(6));
  EXPECT_NE(read_error(tmp_.path()).find(": x: entry is not in the trace manifest"), std::string::npos);
  write_raw_safetensors(iter_file(), "{}", "");
  EXPECT_NE(read_error(tmp_.path()).find(": w: tensor listed in the manifest is missing"), std::string::npos);
  write_raw_safetensors(iter_file(), R"({"w": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 12]}})",
                        f32_bytes(3));
  EXPECT_NE(read_error(tmp_.path()).find(": w.dtype: BF16 does not match the manifest's f32"), std::string::npos);
  write_raw_safetensors(iter_file(), R"({"w": {"dtype": "F32", "shape": [3, 2], "data_offsets": [0, 24]}})",
                        f32_bytes(6));
  EXPECT_NE(read_error(tmp_.path()).find(": w.shape: [3, 2] does not match the manifest's [2, 3]"), std::string::npos);
}

TEST_F(Reject, BadBlockLists) {
  std::string m = kManifest;
  m.replace(m.find("\"mode\": \"full\""), 14, "\"mode\": \"blocks\"");
  m.replace(m.find("\"tensors\""), 0, R"("sampling": {"block_elems": 2, "fraction": 0.5, "seed": 1}, )");
  write_file(tmp_ / "trace.json", m);
  auto blocks_file = [&](std::int64_t o1, std::int64_t l1, std::int64_t o2, std::int64_t l2) {
    std::string data = f32_bytes(4);
    const std::int64_t b[4] = {o1, l1, o2, l2};
    data.append(reinterpret_cast<const char*>(b), sizeof b);
    write_raw_safetensors(iter_file(), R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                                           "w@blocks": {"dtype": "I64", "shape": [2, 2], "data_offsets": [16, 48]}})",
                          data);
    return read_error(tmp_.path());
  };
  EXPECT_EQ(blocks_file(0, 2, 4, 2), "");
  EXPECT_NE(blocks_file(0, 2, 1, 2).find("w@blocks[1]"), std::string::npos);  // overlap
  EXPECT_NE(blocks_file(0, 2, 5, 2).find("w@blocks[1]"), std::string::npos);  // past the 6 elements
  EXPECT_NE(blocks_file(0, 1, 4, 2).find("blocks cover 3 elements"), std::string::npos);
  write_raw_safetensors(iter_file(), R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", f32_bytes(4));
  EXPECT_NE(read_error(tmp_.path()).find("w@blocks: missing"), std::string::npos);
}

TEST_F(Reject, UnknownManifestVersion) {
  std::string m = kManifest;
  m.replace(m.find("\"version\": 1"), 12, "\"version\": 7");
  write_file(tmp_ / "trace.json", m);
  const auto e = read_error(tmp_.path());
  EXPECT_NE(e.find("trace.json: version: unsupported trace format version 7"), std::string::npos) << e;
}

TEST_F(Reject, MissingIterationFile) {
  const auto e = read_error(tmp_.path());
  EXPECT_NE(e.find("trace.json: iterations[0].file: iteration file"), std::string::npos) << e;
  EXPECT_NE(e.find("is missing"), std::string::npos) << e;
}

TEST_F(Reject, DuplicateTensorNames) {
  std::string m = kManifest;
  const std::string t = R"({"name": "w", "shape": [2, 3], "dtype": "f32", "stage": 0, "layer": 0, "mode": "full"})";
  m.replace(m.find(t), t.size(), t + ", " + t);
  write_file(tmp_ / "trace.json", m);
  const auto e = read_error(tmp_.path());
  EXPECT_NE(e.find("trace.json: tensors[1].name: duplicate tensor name 'w'"), std::string::npos) << e;
}

TEST_F(Reject, ManifestFieldErrors) {
  EXPECT_NE(with("\"edgc.trace\"", "\"other\"").find("format: expected \"edgc.trace\""), std::string::npos);
  EXPECT_NE(with("\"stage\": 0", "\"stage\": 3").find("tensors[0].stage: 3 is not below"), std::string::npos);
  EXPECT_NE(with("\"dtype\": \"f32\"", "\"dtype\": \"f64\"").find("tensors[0].dtype: unknown dtype 'f64'"),
            std::string::npos);
  EXPECT_NE(with("[2, 3]", "[2, 0]").find("tensors[0].shape"), std::string::npos);
  EXPECT_NE(with("\"mode\": \"full\"", "\"mode\": \"rows\"").find("tensors[0].mode: unknown mode"), std::string::npos);
  EXPECT_NE(with("\"provenance\"", "\"surprise\"").find("surprise: unknown key"), std::string::npos);
  EXPECT_NE(with("\"loss\": 1.5", "\"loss\": \"low\"").find("iterations[0].loss: expected a number"),
            std::string::npos);
  EXPECT_NE(with("\"file\": \"iter_000000.safetensors\"", "\"file\": \"../x\"").find("must be a plain file name"),
            std::string::npos);
  EXPECT_NE(with("\"num_stages\": 1", "\"num_stages\": 0").find("model.num_stages: must be in [1, 65536], got 0"),
            std::string::npos);
  EXPECT_NE(with("{\"format\"", "{{\"format\"").find("trace.json: invalid JSON"), std::string::npos);
  EXPECT_NE(with("\"model\": {\"name\": \"m\", ", "\"model\": {").find("model.name: missing"), std::string::npos);
}

// Crafted integers: a stage, layer or stage count that would wrap when narrowed to int (2^31 - 1, 2^31, 2^32 - 1,
// 2^63 - 1, 2^64 - 1, -1) and shapes whose element count overflows are refused naming the field, before anything is
// allocated from them (they crashed replay with SIGSEGV or "double free" before).
TEST_F(Reject, IntegersThatWouldWrapOrOverflowAreRefusedByField) {
  for (const char* v :
       {"2147483647", "2147483648", "4294967295", "9223372036854775807", "18446744073709551615", "-1"}) {
    const std::string value(v);
    EXPECT_NE(with("\"stage\": 0", "\"stage\": " + value).find("tensors[0].stage: must be in [0, 65535], got " + value),
              std::string::npos)
        << v;
    EXPECT_NE(with("\"num_stages\": 1", "\"num_stages\": " + value).find("model.num_stages: must be in [1, 65536]"),
              std::string::npos)
        << v;
    if (value != "-1") {
      EXPECT_NE(with("\"layer\": 0", "\"layer\": " + value).find("tensors[0].layer: must be in [-1, 16777216]"),
                std::string::npos)
          << v;
    }
    if (value == "-1" || value.size() > 16) {  // past 2^53: not exact in a double
      EXPECT_NE(with("\"iteration\": 0", "\"iteration\": " + value).find("iterations[0].iteration: must be in [0, "),
                std::string::npos)
          << v;
    }
  }
  for (const char* shape :
       {"[9223372036854775807, 1]", "[4294967296, 4294967296]", "[18446744073709551615]", "[4398046511105]"}) {
    EXPECT_NE(with("[2, 3]", shape).find("tensors[0].shape: " + std::string(shape).substr(0, 3)), std::string::npos)
        << shape;
    EXPECT_NE(with("[2, 3]", shape).find("more than 2^42 elements"), std::string::npos) << shape;
  }
}

// Tensors each within 2^42 elements but more than 2^50 together are refused: per-stage sums of elements cannot wrap.
TEST_F(Reject, TensorsPastTheTotalElementBoundAreRefused) {
  std::string tensors;
  for (int i = 0; i <= 256; ++i) {  // 257 tensors of 2^42 elements: 2^50 + 2^42
    tensors += std::string(i > 0 ? ", " : "") + R"({"name": "w)" + std::to_string(i) +
               R"(", "shape": [4194304, 1048576], "dtype": "f32", "stage": 0})";
  }
  const std::string one = R"({"name": "w", "shape": [2, 3], "dtype": "f32", "stage": 0, "layer": 0, "mode": "full"})";
  const std::string e = with(one, tensors);
  EXPECT_NE(e.find("tensors[256].shape: the tensors hold more than 2^50 elements in all"), std::string::npos) << e;
}

// Safetensors headers: dimensions and offsets past int64 or not integers are refused naming the field, and a shape
// whose partial products overflow is refused even where a later dimension is 0.
TEST_F(Reject, SafetensorsIntegersAreChecked) {
  write_file(tmp_ / "trace.json", kManifest);
  const auto header_error = [&](const std::string& header) {
    write_raw_safetensors(iter_file(), header, f32_bytes(6));
    return read_error(tmp_.path());
  };
  const std::pair<std::string, std::string> cases[] = {
      {R"({"w": {"dtype": "F32", "shape": [18446744073709551615], "data_offsets": [0, 24]}})",
       "header.w.shape: dimensions must be non-negative integers"},
      {R"({"w": {"dtype": "F32", "shape": [2, 3.0], "data_offsets": [0, 24]}})",
       "header.w.shape: dimensions must be non-negative integers"},
      {R"({"w": {"dtype": "F32", "shape": [9223372036854775807, 2, 0], "data_offsets": [0, 0]}})",
       "header.w.shape: shape [9223372036854775807, 2, 0] is too large"},
      {R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 24]}})",
       "header.w.shape: shape [4294967296, 4294967296] is too large"},
      {R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [-1, 24]}})",
       "header.w.data_offsets: must be two non-negative integers"},
      {R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, "24"]}})",
       "header.w.data_offsets: must be two non-negative integers"},
  };
  for (const auto& [header, says] : cases) EXPECT_NE(header_error(header).find(says), std::string::npos) << header;
}

// A manifest that is a device or a huge file is refused after 256 MiB, not read to exhaustion.
TEST_F(Reject, AManifestPastTheSizeLimitIsRefused) {
  if (!std::filesystem::exists("/dev/zero")) GTEST_SKIP() << "no /dev/zero";
  std::filesystem::remove(tmp_ / "trace.json");
  std::filesystem::create_symlink("/dev/zero", tmp_ / "trace.json");
  const std::string e = read_error(tmp_.path());
  EXPECT_NE(e.find("trace.json: larger than 256 MiB"), std::string::npos) << e;
}

// Fuzz finding: nesting this deep parsed, then overflowed the stack in the error message that printed the shape
// (nlohmann's dump() recurses once per level). Refused before parsing, naming the file and where.
TEST_F(Reject, NestingDeeperThanTheLimit) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  std::string m = kManifest;
  m.replace(m.find("[2, 3]"), 6, deep);
  write_file(tmp_ / "trace.json", m);
  auto e = read_error(tmp_.path());
  EXPECT_NE(e.find("trace.json: arrays and objects nested deeper than 64 levels (line 3, column 99)"),
            std::string::npos)
      << e;
  write_file(tmp_ / "trace.json", kManifest);
  write_raw_safetensors(iter_file(), R"({"w": {"dtype": "F32", "shape": )" + deep + "}}", f32_bytes(6));
  e = read_error(tmp_.path());
  EXPECT_NE(e.find(iter_name() + ": header: arrays and objects nested deeper than 64 levels"), std::string::npos) << e;
}

TEST(RejectDir, NotATraceDirectory) {
  TempDir tmp;
  EXPECT_THROW(TraceReader(tmp / "nope"), TraceFormatError);
  EXPECT_THROW(TraceReader(tmp.path()), TraceFormatError);  // no trace.json
}

TEST(NonFinite, NaNAndInfAreReadAndCountedNotFatal) {
  TempDir tmp;
  write_file(tmp / "trace.json", kManifest);
  std::string data = f32_bytes(6);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::memcpy(data.data(), &nan, 4);
  std::memcpy(data.data() + 8, &inf, 4);
  write_raw_safetensors(tmp / "iter_000000.safetensors", kGoodHeader, data);
  TraceReader r(tmp.path());
  IterationData d;
  r.read(0, d);
  const TensorStats s = compute_stats(d.tensors[0].values);
  EXPECT_EQ(s.nan, 1);
  EXPECT_EQ(s.inf, 1);
  EXPECT_EQ(s.count, 4);
}

}  // namespace
}  // namespace edgc::traces
