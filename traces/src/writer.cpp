#include "edgc/traces/writer.hpp"

#include <cstdio>

#include "edgc/core/error.hpp"
#include "edgc/traces/safetensors.hpp"

namespace edgc::traces {

TraceWriter::TraceWriter(std::filesystem::path dir, Manifest header)
    : staging_(std::move(dir)), manifest_(std::move(header)) {
  if (!manifest_.iterations.empty()) throw InternalError("TraceWriter: header must not list iterations");
  manifest_.minor = manifest_.boundaries.empty() ? 0 : 1;  // the oldest version that holds the content
  // Validate everything but the (still empty) iteration list now, before any file is written.
  Manifest probe = manifest_;
  probe.iterations.push_back({0, iteration_file_name(0), std::nullopt});
  validate_manifest(probe, staging_.final_path().string());
  converted_.resize(manifest_.tensors.size() + manifest_.boundaries.size());
  block_buffers_.resize(manifest_.tensors.size());
}

std::string TraceWriter::iteration_file_name(std::int64_t iteration) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "iter_%06lld.safetensors", static_cast<long long>(iteration));
  return buf;
}

void TraceWriter::write_iteration(std::int64_t iteration, std::optional<double> loss,
                                  std::span<const TensorView> tensors,
                                  std::span<const std::span<const float>> boundaries) {
  if (finished_) throw InternalError("TraceWriter: write after finish");
  if (tensors.size() != manifest_.tensors.size()) throw InternalError("TraceWriter: tensor count mismatch");
  if (boundaries.size() != manifest_.boundaries.size()) throw InternalError("TraceWriter: boundary count mismatch");
  if (iteration < 0 || (!manifest_.iterations.empty() && iteration <= manifest_.iterations.back().iteration))
    throw InternalError("TraceWriter: iterations must be non-negative and increasing");
  std::vector<SafetensorsBlob> blobs;
  blobs.reserve(2 * tensors.size());
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    const TensorInfo& t = manifest_.tensors[k];
    const TensorView& v = tensors[k];
    std::vector<std::int64_t> shape = t.shape;
    if (t.mode == CaptureMode::kFull) {
      if (static_cast<std::int64_t>(v.values.size()) != t.numel() || !v.blocks.empty())
        throw InternalError("TraceWriter: tensor '" + t.name + "' needs " + std::to_string(t.numel()) + " values");
    } else {
      std::int64_t total = 0;
      std::int64_t prev_end = 0;
      auto& raw = block_buffers_[k];
      raw.clear();
      for (const Block& b : v.blocks) {
        if (b.length < 1 || b.offset < prev_end || b.offset > t.numel() - b.length)
          throw InternalError("TraceWriter: invalid block list for '" + t.name + "'");
        prev_end = b.offset + b.length;
        total += b.length;
        raw.push_back(b.offset);
        raw.push_back(b.length);
      }
      if (v.blocks.empty() || total != static_cast<std::int64_t>(v.values.size()))
        throw InternalError("TraceWriter: blocks of '" + t.name + "' do not match its values");
      shape = {total};
    }
    auto& buf = converted_[k];
    buf.resize(v.values.size() * element_size(t.dtype));
    convert_from_f32(t.dtype, v.values.data(), buf.data(), v.values.size());
    blobs.push_back({t.name, t.dtype, std::move(shape), buf.data(), buf.size()});
    if (t.mode == CaptureMode::kBlocks) {
      const auto& raw = block_buffers_[k];
      blobs.push_back({t.name + "@blocks",
                       Dtype::kI64,
                       {static_cast<std::int64_t>(v.blocks.size()), 2},
                       raw.data(),
                       raw.size() * 8});
    }
  }
  for (std::size_t k = 0; k < boundaries.size(); ++k) {
    const BoundaryInfo& b = manifest_.boundaries[k];
    if (static_cast<std::int64_t>(boundaries[k].size()) != b.numel())
      throw InternalError("TraceWriter: boundary '" + b.name + "' needs " + std::to_string(b.numel()) + " values");
    auto& buf = converted_[tensors.size() + k];
    buf.resize(boundaries[k].size() * element_size(b.dtype));
    convert_from_f32(b.dtype, boundaries[k].data(), buf.data(), boundaries[k].size());
    blobs.push_back({b.name, b.dtype, {b.rows, b.cols}, buf.data(), buf.size()});
  }
  const std::string file = iteration_file_name(iteration);
  write_safetensors(staging_.path() / file, blobs);
  manifest_.iterations.push_back({iteration, file, loss});
}

const Manifest& TraceWriter::finish() {
  if (finished_) return manifest_;
  validate_manifest(manifest_, staging_.final_path().string());
  write_file_atomic(staging_.path() / kManifestFileName, manifest_to_json(manifest_));
  staging_.commit();
  finished_ = true;
  return manifest_;
}

}  // namespace edgc::traces
