#pragma once
// Keyword arguments of edgc_torch's State, Controller and PowerSGD → typed settings, with the defaults and names of
// the scenario's compression.* keys (README "Scenario keys"): compression.warmup.threshold_nats is the keyword
// warmup_threshold_nats. An edgc ConfigError naming compression.<key> becomes a ValueError naming the keyword.
#include <pybind11/pybind11.h>

#include <string>

#include "edgc/core/error.hpp"
#include "hook_engine.hpp"

namespace edgc::torch_ext {

/// Reads every keyword of `kw` (an unknown one is a ValueError naming it and listing the known ones); `stages` from
/// kw or 1. `iterations` > 0 sets the warm-up floor and ceiling from warmup_floor_fraction / warmup_ceiling_fraction
/// of the run, as `edgc replay` does from the trace's length.
HookSettings settings_from_kwargs(const pybind11::dict& kw);

/// The keyword an InputError's field names ("compression.warmup.mode" → "warmup_mode", "stages" → "stages").
std::string keyword_of(const std::string& field);

/// "<keyword>: <detail>" for an edgc InputError (the message without its where/field prefix).
std::string value_error_message(const InputError& e);

}  // namespace edgc::torch_ext
