#pragma once
// A Megatron-LM / Megatron-Core command line as scenario keys (`model.megatron_args`, `edgc simulate
// --megatron-args`): the model, batch and parallelism arguments become model.* and parallelism.* keys (the table is
// in scenarios/README.md, "model.megatron_args"); arguments with no cost (learning rate, data, checkpoints, logging)
// are accepted and ignored; any other argument, and one that changes the cost in a way edgc does not model
// (flash attention, partial recomputation, context or expert parallelism), is refused by name.
#include <string>
#include <vector>

#include "edgc/scenario/hf_config.hpp"

namespace edgc::scenario {

/// Splits `text` at whitespace (no quoting: Megatron's size and switch arguments carry no spaces).
std::vector<std::string> split_arguments(const std::string& text);

/// Reads `args` (e.g. {"--num-layers", "32", "--swiglu", ...}) into scenario keys. `where` names the scenario in
/// errors; the field is "model.megatron_args" and the message names the argument. Throws ConfigError.
std::vector<KeySetting> read_megatron_args(const std::vector<std::string>& args, const std::string& where);

}  // namespace edgc::scenario
