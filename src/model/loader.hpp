// Loading models: a HuggingFace config.json (text or path) or a built-in preset.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "model/model_spec.hpp"

namespace shardwise {

// Parses config.json text. `file` names the source in messages; `name` becomes ModelSpec::name.
Expected<ModelSpec> parse_model_config(std::string_view text, const std::string& file, const std::string& name);
// A preset name (see model_preset_names) or a path to a config.json.
Expected<ModelSpec> load_model(const std::string& name_or_path);
std::vector<std::string> model_preset_names();
// "LlamaForCausalLM, MistralForCausalLM, ..." for messages and help.
std::string supported_architectures();

}  // namespace shardwise
