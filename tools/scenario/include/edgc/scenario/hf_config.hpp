#pragma once
// A Hugging Face config.json as scenario model keys (`model.from_hf`): which field becomes which key is listed in
// scenarios/README.md ("model.from_hf"). Supported model types: llama, mistral, qwen2, qwen3 (RMSNorm, SwiGLU,
// RoPE, grouped-query attention), gpt2 and gpt_neox. A field that changes the cost and is not modelled (experts,
// sliding-window attention, the parallel attention + MLP block, biases on attention or MLP alone, another
// activation) is refused by name, never dropped.
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace edgc::scenario {

/// One model key and the value the config.json gives it ("model.hidden", 4096).
struct KeySetting {
  std::string key;
  nlohmann::json value;
};

/// Reads `path` (a config.json) into model keys. Throws ConfigError naming the file and the field: unreadable or
/// invalid JSON, an unsupported model_type, a missing or malformed field, a field that is not modelled.
std::vector<KeySetting> read_hf_config(const std::string& path);

}  // namespace edgc::scenario
