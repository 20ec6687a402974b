#include "model/loader.hpp"

#include "core/names.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/embedded_data.hpp"
#include "core/fields.hpp"
#include "model/derived.hpp"
#include "model/quant.hpp"

namespace shardwise {
namespace {
using nlohmann::json;

constexpr std::int64_t kMaxDim = 1 << 22;     // hidden, ffn, ranks: 4M is far beyond any real model
constexpr std::int64_t kMaxLayers = 100000;
constexpr std::int64_t kMaxVocab = 1 << 26;
constexpr std::int64_t kMaxExperts = 1 << 16;
constexpr std::int64_t kMaxContext = std::int64_t{1} << 34;

enum class Family { kLlama, kMistral, kMixtral, kQwen2, kQwen3, kQwen3Moe, kDeepseekV3, kGptOss, kGptMoe, kLlama4, kPhi3, kGemma2, kGemma3, kQwen2Moe };

struct ArchName {
  const char* architecture;
  const char* model_type;
  Family family;
};
constexpr std::array<ArchName, 17> kArchs{{
    {"LlamaForCausalLM", "llama", Family::kLlama},
    {"MistralForCausalLM", "mistral", Family::kMistral},
    {"MixtralForCausalLM", "mixtral", Family::kMixtral},
    {"Qwen2ForCausalLM", "qwen2", Family::kQwen2},
    {"Qwen3ForCausalLM", "qwen3", Family::kQwen3},
    {"Qwen3MoeForCausalLM", "qwen3_moe", Family::kQwen3Moe},
    {"DeepseekV3ForCausalLM", "deepseek_v3", Family::kDeepseekV3},
    {"DeepseekV2ForCausalLM", "deepseek_v2", Family::kDeepseekV3},  // the same MLA and MoE fields (q_lora_rank may be null)
    {"GptOssForCausalLM", "gpt_oss", Family::kGptOss},
    {"GptMoeForCausalLM", "gpt_moe", Family::kGptMoe},  // shardwise's synthetic GPT-MoE
    {"Llama4ForConditionalGeneration", "llama4", Family::kLlama4},  // its text_config
    {"Llama4ForCausalLM", "llama4_text", Family::kLlama4},
    {"Phi3ForCausalLM", "phi3", Family::kPhi3},  // fused qkv and gate_up: the same weights as Llama's
    {"Gemma2ForCausalLM", "gemma2", Family::kGemma2},
    {"Gemma3ForCausalLM", "gemma3_text", Family::kGemma3},
    {"Gemma3ForConditionalGeneration", "gemma3", Family::kGemma3},  // its text_config
    {"Qwen2MoeForCausalLM", "qwen2_moe", Family::kQwen2Moe},
}};

// Common decoder fields every family has.
void read_common(const FieldReader& r, ModelSpec& m) {
  m.hidden = r.integer("hidden_size", 1, kMaxDim);
  m.num_layers = r.integer("num_hidden_layers", 1, kMaxLayers);
  m.num_heads = r.integer("num_attention_heads", 1, kMaxDim);
  m.vocab = r.integer("vocab_size", 1, kMaxVocab);
  m.num_kv_heads = r.integer_or("num_key_value_heads", m.num_heads, 1, kMaxDim);
  m.max_context = r.integer_or("max_position_embeddings", 0, 0, kMaxContext);
  m.tied_embeddings = r.boolean_or("tie_word_embeddings", false);
  if (r.sink().failed()) return;
  if (r.has("head_dim")) {
    m.head_dim = r.integer("head_dim", 1, kMaxDim);
  } else if (m.hidden % m.num_heads != 0) {
    r.fail("num_attention_heads", fmt::format("a divisor of hidden_size ({}) when head_dim is not given", m.hidden),
           std::to_string(m.num_heads));
    return;
  } else {
    m.head_dim = m.hidden / m.num_heads;
  }
  if (m.num_kv_heads > m.num_heads || m.num_heads % m.num_kv_heads != 0) {
    r.fail("num_key_value_heads", fmt::format("a divisor of num_attention_heads ({})", m.num_heads),
           std::to_string(m.num_kv_heads));
  }
}

// Sliding windows: Mistral/Mixtral put one window on every layer; Qwen2/3 on the
// layers from max_window_layers on when use_sliding_window is set.
void read_windows(const FieldReader& r, Family f, ModelSpec& m) {
  m.layer_window.assign(static_cast<std::size_t>(m.num_layers), 0);
  if (r.sink().failed()) return;
  if (f == Family::kMistral || f == Family::kMixtral) {
    const std::int64_t w = r.integer_or("sliding_window", 0, 1, kMaxContext);
    std::fill(m.layer_window.begin(), m.layer_window.end(), w);
  } else if (f == Family::kGemma2 || f == Family::kGemma3) {
    // local (sliding) and global layers: `layer_types` when given; else Gemma 2 alternates
    // from a local first layer, Gemma 3 makes every sliding_window_pattern-th layer global
    const std::int64_t w = r.integer_or("sliding_window", 0, 1, kMaxContext);
    if (w == 0 || r.sink().failed()) return;
    const auto types = r.string_list_or("layer_types");
    if (!types.empty()) {
      if (static_cast<std::int64_t>(types.size()) != m.num_layers) {
        r.fail("layer_types", fmt::format("one entry per layer ({})", m.num_layers), fmt::format("{} entries", types.size()));
        return;
      }
      for (std::size_t i = 0; i < types.size(); ++i) m.layer_window[i] = types[i] == "sliding_attention" ? w : 0;
      return;
    }
    const std::int64_t pattern = f == Family::kGemma2 ? 2 : r.integer_or("sliding_window_pattern", 6, 1, kMaxLayers);
    for (std::int64_t i = 0; i < m.num_layers; ++i) m.layer_window[static_cast<std::size_t>(i)] = (i + 1) % pattern == 0 ? 0 : w;
  } else if (f == Family::kPhi3) {
    // a window on every layer, unless it spans the whole context (Phi-4: 16,384 of 16,384)
    const std::int64_t w = r.integer_or("sliding_window", 0, 1, kMaxContext);
    if (w > 0 && (m.max_context == 0 || w < m.max_context)) std::fill(m.layer_window.begin(), m.layer_window.end(), w);
  } else if (f == Family::kQwen2 || f == Family::kQwen3 || f == Family::kQwen3Moe) {
    if (r.boolean_or("use_sliding_window", false)) {
      const std::int64_t w = r.integer("sliding_window", 1, kMaxContext);
      const std::int64_t from = r.integer_or("max_window_layers", m.num_layers, 0, kMaxLayers);
      for (std::int64_t i = from; i < m.num_layers; ++i) m.layer_window[static_cast<std::size_t>(i)] = w;
    }
  } else if (f == Family::kLlama4) {
    // chunked local attention (attention_chunk_size) on the RoPE layers; every
    // no_rope_layer_interval-th layer (NoPE, HF default 4) attends globally. A chunk is
    // costed as a sliding window of its length (what the engines allocate for it).
    const std::int64_t chunk = r.integer_or("attention_chunk_size", 0, 1, kMaxContext);
    if (chunk == 0 || r.sink().failed()) return;
    const auto listed = r.integer_list_or("no_rope_layers", 0, 1);
    if (!listed.empty() && static_cast<std::int64_t>(listed.size()) != m.num_layers) {
      r.fail("no_rope_layers", fmt::format("one entry per layer ({})", m.num_layers), fmt::format("{} entries", listed.size()));
      return;
    }
    const std::int64_t interval = r.integer_or("no_rope_layer_interval", 4, 1, kMaxLayers);
    for (std::int64_t i = 0; i < m.num_layers; ++i) {
      const bool rope = listed.empty() ? (i + 1) % interval != 0 : listed[static_cast<std::size_t>(i)] == 1;
      m.layer_window[static_cast<std::size_t>(i)] = rope ? chunk : 0;
    }
  } else if (f == Family::kGptOss) {
    const std::int64_t w = r.integer("sliding_window", 1, kMaxContext);
    const auto types = r.string_list_or("layer_types");
    if (r.sink().failed()) return;
    if (types.empty()) {  // the HF default: alternate, sliding first
      for (std::int64_t i = 0; i < m.num_layers; ++i) m.layer_window[static_cast<std::size_t>(i)] = (i % 2 == 0) ? w : 0;
      return;
    }
    if (static_cast<std::int64_t>(types.size()) != m.num_layers) {
      r.fail("layer_types", fmt::format("one entry per layer ({})", m.num_layers), fmt::format("{} entries", types.size()));
      return;
    }
    for (std::size_t i = 0; i < types.size(); ++i) {
      if (types[i] == "sliding_attention") {
        m.layer_window[i] = w;
      } else if (types[i] != "full_attention") {
        r.fail(fmt::format("layer_types[{}]", i), "'sliding_attention' or 'full_attention'", "'" + types[i] + "'");
        return;
      }
    }
  }
}

void read_moe(const FieldReader& r, Family f, ModelSpec& m) {
  const char* experts_key = (f == Family::kQwen3Moe || f == Family::kQwen2Moe) ? "num_experts" : (f == Family::kDeepseekV3 ? "n_routed_experts" : "num_local_experts");
  m.moe.num_experts = r.integer(experts_key, 1, kMaxExperts);
  const char* topk_key = (f == Family::kGptOss && !r.has("num_experts_per_tok")) ? "experts_per_token" : "num_experts_per_tok";
  m.moe.top_k = r.integer(topk_key, 1, kMaxExperts);
  if (!r.sink().failed() && m.moe.top_k > m.moe.num_experts) {
    r.fail(topk_key, fmt::format("at most {} = {}", experts_key, m.moe.num_experts), std::to_string(m.moe.top_k));
  }
  m.layer_is_moe.assign(static_cast<std::size_t>(m.num_layers), true);
  switch (f) {
    case Family::kMixtral:
    case Family::kGptOss:
    case Family::kGptMoe:
      m.moe.expert_ffn = r.integer("intermediate_size", 1, kMaxDim);
      m.ffn = 0;
      m.moe.router_bias = (f == Family::kGptOss);
      break;
    case Family::kLlama4: {
      // routed experts and one shared expert of intermediate_size on the MoE layers (every
      // interleave_moe_layer_step-th, or those `moe_layers` lists); a dense MLP of
      // intermediate_size_mlp on the others
      m.moe.expert_ffn = r.integer("intermediate_size", 1, kMaxDim);
      m.moe.num_shared = 1;
      m.moe.shared_ffn = m.moe.expert_ffn;
      m.ffn = r.integer_or("intermediate_size_mlp", 0, 0, kMaxDim);
      const std::int64_t step = r.integer_or("interleave_moe_layer_step", 1, 1, kMaxLayers);
      const auto listed = r.integer_list_or("moe_layers", 0, m.num_layers - 1);
      for (std::int64_t i = 0; i < m.num_layers; ++i) {
        const bool moe = listed.empty() ? (i + 1) % step == 0 : std::find(listed.begin(), listed.end(), i) != listed.end();
        m.layer_is_moe[static_cast<std::size_t>(i)] = moe;
      }
      break;
    }
    case Family::kQwen2Moe:
    case Family::kQwen3Moe: {
      if (f == Family::kQwen2Moe) {  // one shared expert of its own width (its sigmoid gate: h weights, not counted)
        m.moe.shared_ffn = r.integer_or("shared_expert_intermediate_size", 0, 0, kMaxDim);
        m.moe.num_shared = m.moe.shared_ffn > 0 ? 1 : 0;
      }
      m.moe.expert_ffn = r.integer("moe_intermediate_size", 1, kMaxDim);
      m.ffn = r.integer_or("intermediate_size", 0, 0, kMaxDim);
      const std::int64_t step = r.integer_or("decoder_sparse_step", 1, 1, kMaxLayers);
      const auto only_mlp = r.integer_list_or("mlp_only_layers", 0, m.num_layers - 1);
      for (std::int64_t i = 0; i < m.num_layers; ++i) {
        const bool listed = std::find(only_mlp.begin(), only_mlp.end(), i) != only_mlp.end();
        m.layer_is_moe[static_cast<std::size_t>(i)] = !listed && ((i + 1) % step == 0);
      }
      break;
    }
    case Family::kDeepseekV3: {
      m.moe.expert_ffn = r.integer("moe_intermediate_size", 1, kMaxDim);
      m.ffn = r.integer("intermediate_size", 1, kMaxDim);
      m.moe.num_shared = r.integer_or("n_shared_experts", 0, 0, kMaxExperts);
      m.moe.shared_ffn = m.moe.num_shared > 0 ? m.moe.expert_ffn : 0;
      m.moe.score_correction_bias = (r.string_or("topk_method", "noaux_tc") == "noaux_tc");
      const std::int64_t first_dense = r.integer_or("first_k_dense_replace", 0, 0, kMaxLayers);
      const std::int64_t freq = r.integer_or("moe_layer_freq", 1, 1, kMaxLayers);
      if (!r.sink().failed() && first_dense > m.num_layers) {
        r.fail("first_k_dense_replace", fmt::format("at most num_hidden_layers ({})", m.num_layers), std::to_string(first_dense));
      }
      for (std::int64_t i = 0; i < m.num_layers; ++i) {
        m.layer_is_moe[static_cast<std::size_t>(i)] = (i >= first_dense) && (i % freq == 0);
      }
      m.num_mtp_layers = r.integer_or("num_nextn_predict_layers", 0, 0, kMaxLayers);
      break;
    }
    default:
      break;
  }
  if (!r.sink().failed() && m.num_moe_layers() < m.num_layers && m.ffn == 0) {
    r.fail("intermediate_size", "a positive integer (some layers are dense)", "nothing (the field is missing)");
  }
}

void read_mla(const FieldReader& r, ModelSpec& m) {
  m.attention = AttentionKind::kMla;
  m.mla.q_lora_rank = r.integer_or("q_lora_rank", 0, 1, kMaxDim);
  m.mla.kv_lora_rank = r.integer("kv_lora_rank", 1, kMaxDim);
  m.mla.qk_nope_head_dim = r.integer("qk_nope_head_dim", 0, kMaxDim);
  m.mla.qk_rope_head_dim = r.integer("qk_rope_head_dim", 1, kMaxDim);
  m.mla.v_head_dim = r.integer("v_head_dim", 1, kMaxDim);
  m.head_dim = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
  m.num_kv_heads = m.num_heads;  // after decompression every head has its own k and v
}

Expected<Family> resolve_family(const FieldReader& r, std::string& arch_out) {
  const json* archs = r.get("architectures");
  std::string arch;
  if (archs) {
    if (!archs->is_array() || archs->empty()) {
      return Error{r.file(), "architectures", "a non-empty list of architecture names", describe_value(*archs)};
    }
    if (!(*archs)[0].is_string()) {
      return Error{r.file(), "architectures[0]", "an architecture name (a string such as \"LlamaForCausalLM\")", describe_value((*archs)[0])};
    }
    arch = (*archs)[0].get<std::string>();
    for (const auto& a : kArchs) {
      if (arch == a.architecture) {
        arch_out = arch;
        return a.family;
      }
    }
    return Error{r.file(), "architectures[0]", "one of the supported architectures (" + supported_architectures() + ")", "'" + arch + "'"};
  }
  const json* mt = r.get("model_type");
  if (mt && !mt->is_string()) {
    return Error{r.file(), "model_type", "a model type name (a string such as \"llama\")", describe_value(*mt)};
  }
  if (mt) {
    for (const auto& a : kArchs) {
      if (mt->get<std::string>() == a.model_type) {
        arch_out = a.architecture;
        return a.family;
      }
    }
    return Error{r.file(), "model_type", "the model type of a supported architecture (" + supported_architectures() + ")",
                 describe_value(*mt)};
  }
  return Error{r.file(), "architectures", "a list naming one of the supported architectures (" + supported_architectures() + ")",
               "nothing (neither 'architectures' nor 'model_type' is given)"};
}

}  // namespace

std::string supported_architectures() {
  std::string s;
  for (const auto& a : kArchs) s += (s.empty() ? "" : ", ") + std::string(a.architecture);
  return s;
}

Expected<ModelSpec> parse_model_config(std::string_view text, const std::string& file, const std::string& name, bool read_quant) {
  auto doc = parse_json_text(text, file);
  if (!doc) return doc.error();
  ErrorSink sink;
  const FieldReader r = root_reader(*doc, file, sink);
  if (sink.failed()) return *sink.first;
  ModelSpec m;
  m.name = name;
  m.source = file;
  auto fam = resolve_family(r, m.architecture);
  if (!fam) return fam.error();
  const Family f = *fam;
  // Llama-4's multimodal config nests the decoder in text_config (quantization stays at the root)
  std::optional<FieldReader> text_cfg;
  if ((f == Family::kLlama4 || f == Family::kGemma3) && r.has("text_config")) {
    text_cfg = r.object("text_config", true);
    if (sink.failed()) return *sink.first;
    if (auto v = r.object("vision_config", false)) {
      // encoder layers (attention 4 h^2, MLP 2 h f, their biases and norms) and the projector
      const std::int64_t vh = v->integer_or("hidden_size", 0, 0, kMaxDim), vf = v->integer_or("intermediate_size", 0, 0, kMaxDim);
      const std::int64_t vl = v->integer_or("num_hidden_layers", 0, 0, kMaxLayers);
      const std::int64_t vout = v->integer_or("vision_output_dim", vh, 0, kMaxDim);  // Gemma 3's projector maps the encoder's width
      const std::int64_t th = text_cfg->integer_or("hidden_size", 0, 0, kMaxDim);
      m.vision_params = vl * (4 * vh * vh + 2 * vh * vf + 9 * vh + vf) + vout * th;
    }
  }
  const FieldReader& d = text_cfg ? *text_cfg : r;

  read_common(d, m);
  if (sink.failed()) return *sink.first;

  // Attention and MLP details per family (HF defaults where HF has one).
  switch (f) {
    case Family::kLlama:
    case Family::kMistral:
    case Family::kPhi3:
      m.qkv_bias = m.o_bias = d.boolean_or("attention_bias", false);
      m.mlp_bias = d.boolean_or("mlp_bias", false);
      break;
    case Family::kMixtral:
      break;
    case Family::kLlama4:  // use_qk_norm is a weightless L2 norm: no parameters
      m.qkv_bias = m.o_bias = d.boolean_or("attention_bias", false);
      break;
    case Family::kQwen2:
    case Family::kQwen2Moe:
      m.qkv_bias = true;  // Qwen2 always has q/k/v biases, none on o_proj
      break;
    case Family::kGemma2:
    case Family::kGemma3:
      // gated GELU MLPs (gate, up, down); logit soft-capping costs nothing; Gemma 3 adds q/k
      // norms; the embedding is tied unless the config says otherwise
      m.tied_embeddings = d.boolean_or("tie_word_embeddings", true);
      m.qkv_bias = m.o_bias = d.boolean_or("attention_bias", false);
      m.qk_norm = f == Family::kGemma3;
      break;
    case Family::kQwen3:
    case Family::kQwen3Moe:
      m.qkv_bias = m.o_bias = d.boolean_or("attention_bias", false);
      m.qk_norm = true;
      break;
    case Family::kDeepseekV3:
      read_mla(d, m);
      break;
    case Family::kGptOss:
      m.qkv_bias = m.o_bias = d.boolean_or("attention_bias", true);
      m.attention_sinks = true;
      m.mlp_bias = true;
      break;
    case Family::kGptMoe: {
      m.rotary = false;  // GPT-3's learned absolute positions: no rotary kernel
      m.qkv_bias = m.o_bias = d.boolean_or("attention_bias", true);
      m.mlp_bias = d.boolean_or("mlp_bias", true);
      const std::string act = d.string_or("hidden_act", "gelu");
      m.mlp_gated = (act == "silu" || act == "swiglu");
      const std::string norm = d.string_or("norm_type", "layernorm");
      if (norm == "layernorm") {
        m.norm = NormKind::kLayerNorm;
      } else if (norm != "rmsnorm") {
        d.fail("norm_type", "'layernorm' or 'rmsnorm'", "'" + norm + "'");
      }
      break;
    }
  }

  const bool is_moe_family = f == Family::kMixtral || f == Family::kQwen3Moe || f == Family::kDeepseekV3 ||
                             f == Family::kGptOss || f == Family::kGptMoe || f == Family::kLlama4 || f == Family::kQwen2Moe;
  if (is_moe_family) {
    read_moe(d, f, m);
  } else {
    m.ffn = d.integer("intermediate_size", 1, kMaxDim);
    m.layer_is_moe.assign(static_cast<std::size_t>(m.num_layers), false);
  }
  read_windows(d, f, m);
  if (read_quant) read_quantization(r, m.quant);
  if (sink.failed()) return *sink.first;
  if (m.quant.method == "mxfp4" && !m.is_moe()) {  // it quantises routed experts only: nothing here would change
    return Error{file, "quantization_config.quant_method", "a method for a dense model (mxfp4 quantises a mixture of experts' routed experts; "
                 "this model has none: give --weights-dtype fp4 to plan its weights in fp4)", "'mxfp4'"};
  }
  if (const auto classes = m.layer_classes().size(); classes > kMaxLayerClasses) {
    return Error{file, "layer_types", fmt::format("at most {} distinct layer shapes (dense/MoE x sliding window)", kMaxLayerClasses),
                 fmt::format("{}", classes)};
  }
  if (const double n = approx_total_params(m); !(n <= kMaxModelParams)) {
    return Error{file, "", fmt::format("a model of at most {:.0e} parameters", kMaxModelParams),
                 fmt::format("about {:.2e} (check the sizes)", n)};
  }
  return m;
}

std::vector<std::string> model_preset_names() {
  std::vector<std::string> out;
  for (const auto& e : embedded_models()) out.emplace_back(e.name);
  return out;
}

namespace {
bool is_model_preset(const std::string& name) {
  for (const auto& e : embedded_models()) {
    if (name == e.name) return true;
  }
  return false;
}
}  // namespace

namespace {
// Each preset's repository first (launch serves it), then other ids of the same weights.
struct PresetRepos {
  const char* preset;
  std::vector<const char*> repos;
};
const std::vector<PresetRepos>& preset_repos() {
  static const std::vector<PresetRepos> table = {
      {"deepseek-v3", {"deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-V3-0324", "deepseek-ai/DeepSeek-V3-Base"}},
      {"llama-3.1-8b", {"meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B", "meta-llama/Meta-Llama-3.1-8B-Instruct"}},
      {"llama-3.1-70b", {"meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.1-70B", "meta-llama/Meta-Llama-3.1-70B-Instruct"}},
      {"llama-3.1-405b", {"meta-llama/Llama-3.1-405B-Instruct", "meta-llama/Llama-3.1-405B", "meta-llama/Meta-Llama-3.1-405B-Instruct"}},
      {"llama-2-70b", {"meta-llama/Llama-2-70b-chat-hf", "meta-llama/Llama-2-70b-hf"}},
      {"mixtral-8x7b", {"mistralai/Mixtral-8x7B-Instruct-v0.1", "mistralai/Mixtral-8x7B-v0.1"}},
      {"mixtral-8x22b", {"mistralai/Mixtral-8x22B-Instruct-v0.1", "mistralai/Mixtral-8x22B-v0.1"}},
      {"qwen3-235b-a22b", {"Qwen/Qwen3-235B-A22B"}},
      {"qwen3-30b-a3b", {"Qwen/Qwen3-30B-A3B"}},
      {"qwen3-32b", {"Qwen/Qwen3-32B"}},
      {"qwen3-8b", {"Qwen/Qwen3-8B"}},
      {"gpt-oss-120b", {"openai/gpt-oss-120b"}},
  };
  return table;
}
}  // namespace

std::string preset_hf_repo(const std::string& preset) {
  for (const auto& p : preset_repos()) {
    if (preset == p.preset) return p.repos.front();
  }
  return "";
}

std::optional<std::string> preset_of_hf_id(const std::string& id) {
  const std::string want = lower_ascii(id);
  for (const auto& p : preset_repos()) {
    for (const char* repo : p.repos) {
      const std::string r = lower_ascii(repo);
      const auto slash = r.find('/');
      if (want == r || (slash != std::string::npos && want == r.substr(slash + 1))) return std::string(p.preset);
    }
  }
  return std::nullopt;
}

std::optional<std::string> model_shadow_note(const std::string& name_or_path) {
  std::error_code ec;
  // an empty folder is load_model's to refuse (its message names the preset)
  if (!is_model_preset(name_or_path) || !std::filesystem::is_regular_file(std::filesystem::path(name_or_path) / "config.json", ec)) {
    return std::nullopt;
  }
  return fmt::format("--model {0}: the local folder '{0}' is read, not the preset of the same name (run from another folder to use the preset)",
                     name_or_path);
}

Expected<ModelSpec> load_model(const std::string& name_or_path_in) {
  // a model folder: its config.json (and an hf_quant_config.json beside it)
  std::string name_or_path = name_or_path_in;
  std::error_code dir_ec;
  if (std::filesystem::is_directory(name_or_path, dir_ec)) {
    const auto cfg = std::filesystem::path(name_or_path) / "config.json";
    if (!std::filesystem::is_regular_file(cfg, dir_ec)) {
      return Error{name_or_path, "", "a model folder with a config.json (a HuggingFace checkpoint's)",
                   is_model_preset(name_or_path)
                       ? "no config.json in it (this local folder shadows the preset of the same name: run from another folder to use the preset)"
                       : "no config.json in it"};
    }
    name_or_path = cfg.string();
  }
  // a Hugging Face id of a preset's checkpoint (no such file here): that preset
  if (std::error_code ec; !std::filesystem::exists(name_or_path, ec)) {
    if (const auto preset = preset_of_hf_id(name_or_path)) name_or_path = *preset;
  }
  auto in = preset_or_file(embedded_models(), name_or_path, "--model", "a config.json");
  if (!in) return in.error();
  std::string name = in->name;
  if (name == "config") name = std::filesystem::path(name_or_path).parent_path().filename().string();  // .../Model/config.json
  if (name.empty()) name = "model";
  // ModelOpt checkpoints describe their quantization in hf_quant_config.json beside config.json
  // (it takes precedence over a quantization_config block, as in TensorRT-LLM and vLLM: that
  // block is then not read at all)
  std::filesystem::path beside;
  std::error_code ec;
  if (in->path == name_or_path) beside = std::filesystem::path(in->path).parent_path() / "hf_quant_config.json";  // not a preset
  const bool has_beside = !beside.empty() && std::filesystem::is_regular_file(beside, ec);
  auto m = parse_model_config(in->text, in->path, name, !has_beside);
  if (!m || !has_beside) return m;
  auto text = read_text_file(beside.string());
  if (!text) return text.error();
  auto q = parse_hf_quant_config(*text, beside.string());
  if (!q) return q.error();
  m->quant = *q;
  return m;
}

}  // namespace shardwise
