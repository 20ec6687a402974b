// Counts derived from a ModelSpec: parameters (total and active per token),
// KV-cache bytes, weight bytes and forward FLOPs per token. The formulas are
// written out in derived.cpp and docs/models.md; tests check them against the
// published totals of every preset.
#pragma once
#include <cstdint>
#include <vector>

#include "core/units.hpp"
#include "model/dtype.hpp"
#include "model/model_spec.hpp"

namespace shardwise {

struct ParamBreakdown {
  std::int64_t embedding = 0;
  std::int64_t attention = 0;       // all layers, projections + biases + q/k norms + sinks
  std::int64_t dense_mlp = 0;       // MLPs of the dense layers
  std::int64_t routed_experts = 0;  // all routed experts (active: top_k of them)
  std::int64_t shared_experts = 0;
  std::int64_t router = 0;          // gate weights (+ bias, + DeepSeek's correction bias)
  std::int64_t norms = 0;           // per-layer norms + the final norm
  std::int64_t lm_head = 0;         // 0 when tied to the embedding
  [[nodiscard]] std::int64_t total() const {
    return embedding + attention + dense_mlp + routed_experts + shared_experts + router + norms + lm_head;
  }
};

struct ParamCounts {
  ParamBreakdown total;
  ParamBreakdown active;  // per token: top_k routed experts, everything else whole
};

// Parameters of one layer's attention block.
std::int64_t attention_params_per_layer(const ModelSpec& m);
// Parameters of one MLP (or one expert) of intermediate size ffn.
std::int64_t mlp_params(const ModelSpec& m, std::int64_t ffn);
ParamCounts count_params(const ModelSpec& m);
// The same total in floating point, safe for any dimensions (the loader uses it
// to reject models whose exact count would not fit in 64 bits).
double approx_total_params(const ModelSpec& m);
constexpr double kMaxModelParams = 1e15;

// KV cache elements one layer stores per token: 2 x kv_heads x head_dim (GQA),
// kv_lora_rank + qk_rope_head_dim (MLA's compressed latent and shared rope key).
std::int64_t kv_elements_per_token_per_layer(const ModelSpec& m);

struct KvCacheBytes {
  Bytes per_layer_token;       // one token in one layer
  std::int64_t full_layers = 0;
  std::vector<std::int64_t> sliding_windows;  // one entry per sliding-window layer
  // Bytes per token summed over every layer, as if every layer kept every token.
  [[nodiscard]] Bytes per_token_all_layers() const;
  // Bytes a sequence of `context` tokens occupies: full layers keep all tokens,
  // sliding layers at most their window.
  [[nodiscard]] Bytes for_context(std::int64_t context) const;
};
KvCacheBytes kv_cache_bytes(const ModelSpec& m, DType kv_dtype);

// All weights in one format (norms and biases included; block scales excluded).
Bytes weight_bytes(const ModelSpec& m, DType weights_dtype);

struct FlopsPerToken {
  Flops matmul;     // 2 x matmul weights touched per token (projections, active experts, router, LM head)
  Flops attention;  // scores and weighted values against `context` cached tokens
  [[nodiscard]] Flops total() const { return matmul + attention; }
};
// Forward FLOPs for one new token that attends to `context` tokens.
FlopsPerToken flops_per_token(const ModelSpec& m, std::int64_t context);

}  // namespace shardwise
