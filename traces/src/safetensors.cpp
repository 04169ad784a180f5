#include "edgc/traces/safetensors.hpp"

#include <unistd.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "edgc/core/atomic_file.hpp"
#include "edgc/core/checked_int.hpp"
#include "edgc/core/error.hpp"
#include "json_strict.hpp"

namespace edgc::traces {
namespace {

// The safetensors specification caps the header at 100 MB; a larger length means a corrupted file.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

// Entry `name`'s dtype, which must be one the reader knows.
Dtype entry_dtype(const std::string& name, const std::string& dtype, const std::string& path) {
  const auto parsed = parse_safetensors_dtype(dtype);
  if (!parsed)
    throw TraceFormatError(path, "header." + name + ".dtype",
                           "unknown dtype '" + dtype + "' (supported: F32, F16, BF16, I64)");
  return *parsed;
}

// The checks of one entry's offsets against its shape (after its dtype's, entry_dtype).
SafetensorsEntry make_entry(const std::string& name, Dtype dtype, std::vector<std::int64_t> shape, std::uint64_t begin,
                            std::uint64_t end, const std::string& path) {
  const std::string f = "header." + name;
  SafetensorsEntry e;
  e.name = name;
  e.dtype = dtype;
  e.shape = std::move(shape);
  e.begin = begin;
  e.end = end;
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

// One entry of the strictly parsed header: the types of its values, then make_entry.
SafetensorsEntry parse_entry(const std::string& name, const nlohmann::json& v, const std::string& path) {
  const std::string f = "header." + name;
  if (!v.is_object()) throw TraceFormatError(path, f, "expected an object, got " + detail::json_type_name(v));
  const auto dt = v.find("dtype");
  if (dt == v.end() || !dt->is_string()) throw TraceFormatError(path, f + ".dtype", "missing or not a string");
  const Dtype dtype = entry_dtype(name, dt->get<std::string>(), path);
  const auto sh = v.find("shape");
  if (sh == v.end() || !sh->is_array()) throw TraceFormatError(path, f + ".shape", "missing or not an array");
  std::vector<std::int64_t> shape;
  for (const auto& d : *sh) {
    try {
      shape.push_back(json_integer<std::int64_t>(d, 0, std::numeric_limits<std::int64_t>::max()));
    } catch (const IntegerError&) {
      throw TraceFormatError(path, f + ".shape", "dimensions must be non-negative integers, got " + sh->dump());
    }
  }
  const auto off = v.find("data_offsets");
  const std::string offsets = "must be two non-negative integers [begin, end]";
  if (off == v.end() || !off->is_array() || off->size() != 2)
    throw TraceFormatError(path, f + ".data_offsets", offsets);
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  try {  // within the file: read_safetensors_header
    begin = json_integer<std::uint64_t>((*off)[0], 0, std::numeric_limits<std::uint64_t>::max());
    end = json_integer<std::uint64_t>((*off)[1], 0, std::numeric_limits<std::uint64_t>::max());
  } catch (const IntegerError&) {
    throw TraceFormatError(path, f + ".data_offsets", offsets);
  }
  return make_entry(name, dtype, std::move(shape), begin, end, path);
}

// A header entry as the plain scan reads it.
struct PlainEntry {
  std::string name;
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

// A direct scan of a header in the plain form writers produce: one object of entries {"dtype": string, "shape":
// [integers], "data_offsets": [integer, integer]} (the keys in any order, each once) and at most one
// "__metadata__" object of strings, ASCII strings without escapes, integers up to 2^63 − 1 without sign, fraction
// or exponent, JSON whitespace anywhere. Anything else (other JSON, or JSON that is not a plain header, or a
// repeated key) gives nullopt, and the strict parser reads the text: so whatever the scan takes, the strict reader
// would take with the same values. The entries come sorted by name, as the strict parser's object holds them.
class PlainHeaderScan {
 public:
  explicit PlainHeaderScan(std::string_view text) : t_(text) {}

  std::optional<std::vector<PlainEntry>> entries() {
    std::vector<PlainEntry> out;
    if (!eat('{')) return std::nullopt;
    bool metadata = false;
    if (!eat('}')) {
      do {
        std::string_view key;
        if (!string(key) || !eat(':')) return std::nullopt;
        if (key == "__metadata__") {
          if (metadata || !metadata_object()) return std::nullopt;
          metadata = true;
        } else {
          PlainEntry e;
          e.name = std::string(key);
          if (!entry_object(e)) return std::nullopt;
          out.push_back(std::move(e));
        }
      } while (eat(','));
      if (!eat('}')) return std::nullopt;
    }
    skip_space();
    if (i_ != t_.size()) return std::nullopt;
    std::sort(out.begin(), out.end(), [](const PlainEntry& a, const PlainEntry& b) { return a.name < b.name; });
    for (std::size_t k = 1; k < out.size(); ++k)
      if (out[k].name == out[k - 1].name) return std::nullopt;  // a duplicate: the strict reader's error
    return out;
  }

 private:
  void skip_space() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
  }
  bool eat(char c) {
    skip_space();
    if (i_ >= t_.size() || t_[i_] != c) return false;
    ++i_;
    return true;
  }
  bool string(std::string_view& out) {
    if (!eat('"')) return false;
    const std::size_t start = i_;
    for (; i_ < t_.size() && t_[i_] != '"'; ++i_) {
      const auto c = static_cast<unsigned char>(t_[i_]);
      if (c == '\\' || c < 0x20 || c >= 0x80) return false;
    }
    if (i_ >= t_.size()) return false;
    out = t_.substr(start, i_ - start);
    ++i_;
    return true;
  }
  bool integer(std::uint64_t& v) {
    skip_space();
    const std::size_t start = i_;
    v = 0;
    for (; i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9'; ++i_) {
      const auto digit = static_cast<std::uint64_t>(t_[i_] - '0');
      if (v > (static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) - digit) / 10) return false;
      v = v * 10 + digit;
    }
    const std::size_t digits = i_ - start;
    if (digits == 0 || (digits > 1 && t_[start] == '0')) return false;
    return i_ >= t_.size() || (t_[i_] != '.' && t_[i_] != 'e' && t_[i_] != 'E');
  }
  bool integers(std::vector<std::uint64_t>& out) {
    if (!eat('[')) return false;
    if (eat(']')) return true;
    do {
      std::uint64_t v = 0;
      if (!integer(v)) return false;
      out.push_back(v);
    } while (eat(','));
    return eat(']');
  }
  bool metadata_object() {
    if (!eat('{')) return false;
    if (eat('}')) return true;
    std::vector<std::string_view> keys;
    do {
      std::string_view key;
      std::string_view value;
      if (!string(key) || !eat(':') || !string(value)) return false;
      if (std::find(keys.begin(), keys.end(), key) != keys.end()) return false;
      keys.push_back(key);
    } while (eat(','));
    return eat('}');
  }
  bool entry_object(PlainEntry& e) {
    if (!eat('{')) return false;
    bool dtype = false;
    bool shape = false;
    bool offsets = false;
    do {
      std::string_view key;
      if (!string(key) || !eat(':')) return false;
      std::vector<std::uint64_t> values;
      if (key == "dtype" && !dtype) {
        std::string_view d;
        if (!string(d)) return false;
        e.dtype = std::string(d);
        dtype = true;
      } else if (key == "shape" && !shape) {
        if (!integers(values)) return false;
        for (const std::uint64_t v : values) e.shape.push_back(static_cast<std::int64_t>(v));
        shape = true;
      } else if (key == "data_offsets" && !offsets) {
        if (!integers(values) || values.size() != 2) return false;
        e.begin = values[0];
        e.end = values[1];
        offsets = true;
      } else {
        return false;
      }
    } while (eat(','));
    return eat('}') && dtype && shape && offsets;
  }

  std::string_view t_;
  std::size_t i_ = 0;
};

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
  return parse_safetensors_header(text, file_size, path);
}

SafetensorsHeader parse_safetensors_header(std::string_view text, std::uint64_t file_size, const std::string& path,
                                           HeaderReader reader) {
  SafetensorsHeader h;
  h.data_start = 8 + text.size();
  const std::uint64_t data_size = file_size - h.data_start;
  const auto add = [&](SafetensorsEntry e) {
    if (e.end > data_size) {
      throw TraceFormatError(path, "header." + e.name + ".data_offsets",
                             "truncated file: data ends at byte " + std::to_string(h.data_start + e.end) +
                                 " but the file has " + std::to_string(file_size) + " bytes");
    }
    h.entries.push_back(std::move(e));
  };
  std::optional<std::vector<PlainEntry>> plain;
  if (reader == HeaderReader::kAny) plain = PlainHeaderScan(text).entries();
  if (plain) {
    for (PlainEntry& p : *plain)
      add(make_entry(p.name, entry_dtype(p.name, p.dtype, path), std::move(p.shape), p.begin, p.end, path));
  } else {
    const nlohmann::json j = detail::parse_json_strict(text, path, "header");
    if (!j.is_object())
      throw TraceFormatError(path, "header", "expected a JSON object, got " + detail::json_type_name(j));
    for (const auto& [name, v] : j.items()) {
      if (name == "__metadata__") {
        if (!v.is_object()) throw TraceFormatError(path, "header.__metadata__", "expected an object");
        continue;
      }
      add(parse_entry(name, v, path));
    }
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
