#pragma once
// Umbrella header of edgc::core.
#include "edgc/core/atomic_file.hpp"
#include "edgc/core/block_sampling.hpp"
#include "edgc/core/controller.hpp"
#include "edgc/core/cqm.hpp"
#include "edgc/core/dac.hpp"
#include "edgc/core/entropy.hpp"
#include "edgc/core/error.hpp"
#include "edgc/core/gds.hpp"
#include "edgc/core/random.hpp"
#include "edgc/core/rank_rule.hpp"
#include "edgc/core/warmup.hpp"
