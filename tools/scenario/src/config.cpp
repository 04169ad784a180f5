#include "edgc/scenario/config.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>

#include "edgc/core/atomic_file.hpp"
#include "edgc/core/checked_int.hpp"
#include "edgc/core/error.hpp"
#include "edgc/core/json_depth.hpp"

namespace edgc::scenario {
namespace {

std::vector<std::string> split_key(const std::string& key) {
  std::vector<std::string> parts;
  std::stringstream ss(key);
  std::string p;
  while (std::getline(ss, p, '.')) parts.push_back(p);
  return parts;
}

// A file's canonical path, to detect include cycles. A path the OS cannot resolve (a name too long, a loop of links)
// stays as written: reading it fails next with a ConfigError naming it.
std::string canonical_id(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
  return ec ? std::filesystem::path(path).lexically_normal().string() : p.string();
}

void collect_leaves(const nlohmann::json& j, const std::string& prefix, std::vector<std::string>& out) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [k, v] : j.items()) collect_leaves(v, prefix.empty() ? k : prefix + "." + k, out);
  } else {
    out.push_back(prefix);
  }
}

}  // namespace

Scenario Scenario::load(const std::string& path, const std::string& kind) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw ConfigError(path, "", "is a directory, not a " + kind);
  const std::optional<std::string> read = read_file_bounded(path, kind);  // a device or a huge file: ConfigError
  if (!read) throw ConfigError(path, "", "cannot open the " + kind);
  const std::string& text = *read;
  if (const std::string deep = json_depth_error(text); !deep.empty()) throw ConfigError(path, "", deep);
  Scenario s;
  s.where_ = path;
  try {
    s.doc_ = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    std::string msg = e.what();
    if (auto pos = msg.find("] "); pos != std::string::npos) msg = msg.substr(pos + 2);
    throw ConfigError(path, "", "invalid JSON: " + msg);
  }
  if (!s.doc_.is_object()) throw ConfigError(path, "", "a " + kind + " must be a JSON object");
  if (const DuplicateKey d = json_duplicate_key(text); !d.key.empty())
    throw ConfigError(path, d.key,
                      "given twice (lines " + std::to_string(d.first_line) + " and " + std::to_string(d.second_line) +
                          "): JSON keeps only the last silently; keep one");
  return s;
}

void Scenario::set(const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UsageError("--set", "'" + assignment + "' is not of the form dotted.key=value");
  const std::string key = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  if (const std::string deep = json_depth_error(text); !deep.empty()) throw UsageError("--set", key + ": " + deep);
  nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
  if (value.is_discarded()) value = text;
  nlohmann::json* node = &doc_;
  const auto parts = split_key(key);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].empty()) throw UsageError("--set", "'" + key + "' has an empty key part");
    if (node->is_null()) *node = nlohmann::json::object();  // a section the file does not have yet
    if (!node->is_object()) throw UsageError("--set", "'" + key + "': a parent is not an object");
    node = &(*node)[parts[i]];
  }
  *node = value;
}

const nlohmann::json* Scenario::find(const std::string& key) const {
  const nlohmann::json* node = &doc_;
  for (const auto& p : split_key(key)) {
    if (!node->is_object()) return nullptr;
    const auto it = node->find(p);
    if (it == node->end()) return nullptr;
    node = &*it;
  }
  return node;
}

bool Scenario::has(const std::string& key) const { return find(key) != nullptr; }

std::string Scenario::resolve(const std::string& path) const {
  const std::filesystem::path p(path);
  if (p.is_absolute() || where_ == Scenario().where_) return path;
  return (std::filesystem::path(where_).parent_path() / p).string();
}

void Scenario::splice_include(const std::string& key) {
  std::vector<std::string> chain;
  splice_include(key, chain);
}

void Scenario::splice_include(const std::string& key, std::vector<std::string>& chain) {
  const auto it = doc_.find(key);
  if (it == doc_.end()) return;
  std::string file;
  nlohmann::json local = nlohmann::json::object();
  if (it->is_string()) {
    file = it->get<std::string>();
  } else if (it->is_object() && it->contains("include")) {
    if (!it->at("include").is_string())
      throw ConfigError(where_, key + ".include", "expected a file path, got " + it->at("include").dump());
    file = it->at("include").get<std::string>();
    local = *it;
    local.erase("include");
  } else if (it->is_object()) {
    return;
  } else {
    throw ConfigError(where_, key, "expected an object or a file path, got " + it->dump());
  }
  const std::string path = resolve(file);
  const std::string id = canonical_id(path);
  chain.push_back(canonical_id(where_));
  const auto seen = std::find(chain.begin(), chain.end(), id);
  if (seen != chain.end() || static_cast<int>(chain.size()) > kMaxIncludeDepth) {
    std::string trail;
    for (auto c = seen == chain.end() ? chain.begin() : seen; c != chain.end(); ++c) trail += *c + " -> ";
    throw ConfigError(
        where_, key + (it->is_string() ? "" : ".include"),
        (seen != chain.end() ? "includes form a cycle: "
                             : "includes nest deeper than " + std::to_string(kMaxIncludeDepth) + " files: ") +
            trail + id);
  }
  Scenario included = load(path);
  included.splice_include(key, chain);  // an include inside the included file, relative to that file
  chain.pop_back();
  const auto section = included.doc_.find(key);
  if (section == included.doc_.end() || !section->is_object())
    throw ConfigError(included.where_, key, "an included " + key + " file must hold a \"" + key + "\" object");
  nlohmann::json merged = *section;
  merged.merge_patch(local);
  *it = std::move(merged);
}

double Scenario::number(const std::string& key, double fallback) {
  read_.insert(key);
  const auto* v = find(key);
  if (v == nullptr) return fallback;
  if (!v->is_number() || !std::isfinite(v->get<double>()))
    throw ConfigError(where_, key, "expected a number, got " + v->dump());
  return v->get<double>();
}

template <typename Int>
Int Scenario::checked(const std::string& key, Int fallback) {
  read_.insert(key);
  const auto* v = find(key);
  if (v == nullptr) return fallback;
  try {
    return json_integer<Int>(*v, std::numeric_limits<Int>::min(), std::numeric_limits<Int>::max());
  } catch (const IntegerError& e) {
    throw ConfigError(where_, key, e.what());
  }
}

std::int64_t Scenario::integer(const std::string& key, std::int64_t fallback) {
  return checked<std::int64_t>(key, fallback);
}

int Scenario::int32(const std::string& key, int fallback) { return checked<int>(key, fallback); }

std::uint64_t Scenario::seed(const std::string& key, std::uint64_t fallback) {
  return checked<std::uint64_t>(key, fallback);
}

bool Scenario::boolean(const std::string& key, bool fallback) {
  read_.insert(key);
  const auto* v = find(key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) throw ConfigError(where_, key, "expected true or false, got " + v->dump());
  return v->get<bool>();
}

std::string Scenario::string(const std::string& key, const std::string& fallback) {
  read_.insert(key);
  const auto* v = find(key);
  if (v == nullptr) return fallback;
  if (!v->is_string()) throw ConfigError(where_, key, "expected a string, got " + v->dump());
  return v->get<std::string>();
}

const nlohmann::json* Scenario::raw(const std::string& key) {
  read_.insert(key);
  return find(key);
}

void Scenario::reject_unknown(const std::vector<std::string>& prefixes) const {
  std::vector<std::string> leaves;
  collect_leaves(doc_, "", leaves);
  for (const auto& leaf : leaves) {
    for (const auto& p : prefixes) {
      if (leaf == p || leaf.rfind(p + ".", 0) == 0) {
        if (read_.count(leaf) == 0U) throw ConfigError(where_, leaf, "unknown key");
      }
    }
  }
}

const std::vector<std::string> Scenario::kNoteKeys = {"description", "assumptions", "sources", "published"};

void Scenario::reject_unknown_sections(const std::vector<std::string>& sections) const {
  const auto known = [&](const std::string& k) {
    return std::find(sections.begin(), sections.end(), k) != sections.end() ||
           std::find(kNoteKeys.begin(), kNoteKeys.end(), k) != kNoteKeys.end();
  };
  for (auto it = doc_.begin(); it != doc_.end(); ++it) {
    if (known(it.key())) continue;
    std::string list;
    for (const std::string& s : sections) list += (list.empty() ? "" : ", ") + s;
    std::string notes;
    for (const std::string& s : kNoteKeys) notes += (notes.empty() ? "" : ", ") + s;
    throw ConfigError(where_, it.key(), "unknown section (this command reads " + list + "; notes: " + notes + ")");
  }
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  Scenario s = Scenario::load(path);
  s.splice_include("cluster");
  s.splice_include("model");
  for (const auto& o : overrides) {
    s.set(o);
    // A whole section replaced by a file path (`--set cluster=clusters/x.json`, a sweep's GPU-type axis) is
    // spliced at once, so later overrides such as cluster.nodes edit the included file's values.
    const std::string key = o.substr(0, o.find('='));
    if (key == "cluster" || key == "model") s.splice_include(key);
  }
  return s;
}

std::string read_trace_path(Scenario& sc) {
  const std::string key = sc.string("trace.path", "");
  return key.empty() ? key : std::filesystem::path(sc.resolve(key)).lexically_normal().string();
}

}  // namespace edgc::scenario
