// Numeric formats for weights, activations and the KV cache.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace shardwise {

enum class DType { kFp32, kBf16, kFp16, kFp8, kInt8, kInt4, kFp4 };

// Bytes per element; 4-bit formats are 0.5 (block scales not counted).
double bytes_per_element(DType t);
const char* to_string(DType t);
std::optional<DType> parse_dtype(std::string_view s);
// "fp32, bf16, fp16, fp8, int8, int4, fp4" for messages.
const char* dtype_choices();

}  // namespace shardwise
