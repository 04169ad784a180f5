#include "edgc/traces/safetensors.hpp"

#include <unistd.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "edgc/core/atomic_file.hpp"
#include "edgc/core/checked_int.hpp"
#include "edgc/core/error.hpp"
#include "json_strict.hpp"

namespace edgc::traces {
namespace {

// The safetensors specification caps the header at 100 MB; a larger length means a corrupted file.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

SafetensorsEntry parse_entry(const std::string& name, const nlohmann::json& v, const std::string& path) {
  const std::string f = "header." + name;
  if (!v.is_object()) throw TraceFormatError(path, f, "expected an object, got " + detail::json_type_name(v));
  SafetensorsEntry e;
  e.name = name;
  const auto dt = v.find("dtype");
  if (dt == v.end() || !dt->is_string()) throw TraceFormatError(path, f + ".dtype", "missing or not a string");
  const auto parsed = parse_safetensors_dtype(dt->get<std::string>());
  if (!parsed) {
    throw TraceFormatError(path, f + ".dtype",
                           "unknown dtype '" + dt->get<std::string>() + "' (supported: F32, F16, BF16, I64)");
  }
  e.dtype = *parsed;
  const auto sh = v.find("shape");
  if (sh == v.end() || !sh->is_array()) throw TraceFormatError(path, f + ".shape", "missing or not an array");
  for (const auto& d : *sh) {
    try {
      e.shape.push_back(json_integer<std::int64_t>(d, 0, std::numeric_limits<std::int64_t>::max()));
    } catch (const IntegerError&) {
      throw TraceFormatError(path, f + ".shape", "dimensions must be non-negative integers, got " + sh->dump());
    }
  }
  const auto off = v.find("data_offsets");
  const std::string offsets = "must be two non-negative integers [begin, end]";
  if (off == v.end() || !off->is_array() || off->size() != 2)
    throw TraceFormatError(path, f + ".data_offsets", offsets);
  try {  // within the file: read_safetensors_header
    e.begin = json_integer<std::uint64_t>((*off)[0], 0, std::numeric_limits<std::uint64_t>::max());
    e.end = json_integer<std::uint64_t>((*off)[1], 0, std::numeric_limits<std::uint64_t>::max());
  } catch (const IntegerError&) {
    throw TraceFormatError(path, f + ".data_offsets", offsets);
  }
  if (e.end < e.begin) throw TraceFormatError(path, f + ".data_offsets", "end is before begin");
  // Elements and bytes must fit int64 at every partial product (numel() multiplies in order); that the bytes match
  // data_offsets, which lie within the file, then bounds them by the file's size.
  const auto size = static_cast<std::int64_t>(element_size(e.dtype));
  const auto elements = checked_product(e.shape, std::numeric_limits<std::int64_t>::max() / size);
  if (!elements) throw TraceFormatError(path, f + ".shape", "shape " + shape_to_string(e.shape) + " is too large");
  const auto need = static_cast<std::uint64_t>(*elements * size);
  if (e.end - e.begin != need) {
    throw TraceFormatError(path, f + ".data_offsets",
                           std::to_string(e.end - e.begin) + " bytes do not match shape " + shape_to_string(e.shape) +
                               " of " + std::string(safetensors_name(e.dtype)) + " (" + std::to_string(need) +
                               " bytes)");
  }
  return e;
}

}  // namespace

std::string shape_to_string(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void read_exact_at(int fd, void* dst, std::size_t bytes, std::uint64_t offset, const std::string& path) {
  auto* p = static_cast<char*>(dst);
  while (bytes > 0) {
    const ssize_t got = ::pread(fd, p, bytes, static_cast<off_t>(offset));
    if (got < 0) throw IoError(path, "read failed");
    if (got == 0) throw TraceFormatError(path, "", "truncated file: unexpected end of file");
    p += got;
    bytes -= static_cast<std::size_t>(got);
    offset += static_cast<std::uint64_t>(got);
  }
}

std::int64_t SafetensorsEntry::numel() const noexcept {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

const SafetensorsEntry* SafetensorsHeader::find(std::string_view name) const noexcept {
  for (const auto& e : entries)
    if (e.name == name) return &e;
  return nullptr;
}

SafetensorsHeader read_safetensors_header(int fd, std::uint64_t file_size, const std::string& path) {
  if (file_size < 8) {
    throw TraceFormatError(
        path, "header length",
        "truncated file: " + std::to_string(file_size) + " bytes, less than the 8-byte header length");
  }
  std::uint64_t n = 0;
  read_exact_at(fd, &n, 8, 0, path);  // little-endian host, checked in dtype.cpp
  if (n > file_size - 8) {
    throw TraceFormatError(
        path, "header length",
        std::to_string(n) + " bytes runs past the end of the file (" + std::to_string(file_size) + " bytes)");
  }
  if (n > kMaxHeaderBytes) throw TraceFormatError(path, "header length", std::to_string(n) + " bytes is too large");
  std::string text(n, '\0');
  read_exact_at(fd, text.data(), n, 8, path);
  const nlohmann::json j = detail::parse_json_strict(text, path, "header");
  if (!j.is_object())
    throw TraceFormatError(path, "header", "expected a JSON object, got " + detail::json_type_name(j));

  SafetensorsHeader h;
  h.data_start = 8 + n;
  const std::uint64_t data_size = file_size - h.data_start;
  for (const auto& [name, v] : j.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) throw TraceFormatError(path, "header.__metadata__", "expected an object");
      continue;
    }
    SafetensorsEntry e = parse_entry(name, v, path);
    if (e.end > data_size) {
      throw TraceFormatError(path, "header." + name + ".data_offsets",
                             "truncated file: data ends at byte " + std::to_string(h.data_start + e.end) +
                                 " but the file has " + std::to_string(file_size) + " bytes");
    }
    h.entries.push_back(std::move(e));
  }
  std::sort(h.entries.begin(), h.entries.end(),
            [](const SafetensorsEntry& a, const SafetensorsEntry& b) { return a.begin < b.begin; });
  for (std::size_t i = 1; i < h.entries.size(); ++i) {
    if (h.entries[i].begin < h.entries[i - 1].end) {
      throw TraceFormatError(path, "header." + h.entries[i].name + ".data_offsets",
                             "overlaps the data of '" + h.entries[i - 1].name + "'");
    }
  }
  return h;
}

void write_safetensors(const std::filesystem::path& path, const std::vector<SafetensorsBlob>& blobs) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  std::uint64_t offset = 0;
  for (const auto& b : blobs) {
    std::uint64_t need = element_size(b.dtype);
    for (std::int64_t d : b.shape) need *= static_cast<std::uint64_t>(d);
    if (need != b.bytes) throw InternalError("write_safetensors: blob '" + b.name + "' size does not match shape");
    header[b.name] = {
        {"dtype", safetensors_name(b.dtype)}, {"shape", b.shape}, {"data_offsets", {offset, offset + b.bytes}}};
    offset += b.bytes;
  }
  std::string text = header.dump();
  text.append((8 - (text.size() + 8) % 8) % 8, ' ');  // data buffer starts 8-byte aligned
  const std::uint64_t n = text.size();
  AtomicFileWriter w(path);
  w.write(&n, 8);
  w.write(text.data(), text.size());
  for (const auto& b : blobs) w.write(b.data, b.bytes);
  w.commit();
}

}  // namespace edgc::traces
