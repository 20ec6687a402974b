// Checkpoint quantization blocks -> the formats of attention, dense MLP, experts and KV.
//   fp8 (DeepSeek's 128x128 block-scale e4m3): every linear layer in fp8.
//   mxfp4 (gpt-oss): the routed experts in fp4; attention, router, embeddings stay bf16.
//   modelopt (NVIDIA ModelOpt: quant_algo NVFP4, FP8, W4A8_AWQ, W4A16_AWQ): the linear layers
//     in that format except the modules listed in exclude_modules / ignore (a pattern with
//     "attn" keeps attention in bf16, one with "shared_expert" or a dense "mlp" keeps the dense
//     MLP); kv_cache_quant_algo FP8 sets the KV cache.
//   awq, gptq: int4 weight-only on every linear layer.
//   compressed-tensors: the first config group's weights (num_bits 8/4, type float/int).
#include "model/quant.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace shardwise {
namespace {

constexpr const char* kMethods = "one of fp8, mxfp4, modelopt, awq, gptq, compressed-tensors";

bool any_contains(const std::vector<std::string>& patterns, std::string_view needle) {
  return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) { return p.find(needle) != std::string::npos; });
}

// A pattern keeps the dense MLP unquantised when it names the shared experts or a whole
// MLP ("model.layers.*.mlp", "...mlp*"); "mlp.gate" is the router, which stays bf16 anyway.
bool excludes_dense(const std::vector<std::string>& patterns) {
  return std::any_of(patterns.begin(), patterns.end(), [](const std::string& p) {
    const auto ends = [&](std::string_view tail) { return p.size() >= tail.size() && p.compare(p.size() - tail.size(), tail.size(), tail) == 0; };
    return p.find("shared_expert") != std::string::npos || ends(".mlp") || ends(".mlp*");
  });
}

// A ModelOpt algorithm name -> the weight format; nullopt when unknown.
std::optional<DType> modelopt_dtype(const std::string& algo) {
  if (algo == "NVFP4" || algo == "W4A8_NVFP4_FP8" || algo == "MXFP4") return DType::kFp4;
  if (algo == "FP8" || algo == "FP8_BLOCK_SCALES" || algo == "FP8_PER_CHANNEL_PER_TOKEN") return DType::kFp8;
  if (algo == "W4A8_AWQ" || algo == "W4A16_AWQ" || algo == "INT4_AWQ") return DType::kInt4;
  if (algo == "W8A8_SQ_PER_CHANNEL" || algo == "INT8") return DType::kInt8;
  return std::nullopt;
}

// The modelopt fields, from a quantization_config or an hf_quant_config.json's "quantization".
void read_modelopt(const FieldReader& q, CheckpointFormats& out) {
  const std::string algo = q.string_or("quant_algo", "");
  if (q.sink().failed()) return;
  const std::string kv = q.has("kv_cache_quant_algo") ? q.string("kv_cache_quant_algo") : "";
  if (q.sink().failed()) return;
  if (kv == "FP8") out.kv = DType::kFp8;
  else if (kv == "NVFP4") out.kv = DType::kFp4;
  else if (!kv.empty()) {
    q.fail("kv_cache_quant_algo", "FP8 or NVFP4 (or null: the KV cache in the model's own format)", "'" + kv + "'");
    return;
  }
  if (algo.empty()) {  // no weight algorithm (null): a KV-cache-only checkpoint
    out.method = "modelopt:kv-only";
    return;
  }
  if (algo == "MIXED_PRECISION") {
    q.fail("quant_algo", "one algorithm for every layer (for a MIXED_PRECISION checkpoint give the formats with --weights-dtype "
                         "and --expert-dtype)",
           "'MIXED_PRECISION'");
    return;
  }
  const auto d = modelopt_dtype(algo);
  if (!d) {
    q.fail("quant_algo", "a ModelOpt algorithm shardwise reads (NVFP4, FP8, FP8_BLOCK_SCALES, W4A8_AWQ, W4A16_AWQ, INT8)",
           "'" + algo + "'");
    return;
  }
  std::vector<std::string> excluded = q.has("exclude_modules") ? q.string_list_or("exclude_modules") : q.string_list_or("ignore");
  if (q.sink().failed()) return;
  out.method = "modelopt:" + algo;
  out.experts = *d;
  if (!any_contains(excluded, "attn")) out.attention = *d;
  if (!excludes_dense(excluded)) out.dense = *d;
}

void read_compressed_tensors(const FieldReader& q, CheckpointFormats& out) {
  const auto groups = q.object("config_groups", true);
  if (!groups || q.sink().failed()) return;
  const nlohmann::json* g = q.get("config_groups");
  if (!g->is_object() || g->empty()) {
    q.fail("config_groups", "an object with at least one quantization group");
    return;
  }
  const auto group = groups->object(g->begin().key(), true);
  if (!group) return;
  const auto w = group->object("weights", true);
  if (!w || q.sink().failed()) return;
  const std::int64_t bits = w->integer("num_bits", 2, 16);
  const std::string type = w->string_or("type", "int");
  if (q.sink().failed()) return;
  if (type != "int" && type != "float") {
    w->fail("type", "int or float", "'" + type + "'");
    return;
  }
  std::optional<DType> d;
  if (bits == 8) d = type == "float" ? DType::kFp8 : DType::kInt8;
  if (bits == 4) d = type == "float" ? DType::kFp4 : DType::kInt4;
  if (!d) {
    w->fail("num_bits", "8 or 4", std::to_string(bits));
    return;
  }
  const auto ignore = q.string_list_or("ignore");
  out.method = fmt::format("compressed-tensors:{}", to_string(*d));
  out.experts = *d;
  if (!any_contains(ignore, "attn")) out.attention = *d;
  if (!excludes_dense(ignore)) out.dense = *d;
}

}  // namespace

void read_quantization(const FieldReader& root, CheckpointFormats& out) {
  const auto q = root.object("quantization_config", false);
  if (!q || root.sink().failed()) return;
  const std::string method = q->string("quant_method");
  if (root.sink().failed()) return;
  if (method == "fp8") {
    out.method = "fp8";
    out.attention = out.dense = out.experts = DType::kFp8;
  } else if (method == "mxfp4") {
    out.method = "mxfp4";
    out.experts = DType::kFp4;
  } else if (method == "modelopt") {
    read_modelopt(*q, out);
  } else if (method == "awq" || method == "gptq") {
    const std::int64_t bits = q->integer_or("bits", 4, 2, 8);
    if (root.sink().failed()) return;
    if (bits != 4 && bits != 8) {  // 2, 3 and 6 bits exist, but no format of shardwise's holds them
      q->fail("bits", "4 or 8 (the integer formats shardwise models: int4, int8)", std::to_string(bits));
      return;
    }
    out.method = method;
    out.attention = out.dense = out.experts = bits == 4 ? DType::kInt4 : DType::kInt8;
  } else if (method == "compressed-tensors") {
    read_compressed_tensors(*q, out);
  } else {
    q->fail("quant_method", fmt::format("{} (or no quantization_config: the model is planned in bf16 unless --weights-dtype says "
                                        "otherwise)", kMethods),
            "'" + method + "'");
  }
}

Expected<CheckpointFormats> parse_hf_quant_config(std::string_view text, const std::string& file) {
  auto doc = parse_json_text(text, file);
  if (!doc) return doc.error();
  ErrorSink sink;
  const FieldReader r = root_reader(*doc, file, sink);
  CheckpointFormats out;
  if (const auto q = r.object("quantization", true)) read_modelopt(*q, out);
  if (sink.failed()) return *sink.first;
  return out;
}

}  // namespace shardwise
