#include "model/derived.hpp"

#include <algorithm>

namespace shardwise {
namespace {
std::int64_t norm_params(const ModelSpec& m, std::int64_t width) {
  return m.norm == NormKind::kLayerNorm ? 2 * width : width;  // LayerNorm: weight + bias
}
}  // namespace

std::int64_t attention_params_per_layer(const ModelSpec& m) {
  const std::int64_t h = m.hidden;
  const std::int64_t nh = m.num_heads;
  if (m.attention == AttentionKind::kMla) {
    const auto& a = m.mla;
    const std::int64_t qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    // q: low-rank (h x q_lora, norm q_lora, q_lora x nh*qk) or direct (h x nh*qk).
    const std::int64_t q = a.q_lora_rank > 0 ? h * a.q_lora_rank + a.q_lora_rank + a.q_lora_rank * nh * qk : h * nh * qk;
    // kv_a: h x (kv_lora + rope), its norm kv_lora, kv_b: kv_lora x nh*(nope + v).
    const std::int64_t kv = h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank +
                            a.kv_lora_rank * nh * (a.qk_nope_head_dim + a.v_head_dim);
    const std::int64_t o = nh * a.v_head_dim * h;
    return q + kv + o;
  }
  const std::int64_t q_out = nh * m.head_dim;
  const std::int64_t kv_out = m.num_kv_heads * m.head_dim;
  std::int64_t p = h * q_out + 2 * h * kv_out + q_out * h;  // q, k, v, o
  if (m.qkv_bias) p += q_out + 2 * kv_out;
  if (m.o_bias) p += h;
  if (m.qk_norm) p += 2 * m.head_dim;  // one RMSNorm weight over head_dim for q, one for k
  if (m.attention_sinks) p += nh;
  return p;
}

std::int64_t mlp_params(const ModelSpec& m, std::int64_t ffn) {
  // Gated (SwiGLU): gate and up h x ffn, down ffn x h. Plain: up and down only.
  const std::int64_t up_mats = m.mlp_gated ? 2 : 1;
  std::int64_t p = (up_mats + 1) * m.hidden * ffn;
  if (m.mlp_bias) p += up_mats * ffn + m.hidden;
  return p;
}

ParamCounts count_params(const ModelSpec& m) {
  ParamCounts c;
  ParamBreakdown& t = c.total;
  ParamBreakdown& a = c.active;
  t.embedding = m.vocab * m.hidden;
  t.lm_head = m.tied_embeddings ? 0 : m.vocab * m.hidden;
  t.attention = m.num_layers * attention_params_per_layer(m);
  t.norms = m.num_layers * 2 * norm_params(m, m.hidden) + norm_params(m, m.hidden);
  const std::int64_t moe_layers = m.num_moe_layers();
  t.dense_mlp = (m.num_layers - moe_layers) * mlp_params(m, m.ffn);
  a = t;
  if (moe_layers > 0) {
    const std::int64_t expert = mlp_params(m, m.moe.expert_ffn);
    t.routed_experts = moe_layers * m.moe.num_experts * expert;
    a.routed_experts = moe_layers * m.moe.top_k * expert;
    t.shared_experts = a.shared_experts = moe_layers * m.moe.num_shared * mlp_params(m, m.moe.shared_ffn);
    std::int64_t router = m.hidden * m.moe.num_experts;
    if (m.moe.router_bias) router += m.moe.num_experts;
    if (m.moe.score_correction_bias) router += m.moe.num_experts;
    t.router = a.router = moe_layers * router;
  }
  return c;
}

double approx_total_params(const ModelSpec& m) {
  const double h = static_cast<double>(m.hidden), nh = static_cast<double>(m.num_heads);
  const double layers = static_cast<double>(m.num_layers);
  double attn = 0.0;
  if (m.attention == AttentionKind::kMla) {
    const auto& a = m.mla;
    const double qk = static_cast<double>(a.qk_nope_head_dim + a.qk_rope_head_dim);
    attn = h * static_cast<double>(a.q_lora_rank) + (static_cast<double>(a.q_lora_rank) + h) * nh * qk +
           (h + nh * static_cast<double>(a.qk_nope_head_dim + a.v_head_dim)) * static_cast<double>(a.kv_lora_rank + a.qk_rope_head_dim) +
           nh * static_cast<double>(a.v_head_dim) * h;
  } else {
    attn = 2.0 * h * nh * static_cast<double>(m.head_dim) + 2.0 * h * static_cast<double>(m.num_kv_heads * m.head_dim);
  }
  const double mlp = 3.0 * h * (static_cast<double>(m.ffn) +
                                static_cast<double>(m.moe.num_experts) * static_cast<double>(m.moe.expert_ffn) +
                                static_cast<double>(m.moe.num_shared) * static_cast<double>(m.moe.shared_ffn) +
                                static_cast<double>(m.moe.num_experts));
  return layers * (attn + mlp + 4.0 * h) + 2.0 * static_cast<double>(m.vocab) * h;
}

std::int64_t kv_elements_per_token_per_layer(const ModelSpec& m) {
  if (m.attention == AttentionKind::kMla) return m.mla.kv_lora_rank + m.mla.qk_rope_head_dim;
  return 2 * m.num_kv_heads * m.head_dim;
}

KvCacheBytes kv_cache_bytes(const ModelSpec& m, DType kv_dtype) {
  KvCacheBytes k;
  k.per_layer_token = Bytes(static_cast<double>(kv_elements_per_token_per_layer(m)) * bytes_per_element(kv_dtype));
  for (std::int64_t w : m.layer_window) {
    if (w == 0) {
      ++k.full_layers;
    } else {
      k.sliding_windows.push_back(w);
    }
  }
  return k;
}

Bytes KvCacheBytes::per_token_all_layers() const {
  return per_layer_token * static_cast<double>(full_layers + static_cast<std::int64_t>(sliding_windows.size()));
}

Bytes KvCacheBytes::for_context(std::int64_t context) const {
  double tokens = static_cast<double>(full_layers) * static_cast<double>(context);
  for (std::int64_t w : sliding_windows) tokens += static_cast<double>(std::min(w, context));
  return per_layer_token * tokens;
}

Bytes weight_bytes(const ModelSpec& m, DType weights_dtype) {
  return Bytes(static_cast<double>(count_params(m).total.total()) * bytes_per_element(weights_dtype));
}

FlopsPerToken flops_per_token(const ModelSpec& m, std::int64_t context) {
  const double h = static_cast<double>(m.hidden);
  const double nh = static_cast<double>(m.num_heads);
  // Matmul weights per layer (biases and norms are element-wise, not counted).
  double attn_w = 0.0;
  if (m.attention == AttentionKind::kMla) {
    const auto& a = m.mla;
    const double qk = static_cast<double>(a.qk_nope_head_dim + a.qk_rope_head_dim);
    const double ql = static_cast<double>(a.q_lora_rank), kl = static_cast<double>(a.kv_lora_rank);
    attn_w = (a.q_lora_rank > 0 ? h * ql + ql * nh * qk : h * nh * qk) + h * (kl + static_cast<double>(a.qk_rope_head_dim)) +
             kl * nh * static_cast<double>(a.qk_nope_head_dim + a.v_head_dim) + nh * static_cast<double>(a.v_head_dim) * h;
  } else {
    const double q_out = nh * static_cast<double>(m.head_dim);
    const double kv_out = static_cast<double>(m.num_kv_heads * m.head_dim);
    attn_w = 2.0 * h * q_out + 2.0 * h * kv_out;
  }
  const double mats = m.mlp_gated ? 3.0 : 2.0;
  double mlp_w_total = 0.0;
  double attn_core = 0.0;
  for (std::size_t i = 0; i < m.layer_is_moe.size(); ++i) {
    if (m.layer_is_moe[i]) {
      mlp_w_total += mats * h *
                     (static_cast<double>(m.moe.top_k * m.moe.expert_ffn) + static_cast<double>(m.moe.num_shared * m.moe.shared_ffn)) +
                     h * static_cast<double>(m.moe.num_experts);  // router
    } else {
      mlp_w_total += mats * h * static_cast<double>(m.ffn);
    }
    const double c = static_cast<double>(m.layer_window[i] > 0 ? std::min(m.layer_window[i], context) : context);
    // QK^T: 2 x heads x qk_dim x c; PV: 2 x heads x v_dim x c.
    const double qk_dim = static_cast<double>(m.head_dim);
    const double v_dim = static_cast<double>(m.attention == AttentionKind::kMla ? m.mla.v_head_dim : m.head_dim);
    attn_core += 2.0 * nh * (qk_dim + v_dim) * c;
  }
  const double lm_head = static_cast<double>(m.vocab) * h;  // computed even when tied
  FlopsPerToken f;
  f.matmul = Flops(2.0 * (static_cast<double>(m.num_layers) * attn_w + mlp_w_total + lm_head));
  f.attention = Flops(attn_core);
  return f;
}

}  // namespace shardwise
