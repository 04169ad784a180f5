#include "edgc/scenario/live_config.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <string_view>

#include "edgc/core/checked_int.hpp"
#include "edgc/core/error.hpp"
#include "edgc/scenario/compression_config.hpp"

namespace edgc::scenario {
namespace {

// "4,8,12" → {4, 8, 12}, sorted and without repeats; throws ConfigError naming `key` for anything but ranks >= 1.
std::vector<int> parse_rank_list(const std::string& text, const std::string& where, const std::string& key) {
  std::vector<int> out;
  for (const std::string& item : split_list(text)) {
    std::string_view digits = item;  // "4, 8": spaces after a comma, and a '+', read as before
    while (!digits.empty() && std::isspace(static_cast<unsigned char>(digits.front())) != 0) digits.remove_prefix(1);
    if (digits.size() > 1 && digits.front() == '+' && digits[1] != '-') digits.remove_prefix(1);
    try {
      out.push_back(parse_integer<int>(digits, 1, std::numeric_limits<int>::max()));
    } catch (const IntegerError&) {
      throw ConfigError(where, key, "expected a comma-separated list of ranks >= 1, got '" + text + "'");
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// live.calibration.* and live.probe.*: the sizes and repeats of the measurements taken before the policy runs.
void read_measurement_settings(Scenario& sc, LiveSettings& o) {
  const std::string w = sc.where();
  o.calibration_min_bytes = sc.integer("live.calibration.min_bytes", 4);
  o.calibration_max_bytes = sc.integer("live.calibration.max_bytes", std::int64_t{4} << 20);
  if (o.calibration_min_bytes < 4 || o.calibration_max_bytes < o.calibration_min_bytes ||
      o.calibration_max_bytes > (std::int64_t{1} << 31))
    throw ConfigError(w, "live.calibration.max_bytes", "need 4 <= min_bytes <= max_bytes <= 2 GiB");
  // Each repeat is one more timed all-reduce per size (or per probed rank); medians settle within a few dozen, so
  // more than kMaxRepeats is a typo that would keep the ranks busy for hours.
  constexpr int kMaxRepeats = 10000;
  o.calibration_repeats = sc.int32("live.calibration.repeats", 5);
  if (o.calibration_repeats < 1 || o.calibration_repeats > kMaxRepeats)
    throw ConfigError(w, "live.calibration.repeats",
                      "must be in [1, 10000], got " + std::to_string(o.calibration_repeats));
  if (sc.has("live.probe.ranks"))
    o.probe_ranks = parse_rank_list(sc.string("live.probe.ranks", ""), w, "live.probe.ranks");
  o.probe_repeats = sc.int32("live.probe.repeats", 5);
  if (o.probe_repeats < 1 || o.probe_repeats > kMaxRepeats)
    throw ConfigError(w, "live.probe.repeats", "must be in [1, 10000], got " + std::to_string(o.probe_repeats));
}

}  // namespace

LiveSettings read_live_settings(Scenario& sc,
                                const std::function<void(double bins_per_sigma, const std::string& key)>& check_bins) {
  const std::string w = sc.where();
  LiveSettings o;
  o.pp = sc.int32("live.pp", 0);
  if (o.pp < 0) throw ConfigError(w, "live.pp", "must be >= 0 (0 = automatic)");
  o.max_iterations = sc.integer("live.max_iterations", 0);
  if (o.max_iterations < 0) throw ConfigError(w, "live.max_iterations", "must be >= 0 (0 = all)");
  o.perturbation = sc.number("live.perturbation", 0.1);
  if (!(o.perturbation >= 0.0) || !std::isfinite(o.perturbation))
    throw ConfigError(w, "live.perturbation", "must be finite and >= 0");
  o.seed = sc.seed("live.seed", 0);
  o.backend = sc.string("live.backend", "cpu");
  o.comm = sc.string("live.comm", "mpi");
  o.bins_per_sigma = sc.number("live.bins_per_sigma", 8.0);
  check_bins(o.bins_per_sigma, "live.bins_per_sigma");
  if (sc.has("live.verify")) o.verify = sc.boolean("live.verify", false);
  read_measurement_settings(sc, o);
  return o;
}

}  // namespace edgc::scenario
