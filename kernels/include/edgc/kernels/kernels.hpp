#pragma once
// Umbrella header of edgc::kernels.
#include "edgc/kernels/backend.hpp"
#include "edgc/kernels/boundary_compression.hpp"
#include "edgc/kernels/buffer.hpp"
#include "edgc/kernels/communicator.hpp"
#include "edgc/kernels/dp_emulation.hpp"
#include "edgc/kernels/histogram.hpp"
#include "edgc/kernels/moments.hpp"
#include "edgc/kernels/powersgd.hpp"
#include "edgc/kernels/stage_entropy.hpp"
