#pragma once
// Umbrella header of edgc::traces.
#include "edgc/traces/dtype.hpp"
#include "edgc/traces/manifest.hpp"
#include "edgc/traces/reader.hpp"
#include "edgc/traces/safetensors.hpp"
#include "edgc/traces/stats.hpp"
#include "edgc/traces/synth.hpp"
#include "edgc/traces/writer.hpp"
