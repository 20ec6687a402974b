// Loading models: a HuggingFace config.json (text or path) or a built-in preset.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "model/model_spec.hpp"

namespace shardwise {

// Parses config.json text. `file` names the source in messages; `name` becomes ModelSpec::name.
// `read_quant` false skips the quantization_config block (an hf_quant_config.json beside the
// config describes the checkpoint instead).
Expected<ModelSpec> parse_model_config(std::string_view text, const std::string& file, const std::string& name, bool read_quant = true);
// A preset name (see model_preset_names) or a path to a config.json.
Expected<ModelSpec> load_model(const std::string& name_or_path);
std::vector<std::string> model_preset_names();
// A local folder named like a preset is read instead of the preset: the note that says so
// (for the caller to print), or nothing when no preset has that name or no such folder with a
// config.json exists.
std::optional<std::string> model_shadow_note(const std::string& name_or_path);
// The Hugging Face repository a preset's checkpoint is published in ("" none: synthetic models).
std::string preset_hf_repo(const std::string& preset);
// The preset a Hugging Face id names (its repository, case-insensitive, with or without the
// organisation: deepseek-ai/DeepSeek-V3, Llama-3.1-8B-Instruct), or nullopt.
std::optional<std::string> preset_of_hf_id(const std::string& id);
// "LlamaForCausalLM, MistralForCausalLM, ..." for messages and help.
std::string supported_architectures();

}  // namespace shardwise
