#include "edgc/scenario/replay_config.hpp"

#include "edgc/core/error.hpp"

namespace edgc::scenario {

ReplaySettings read_replay_settings(
    Scenario& sc, const std::function<void(double bins_per_sigma, const std::string& key)>& check_bins) {
  ReplaySettings s;
  s.world_size = sc.int32("replay.world_size", s.world_size);
  s.perturbation = sc.number("replay.perturbation", s.perturbation);
  s.backend = sc.string("replay.backend", s.backend);
  s.bins_per_sigma = sc.number("replay.bins_per_sigma", s.bins_per_sigma);
  check_bins(s.bins_per_sigma, "replay.bins_per_sigma");
  s.compare_full = sc.boolean("replay.compare_full", s.compare_full);
  s.seed = sc.seed("replay.seed", 0);
  s.stages = sc.int32("replay.stages", s.stages);
  if (s.stages < 0) throw ConfigError(sc.where(), "replay.stages", "must be >= 0 (0 = the trace's pipeline stages)");
  return s;
}

}  // namespace edgc::scenario
