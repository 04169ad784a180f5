#pragma once
// Umbrella header of edgc::sim.
#include "edgc/sim/collectives.hpp"
#include "edgc/sim/engine_info.hpp"
#include "edgc/sim/iteration.hpp"
#include "edgc/sim/memory.hpp"
#include "edgc/sim/pipeline_schedule.hpp"
#include "edgc/sim/platform.hpp"
#include "edgc/sim/spec.hpp"
#include "edgc/sim/variability.hpp"
