#include "edgc/sim/engine_info.hpp"

// simgrid/version.h needs the declaration macros of xbt/base.h: keep them in two blocks.
#include <xbt/base.h>

#include <simgrid/version.h>

#include <fstream>

#include "edgc/sim/layout.hpp"

namespace edgc::sim {

std::string simgrid_version() {
  int major = 0;
  int minor = 0;
  int patch = 0;
  sg_version_get(&major, &minor, &patch);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::unique_ptr<simgrid::s4u::Engine> boot_engine(bool guard_pages) {
  // SimGrid keeps argv[0] as the program name; the arrays outlive the engine.
  static char name[] = "edgc";
  static char no_guard[] = "--cfg=contexts/guard-size:0";
  static char quiet_cfg[] = "--log=xbt_cfg.thres:warning";  // no "Configuration change" line: edgc warns itself
  static char* argv[] = {name, nullptr, nullptr, nullptr};
  static int argc = 1;
  if (!guard_pages) {
    argv[1] = quiet_cfg;
    argv[2] = no_guard;
    argc = 3;
  }
  return std::make_unique<simgrid::s4u::Engine>(&argc, argv);
}

std::int64_t iteration_actors(const ParallelSpec& parallel, bool replicas_folded) {
  return replica_actors(parallel, replicas_folded ? folded_replicas(parallel) : parallel.dp);
}

std::int64_t replica_actors(const ParallelSpec& parallel, int replicas) {
  const std::int64_t gpus = static_cast<std::int64_t>(parallel.tp) * parallel.pp * replicas;
  const bool gathers = parallel.distributed_optimizer && parallel.overlap_param_gather;
  return gpus * (1 + (parallel.overlap_grad_reduce ? 1 : 0) + (gathers ? 1 : 0));
}

std::int64_t vm_max_map_count() {
  std::ifstream in("/proc/sys/vm/max_map_count");
  std::int64_t v = 0;
  if (in >> v && v > 0) return v;
  return 65530;
}

ActorStacks plan_actor_stacks(std::int64_t actors, std::int64_t map_limit) {
  ActorStacks s;
  s.actors = actors;
  s.map_limit = map_limit;
  s.maps_guarded = kBaseMappings + 2 * actors;
  s.maps_unguarded = kBaseMappings + actors;
  s.guard_pages = s.maps_guarded <= map_limit;
  s.fits = s.maps_unguarded <= map_limit;
  return s;
}

}  // namespace edgc::sim
