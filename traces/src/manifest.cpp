#include "edgc/traces/manifest.hpp"

#include <fstream>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "edgc/core/checked_int.hpp"
#include "edgc/core/error.hpp"
#include "json_strict.hpp"

namespace edgc::traces {
namespace {

using nlohmann::json;

// What a trace may claim: bounds that follow from what edgc can hold, so that no later allocation, product or
// narrowing to int can overflow (a crafted manifest is refused naming the field, never a crash): pipeline stages
// (per-stage tables are allocated), layer indices, elements of one tensor or boundary message (4 Ti elements, far
// past any GPU's memory) and of all tensors (1 Pi: per-stage sums cannot wrap), iteration numbers (exact in a double),
// and the manifest's own size.
constexpr int kMaxStages = kMaxTraceStages;
constexpr int kMaxLayer = 1 << 24;
constexpr std::int64_t kMaxElements = kMaxTensorElements;
constexpr std::int64_t kMaxTraceElements = std::int64_t{1} << 50;  // all tensors together: sums stay exact in int64
constexpr std::int64_t kMaxIteration = std::int64_t{1} << 53;
constexpr std::size_t kMaxManifestBytes = std::size_t{256} << 20;

// Typed access to one JSON object of the manifest, naming file and field path in every error.
class Fields {
 public:
  Fields(const json& j, std::string where, std::string prefix)
      : j_(j), where_(std::move(where)), prefix_(std::move(prefix)) {
    if (!j_.is_object()) fail("", "expected an object, got " + detail::json_type_name(j_));
  }

  [[noreturn]] void fail(const std::string& key, const std::string& detail) const {
    std::string field = prefix_;
    if (!key.empty()) field += (field.empty() ? "" : ".") + key;
    throw TraceFormatError(where_, field, detail);
  }

  void only(std::initializer_list<const char*> allowed) const {
    for (const auto& [k, v] : j_.items()) {
      bool ok = false;
      for (const char* a : allowed) ok = ok || k == a;
      if (!ok) fail(k, "unknown key");
    }
  }

  const json& required(const std::string& key) const {
    const auto it = j_.find(key);
    if (it == j_.end()) fail(key, "missing");
    return *it;
  }
  bool has(const std::string& key) const { return j_.contains(key); }

  std::string string(const std::string& key) const {
    const json& v = required(key);
    if (!v.is_string()) fail(key, "expected a string, got " + detail::json_type_name(v));
    return v.get<std::string>();
  }
  /// An integer >= min (up to 2^63 - 1).
  std::int64_t integer(const std::string& key, std::int64_t min) const {
    return checked<std::int64_t>(key, required(key), min, std::numeric_limits<std::int64_t>::max(),
                                 {.one_sided = true});
  }
  /// An integer in [lo, hi], as the type it is kept in; a value past int64 (a large unsigned) is out of range too.
  template <typename Int = std::int64_t>
  Int ranged(const std::string& key, std::type_identity_t<Int> lo, std::type_identity_t<Int> hi) const {
    return checked<Int>(key, required(key), lo, hi, {});
  }
  /// A list of positive dimensions whose product stays within kMaxElements (checked before each multiplication).
  std::vector<std::int64_t> dims(const std::string& key, const char* expected) const {
    const json& shape = required(key);
    if (!shape.is_array()) fail(key, std::string("expected ") + expected + ", got " + shape.dump());
    const auto too_large = [&] {
      return shape.dump() + " has more than 2^42 elements: larger than any tensor edgc can hold";
    };
    std::vector<std::int64_t> out;
    std::int64_t product = 1;
    for (const auto& d : shape) {
      try {
        out.push_back(json_integer<std::int64_t>(d, 1, kMaxElements));
      } catch (const IntegerError& e) {
        fail(key, e.kind() == IntegerError::Kind::kAbove ? too_large()
                                                         : "dimensions must be positive integers, got " + shape.dump());
      }
      const auto next = checked_multiply(product, out.back(), kMaxElements);  // the product so far, never wrapped
      if (!next) fail(key, too_large());
      product = *next;
    }
    return out;
  }
  double number(const std::string& key) const {
    const json& v = required(key);
    if (!v.is_number()) fail(key, "expected a number, got " + v.dump());
    return v.get<double>();
  }

 private:
  template <typename Int>
  Int checked(const std::string& key, const json& v, Int lo, Int hi, const IntegerRule& rule) const {
    try {
      return json_integer<Int>(v, lo, hi, rule);
    } catch (const IntegerError& e) {
      fail(key, e.what());
    }
  }

  const json& j_;
  std::string where_;
  std::string prefix_;
};

// The "dtype" field of a tensor or boundary: a storage type of gradients (not I64).
Dtype storage_dtype(const Fields& f) {
  const std::string dtype = f.string("dtype");
  const auto d = parse_manifest_dtype(dtype);
  if (!d || *d == Dtype::kI64) f.fail("dtype", "unknown dtype '" + dtype + "' (supported: f32, f16, bf16)");
  return *d;
}

// A tensor or boundary name: non-empty, without '@', unique among both (`names` collects them). `duplicate`: the
// message for a repeated name, given the name.
template <typename Message>
void check_name(const std::string& name, const std::string& field, std::set<std::string>& names,
                const std::string& where, Message duplicate) {
  if (name.empty()) throw TraceFormatError(where, field, "must not be empty");
  if (name.find('@') != std::string::npos) throw TraceFormatError(where, field, "'" + name + "' must not contain '@'");
  if (!names.insert(name).second) throw TraceFormatError(where, field, duplicate(name));
}

TensorInfo parse_tensor(const json& j, const std::string& where, std::size_t index) {
  const Fields f(j, where, "tensors[" + std::to_string(index) + "]");
  f.only({"name", "shape", "dtype", "stage", "layer", "mode"});
  TensorInfo t;
  t.name = f.string("name");
  t.shape = f.dims("shape", "an array of positive integers");
  t.dtype = storage_dtype(f);
  t.stage = f.ranged<int>("stage", 0, kMaxStages - 1);  // below num_stages: validate_manifest
  t.layer = f.has("layer") ? f.ranged<int>("layer", -1, kMaxLayer) : -1;
  const std::string mode = f.has("mode") ? f.string("mode") : "full";
  if (mode == "full") {
    t.mode = CaptureMode::kFull;
  } else if (mode == "blocks") {
    t.mode = CaptureMode::kBlocks;
  } else {
    f.fail("mode", "unknown mode '" + mode + "' (supported: full, blocks)");
  }
  return t;
}

BoundaryInfo parse_boundary(const json& j, const std::string& where, std::size_t index) {
  const Fields f(j, where, "boundaries[" + std::to_string(index) + "]");
  f.only({"name", "stage", "shape", "dtype", "micro_batch"});
  BoundaryInfo b;
  b.name = f.string("name");
  b.stage = f.ranged<int>("stage", 1, kMaxStages - 1);
  const std::vector<std::int64_t> shape = f.dims("shape", "[tokens, hidden], two positive integers");
  if (shape.size() != 2)
    f.fail("shape", "expected [tokens, hidden], two positive integers, got " + f.required("shape").dump());
  b.rows = shape[0];
  b.cols = shape[1];
  b.micro_batch = f.ranged("micro_batch", 1, b.rows);
  if (b.rows % b.micro_batch != 0) {
    f.fail("micro_batch",
           std::to_string(b.micro_batch) + " does not divide the " + std::to_string(b.rows) + " tokens of shape[0]");
  }
  b.dtype = storage_dtype(f);
  return b;
}

IterationInfo parse_iteration(const json& j, const std::string& where, std::size_t index) {
  const Fields f(j, where, "iterations[" + std::to_string(index) + "]");
  f.only({"iteration", "file", "loss"});
  IterationInfo it;
  it.iteration = f.ranged("iteration", 0, kMaxIteration);
  it.file = f.string("file");
  if (f.has("loss") && !f.required("loss").is_null()) it.loss = f.number("loss");
  return it;
}

}  // namespace

std::int64_t TensorInfo::numel() const noexcept {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

int Manifest::find_tensor(const std::string& name) const noexcept {
  for (std::size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == name) return static_cast<int>(i);
  return -1;
}

int Manifest::find_boundary(const std::string& name) const noexcept {
  for (std::size_t i = 0; i < boundaries.size(); ++i)
    if (boundaries[i].name == name) return static_cast<int>(i);
  return -1;
}

std::vector<std::int64_t> stage_elements(const Manifest& m) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(m.num_stages), 0);
  for (const TensorInfo& t : m.tensors) out[static_cast<std::size_t>(t.stage)] += t.numel();
  return out;
}

int merged_stage(const Manifest& m, int t, int stages) {
  return static_cast<int>(static_cast<std::int64_t>(t) * stages / m.num_stages);
}

std::vector<int> stage_boundaries(const Manifest& m, int stages) {
  std::vector<int> out(static_cast<std::size_t>(stages), -1);
  for (std::size_t b = 0; b < m.boundaries.size(); ++b) {
    const int to = merged_stage(m, m.boundaries[b].stage, stages);
    if (to != merged_stage(m, m.boundaries[b].stage - 1, stages))
      out[static_cast<std::size_t>(to)] = static_cast<int>(b);
  }
  return out;
}

std::string Manifest::version_string() const {
  return std::to_string(version) + (minor > 0 ? "." + std::to_string(minor) : "");
}

Manifest read_manifest(const std::filesystem::path& dir) {
  const std::filesystem::path path = dir / kManifestFileName;
  const std::string where = path.string();
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) throw TraceFormatError(dir.string(), "", "not a trace directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceFormatError(where, "", "cannot open the trace manifest");
  // Read at most kMaxManifestBytes + 1 bytes: a manifest pointed at a device or a huge file is refused, not slurped.
  std::string text;
  std::vector<char> chunk(std::size_t{1} << 16);
  while (text.size() <= kMaxManifestBytes &&
         in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())).gcount() > 0)
    text.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxManifestBytes)
    throw TraceFormatError(where, "", "larger than 256 MiB: not a trace manifest (they are a few kB to a few MB)");
  const json j = detail::parse_json_strict(text, where, "");
  const Fields top(j, where, "");
  if (top.string("format") != kTraceFormatName)
    top.fail("format", "expected \"" + std::string(kTraceFormatName) + "\", got \"" + top.string("format") + "\"");
  // "version": 1 (integer) or 1.1 (number); everything else is refused.
  const json& vj = top.required("version");
  int minor = -1;
  if (vj.is_number_integer() && vj.get<std::int64_t>() == kTraceFormatVersion) {
    minor = 0;
  } else if (vj.is_number_float() && vj.dump() == "1.1") {
    minor = 1;
  }
  if (minor < 0) {
    top.fail("version", "unsupported trace format version " + vj.dump() + " (this edgc reads versions 1 and 1." +
                            std::to_string(kTraceFormatMinor) + ")");
  }
  top.only({"format", "version", "model", "sampling", "tensors", "boundaries", "iterations", "provenance"});

  Manifest m;
  m.version = kTraceFormatVersion;
  m.minor = minor;
  const json& model = top.required("model");
  const Fields mf(model, where, "model");
  m.model_name = mf.string("name");
  m.num_stages = mf.ranged<int>("num_stages", 1, kMaxStages);
  m.model_json = model.dump();
  if (top.has("provenance")) {
    if (!top.required("provenance").is_object()) top.fail("provenance", "expected an object");
    m.provenance_json = top.required("provenance").dump();
  }
  if (top.has("sampling")) {
    const Fields sf(top.required("sampling"), where, "sampling");
    sf.only({"block_elems", "fraction", "seed"});
    SamplingInfo s;
    s.block_elems = sf.ranged("block_elems", 1, kMaxElements);
    s.fraction = sf.number("fraction");
    if (!(s.fraction > 0.0 && s.fraction <= 1.0)) sf.fail("fraction", "must be in (0, 1]");
    s.seed = static_cast<std::uint64_t>(sf.integer("seed", 0));
    m.sampling = s;
  }
  const json& tensors = top.required("tensors");
  if (!tensors.is_array()) top.fail("tensors", "expected an array");
  for (std::size_t i = 0; i < tensors.size(); ++i) m.tensors.push_back(parse_tensor(tensors[i], where, i));
  if (top.has("boundaries")) {
    if (minor < 1) top.fail("boundaries", "stage-boundary gradients need \"version\": 1.1 (this file says 1)");
    const json& boundaries = top.required("boundaries");
    if (!boundaries.is_array()) top.fail("boundaries", "expected an array");
    for (std::size_t i = 0; i < boundaries.size(); ++i) m.boundaries.push_back(parse_boundary(boundaries[i], where, i));
  }
  const json& iterations = top.required("iterations");
  if (!iterations.is_array()) top.fail("iterations", "expected an array");
  for (std::size_t i = 0; i < iterations.size(); ++i) m.iterations.push_back(parse_iteration(iterations[i], where, i));
  validate_manifest(m, where);
  return m;
}

void validate_manifest(const Manifest& m, const std::string& where) {
  if (m.num_stages < 1) throw TraceFormatError(where, "model.num_stages", "must be >= 1");
  if (m.tensors.empty()) throw TraceFormatError(where, "tensors", "a trace needs at least one tensor");
  if (m.iterations.empty()) throw TraceFormatError(where, "iterations", "a trace needs at least one iteration");
  std::set<std::string> names;
  bool any_blocks = false;
  std::int64_t elements = 0;
  for (std::size_t i = 0; i < m.tensors.size(); ++i) {
    const TensorInfo& t = m.tensors[i];
    const std::string f = "tensors[" + std::to_string(i) + "]";
    check_name(t.name, f + ".name", names, where,
               [](const std::string& n) { return "duplicate tensor name '" + n + "'"; });
    if (t.stage >= m.num_stages) {
      throw TraceFormatError(
          where, f + ".stage",
          std::to_string(t.stage) + " is not below model.num_stages = " + std::to_string(m.num_stages));
    }
    any_blocks = any_blocks || t.mode == CaptureMode::kBlocks;
    const auto sum = checked_add(elements, t.numel(), kMaxTraceElements);
    if (!sum) throw TraceFormatError(where, f + ".shape", "the tensors hold more than 2^50 elements in all");
    elements = *sum;
  }
  if (!m.boundaries.empty() && m.minor < 1)
    throw TraceFormatError(where, "boundaries", "stage-boundary gradients need format version 1.1");
  for (std::size_t i = 0; i < m.boundaries.size(); ++i) {
    const BoundaryInfo& b = m.boundaries[i];
    const std::string f = "boundaries[" + std::to_string(i) + "]";
    check_name(b.name, f + ".name", names, where, [](const std::string& n) {
      return "duplicate name '" + n + "' (tensor and boundary names share one namespace)";
    });
    if (b.stage < 1 || b.stage >= m.num_stages) {
      throw TraceFormatError(where, f + ".stage",
                             std::to_string(b.stage) + " must be in [1, model.num_stages = " +
                                 std::to_string(m.num_stages) + "): stage 0 receives no activations");
    }
    if (i > 0 && b.stage <= m.boundaries[i - 1].stage)
      throw TraceFormatError(where, f + ".stage", "boundaries must be listed by strictly increasing stage");
    if (b.rows < 1 || b.cols < 1 || b.micro_batch < 1 || b.rows % b.micro_batch != 0)
      throw TraceFormatError(where, f + ".shape", "needs positive tokens and hidden, tokens a multiple of micro_batch");
  }
  if (any_blocks && !m.sampling)
    throw TraceFormatError(where, "sampling", "missing, but some tensors are captured in blocks");
  std::set<std::string> files;
  for (std::size_t i = 0; i < m.iterations.size(); ++i) {
    const IterationInfo& it = m.iterations[i];
    const std::string f = "iterations[" + std::to_string(i) + "]";
    if (i > 0 && it.iteration <= m.iterations[i - 1].iteration)
      throw TraceFormatError(where, f + ".iteration", "iterations must be strictly increasing");
    if (it.file.empty() || it.file.find('/') != std::string::npos || it.file == "." || it.file == "..")
      throw TraceFormatError(where, f + ".file", "'" + it.file + "' must be a plain file name");
    if (!files.insert(it.file).second)
      throw TraceFormatError(where, f + ".file", "file '" + it.file + "' is listed twice");
  }
}

std::string manifest_to_json(const Manifest& m) {
  nlohmann::ordered_json j;
  j["format"] = kTraceFormatName;
  if (m.minor > 0) {
    j["version"] = nlohmann::ordered_json::parse(m.version_string());  // the number 1.1
  } else {
    j["version"] = m.version;
  }
  j["model"] = nlohmann::ordered_json::parse(m.model_json);
  j["model"]["name"] = m.model_name;
  j["model"]["num_stages"] = m.num_stages;
  if (m.sampling) {
    j["sampling"] = {
        {"block_elems", m.sampling->block_elems}, {"fraction", m.sampling->fraction}, {"seed", m.sampling->seed}};
  }
  j["tensors"] = nlohmann::ordered_json::array();
  for (const auto& t : m.tensors) {
    j["tensors"].push_back({{"name", t.name},
                            {"shape", t.shape},
                            {"dtype", manifest_name(t.dtype)},
                            {"stage", t.stage},
                            {"layer", t.layer},
                            {"mode", t.mode == CaptureMode::kFull ? "full" : "blocks"}});
  }
  if (!m.boundaries.empty()) {
    j["boundaries"] = nlohmann::ordered_json::array();
    for (const auto& b : m.boundaries) {
      j["boundaries"].push_back({{"name", b.name},
                                 {"stage", b.stage},
                                 {"shape", {b.rows, b.cols}},
                                 {"dtype", manifest_name(b.dtype)},
                                 {"micro_batch", b.micro_batch}});
    }
  }
  j["iterations"] = nlohmann::ordered_json::array();
  for (const auto& it : m.iterations) {
    nlohmann::ordered_json e = {{"iteration", it.iteration}, {"file", it.file}};
    e["loss"] = it.loss ? nlohmann::ordered_json(*it.loss) : nlohmann::ordered_json(nullptr);
    j["iterations"].push_back(std::move(e));
  }
  j["provenance"] = nlohmann::ordered_json::parse(m.provenance_json);
  return j.dump(1) + "\n";
}

}  // namespace edgc::traces
