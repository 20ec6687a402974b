#include "graph/graph.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "model/derived.hpp"

namespace shardwise {

int find_choice(int slot, const std::string& name) {
  const SlotInfo& s = slot_info(slot);
  for (int i = 0; i < s.num_choices; ++i) {
    if (name == s.choices[static_cast<std::size_t>(i)]) return i;
  }
  return -1;
}
const char* to_string(Phase p) { return p == Phase::kPrefill ? "prefill" : "decode"; }

bool same_attention(const LayerShape& a, const LayerShape& b) {
  return a.mla == b.mla && a.rope == b.rope && a.window == b.window && a.hidden == b.hidden && a.heads == b.heads &&
         a.kv_heads == b.kv_heads && a.d_qk == b.d_qk && a.d_v == b.d_v && a.qkv_out == b.qkv_out && a.qkv_params == b.qkv_params &&
         a.qkv_kv_params == b.qkv_kv_params && a.qkv_replicated_params == b.qkv_replicated_params &&
         a.kv_elems_per_token == b.kv_elems_per_token && a.mla_latent == b.mla_latent && a.mla_rope == b.mla_rope && a.o_params == b.o_params;
}

ModelGraph build_graph(const ModelSpec& m) {
  ModelGraph g;
  g.vocab = m.vocab;
  g.hidden = m.hidden;
  g.embedding_params = static_cast<double>(m.vocab * m.hidden);
  g.lm_head_params = m.tied_embeddings ? 0.0 : static_cast<double>(m.vocab * m.hidden);
  g.final_norm_params = (m.norm == NormKind::kLayerNorm ? 2.0 : 1.0) * static_cast<double>(m.hidden);
  const auto classes = m.layer_classes();
  const double h = static_cast<double>(m.hidden);
  for (const auto& c : classes) {
    LayerShape s;
    s.moe = c.moe;
    s.window = c.window;
    s.count = c.count;
    s.hidden = m.hidden;
    s.heads = m.num_heads;
    s.mla = m.attention == AttentionKind::kMla;
    s.rope = m.rotary;
    const double attn_total = static_cast<double>(attention_params_per_layer(m));
    if (s.mla) {
      const auto& a = m.mla;
      s.kv_heads = m.num_heads;
      s.d_qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
      s.d_v = a.v_head_dim;
      s.mla_latent = a.kv_lora_rank;
      s.mla_rope = a.qk_rope_head_dim;
      s.kv_elems_per_token = a.kv_lora_rank + a.qk_rope_head_dim;
      // the head-split output of the q and kv up-projections: per head q (nope + rope),
      // k_nope and v; the latent and k_rope come from the replicated down-projections
      s.qkv_out = m.num_heads * (s.d_qk + a.qk_nope_head_dim + s.d_v);
      // Down-projections (and their norms) are shared by all heads: replicated under a head split.
      s.qkv_replicated_params = (a.q_lora_rank > 0 ? h * static_cast<double>(a.q_lora_rank) + static_cast<double>(a.q_lora_rank) : 0.0) +
                                h * static_cast<double>(a.kv_lora_rank + a.qk_rope_head_dim) + static_cast<double>(a.kv_lora_rank);
      s.o_params = static_cast<double>(m.num_heads * a.v_head_dim) * h;
      s.qkv_params = attn_total - s.o_params - s.qkv_replicated_params;
      s.qkv_kv_params = static_cast<double>(a.kv_lora_rank * m.num_heads * (a.qk_nope_head_dim + a.v_head_dim));
    } else {
      s.kv_heads = m.num_kv_heads;
      s.d_qk = s.d_v = m.head_dim;
      s.kv_elems_per_token = 2 * m.num_kv_heads * m.head_dim;
      s.qkv_out = (m.num_heads + 2 * m.num_kv_heads) * m.head_dim;
      s.o_params = static_cast<double>(m.num_heads * m.head_dim) * h + (m.o_bias ? h : 0.0);
      s.qkv_params = attn_total - s.o_params;
      s.qkv_kv_params = static_cast<double>(2 * m.num_kv_heads * m.head_dim) * (h + (m.qkv_bias ? 1.0 : 0.0));
    }
    s.mlp_mats = m.mlp_gated ? 3 : 2;
    const double up = m.mlp_gated ? 2.0 : 1.0;
    const auto mlp_parts = [&](std::int64_t f, double& p1, double& p2) {
      p1 = up * h * static_cast<double>(f) + (m.mlp_bias ? up * static_cast<double>(f) : 0.0);
      p2 = static_cast<double>(f) * h + (m.mlp_bias ? h : 0.0);
    };
    if (c.moe) {
      s.experts = m.moe.num_experts;
      s.top_k = m.moe.top_k;
      s.expert_ffn = m.moe.expert_ffn;
      mlp_parts(m.moe.expert_ffn, s.expert_ffn1_params, s.expert_ffn2_params);
      s.router_params = h * static_cast<double>(m.moe.num_experts) + (m.moe.router_bias ? static_cast<double>(m.moe.num_experts) : 0.0) +
                        (m.moe.score_correction_bias ? static_cast<double>(m.moe.num_experts) : 0.0);
      s.ffn = m.moe.num_shared * m.moe.shared_ffn;  // shared experts as one MLP of the summed width
    } else {
      s.ffn = m.ffn;
    }
    if (s.ffn > 0) mlp_parts(s.ffn, s.ffn1_params, s.ffn2_params);
    s.norm_params = (m.norm == NormKind::kLayerNorm ? 4.0 : 2.0) * h;
    g.classes.push_back(s);
  }
  for (std::size_t i = 0; i < m.layer_is_moe.size(); ++i) {
    for (std::size_t k = 0; k < classes.size(); ++k) {
      if (classes[k].moe == m.layer_is_moe[i] && classes[k].window == m.layer_window[i]) {
        g.layer_class.push_back(static_cast<std::uint8_t>(k));
        break;
      }
    }
  }
  for (std::size_t c = 0; c < g.classes.size(); ++c) {
    std::size_t twin = c;
    for (std::size_t k = 0; k < c && twin == c; ++k) {
      if (same_attention(g.classes[k], g.classes[c])) twin = k;
    }
    g.attention_twin.push_back(static_cast<std::uint8_t>(twin));
  }
  return g;
}

std::vector<OpInfo> describe_chain(const ModelGraph& g, int cls, Phase phase, std::int64_t tokens, std::int64_t context,
                                   DType weights, DType act) {
  const LayerShape& s = g.classes[static_cast<std::size_t>(cls)];
  const double t = static_cast<double>(tokens), h = static_cast<double>(s.hidden);
  const double wb = bytes_per_element(weights), ab = bytes_per_element(act);
  std::vector<OpInfo> out;
  const auto gemm = [&](const char* name, int slot, double params, double in, double outf, std::string wdims, std::string odims) {
    out.push_back({name, slot, std::move(wdims), std::move(odims), params, 2.0 * t * params, params * wb, t * (in + outf) * ab});
  };
  const auto norm = [&](const char* name, int slot) {
    out.push_back({name, slot, fmt::format("[hidden={}]", s.hidden), "[tokens, hidden]", s.norm_params / 2, 4.0 * t * h, s.norm_params / 2 * wb,
                   2.0 * t * h * ab});
  };
  norm("attn_norm", static_cast<int>(Slot::kAttnNorm));
  gemm("qkv_proj", static_cast<int>(Slot::kQkv), s.qkv_params + s.qkv_replicated_params, h, static_cast<double>(s.qkv_out),
       s.mla ? fmt::format("[hidden={}, latents -> heads={} x {}]", s.hidden, s.heads, s.qkv_out / s.heads)  // per head q, k_nope, v
             : fmt::format("[hidden={}, (heads={} + 2 x kv={}) x {}]", s.hidden, s.heads, s.kv_heads, s.d_qk),
       "[tokens, heads x head_dim]");
  {
    const double ctx = static_cast<double>(s.window > 0 ? std::min(s.window, context) : context);
    const double nh = static_cast<double>(s.heads);
    OpInfo a{"attention", static_cast<int>(Slot::kAttention), "-", "[tokens, heads x v_dim]", 0, 0, 0, 0};
    if (phase == Phase::kDecode) {
      // one new token per sequence against ctx cached tokens; MLA in its absorbed form
      const double dk = s.mla ? static_cast<double>(s.mla_latent + s.mla_rope) : static_cast<double>(s.d_qk);
      const double dv = s.mla ? static_cast<double>(s.mla_latent) : static_cast<double>(s.d_v);
      a.flops = 2.0 * t * nh * (dk + dv) * ctx;
      a.activation_bytes = t * ctx * static_cast<double>(s.kv_elems_per_token) * ab + t * static_cast<double>(s.qkv_out) * ab;
    } else {
      // causal prefill of `tokens` prompt tokens: on average each attends to half the window
      const double causal = s.window > 0 ? std::min(static_cast<double>(s.window), t / 2.0) : t / 2.0;
      a.flops = 2.0 * t * nh * static_cast<double>(s.d_qk + s.d_v) * causal;
      a.activation_bytes = t * (static_cast<double>(s.qkv_out) + nh * static_cast<double>(s.d_v)) * ab;
    }
    out.push_back(a);
  }
  gemm("o_proj", static_cast<int>(Slot::kOProj), s.o_params, static_cast<double>(s.heads * s.d_v), h,
       fmt::format("[heads={} x {}, hidden={}]", s.heads, s.d_v, s.hidden), "[tokens, hidden]");
  norm("ffn_norm", static_cast<int>(Slot::kFfnNorm));
  const char* f1 = s.moe ? "shared_ffn1" : "ffn1";
  const char* f2 = s.moe ? "shared_ffn2" : "ffn2";
  if (s.ffn > 0) {
    gemm(f1, static_cast<int>(Slot::kFfn1), s.ffn1_params, h, static_cast<double>((s.mlp_mats - 1) * s.ffn),
         fmt::format("[hidden={}, ffn={}x{}]", s.hidden, s.mlp_mats - 1, s.ffn), "[tokens, ffn]");
    gemm(f2, static_cast<int>(Slot::kFfn2), s.ffn2_params, static_cast<double>(s.ffn), h,
         fmt::format("[ffn={}, hidden={}]", s.ffn, s.hidden), "[tokens, hidden]");
  }
  if (s.moe) {
    gemm("router", static_cast<int>(Slot::kRouter), s.router_params, h, static_cast<double>(s.experts),
         fmt::format("[hidden={}, experts={}]", s.hidden, s.experts), "[tokens, experts]");
    const double routed = t * static_cast<double>(s.top_k);
    out.push_back({"dispatch", -1, "-", "[tokens x top_k, hidden]", 0, 0, 0, routed * h * ab});
    const double e1 = s.expert_ffn1_params, e2 = s.expert_ffn2_params, ne = static_cast<double>(s.experts);
    out.push_back({"expert_ffn1", static_cast<int>(Slot::kExpertFfn1),
                   fmt::format("[experts={}, hidden={}, ffn={}x{}]", s.experts, s.hidden, s.mlp_mats - 1, s.expert_ffn),
                   "[tokens x top_k, ffn]", ne * e1, 2.0 * routed * e1, ne * e1 * wb,
                   routed * (h + static_cast<double>((s.mlp_mats - 1) * s.expert_ffn)) * ab});
    out.push_back({"expert_ffn2", static_cast<int>(Slot::kExpertFfn2),
                   fmt::format("[experts={}, ffn={}, hidden={}]", s.experts, s.expert_ffn, s.hidden), "[tokens x top_k, hidden]",
                   ne * e2, 2.0 * routed * e2, ne * e2 * wb, routed * (static_cast<double>(s.expert_ffn) + h) * ab});
    out.push_back({"combine", -1, "-", "[tokens, hidden]", 0, 2.0 * routed * h, 0, routed * h * ab});
  }
  return out;
}

std::array<bool, kNumSlots> slots_used(const ModelGraph& g) {
  std::array<bool, kNumSlots> used{};
  used.fill(true);
  bool mlp = false, moe = false;
  for (const LayerShape& c : g.classes) {
    mlp = mlp || c.ffn > 0;
    moe = moe || c.moe;
  }
  used[static_cast<std::size_t>(Slot::kFfn1)] = used[static_cast<std::size_t>(Slot::kFfn2)] = mlp;
  for (const Slot s : {Slot::kRouter, Slot::kExpertFfn1, Slot::kExpertFfn2}) used[static_cast<std::size_t>(s)] = moe;
  return used;
}

}  // namespace shardwise
