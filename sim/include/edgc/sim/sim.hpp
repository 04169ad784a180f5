#pragma once
// Umbrella header of edgc::sim.
#include "edgc/sim/engine_info.hpp"
