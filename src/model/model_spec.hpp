// ModelSpec: everything the simulator needs to know about a transformer, read
// from a HuggingFace config.json (or a preset) and normalised across families.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/dtype.hpp"

namespace shardwise {

enum class AttentionKind { kGqa, kMla };  // kGqa covers MHA (kv == heads) and MQA (kv == 1)
enum class NormKind { kRms, kLayerNorm };  // LayerNorm has a bias vector too

// DeepSeek's multi-head latent attention dimensions.
struct MlaDims {
  std::int64_t q_lora_rank = 0;  // 0: queries projected directly (no low-rank q)
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  friend bool operator==(const MlaDims&, const MlaDims&) = default;
};

struct MoeDims {
  std::int64_t num_experts = 0;  // routed experts; 0 for a dense model
  std::int64_t top_k = 0;
  std::int64_t expert_ffn = 0;     // intermediate size of one routed expert
  std::int64_t num_shared = 0;     // shared experts, always active
  std::int64_t shared_ffn = 0;     // intermediate size of one shared expert
  bool router_bias = false;        // a learned bias on the router logits
  bool score_correction_bias = false;  // DeepSeek-V3's e_score_correction_bias (per expert, not a matmul)
  friend bool operator==(const MoeDims&, const MoeDims&) = default;
};

// The checkpoint's own number formats, from its `quantization_config` (or an
// hf_quant_config.json beside the config): what the model is planned in unless the
// workload overrides it. Components left empty are in the checkpoint's plain format
// (bf16); the embedding, LM head, norms and router stay there in every method read.
struct CheckpointFormats {
  std::string method;  // "fp8" (block-scale), "mxfp4", "modelopt:NVFP4", ...; empty: not quantised
  std::optional<DType> attention;  // q/kv/o projections
  std::optional<DType> dense;      // dense MLPs and shared experts
  std::optional<DType> experts;    // routed experts
  std::optional<DType> kv;         // the KV cache the checkpoint is calibrated for (modelopt)
  friend bool operator==(const CheckpointFormats&, const CheckpointFormats&) = default;
};

// The distinct shapes a layer can take; the simulator evaluates each class once
// and multiplies by its count.
struct LayerClass {
  bool moe = false;
  std::int64_t window = 0;  // sliding-window length in tokens; 0 = full attention
  std::int64_t count = 0;
  friend bool operator==(const LayerClass&, const LayerClass&) = default;
};

// The simulator evaluates each distinct layer shape once; more distinct shapes than
// this (MoE/dense x sliding-window lengths) are rejected by the loader.
constexpr std::size_t kMaxLayerClasses = 16;

struct ModelSpec {
  std::string name;          // preset name or file stem
  std::string architecture;  // e.g. "LlamaForCausalLM"
  std::string source;        // where it was loaded from (for messages)

  std::int64_t hidden = 0;
  std::int64_t num_layers = 0;  // main decoder layers (DeepSeek's MTP module excluded)
  std::int64_t vocab = 0;
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;  // q/k/v head dim for GQA; unused for MLA (see mla)
  std::int64_t ffn = 0;       // dense MLP intermediate size
  std::int64_t max_context = 0;

  AttentionKind attention = AttentionKind::kGqa;
  bool rotary = true;  // rotary position embeddings on q and k (false: learned absolute positions, GPT-3 style)
  MlaDims mla;
  MoeDims moe;
  NormKind norm = NormKind::kRms;
  bool qkv_bias = false;   // biases on q, k, v projections
  bool o_bias = false;     // bias on the output projection
  bool qk_norm = false;    // per-head RMSNorm on q and k (Qwen3)
  bool attention_sinks = false;  // one learned logit per head (gpt-oss)
  bool mlp_gated = true;   // SwiGLU-style gate+up (3 matrices) vs 2-matrix GELU MLP
  bool mlp_bias = false;
  bool tied_embeddings = false;
  std::int64_t num_mtp_layers = 0;  // DeepSeek next-token-prediction modules, not counted
  // A multimodal checkpoint's vision encoder and projector (Llama-4), approximate: loaded by
  // the engines but not in text serving's cost (docs/models.md); 0 for text models.
  std::int64_t vision_params = 0;
  CheckpointFormats quant;          // the checkpoint's own formats (see CheckpointFormats)

  // Per layer, in order: MoE or dense, and the sliding window (0 = full).
  std::vector<bool> layer_is_moe;
  std::vector<std::int64_t> layer_window;

  [[nodiscard]] bool is_moe() const { return moe.num_experts > 0; }
  [[nodiscard]] std::int64_t num_moe_layers() const;
  [[nodiscard]] std::int64_t num_dense_layers() const { return num_layers - num_moe_layers(); }
  [[nodiscard]] std::vector<LayerClass> layer_classes() const;
  friend bool operator==(const ModelSpec&, const ModelSpec&) = default;
};

const char* to_string(AttentionKind k);

}  // namespace shardwise
