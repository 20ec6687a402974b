// The simulator. Every formula is in docs/cost-model.md; section names there
// match the comments here.
#include "cost/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "model/derived.hpp"

namespace shardwise {
namespace {

// Layout of an activation tensor [tokens, features] over the ranks of a group:
// replicated, split on tokens, split on features, or partial sums.
enum class Lay : std::uint8_t { kR, kSt, kSf, kP };

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

int ch(const Plan& p, Slot s) { return p.sharding[static_cast<std::size_t>(s)]; }

struct Env {
  const SimContext* ctx = nullptr;
  const Plan* plan = nullptr;
  const CostParams* p = nullptr;
  Phase phase = Phase::kDecode;
  double ab = 2.0;  // activation bytes per element
  double wb = 2.0;  // weight bytes per element
  double kvb = 2.0; // KV-cache bytes per element
  double gemm_peak = 0, attn_peak = 0, hbm = 0;
  std::int64_t tp = 1, a = 1, w = 1, ep = 1, etp = 1, pp = 1;
  Group g_tp, g_w, g_dp, g_etp, g_pp;
  // per-evaluation accumulators
  double max_act = 0;  // largest per-rank activation footprint of one op (in + out)
  // breakdown
  Breakdown* bd = nullptr;
  int cls = -1;
  std::int64_t cls_layers = 0;
  double op_flops = 0, op_bytes = 0;  // of the op being costed, for the breakdown
  double* group_time = nullptr;       // when set: time of the current layer class by slot group
  double* group_act = nullptr;        // when set: largest activation footprint by slot group
  CollKind pend_kind = CollKind::kNone;
  double pend_s = 0, pend_bytes = 0;
  const char* pend_group = "";
  std::vector<CollRecord> pend_colls;  // every collective of the op being costed (breakdown only)
};

// --- collectives -----------------------------------------------------------
double coll(Env& e, CollKind k, Group g, double full, const char* gname) {
  if (k == CollKind::kNone || g.size <= 1 || full <= 0) return 0.0;
  // alpha-beta over the levels at comm_efficiency of the link bandwidth, plus a fixed cost per call
  CollCost c = collective_cost(e.ctx->cluster, k, g, Bytes(full), e.p->comm_efficiency);
  c.time += Seconds(e.p->comm_overhead_us * 1e-6);
  if (e.bd) {
    // A conversion made of two collectives reports the larger kind; times and bytes add.
    if (e.pend_kind == CollKind::kNone || c.time.value() > e.pend_s) {
      e.pend_kind = k;
      e.pend_group = gname;
    }
    e.pend_s += c.time.value();
    e.pend_bytes += c.bytes.value();
    e.pend_colls.push_back({k, gname, g.size, full, c.bytes.value()});
  }
  return c.time.value();
}

// The collective a layout change needs: same -> none; R -> split: local slice;
// split -> R: all-gather; P -> R: all-reduce; P -> split: reduce-scatter;
// one split -> the other: all-to-all. Nothing ever requires partial sums.
CollKind transition(Lay from, Lay to) {
  if (from == to) return CollKind::kNone;
  switch (from) {
    case Lay::kR: return CollKind::kNone;
    case Lay::kSt: return to == Lay::kR ? CollKind::kAllGather : CollKind::kAllToAll;
    case Lay::kSf: return to == Lay::kR ? CollKind::kAllGather : CollKind::kAllToAll;
    case Lay::kP: return to == Lay::kR ? CollKind::kAllReduce : CollKind::kReduceScatter;
  }
  return CollKind::kNone;
}

double convert(Env& e, Lay from, Lay to, Group g, double full, const char* gname) {
  return coll(e, transition(from, to), g, full, gname);
}

// Attention scope (tp group, tokens split over attn_dp groups) -> MLP scope (all
// W ranks). `full` is the bytes of the whole stage's tensor [T, features].
double to_mlp(Env& e, Lay from, Lay need, double full) {
  if (e.a == 1) return convert(e, from, need, e.g_tp, full, "tp");
  if (from == Lay::kR) {  // each group holds its own tokens, replicated in the group
    // attention-DP gather: each rank keeps its 1/tp slice of its group's tokens (free),
    // then all W ranks gather, hierarchically (network first, NVLink last)
    if (need == Lay::kR) return coll(e, CollKind::kAllGather, e.g_w, full, "attn_dp");
    if (need == Lay::kSt) return 0.0;
    return coll(e, CollKind::kAllToAll, e.g_w, full, "mlp");
  }
  // from St: tokens split over all W ranks (= St over the MLP group)
  return convert(e, Lay::kSt, need, e.g_w, full, "mlp");
}

// MLP scope -> attention scope: bring the stage tensor back to "each group its
// own tokens" (split over W), then gather within the tp group if R is needed.
double to_attn(Env& e, Lay from, Lay need, double full) {
  if (e.a == 1) return convert(e, from, need, e.g_tp, full, "tp");
  double t = convert(e, from, Lay::kSt, e.g_w, full, "mlp");
  if (need == Lay::kR) t += coll(e, CollKind::kAllGather, e.g_tp, full / static_cast<double>(e.a), "tp");
  return t;
}

// --- compute ---------------------------------------------------------------
// Roofline: max(FLOPs / (peak x eff(rows)), bytes / (HBM x mem_eff)) + overhead,
// eff(rows) = gemm_efficiency x rows / (rows + gemm_half_rows).
double gemm_time(Env& e, double rows, double flops, double bytes) {
  e.op_flops = flops;
  e.op_bytes = bytes;
  const double eff = e.p->gemm_efficiency * rows / (rows + e.p->gemm_half_rows);
  const double tc = flops / (e.gemm_peak * std::max(eff, 1e-6));
  const double tm = bytes / (e.hbm * e.p->mem_efficiency);
  return std::max(tc, tm) + e.p->kernel_overhead_us * 1e-6;
}
double stream_time(Env& e, double bytes) {
  e.op_flops = 0;
  e.op_bytes = bytes;
  return bytes / (e.hbm * e.p->mem_efficiency) + e.p->kernel_overhead_us * 1e-6;
}

void record(Env& e, const char* op, int slot, double compute_s, double comm_s) {
  if (!e.bd) return;
  OpCost c;
  c.layer_class = e.cls;
  c.op = op;
  c.choice = slot >= 0 ? slot_info(slot).choices[static_cast<std::size_t>(ch(*e.plan, static_cast<Slot>(slot)))] : "-";
  c.compute_s = compute_s;
  c.comm_s = comm_s;
  c.collective = e.pend_kind;
  c.comm_bytes = e.pend_bytes;
  c.comm_group = e.pend_group;
  c.colls = std::move(e.pend_colls);
  e.pend_colls.clear();
  c.layers = e.cls_layers;
  c.flops = compute_s > 0 ? e.op_flops : 0.0;
  c.hbm_bytes = compute_s > 0 ? e.op_bytes : 0.0;
  e.bd->ops.push_back(std::move(c));
  e.pend_kind = CollKind::kNone;
  e.pend_s = e.pend_bytes = 0;
  e.pend_group = "";
  e.op_flops = e.op_bytes = 0;
}

// A GEMM-like op over group size g with a column / row / none choice.
struct GemmLay {
  Lay in, out;
  double split;  // weight and FLOP divisor
};
GemmLay gemm_lay(int choice_col_row_none, std::int64_t g, bool first_is_col) {
  // choices are (col, row, none) for ffn1/qkv and (row, col, none) for ffn2/o_proj
  const int c = choice_col_row_none;
  const bool col = first_is_col ? c == 0 : c == 1;
  const bool row = first_is_col ? c == 1 : c == 0;
  if (col) return {Lay::kR, Lay::kSf, static_cast<double>(g)};
  if (row) return {Lay::kSf, Lay::kP, static_cast<double>(g)};
  return {Lay::kR, Lay::kR, 1.0};
}

Lay norm_lay(const Plan& p, Slot s) { return ch(p, s) == 0 ? Lay::kR : Lay::kSt; }

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
  double params = s.norm_params;
  params += s.qkv_replicated_params + qkv_params_per_rank(p, s, tp);
  params += s.o_params / (ch(p, Slot::kOProj) == 2 ? 1.0 : tp);
  if (s.ffn > 0) {
    params += s.ffn1_params / (ch(p, Slot::kFfn1) == 2 ? 1.0 : w);
    params += s.ffn2_params / (ch(p, Slot::kFfn2) == 2 ? 1.0 : w);
  }
  if (s.moe) {
    const double local_experts = static_cast<double>(s.experts / e.ep);
    const double etp = static_cast<double>(e.etp);
    params += s.router_params;
    params += local_experts * s.expert_ffn1_params / (ch(p, Slot::kExpertFfn1) == 0 ? etp : 1.0);
    params += local_experts * s.expert_ffn2_params / (ch(p, Slot::kExpertFfn2) == 0 ? etp : 1.0);
  }
  return params * e.wb;
}

// The same bytes split by slot group (norms and router are constant per group choice).
void layer_weight_bytes_grouped(const Env& e, const LayerShape& s, double* out) {
  const Plan& p = *e.plan;
  const double tp = static_cast<double>(e.tp), w = static_cast<double>(e.w);
  out[kGroupConst] += s.norm_params * e.wb;
  out[kGroupAttention] += (s.qkv_replicated_params + qkv_params_per_rank(p, s, tp) +
                           s.o_params / (ch(p, Slot::kOProj) == 2 ? 1.0 : tp)) * e.wb;
  if (s.ffn > 0) {
    out[kGroupMlp] += (s.ffn1_params / (ch(p, Slot::kFfn1) == 2 ? 1.0 : w) + s.ffn2_params / (ch(p, Slot::kFfn2) == 2 ? 1.0 : w)) * e.wb;
  }
  if (s.moe) {
    const double local_experts = static_cast<double>(s.experts / e.ep);
    const double etp = static_cast<double>(e.etp);
    out[kGroupRouter] += s.router_params * e.wb;
    out[kGroupExperts] += (local_experts * s.expert_ffn1_params / (ch(p, Slot::kExpertFfn1) == 0 ? etp : 1.0) +
                           local_experts * s.expert_ffn2_params / (ch(p, Slot::kExpertFfn2) == 0 ? etp : 1.0)) * e.wb;
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

// --- one layer ---------------------------------------------------------------
// Time of one layer of class `s` for a micro-batch of T tokens on the stage
// (T / a per attention group), `seq` = decode context or prefill prompt length.
// Starts with the input in attn_norm's layout and ends converting to it again.
double layer_time(Env& e, const LayerShape& s, double T, std::int64_t seq) {
  const Plan& p = *e.plan;
  const double tg = T / static_cast<double>(e.a);  // tokens per attention group
  const double h = static_cast<double>(s.hidden);
  const double tp = static_cast<double>(e.tp), w = static_cast<double>(e.w);
  const Lay attn_need = norm_lay(p, Slot::kAttnNorm);
  double total = 0, comm = 0, comp = 0;
  const auto flush = [&](const char* name, int slot, int group) {
    record(e, name, slot, comp, comm);
    total += comp + comm;
    if (e.group_time) e.group_time[group] += comp + comm;
    comp = comm = 0;
  };
  const auto act = [&](int group, double bytes) {
    e.max_act = std::max(e.max_act, bytes);
    if (e.group_act) e.group_act[group] = std::max(e.group_act[group], bytes);
  };

  // attn_norm
  {
    const double rows = attn_need == Lay::kSt ? tg / tp : tg;
    comp = stream_time(e, 2.0 * rows * h * e.ab);
    act(kGroupConst, 2.0 * rows * h * e.ab);
    flush("attn_norm", static_cast<int>(Slot::kAttnNorm), kGroupConst);
  }
  // qkv_proj: choices heads (col) | hidden (row) | none
  const GemmLay q = gemm_lay(ch(p, Slot::kQkv), e.tp, true);
  comm = convert(e, attn_need, q.in, e.g_tp, tg * h * e.ab, "tp");
  {
    const double params = s.qkv_params / q.split + s.qkv_replicated_params;
    const double out_f = static_cast<double>(s.qkv_out) / (q.out == Lay::kSf ? tp : 1.0);
    const double in_f = q.in == Lay::kSf ? h / tp : h;
    comp = gemm_time(e, tg, 2.0 * tg * params, params * e.wb + tg * (in_f + out_f) * e.ab);
    act(kGroupAttention, tg * (in_f + out_f) * e.ab);
    flush("qkv_proj", static_cast<int>(Slot::kQkv), kGroupAttention);
  }
  // attention: heads (Sf -> Sf) | context (decode: R -> P, partial softmax; prefill: St -> St, KV all-gathered) | none (R -> R)
  const int attn = ch(p, Slot::kAttention);
  const bool decode = e.phase == Phase::kDecode;
  Lay attn_in = Lay::kR, attn_out = Lay::kR;
  if (attn == 0) attn_in = attn_out = Lay::kSf;
  if (attn == 1) {
    attn_in = decode ? Lay::kR : Lay::kSt;
    attn_out = decode ? Lay::kP : Lay::kSt;
  }
  comm = convert(e, q.out, attn_in, e.g_tp, tg * static_cast<double>(s.qkv_out) * e.ab, "tp");
  const double nh = static_cast<double>(s.heads);
  const double out_feat = nh * static_cast<double>(s.d_v);
  {
    const double heads_r = attn == 0 ? nh / tp : nh;
    if (decode) {
      // tg sequences, one new token each, against seq cached tokens
      const double ctx = static_cast<double>(s.window > 0 ? std::min(s.window, seq) : seq) / (attn == 1 ? tp : 1.0);
      const double dk = s.mla ? static_cast<double>(s.mla_latent + s.mla_rope) : static_cast<double>(s.d_qk);
      const double dv = s.mla ? static_cast<double>(s.mla_latent) : static_cast<double>(s.d_v);
      const double flops = 2.0 * tg * heads_r * (dk + dv) * ctx;
      double kv = tg * layer_kv_bytes_per_seq(e, s, seq);
      // kernels without grouped reads load each KV head once per query head of its group
      if (!e.ctx->engine.gqa_grouped_kv_reads && !s.mla && attn != 1) kv *= static_cast<double>(s.heads / s.kv_heads);
      e.op_flops = flops;
      e.op_bytes = kv;
      const double tc = flops / (e.attn_peak * e.p->gemm_efficiency);
      const double tm = kv / (e.hbm * e.p->attn_mem_efficiency);
      comp = std::max(tc, tm) + e.p->kernel_overhead_us * 1e-6;
    } else {
      const double q_tokens = attn == 1 ? tg / tp : tg;
      const double causal = s.window > 0 ? std::min(static_cast<double>(s.window), static_cast<double>(seq) / 2.0) : static_cast<double>(seq) / 2.0;
      const double flops = 2.0 * q_tokens * heads_r * static_cast<double>(s.d_qk + s.d_v) * causal;
      const double bytes = q_tokens * (static_cast<double>(s.qkv_out) + out_feat) / (attn == 0 ? tp : 1.0) * e.ab +
                           tg * layer_kv_bytes_per_seq(e, s, seq) / std::max(1.0, static_cast<double>(seq));
      e.op_flops = flops;
      e.op_bytes = bytes;
      comp = std::max(flops / (e.attn_peak * e.p->attn_efficiency), bytes / (e.hbm * e.p->mem_efficiency)) + e.p->kernel_overhead_us * 1e-6;
      if (attn == 1) comm += coll(e, CollKind::kAllGather, e.g_tp, tg * static_cast<double>(s.kv_elems_per_token) * e.kvb, "tp");
    }
    flush("attention", static_cast<int>(Slot::kAttention), kGroupAttention);
  }
  // o_proj: heads (row) | hidden (col) | none
  const GemmLay o = gemm_lay(ch(p, Slot::kOProj), e.tp, false);
  {
    // context-split decode attention returns partial outputs plus a log-sum-exp per head (fp32) to combine
    const double lse = (decode && attn == 1) ? tg * nh * 4.0 : 0.0;
    comm = convert(e, attn_out, o.in, e.g_tp, tg * out_feat * e.ab + lse, "tp");
    const double params = s.o_params / o.split;
    const double in_f = o.in == Lay::kSf ? out_feat / tp : out_feat;
    const double out_f = o.out == Lay::kSf ? h / tp : h;
    comp = gemm_time(e, tg, 2.0 * tg * params, params * e.wb + tg * (in_f + out_f) * e.ab);
    flush("o_proj", static_cast<int>(Slot::kOProj), kGroupAttention);
  }
  // ffn_norm (the residual add is fused here and shares its layout)
  const Lay ffn_need = norm_lay(p, Slot::kFfnNorm);
  // the conversion of o_proj's output depends on o_proj (attention group); the residual
  // stream x, which arrives in attn_norm's layout, is added in ffn_norm's: converting it
  // (tokens -> none: all-gather; none -> tokens: free) and the norm's compute depend on the hubs alone
  comm = convert(e, o.out, ffn_need, e.g_tp, tg * h * e.ab, "tp");
  {
    const double res = convert(e, attn_need, ffn_need, e.g_tp, tg * h * e.ab, "tp");
    const double rows = ffn_need == Lay::kSt ? tg / tp : tg;
    const double norm_s = stream_time(e, 3.0 * rows * h * e.ab);
    if (e.group_time) {
      e.group_time[kGroupAttention] += comm;
      e.group_time[kGroupConst] += norm_s + res;
    }
    record(e, "ffn_norm", static_cast<int>(Slot::kFfnNorm), norm_s, comm + res);
    total += norm_s + comm + res;
    comm = comp = 0;
  }

  // MLP: the dense MLP, or the shared experts of an MoE layer. Sharded (ffn or
  // hidden on either op) it runs over all W ranks, with attention-DP gathers when
  // attn_dp > 1; with both ops "none" it runs data-parallel inside each attention
  // group on that group's own tokens (full weights, no collective).
  Lay mlp_out = Lay::kSt;
  bool mlp_local = false;
  if (s.ffn > 0) {
    mlp_local = ch(p, Slot::kFfn1) == 2 && ch(p, Slot::kFfn2) == 2;
    const std::int64_t gsize = mlp_local ? e.tp : e.w;
    const GemmLay f1 = gemm_lay(ch(p, Slot::kFfn1), gsize, true);
    const GemmLay f2 = gemm_lay(ch(p, Slot::kFfn2), gsize, false);
    const double g = static_cast<double>(gsize);
    const double rows = mlp_local ? tg : T;
    const double f = static_cast<double>(s.ffn), up = static_cast<double>(s.mlp_mats - 1);
    comm = mlp_local ? convert(e, ffn_need, f1.in, e.g_tp, tg * h * e.ab, "tp") : to_mlp(e, ffn_need, f1.in, T * h * e.ab);
    {
      const double params = s.ffn1_params / f1.split;
      const double in_f = f1.in == Lay::kSf ? h / g : h;
      const double out_f = up * f / (f1.out == Lay::kSf ? g : 1.0);
      comp = gemm_time(e, rows, 2.0 * rows * params, params * e.wb + rows * (in_f + out_f) * e.ab);
      act(kGroupMlp, rows * (in_f + out_f) * e.ab);
      flush(s.moe ? "shared_ffn1" : "ffn1", static_cast<int>(Slot::kFfn1), kGroupMlp);
    }
    // row-parallel ffn1 (P) is reduced before the activation: a gated MLP reduces gate and up
    // (up x f features); from Sf or R the activation is applied locally first (f features)
    comm = convert(e, f1.out, f2.in, mlp_local ? e.g_tp : e.g_w, rows * (f1.out == Lay::kP ? up * f : f) * e.ab,
                   mlp_local ? "tp" : "mlp");
    {
      const double params = s.ffn2_params / f2.split;
      const double in_f = f2.in == Lay::kSf ? f / g : f;
      const double out_f = f2.out == Lay::kSf ? h / g : h;
      comp = gemm_time(e, rows, 2.0 * rows * params, params * e.wb + rows * (in_f + out_f) * e.ab);
      flush(s.moe ? "shared_ffn2" : "ffn2", static_cast<int>(Slot::kFfn2), kGroupMlp);
    }
    mlp_out = f2.out;
    if (s.moe) {  // the shared branch joins the routed one, whose output is split on tokens over W
      comm = mlp_local ? 0.0 : convert(e, mlp_out, Lay::kSt, e.g_w, T * h * e.ab, "mlp");
      if (comm > 0) flush("shared_join", -1, kGroupMlp);
    }
  }
  if (s.moe) {
    const double k = static_cast<double>(s.top_k);
    const double local_experts = static_cast<double>(s.experts / e.ep);
    const double etp = static_cast<double>(e.etp);
    const double tok_group = T * k / static_cast<double>(e.ep);  // routed token copies per expert group
    // router: none (replicated in the tp group) | tokens
    const Lay rl = norm_lay(p, Slot::kRouter);
    comm = convert(e, ffn_need, rl, e.g_tp, tg * h * e.ab, "tp");
    {
      const double rows = rl == Lay::kSt ? tg / tp : tg;
      comp = gemm_time(e, rows, 2.0 * rows * s.router_params, s.router_params * e.wb + rows * (h + static_cast<double>(s.experts)) * e.ab);
      flush("router", static_cast<int>(Slot::kRouter), kGroupRouter);
    }
    // dispatch: each rank sends its T/W tokens' top-k copies to the experts' ranks (all-to-all over W)
    comm = coll(e, CollKind::kAllToAll, e.g_w, T * k * h * e.ab, "mlp");
    flush("dispatch", -1, kGroupConst);
    // expert FFNs inside each expert group of etp ranks: ffn (split each expert) | tokens (split the tokens)
    const int c1 = ch(p, Slot::kExpertFfn1), c2 = ch(p, Slot::kExpertFfn2);
    const Lay e1_in = c1 == 0 ? Lay::kR : Lay::kSt, e1_out = c1 == 0 ? Lay::kSf : Lay::kSt;
    const Lay e2_in = c2 == 0 ? Lay::kSf : Lay::kSt, e2_out = c2 == 0 ? Lay::kP : Lay::kSt;
    const double f = static_cast<double>(s.expert_ffn), up = static_cast<double>(s.mlp_mats - 1);
    comm = convert(e, Lay::kSt, e1_in, e.g_etp, tok_group * h * e.ab, "etp");
    {
      const double rows = c1 == 0 ? tok_group : tok_group / etp;
      const double params = local_experts * s.expert_ffn1_params / (c1 == 0 ? etp : 1.0);
      const double out_f = up * f / (c1 == 0 ? etp : 1.0);
      // each local expert is its own GEMM with rows / local_experts tokens on average
      const double rows_per_expert = std::max(rows / local_experts, 1.0);
      comp = gemm_time(e, rows_per_expert, 2.0 * rows * params / local_experts, params * e.wb + rows * (h + out_f) * e.ab);
      act(kGroupExperts, rows * (h + out_f) * e.ab);
      flush("expert_ffn1", static_cast<int>(Slot::kExpertFfn1), kGroupExperts);
    }
    comm = convert(e, e1_out, e2_in, e.g_etp, tok_group * f * e.ab, "etp");
    {
      const double rows = c2 == 0 ? tok_group : tok_group / etp;
      const double params = local_experts * s.expert_ffn2_params / (c2 == 0 ? etp : 1.0);
      const double in_f = c2 == 0 ? f / etp : f;
      const double rows_per_expert = std::max(rows / local_experts, 1.0);
      comp = gemm_time(e, rows_per_expert, 2.0 * rows * params / local_experts, params * e.wb + rows * (in_f + h) * e.ab);
      flush("expert_ffn2", static_cast<int>(Slot::kExpertFfn2), kGroupExperts);
    }
    // combine: partial sums reduced inside the expert group, copies sent back (all-to-all over W), weighted sum
    comm = convert(e, e2_out, Lay::kSt, e.g_etp, tok_group * h * e.ab, "etp");
    comm += coll(e, CollKind::kAllToAll, e.g_w, T * k * h * e.ab, "mlp");
    comp = stream_time(e, (T / w) * (k + 1.0) * h * e.ab);
    flush("combine", -1, kGroupExperts);
    mlp_out = Lay::kSt;
  }
  // back to the next layer's attn_norm layout (a local dense MLP never left the attention scope)
  if (mlp_local && !s.moe) {
    comm = convert(e, mlp_out, attn_need, e.g_tp, tg * h * e.ab, "tp");
  } else {
    comm = to_attn(e, mlp_out, attn_need, T * h * e.ab);
  }
  // the residual h (x + attention output, in ffn_norm's layout) is added to the MLP output in
  // the next attn_norm, so it returns to attn_norm's layout too (hubs alone: constant group)
  const double res = convert(e, ffn_need, attn_need, e.g_tp, tg * h * e.ab, "tp");
  if (comm + res > 0 || e.bd) {
    record(e, "layer_out", -1, 0, comm + res);
    total += comm + res;
    if (e.group_time) {
      e.group_time[kGroupMlp] += comm;
      e.group_time[kGroupConst] += res;
    }
  }
  comm = 0;
  return total;
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

// --- a pipeline stage ---------------------------------------------------------
struct StageResult {
  double time = 0;        // the slowest stage, one micro-batch
  double weights = 0;     // bytes per rank on the fullest stage
  double kv_per_seq = 0;  // KV bytes per rank per sequence on the fullest stage
};

StageResult stage(Env& e, double T, std::int64_t seq, std::int64_t kv_ctx, std::int64_t seqs_per_group, GroupTables* gt = nullptr) {
  const ModelGraph& g = e.ctx->graph;
  const Plan& p = *e.plan;
  const std::size_t ncls = g.classes.size();
  SW_CHECK(ncls <= kMaxLayerClasses, "the loader bounds the layer classes");
  double t_cls[kMaxLayerClasses] = {0}, w_cls[kMaxLayerClasses] = {0}, kv_cls[kMaxLayerClasses] = {0};
  double gt_cls[kMaxLayerClasses][kNumSlotGroups] = {};  // time by group, when decomposing
  double gw_cls[kMaxLayerClasses][kNumSlotGroups] = {};  // weights by group
  std::int64_t layers_per_stage = static_cast<std::int64_t>(g.layer_class.size()) / e.pp;
  for (std::size_t c = 0; c < ncls; ++c) {
    e.cls = static_cast<int>(c);
    // layers of this class on the fullest stage, for the breakdown
    std::int64_t most = 0;
    for (std::int64_t st = 0; st < e.pp; ++st) {
      std::int64_t n = 0;
      for (std::int64_t i = st * layers_per_stage; i < (st + 1) * layers_per_stage; ++i) n += g.layer_class[static_cast<std::size_t>(i)] == c;
      most = std::max(most, n);
    }
    e.cls_layers = most;
    if (gt) {
      e.group_time = gt_cls[c];
      e.group_act = gt->act;
      layer_weight_bytes_grouped(e, g.classes[c], gw_cls[c]);
    }
    t_cls[c] = layer_time(e, g.classes[c], T, seq);
    e.group_time = nullptr;
    w_cls[c] = layer_weight_bytes(e, g.classes[c]);
    kv_cls[c] = layer_kv_bytes_per_seq(e, g.classes[c], kv_ctx);
  }
  e.cls = -1;
  e.cls_layers = 1;
  const double tg = T / static_cast<double>(e.a);
  const double h = static_cast<double>(g.hidden), v = static_cast<double>(g.vocab), tp = static_cast<double>(e.tp);
  const Lay attn_need = norm_lay(p, Slot::kAttnNorm);
  // embedding (first stage): vocab-parallel gives partial sums; none gives a replicated lookup
  const bool emb_vocab = ch(p, Slot::kEmbedding) == 0;
  double t_emb = stream_time(e, tg * h * e.ab);
  record(e, "embedding", static_cast<int>(Slot::kEmbedding), t_emb, 0);
  const double emb_comm = convert(e, emb_vocab ? Lay::kP : Lay::kR, attn_need, e.g_tp, tg * h * e.ab, "tp");
  record(e, "embedding_out", -1, 0, emb_comm);
  t_emb += emb_comm;
  // LM head (last stage), on the last token of each sequence: vocab (col, logits gathered in fp32) | none
  const bool head_vocab = ch(p, Slot::kLmHead) == 0;
  const double rows = e.phase == Phase::kDecode ? tg : tg / static_cast<double>(std::max<std::int64_t>(seq, 1));
  double t_head = convert(e, attn_need, Lay::kR, e.g_tp, tg * h * e.ab, "tp");
  {
    const double params = v * h / (head_vocab ? tp : 1.0);
    const double gemm = gemm_time(e, rows, 2.0 * rows * params, params * e.wb + rows * (h + v / (head_vocab ? tp : 1.0)) * e.ab);
    const double gather = head_vocab ? coll(e, CollKind::kAllGather, e.g_tp, rows * v * 4.0, "tp") : 0.0;
    record(e, "lm_head", static_cast<int>(Slot::kLmHead), gemm, t_head + gather);
    t_head += gemm + gather;
    e.max_act = std::max(e.max_act, rows * v / (head_vocab ? tp : 1.0) * 4.0);
    if (gt) gt->act[kGroupLmHead] = std::max(gt->act[kGroupLmHead], rows * v / (head_vocab ? tp : 1.0) * 4.0);
  }
  // pipeline send/recv of the residual stream to the next stage (each rank its 1/tp slice; R is re-gathered)
  double t_p2p = 0;
  if (e.pp > 1) {
    t_p2p = coll(e, CollKind::kSendRecv, e.g_pp, tg * h * e.ab / tp, "pp");
    if (attn_need == Lay::kR) t_p2p += coll(e, CollKind::kAllGather, e.g_tp, tg * h * e.ab, "tp");
    record(e, "pp_send_recv", -1, 0, t_p2p);
  }
  const double emb_w = embedding_weight_bytes(e);
  const double head_params = lm_head_params(e);
  const double head_w = lm_head_weight_bytes(e);
  StageResult r;
  for (std::int64_t st = 0; st < e.pp; ++st) {
    double t = 0, wgt = 0, kv = 0;
    for (std::int64_t i = st * layers_per_stage; i < (st + 1) * layers_per_stage; ++i) {
      const auto c = g.layer_class[static_cast<std::size_t>(i)];
      t += t_cls[c];
      wgt += w_cls[c];
      kv += kv_cls[c];
    }
    if (st == 0) {
      t += t_emb;
      wgt += emb_w;
    }
    if (st == e.pp - 1) {
      t += t_head;
      wgt += head_w;
    } else {
      t += t_p2p;
    }
    r.time = std::max(r.time, t);
    // memory: the stage that holds the most bytes (weights + KV of its sequences)
    const double n = static_cast<double>(seqs_per_group);
    if (wgt + kv * n > r.weights + r.kv_per_seq * n) {
      r.weights = wgt;
      r.kv_per_seq = kv;
    }
  }
  if (e.bd) e.bd->stage_s = r.time;
  if (gt) {
    // distinct stage types: the same class mix and the same first/last role
    struct Key {
      std::int64_t counts[kMaxLayerClasses];
      bool first, last;
    };
    Key keys[kMaxStageTypes];
    gt->stage_types = 0;
    for (std::int64_t st = 0; st < e.pp; ++st) {
      Key k{};
      for (std::int64_t i = st * layers_per_stage; i < (st + 1) * layers_per_stage; ++i) ++k.counts[g.layer_class[static_cast<std::size_t>(i)]];
      k.first = st == 0;
      k.last = st == e.pp - 1;
      int found = -1;
      for (int t = 0; t < gt->stage_types; ++t) {
        if (keys[t].first == k.first && keys[t].last == k.last && std::equal(k.counts, k.counts + kMaxLayerClasses, keys[t].counts)) found = t;
      }
      if (found >= 0) continue;
      if (gt->stage_types == kMaxStageTypes) {
        gt->stage_types = -1;  // too many kinds of stage to decompose
        return r;
      }
      const int t = gt->stage_types++;
      keys[t] = k;
      for (int grp = 0; grp < kNumSlotGroups; ++grp) {
        double tt = 0, ww = 0, kk = 0;
        for (std::size_t c = 0; c < ncls; ++c) {
          const double n = static_cast<double>(k.counts[c]);
          tt += n * gt_cls[c][grp];
          ww += n * gw_cls[c][grp];
          if (grp == kGroupAttention) kk += n * kv_cls[c];
        }
        gt->time[t][grp] = tt;
        gt->weights[t][grp] = ww;
        gt->kv_per_seq[t][grp] = kk;
      }
      if (k.first) {
        gt->time[t][kGroupEmbedding] += t_emb;
        gt->weights[t][kGroupEmbedding] += emb_w;
      }
      if (k.last) {
        gt->time[t][kGroupLmHead] += t_head;
        // not head_w: the tied term couples the embedding and lm_head groups (the exact search adds it)
        gt->weights[t][kGroupLmHead] += head_params / (head_vocab ? tp : 1.0) * e.wb;
        gt->weights[t][kGroupConst] += g.final_norm_params * e.wb;
      } else {
        gt->time[t][kGroupConst] += t_p2p;
      }
    }
  }
  return r;
}

Env make_env(const SimContext& ctx, const Plan& plan, Phase phase, Breakdown* bd) {
  Env e;
  e.ctx = &ctx;
  e.plan = &plan;
  e.p = &ctx.params;
  e.phase = phase;
  e.bd = bd;
  if (bd) bd->phase = phase;
  const GpuSpec& gpu = ctx.cluster.gpu;
  e.wb = bytes_per_element(ctx.workload.weights_dtype);
  e.kvb = bytes_per_element(ctx.workload.kv_dtype);
  e.ab = 2.0;
  // GEMMs run in the weights' format where the GPU has tensor cores for it, else in bf16
  const DType wd = ctx.workload.weights_dtype;
  e.gemm_peak = gpu.bf16.value();
  if ((wd == DType::kFp8 || wd == DType::kInt8) && gpu.fp8.value() > 0) e.gemm_peak = gpu.fp8.value();
  if ((wd == DType::kFp4 || wd == DType::kInt4) && gpu.fp4.value() > 0) e.gemm_peak = gpu.fp4.value();
  if ((wd == DType::kFp4 || wd == DType::kInt4) && gpu.fp4.value() <= 0 && gpu.fp8.value() > 0) e.gemm_peak = gpu.fp8.value();
  // attention math runs in fp8 when the KV cache is fp8 and the GPU has fp8 tensor cores (FP8 FMHA)
  const DType kd = ctx.workload.kv_dtype;
  e.attn_peak = ((kd == DType::kFp8 || kd == DType::kInt8) && gpu.fp8.value() > 0) ? gpu.fp8.value() : gpu.bf16.value();
  e.hbm = gpu.hbm_bandwidth.value();
  const Degrees& d = plan.deg;
  e.tp = d.tp;
  e.a = d.attn_dp;
  e.w = d.stage_width();
  e.ep = d.ep;
  e.etp = e.w / d.ep;
  e.pp = d.pp;
  e.g_tp = {e.tp, 1};
  e.g_w = {e.w, 1};
  e.g_dp = {e.a, e.tp};
  e.g_etp = {e.etp, 1};
  e.g_pp = {2, e.w};
  return e;
}

double reserve_bytes(const GpuSpec& g) { return 0.04 * g.hbm_capacity.value() + 1024.0 * 1024.0 * 1024.0; }

struct StepResult {
  double stage_s = 0;
  std::int32_t m = 1;
  MemoryBreakdown mem;
};

// One decode step of b sequences (or one prefill batch of b prompts) with the
// automatic or planned micro-batching; memory counted for kv_ctx tokens per sequence.
StepResult step(const SimContext& ctx, const Plan& plan, Phase phase, std::int64_t b, std::int64_t seq, std::int64_t kv_ctx,
                Breakdown* bd) {
  Env e = make_env(ctx, plan, phase, bd);
  const std::int64_t bg = ceil_div(b, e.a);  // sequences per attention group
  std::int32_t m = plan.micro_batches > 0 ? plan.micro_batches : static_cast<std::int32_t>(std::min<std::int64_t>(e.pp, bg));
  m = static_cast<std::int32_t>(std::clamp<std::int64_t>(m, 1, bg));
  const double seqs_micro = static_cast<double>(ceil_div(bg, m)) * static_cast<double>(e.a);
  const double T = phase == Phase::kDecode ? seqs_micro : seqs_micro * static_cast<double>(seq);
  const StageResult r = stage(e, T, seq, kv_ctx, bg);
  StepResult out;
  out.stage_s = r.time + e.p->step_overhead_us * 1e-6;
  out.m = m;
  out.mem.capacity = ctx.cluster.gpu.hbm_capacity;
  out.mem.weights = Bytes(r.weights);
  out.mem.kv_cache = Bytes(r.kv_per_seq * static_cast<double>(bg));
  out.mem.activations = Bytes(2.0 * e.max_act);
  out.mem.reserve = Bytes(reserve_bytes(ctx.cluster.gpu));
  return out;
}

std::string gb(double bytes) { return fmt::format("{:.1f} GB", bytes / 1e9); }

void check_memory(const MemoryBreakdown& m, Metrics& out, bool explain) {
  if (m.total() <= m.capacity) return;
  out.infeasible = Infeasible::kMemory;
  if (explain) out.reason = fmt::format("needs {} per GPU (weights {}, KV cache {}, activations {}, reserve {}) but HBM holds {}: over by {}",
                           gb(m.total().value()), gb(m.weights.value()), gb(m.kv_cache.value()), gb(m.activations.value()),
                           gb(m.reserve.value()), gb(m.capacity.value()), gb((m.total() - m.capacity).value()));
}

void check_slo(const Workload& w, Metrics& out, bool explain) {
  if (!out.feasible()) return;
  if (w.tpot_ms && out.tpot_s * 1e3 > *w.tpot_ms) {
    out.infeasible = Infeasible::kTpotSlo;
    if (explain) out.reason = fmt::format("TPOT {:.2f} ms exceeds the SLO of {} ms by {:.2f} ms", out.tpot_s * 1e3, *w.tpot_ms, out.tpot_s * 1e3 - *w.tpot_ms);
  } else if (w.ttft_ms && out.ttft_s * 1e3 > *w.ttft_ms) {
    out.infeasible = Infeasible::kTtftSlo;
    if (explain) out.reason = fmt::format("TTFT {:.1f} ms exceeds the SLO of {} ms by {:.1f} ms", out.ttft_s * 1e3, *w.ttft_ms, out.ttft_s * 1e3 - *w.ttft_ms);
  }
}


// Metrics of a plan at a concrete batch.
Metrics evaluate_at(const SimContext& ctx, const Plan& plan, std::int64_t b, Breakdown* bd, bool explain) {
  const Workload& w = ctx.workload;
  const double gpus = static_cast<double>(plan.deg.instance_gpus());
  Metrics out;
  out.batch = b;
  out.gpus_used = plan.deg.total_gpus();
  switch (w.mode) {
    case Mode::kDecode: {
      const StepResult s = step(ctx, plan, Phase::kDecode, b, w.context, w.context + 1, bd);
      out.micro_batches = s.m;
      out.step_s = s.stage_s;
      out.tpot_s = static_cast<double>(std::max<std::int64_t>(s.m, plan.deg.pp)) * s.stage_s;
      out.output_tok_s_per_gpu = static_cast<double>(b) / out.tpot_s / gpus;
      out.memory = s.mem;
      out.objective = out.output_tok_s_per_gpu;
      break;
    }
    case Mode::kPrefill: {
      const StepResult s = step(ctx, plan, Phase::kPrefill, b, w.isl, w.isl, bd);
      out.micro_batches = s.m;
      out.step_s = s.stage_s;
      out.ttft_s = static_cast<double>(s.m + plan.deg.pp - 1) * s.stage_s;
      out.input_tok_s_per_gpu = static_cast<double>(b * w.isl) / out.ttft_s / gpus;
      out.memory = s.mem;
      out.objective = out.input_tok_s_per_gpu;
      break;
    }
    case Mode::kOffline: {
      // decode at the average context; prefill in chunks of kPrefillChunkTokens per attention
      // group, interleaved (the stages work concurrently in steady state)
      const std::int64_t ctx_avg = w.isl + w.osl / 2;
      const StepResult d = step(ctx, plan, Phase::kDecode, b, ctx_avg, w.isl + w.osl, bd);
      const double tpot_dec = static_cast<double>(std::max<std::int64_t>(d.m, plan.deg.pp)) * d.stage_s;
      const OfflinePrefill op = offline_prefill(w, b, plan.deg.attn_dp);
      Plan pre = plan;
      pre.micro_batches = 1;
      const StepResult pf = step(ctx, pre, Phase::kPrefill, op.chunk, w.isl, w.isl, nullptr);
      const double arrivals_s = op.arrivals == op.chunk ? pf.stage_s : step(ctx, pre, Phase::kPrefill, op.arrivals, w.isl, w.isl, nullptr).stage_s;
      const OfflineTimes t = offline_times(w, b, plan.deg.pp, op, tpot_dec, pf.stage_s, arrivals_s);
      const double round = t.round;
      out.micro_batches = d.m;
      out.step_s = d.stage_s;
      out.tpot_s = t.tpot;
      out.ttft_s = t.ttft;
      out.output_tok_s_per_gpu = static_cast<double>(b * w.osl) / round / gpus;
      out.input_tok_s_per_gpu = out.output_tok_s_per_gpu * static_cast<double>(w.isl) / static_cast<double>(w.osl);
      out.memory = d.mem;
      out.memory.activations = Bytes(std::max(d.mem.activations.value(), pf.mem.activations.value()));
      out.objective = out.output_tok_s_per_gpu;
      break;
    }
  }
  check_memory(out.memory, out, explain);
  check_slo(w, out, explain);
  if (!out.feasible()) out.objective = 0;
  return out;
}

}  // namespace

OfflinePrefill offline_prefill(const Workload& w, std::int64_t b, std::int64_t attn_dp) {
  const std::int64_t a = std::max<std::int64_t>(1, attn_dp);
  const std::int64_t bg = std::max<std::int64_t>(1, ceil_div(b, a));  // sequences per attention group
  const std::int64_t per_group = std::clamp<std::int64_t>(kPrefillChunkTokens / std::max<std::int64_t>(1, w.isl), 1, bg);
  const std::int64_t arrive = std::clamp<std::int64_t>(ceil_div(bg, std::max<std::int64_t>(1, w.osl)), 1, per_group);
  return OfflinePrefill{per_group * a, arrive * a};
}

OfflineTimes offline_times(const Workload& w, std::int64_t b, std::int64_t pp, const OfflinePrefill& op, double tpot_dec,
                           double chunk_s, double arrivals_s) {
  OfflineTimes t;
  const double bb = static_cast<double>(b);
  t.round = static_cast<double>(w.osl) * tpot_dec + bb * chunk_s / static_cast<double>(op.chunk);
  t.tpot = t.round / static_cast<double>(w.osl);
  const double others = std::max(0.0, bb - static_cast<double>(op.arrivals)) / bb;  // the decoding sequences beside the arrivals
  const double extra_iters = static_cast<double>(ceil_div(w.isl, kPrefillChunkTokens) - 1);
  t.ttft = static_cast<double>(pp) * arrivals_s + tpot_dec * (others + extra_iters);
  return t;
}

int slot_group(int slot) {
  switch (static_cast<Slot>(slot)) {
    case Slot::kAttnNorm:
    case Slot::kFfnNorm: return -1;
    case Slot::kQkv:
    case Slot::kAttention:
    case Slot::kOProj: return kGroupAttention;
    case Slot::kFfn1:
    case Slot::kFfn2: return kGroupMlp;
    case Slot::kRouter: return kGroupRouter;
    case Slot::kExpertFfn1:
    case Slot::kExpertFfn2: return kGroupExperts;
    case Slot::kEmbedding: return kGroupEmbedding;
    case Slot::kLmHead: return kGroupLmHead;
  }
  return kGroupConst;
}

bool evaluate_grouped(const SimContext& ctx, const Plan& plan, Phase phase, std::int64_t b, std::int64_t seq, std::int64_t kv_ctx,
                      GroupTables* out) {
  *out = GroupTables{};
  Env e = make_env(ctx, plan, phase, nullptr);
  const std::int64_t bg = ceil_div(b, e.a);
  std::int32_t m = plan.micro_batches > 0 ? plan.micro_batches : static_cast<std::int32_t>(std::min<std::int64_t>(e.pp, bg));
  m = static_cast<std::int32_t>(std::clamp<std::int64_t>(m, 1, bg));
  const double seqs_micro = static_cast<double>(ceil_div(bg, m)) * static_cast<double>(e.a);
  const double T = phase == Phase::kDecode ? seqs_micro : seqs_micro * static_cast<double>(seq);
  stage(e, T, seq, kv_ctx, bg, out);
  out->overhead_s = e.p->step_overhead_us * 1e-6;
  out->reserve = reserve_bytes(ctx.cluster.gpu);
  out->micro_batches = m;
  out->seqs_per_group = bg;
  return out->stage_types > 0;
}

Breakdown breakdown_step(const SimContext& ctx, const Plan& plan, Phase phase, std::int64_t b, std::int64_t seq,
                         std::int32_t* micro_batches) {
  Breakdown bd;
  const StepResult s = step(ctx, plan, phase, b, seq, seq, &bd);
  if (micro_batches) *micro_batches = s.m;
  return bd;
}

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
  const std::int64_t per = static_cast<std::int64_t>(g.layer_class.size()) / e.pp;
  std::vector<double> out(static_cast<std::size_t>(e.pp), 0.0);
  for (std::int64_t st = 0; st < e.pp; ++st) {
    double& w = out[static_cast<std::size_t>(st)];
    for (std::int64_t i = st * per; i < (st + 1) * per; ++i) w += layer_weight_bytes(e, g.classes[g.layer_class[static_cast<std::size_t>(i)]]);
    if (st == 0) w += embedding_weight_bytes(e);
    if (st == e.pp - 1) w += lm_head_weight_bytes(e);
  }
  return out;
}

const char* to_string(Infeasible k) {
  switch (k) {
    case Infeasible::kNone: return "feasible";
    case Infeasible::kInvalidPlan: return "invalid plan";
    case Infeasible::kMemory: return "out of memory";
    case Infeasible::kTpotSlo: return "TPOT SLO";
    case Infeasible::kTtftSlo: return "TTFT SLO";
  }
  return "?";
}

double infeasibility_excess(const Metrics& m, const Workload& w) {
  switch (m.infeasible) {
    case Infeasible::kNone: return 0.0;
    case Infeasible::kInvalidPlan: return std::numeric_limits<double>::infinity();
    case Infeasible::kMemory: return m.memory.total().value() / m.memory.capacity.value() - 1.0;
    case Infeasible::kTpotSlo: return w.tpot_ms ? m.tpot_s * 1e3 / *w.tpot_ms - 1.0 : 0.0;
    case Infeasible::kTtftSlo: return w.ttft_ms ? m.ttft_s * 1e3 / *w.ttft_ms - 1.0 : 0.0;
  }
  return std::numeric_limits<double>::infinity();
}

SimContext make_context(const ModelSpec& m, const ClusterSpec& c, const Workload& w, const CostParams& p, EngineTraits engine) {
  return SimContext{m, c, w, p, build_graph(m), engine};
}

Metrics evaluate(const SimContext& ctx, const Plan& plan, Breakdown* bd, bool explain) {
  Plan probe = plan;
  if (probe.batch == 0) probe.batch = plan.deg.attn_dp;  // validate "max" as its smallest batch
  if (auto why = validate_plan(probe, ctx.model, ctx.cluster)) {
    Metrics out;
    out.infeasible = Infeasible::kInvalidPlan;
    out.reason = *why;
    out.gpus_used = plan.deg.total_gpus();
    return out;
  }
  if (plan.batch > 0) return evaluate_at(ctx, plan, plan.batch, bd, explain);
  // batch = max: the largest concurrency that fits memory and meets the SLOs.
  // Memory grows linearly in the batch; TPOT and TTFT grow monotonically, so
  // bisect on feasibility (a step multiple of attn_dp keeps groups even).
  const std::int64_t a = plan.deg.attn_dp;
  Metrics lo = evaluate_at(ctx, probe, a, bd, explain);
  if (!lo.feasible()) return lo;
  if (bd) bd->ops.clear();
  std::int64_t good = 1, bad = 2;
  while (bad <= kMaxBatch / a) {
    Metrics m = evaluate_at(ctx, probe, bad * a, nullptr, false);
    if (!m.feasible()) break;
    good = bad;
    bad *= 2;
  }
  while (bad - good > 1) {
    const std::int64_t mid = good + (bad - good) / 2;
    if (evaluate_at(ctx, probe, mid * a, nullptr, false).feasible()) {
      good = mid;
    } else {
      bad = mid;
    }
  }
  return evaluate_at(ctx, probe, good * a, bd, explain);
}

Metrics evaluate_static_batch(const SimContext& ctx, const Plan& plan) {
  if (auto why = validate_plan(plan, ctx.model, ctx.cluster)) {
    Metrics out;
    out.infeasible = Infeasible::kInvalidPlan;
    out.reason = *why;
    return out;
  }
  const Workload& w = ctx.workload;
  const std::int64_t b = plan.batch;
  Metrics out;
  out.batch = b;
  out.gpus_used = plan.deg.total_gpus();
  const StepResult pf = step(ctx, plan, Phase::kPrefill, b, w.isl, w.isl + w.osl, nullptr);
  const StepResult d = step(ctx, plan, Phase::kDecode, b, w.isl + w.osl / 2, w.isl + w.osl, nullptr);
  out.ttft_s = static_cast<double>(pf.m + plan.deg.pp - 1) * pf.stage_s;
  out.tpot_s = static_cast<double>(std::max<std::int64_t>(d.m, plan.deg.pp)) * d.stage_s;
  const double total = out.ttft_s + static_cast<double>(w.osl) * out.tpot_s;
  out.output_tok_s_per_gpu = static_cast<double>(b * w.osl) / total / static_cast<double>(plan.deg.instance_gpus());
  out.memory = d.mem;
  check_memory(out.memory, out, true);
  out.objective = out.feasible() ? out.output_tok_s_per_gpu : 0;
  return out;
}

}  // namespace shardwise
