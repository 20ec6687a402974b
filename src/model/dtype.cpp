#include "model/dtype.hpp"

namespace shardwise {

double bytes_per_element(DType t) {
  switch (t) {
    case DType::kFp32: return 4.0;
    case DType::kBf16: return 2.0;
    case DType::kFp16: return 2.0;
    case DType::kFp8: return 1.0;
    case DType::kInt8: return 1.0;
    case DType::kInt4: return 0.5;
    case DType::kFp4: return 0.5;
  }
  return 2.0;
}

const char* to_string(DType t) {
  switch (t) {
    case DType::kFp32: return "fp32";
    case DType::kBf16: return "bf16";
    case DType::kFp16: return "fp16";
    case DType::kFp8: return "fp8";
    case DType::kInt8: return "int8";
    case DType::kInt4: return "int4";
    case DType::kFp4: return "fp4";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  if (s == "fp32" || s == "float32") return DType::kFp32;
  if (s == "bf16" || s == "bfloat16") return DType::kBf16;
  if (s == "fp16" || s == "float16") return DType::kFp16;
  if (s == "fp8" || s == "fp8_e4m3" || s == "e4m3") return DType::kFp8;
  if (s == "int8") return DType::kInt8;
  if (s == "int4") return DType::kInt4;
  if (s == "fp4" || s == "mxfp4" || s == "nvfp4") return DType::kFp4;
  return std::nullopt;
}

const char* dtype_choices() { return "one of fp32, bf16, fp16, fp8, int8, int4, fp4"; }

}  // namespace shardwise
