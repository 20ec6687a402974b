// Memory per GPU: weight shards, KV cache, reserve (docs/cost-model.md, "Memory per GPU").
#include <fmt/format.h>

#include "cost/env.hpp"

namespace shardwise {
namespace detail {

// Head-split projection parameters a rank holds. hidden splits every column's rows over
// tp; heads splits q over tp, but with head-split attention a rank holds a whole kv head
// when tp exceeds the kv heads (GQA), and MLA attention over all heads (context or none)
// needs every head's kv_b to read the cached latent, so kv_b stays whole there.
double qkv_params_per_rank(const Plan& p, const LayerShape& s, double tp) {
  const int c = ch(p, Slot::kQkv);
  if (c == 2) return s.qkv_params;
  if (c == 1) return s.qkv_params / tp;
  const double q = (s.qkv_params - s.qkv_kv_params) / tp;
  if (s.mla) return q + (ch(p, Slot::kAttention) == 0 ? s.qkv_kv_params / tp : s.qkv_kv_params);
  // a whole shared kv head only for head-split attention; otherwise each rank computes its
  // 1/tp block of the k and v features, which the conversion into attention gathers
  return q + s.qkv_kv_params / (ch(p, Slot::kAttention) == 0 ? std::min(tp, static_cast<double>(s.kv_heads)) : tp);
}

// Bytes per rank for a layer of class s (weights only).
double layer_weight_bytes(const Env& e, const LayerShape& s) {
  const Plan& p = *e.plan;
  const double tp = static_cast<double>(e.tp), w = static_cast<double>(e.w);
  double bytes = s.norm_params * e.wb;
  bytes += (s.qkv_replicated_params + qkv_params_per_rank(p, s, tp) + s.o_params / (ch(p, Slot::kOProj) == 2 ? 1.0 : tp)) * e.wb_attn;
  if (s.ffn > 0) {
    bytes += (s.ffn1_params / (ch(p, Slot::kFfn1) == 2 ? 1.0 : w) + s.ffn2_params / (ch(p, Slot::kFfn2) == 2 ? 1.0 : w)) * e.wb_dense;
  }
  if (s.moe) {
    const double slots = expert_slots_per_rank(e, s);
    const double etp = static_cast<double>(e.etp);
    bytes += s.router_params * e.wb;
    bytes += (slots * s.expert_ffn1_params / (ch(p, Slot::kExpertFfn1) == 0 ? etp : 1.0) +
              slots * s.expert_ffn2_params / (ch(p, Slot::kExpertFfn2) == 0 ? etp : 1.0)) * e.wb_exp;
  }
  return bytes;
}

// The same bytes split by slot group (norms and router are constant per group choice).
void layer_weight_bytes_grouped(const Env& e, const LayerShape& s, double* out) {
  const Plan& p = *e.plan;
  const double tp = static_cast<double>(e.tp), w = static_cast<double>(e.w);
  out[kGroupConst] += s.norm_params * e.wb;
  out[kGroupAttention] += (s.qkv_replicated_params + qkv_params_per_rank(p, s, tp) +
                           s.o_params / (ch(p, Slot::kOProj) == 2 ? 1.0 : tp)) * e.wb_attn;
  if (s.ffn > 0) {
    out[kGroupMlp] += (s.ffn1_params / (ch(p, Slot::kFfn1) == 2 ? 1.0 : w) + s.ffn2_params / (ch(p, Slot::kFfn2) == 2 ? 1.0 : w)) * e.wb_dense;
  }
  if (s.moe) {
    const double slots = expert_slots_per_rank(e, s);
    const double etp = static_cast<double>(e.etp);
    out[kGroupRouter] += s.router_params * e.wb;
    out[kGroupExperts] += (slots * s.expert_ffn1_params / (ch(p, Slot::kExpertFfn1) == 0 ? etp : 1.0) +
                           slots * s.expert_ffn2_params / (ch(p, Slot::kExpertFfn2) == 0 ? etp : 1.0)) * e.wb_exp;
  }
}

// KV-cache bytes per rank per sequence for one layer of class s holding `ctx` tokens.
double layer_kv_bytes_per_seq(const Env& e, const LayerShape& s, std::int64_t ctx) {
  const double tokens = static_cast<double>(s.window > 0 ? std::min(s.window, ctx) : ctx);
  const int attn = ch(*e.plan, Slot::kAttention);
  if (attn == 1) return tokens / static_cast<double>(e.tp) * static_cast<double>(s.kv_elems_per_token) * e.kvb;  // context
  if (attn == 2 || s.mla) return tokens * static_cast<double>(s.kv_elems_per_token) * e.kvb;  // none, or MLA's shared latent
  const double kv_heads_rank = std::max(1.0, static_cast<double>(s.kv_heads) / static_cast<double>(e.tp));
  return tokens * 2.0 * kv_heads_rank * static_cast<double>(s.d_qk) * e.kvb;
}

// Embedding weights on the first stage, LM head (+ final norm) on the last. A tied LM head
// needs its own copy of the embedding when the two are on different stages.
double embedding_weight_bytes(const Env& e) {
  return e.ctx->graph.embedding_params / (ch(*e.plan, Slot::kEmbedding) == 0 ? static_cast<double>(e.tp) : 1.0) * e.wb;
}
double lm_head_params(const Env& e) {
  const ModelGraph& g = e.ctx->graph;
  return g.lm_head_params > 0 ? g.lm_head_params : (e.pp > 1 ? g.embedding_params : 0.0);
}
// A tied LM head on the embedding's stage shares its matrix; when the embedding is split by
// vocab but the head is not, a rank needs the rest of the matrix too. (Not in the grouped
// tables: it couples two groups; the exact search adds it itself, see tied_lm_head_extra_bytes.)
double tied_head_extra_params(const Env& e) {
  const ModelGraph& g = e.ctx->graph;
  if (g.lm_head_params > 0 || e.pp > 1) return 0.0;
  if (ch(*e.plan, Slot::kEmbedding) != 0 || ch(*e.plan, Slot::kLmHead) != 1) return 0.0;
  return g.embedding_params * (1.0 - 1.0 / static_cast<double>(e.tp));
}
double lm_head_weight_bytes(const Env& e) {
  const double split = ch(*e.plan, Slot::kLmHead) == 0 ? static_cast<double>(e.tp) : 1.0;
  return (lm_head_params(e) / split + e.ctx->graph.final_norm_params + tied_head_extra_params(e)) * e.wb;
}

double reserve_bytes(const GpuSpec& g) { return 0.04 * g.hbm_capacity.value() + 1024.0 * 1024.0 * 1024.0; }

std::string gb(double bytes) { return fmt::format("{:.1f} GB", bytes / 1e9); }

void check_memory(const MemoryBreakdown& m, Metrics& out, bool explain) {
  if (m.total() <= m.capacity) return;
  out.infeasible = Infeasible::kMemory;
  if (explain) out.reason = fmt::format("needs {} per GPU (weights {}, KV cache {}, activations {}, reserve {}) but HBM holds {}: over by {}",
                           gb(m.total().value()), gb(m.weights.value()), gb(m.kv_cache.value()), gb(m.activations.value()),
                           gb(m.reserve.value()), gb(m.capacity.value()), gb((m.total() - m.capacity).value()));
}

}  // namespace detail

using namespace detail;

double tied_lm_head_extra_bytes(const SimContext& ctx, const Plan& plan) {
  Plan p = plan;
  p.sharding[static_cast<std::size_t>(Slot::kEmbedding)] = 0;
  p.sharding[static_cast<std::size_t>(Slot::kLmHead)] = 1;
  const Env e = make_env(ctx, p, Phase::kDecode, nullptr);
  return tied_head_extra_params(e) * e.wb;
}

std::vector<double> stage_weight_bytes(const SimContext& ctx, const Plan& plan) {
  const Env e = make_env(ctx, plan, Phase::kDecode, nullptr);
  const ModelGraph& g = ctx.graph;
  std::vector<double> out(static_cast<std::size_t>(e.pp), 0.0);
  for (std::int64_t st = 0; st < e.pp; ++st) {
    double& w = out[static_cast<std::size_t>(st)];
    const LayerRange r = stage_layers(static_cast<std::int64_t>(g.layer_class.size()), e.pp, st);
    for (std::int64_t i = r.first; i < r.last; ++i) w += layer_weight_bytes(e, g.classes[g.layer_class[static_cast<std::size_t>(i)]]);
    if (st == 0) w += embedding_weight_bytes(e);
    if (st == e.pp - 1) w += lm_head_weight_bytes(e);
  }
  return out;
}

}  // namespace shardwise
