#pragma once
// Umbrella header of edgc::core.
#include "edgc/core/atomic_file.hpp"
#include "edgc/core/block_sampling.hpp"
#include "edgc/core/error.hpp"
#include "edgc/core/random.hpp"
