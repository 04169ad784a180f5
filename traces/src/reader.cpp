#include "edgc/traces/reader.hpp"

#include <algorithm>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "edgc/core/error.hpp"
#include "edgc/traces/safetensors.hpp"

namespace edgc::traces {
namespace {

constexpr const char* kBlocksSuffix = "@blocks";
constexpr std::size_t kConvertChunkBytes = std::size_t{256} * 1024;

// Closes a file descriptor on scope exit.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

void read_blocks(int fd, const SafetensorsHeader& h, const SafetensorsEntry& values, const TensorInfo& t,
                 const std::string& path, std::vector<Block>& blocks) {
  const std::string key = t.name + kBlocksSuffix;
  const SafetensorsEntry* e = h.find(key);
  if (e == nullptr) throw TraceFormatError(path, key, "missing (tensor '" + t.name + "' is captured in blocks)");
  if (e->dtype != Dtype::kI64 || e->shape.size() != 2 || e->shape[1] != 2 || e->shape[0] < 1)
    throw TraceFormatError(path, key, "expected I64 with shape [B, 2], B >= 1, got " + shape_to_string(e->shape));
  std::vector<std::int64_t> raw(static_cast<std::size_t>(e->numel()));
  read_exact_at(fd, raw.data(), raw.size() * 8, h.data_start + e->begin, path);
  blocks.resize(raw.size() / 2);
  const std::int64_t numel = t.numel();
  std::int64_t total = 0;
  std::int64_t prev_end = 0;
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    blocks[b] = {raw[2 * b], raw[2 * b + 1]};
    const Block& bl = blocks[b];
    if (bl.length < 1 || bl.offset < prev_end || bl.offset > numel - bl.length) {
      throw TraceFormatError(path, key + "[" + std::to_string(b) + "]",
                             "block (" + std::to_string(bl.offset) + ", " + std::to_string(bl.length) +
                                 ") must be non-empty, increasing, non-overlapping and inside the tensor's " +
                                 std::to_string(numel) + " elements");
    }
    prev_end = bl.offset + bl.length;
    total += bl.length;
  }
  if (total != values.numel()) {
    throw TraceFormatError(path, key,
                           "blocks cover " + std::to_string(total) + " elements but '" + t.name + "' holds " +
                               std::to_string(values.numel()));
  }
}

// An entry's storage type against the manifest's.
void check_dtype(const SafetensorsEntry& e, const std::string& name, Dtype want, const std::string& path) {
  if (e.dtype != want) {
    throw TraceFormatError(
        path, name + ".dtype",
        std::string(safetensors_name(e.dtype)) + " does not match the manifest's " + std::string(manifest_name(want)));
  }
}

}  // namespace

TraceReader::TraceReader(std::filesystem::path dir) : dir_(std::move(dir)), manifest_(read_manifest(dir_)) {
  const std::string where = (dir_ / kManifestFileName).string();
  for (std::size_t i = 0; i < manifest_.iterations.size(); ++i) {
    const auto path = dir_ / manifest_.iterations[i].file;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      throw TraceFormatError(where, "iterations[" + std::to_string(i) + "].file",
                             "iteration file '" + path.string() + "' is missing");
    }
  }
}

bool TraceReader::next(IterationData& out) {
  if (cursor_ >= manifest_.iterations.size()) return false;
  read(cursor_++, out);
  return true;
}

void TraceReader::read(std::size_t index, IterationData& out) {
  const IterationInfo& info = manifest_.iterations.at(index);
  const std::string path = (dir_ / info.file).string();
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw TraceFormatError(path, "", "cannot open iteration file");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw IoError(path, "cannot stat");
  const auto file_size = static_cast<std::uint64_t>(st.st_size);
  const SafetensorsHeader h = read_safetensors_header(fd.get(), file_size, path);

  // Every entry must belong to the manifest: a value entry or the block list of a sampled tensor.
  for (const auto& e : h.entries) {
    std::string base = e.name;
    const bool is_blocks = base.size() > 7 && base.ends_with(kBlocksSuffix);
    if (is_blocks) base.resize(base.size() - 7);
    const int k = manifest_.find_tensor(base);
    const bool boundary = !is_blocks && manifest_.find_boundary(base) >= 0;
    if (!boundary &&
        (k < 0 || (is_blocks && manifest_.tensors[static_cast<std::size_t>(k)].mode != CaptureMode::kBlocks)))
      throw TraceFormatError(path, e.name, "entry is not in the trace manifest");
  }

  out.index = index;
  out.info = &info;
  out.tensors.resize(manifest_.tensors.size());
  for (std::size_t k = 0; k < manifest_.tensors.size(); ++k) {
    const TensorInfo& t = manifest_.tensors[k];
    TensorData& td = out.tensors[k];
    const SafetensorsEntry* e = h.find(t.name);
    if (e == nullptr) throw TraceFormatError(path, t.name, "tensor listed in the manifest is missing");
    check_dtype(*e, t.name, t.dtype, path);
    if (t.mode == CaptureMode::kFull) {
      if (e->shape != t.shape) {
        throw TraceFormatError(
            path, t.name + ".shape",
            shape_to_string(e->shape) + " does not match the manifest's " + shape_to_string(t.shape));
      }
      td.blocks.clear();
    } else {
      if (e->shape.size() != 1 || e->shape[0] < 1)
        throw TraceFormatError(path, t.name + ".shape", "sampled blocks must be 1-D, got " + shape_to_string(e->shape));
      read_blocks(fd.get(), h, *e, t, path, td.blocks);
    }
    td.values.resize(static_cast<std::size_t>(e->numel()));
    read_values(fd.get(), t.dtype, h.data_start + e->begin, td.values, path);
  }
  out.boundaries.resize(manifest_.boundaries.size());
  for (std::size_t k = 0; k < manifest_.boundaries.size(); ++k) {
    const BoundaryInfo& b = manifest_.boundaries[k];
    const SafetensorsEntry* e = h.find(b.name);
    if (e == nullptr) throw TraceFormatError(path, b.name, "boundary gradient listed in the manifest is missing");
    check_dtype(*e, b.name, b.dtype, path);
    const std::vector<std::int64_t> shape{b.rows, b.cols};
    if (e->shape != shape) {
      throw TraceFormatError(path, b.name + ".shape",
                             shape_to_string(e->shape) + " does not match the manifest's " + shape_to_string(shape));
    }
    out.boundaries[k].resize(static_cast<std::size_t>(b.numel()));
    read_values(fd.get(), b.dtype, h.data_start + e->begin, out.boundaries[k], path);
  }
  bytes_read_ += file_size;
}

void TraceReader::read_values(int fd, Dtype dtype, std::uint64_t at, std::vector<float>& out, const std::string& path) {
  const std::size_t n = out.size();
  if (dtype == Dtype::kF32) {
    read_exact_at(fd, out.data(), n * 4, at, path);
    return;
  }
  // Read and convert in cache-sized chunks: the raw bytes never leave L2, so f16/bf16 costs one pass over memory
  // for the output instead of three.
  const std::size_t esize = element_size(dtype);
  const std::size_t chunk = kConvertChunkBytes / esize;
  scratch_.resize(std::min(n, chunk) * esize);
  for (std::size_t done = 0; done < n; done += chunk) {
    const std::size_t len = std::min(chunk, n - done);
    read_exact_at(fd, scratch_.data(), len * esize, at + done * esize, path);
    convert_to_f32(dtype, scratch_.data(), out.data() + done, len);
  }
}

}  // namespace edgc::traces
