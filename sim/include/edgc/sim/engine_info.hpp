#pragma once
// The simulation engine: booting it the one way edgc does, and what it is (SimGrid's version as linked at run
// time, not only as compiled against, so a result can say which engine produced it).
#include <cstdint>
#include <memory>
#include <simgrid/s4u/Engine.hpp>
#include <string>

#include "edgc/sim/spec.hpp"

namespace edgc::sim {

/// "3.32.0"-style version of the SimGrid library in use.
std::string simgrid_version();

/// A SimGrid engine for this process. SimGrid allows one simulation per process: call it once (simulations of
/// their own run in forked children). `guard_pages` false starts it with --cfg=contexts/guard-size:0 (see
/// ActorStacks).
std::unique_ptr<simgrid::s4u::Engine> boot_engine(bool guard_pages = true);

/// Whether one simulation's actors fit the kernel's limit on memory mappings (vm.max_map_count). Every SimGrid
/// actor runs on a stack of its own, a heap block of 8 MiB that the kernel maps separately; SimGrid protects a
/// guard page inside it, which splits that mapping in two. Measured here: 4,324 mappings while 2,048 GPU actors ran
/// (2 per actor, ~230 for the program and its libraries). Past the limit SimGrid cannot protect further stacks and
/// the simulation does not progress, so the check runs before any simulation starts.
struct ActorStacks {
  std::int64_t actors = 0;          ///< at most this many actors alive at once
  std::int64_t map_limit = 0;       ///< vm.max_map_count
  std::int64_t maps_guarded = 0;    ///< mappings needed with guard pages
  std::int64_t maps_unguarded = 0;  ///< mappings needed without them
  bool guard_pages = true;          ///< false: only fits without guard pages (a stack overflow goes unnoticed)
  bool fits = true;                 ///< false: does not fit even without guard pages
};

/// Mappings the program itself holds besides actor stacks (libraries, heap, threads), with a margin.
inline constexpr std::int64_t kBaseMappings = 1024;

/// The most actors simulate_iteration has alive at once: one per GPU simulated (all of them, or those of the first
/// folded_replicas() DP replicas when `replicas_folded`, see replicas_fold()), plus one per simulated GPU for the
/// overlapped gradient-bucket all-reduce (ParallelSpec::overlap_grad_reduce).
std::int64_t iteration_actors(const ParallelSpec& parallel, bool replicas_folded = false);
/// The same for the first `replicas` DP replicas (iteration_actors counts folded_replicas() or dp of them).
std::int64_t replica_actors(const ParallelSpec& parallel, int replicas);

/// /proc/sys/vm/max_map_count, or Linux's default 65530 where it cannot be read.
std::int64_t vm_max_map_count();

ActorStacks plan_actor_stacks(std::int64_t actors, std::int64_t map_limit);

}  // namespace edgc::sim
