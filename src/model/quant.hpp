// A checkpoint's own number formats: the `quantization_config` block of config.json, or
// the hf_quant_config.json that ModelOpt writes beside it (docs/model-formats.md).
#pragma once
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/fields.hpp"
#include "model/model_spec.hpp"

namespace shardwise {

// Reads `quantization_config` from a config.json's root (absent: not quantised).
// Errors name the field (quantization_config.quant_method) and the methods read.
void read_quantization(const FieldReader& root, CheckpointFormats& out);
// An hf_quant_config.json ({"quantization": {"quant_algo": "NVFP4", ...}}).
Expected<CheckpointFormats> parse_hf_quant_config(std::string_view text, const std::string& file);

}  // namespace shardwise
