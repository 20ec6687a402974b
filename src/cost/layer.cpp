// One layer of one class: attention, the dense MLP (or shared experts) and the layout
// changes between them, op by op (docs/cost-model.md, "Ops and layouts"); the MoE block
// is in moe.cpp.
#include <algorithm>
#include <cmath>

#include "cost/env.hpp"

namespace shardwise::detail {

// --- one layer ---------------------------------------------------------------
// The attention half of one layer, attn_norm to ffn_norm: its time added to t.total.
static void attention_half(Env& e, OpTimer& t, const LayerShape& s, double T, std::int64_t seq) {
  const Plan& p = *e.plan;
  const double tg = T / static_cast<double>(e.a);  // tokens per attention group
  const double h = static_cast<double>(s.hidden);
  const double tp = static_cast<double>(e.tp);
  const Lay attn_need = norm_lay(p, Slot::kAttnNorm);
  double &total = t.total, &comm = t.comm, &comp = t.comp;
  const auto flush = [&](const char* name, int slot, int group) { t.flush(name, slot, group); };
  const auto act = [&](int group, double bytes) { t.act(group, bytes); };

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
    comp = gemm_time(e, e.peak_attn, tg, 2.0 * tg * params, params * e.wb_attn + tg * (in_f + out_f) * e.ab, false, e.ramp_attn);
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
  // the rotary embedding, q and k in place, in the layout attention receives them (heads
  // split: its heads; context split in prefill: its tokens), measured on every path
  // (docs/silicon.md); MLA: the heads' rope dimensions of q and the one shared rope key
  if (e.ctx->elementwise.present && s.rope) {
    const double hsplit = attn_in == Lay::kSf ? tp : 1.0, tsplit = attn_in == Lay::kSt ? tp : 1.0;
    const double hq = static_cast<double>(s.heads) / hsplit;
    const double qk = s.mla ? (hq + 1.0) * static_cast<double>(s.mla_rope)
                            : (hq + std::max(1.0, static_cast<double>(s.kv_heads) / hsplit)) * static_cast<double>(s.d_qk);
    comp = elementwise_time(e, e.ctx->elementwise.rope, 2.0 * tg / tsplit * qk * e.ab);
    flush("rope", -1, kGroupAttention);
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
      // tg / q_per_seq sequences, each bringing q_per_seq queries (speculative drafts) to one read of its cache
      double kv = tg / e.q_per_seq * layer_kv_bytes_per_seq(e, s, seq);
      // kernels without grouped reads load each KV head once per query head of its group
      if (!e.ctx->engine.gqa_grouped_kv_reads && !s.mla && attn != 1) kv *= static_cast<double>(s.heads / s.kv_heads);
      e.op_flops = flops;
      e.op_bytes = kv;
      // MLA with the kernel tables: FlashMLA's measured ceilings (docs/silicon.md, "MLA decode attention")
      const MlaDecodeProfile& mla = e.ctx->mla_decode;
      const bool measured = s.mla && mla.present;
      const double tc = flops / (e.attn_peak * (measured ? mla.compute_share : e.p->gemm_efficiency));
      // GQA where the GPU's architecture has measured rows (on every path): the measured call's
      // time at the bytes it reads, its launch and tail floor included, the rank imbalance
      // stretching only the time above that floor (docs/silicon.md, "GQA decode attention")
      const GqaDecodeProfile& gqa = e.ctx->gqa_decode;
      if (!s.mla && gqa.present) {
        const double tm = gqa.seconds(kv);
        const double floor = std::min(tm, gqa.curve.t_lo);
        if (e.bd) {
          e.op_bound = kv <= gqa.curve.b_lo ? "latency" : tc > tm ? "compute" : "memory";
          e.op_curve = &gqa.curve;
        }
        comp = (floor + (std::max(tc, tm) - floor) * e.attn_dp_skew) * e.p->scales.attention;
      } else {
        const double tm = kv / (e.hbm * (measured ? mla.mem_share : e.p->attn_mem_efficiency));
        if (e.bd) {
          e.op_bound = bound_of(tc, tm, kernel_floor(e));
          if (measured) {
            e.op_ceiling_basis = mla.basis;
            e.op_ceiling_source = &mla.source;
          }
        }
        comp = (std::max(tc, tm) * e.attn_dp_skew + kernel_floor(e)) * e.p->scales.attention;
      }
    } else {
      const double q_tokens = attn == 1 ? tg / tp : tg;
      const double causal = s.window > 0 ? std::min(static_cast<double>(s.window), static_cast<double>(seq) / 2.0) : static_cast<double>(seq) / 2.0;
      const double flops = 2.0 * q_tokens * heads_r * static_cast<double>(s.d_qk + s.d_v) * causal;
      const double bytes = q_tokens * (static_cast<double>(s.qkv_out) + out_feat) / (attn == 0 ? tp : 1.0) * e.ab +
                           tg * layer_kv_bytes_per_seq(e, s, seq) / std::max(1.0, static_cast<double>(seq));
      e.op_flops = flops;
      e.op_bytes = bytes;
      // at the published kernels' ceiling in the attention's format where one is measured or
      // carried (docs/silicon.md, "Prefill attention"), else the fitted attn_efficiency
      const PrefillAttentionProfile& pa = e.ctx->prefill_attention;
      const PrefillAttentionProfile::Ceiling* ceiling = nullptr;
      if (pa.present) ceiling = e.attn_peak > e.ctx->cluster.gpu.bf16.value() ? &pa.fp8 : &pa.bf16;
      const double rate = ceiling ? ceiling->rate : e.attn_peak * e.p->attn_efficiency;
      const double tc = flops / rate, tm = bytes / (e.hbm * e.p->mem_efficiency);
      if (e.bd) {
        e.op_bound = bound_of(tc, tm, kernel_floor(e));
        if (ceiling) {
          e.op_ceiling_basis = ceiling->basis;
          e.op_ceiling_source = &ceiling->source;
        }
      }
      comp = (std::max(tc, tm) + kernel_floor(e)) * e.p->scales.attention;
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
    comp = gemm_time(e, e.peak_attn, tg, 2.0 * tg * params, params * e.wb_attn + tg * (in_f + out_f) * e.ab, false, e.ramp_attn);
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
    if (e.tbo) e.tbo->add("ffn_norm", norm_s, comm + res);
    total += norm_s + comm + res;
    comm = comp = 0;
  }

}

// Time of one layer of class `s` for a micro-batch of T tokens on the stage
// (T / a per attention group), `seq` = decode context or prefill prompt length.
// Starts with the input in attn_norm's layout and ends converting to it again.
double layer_time(Env& e, const LayerShape& s, double T, std::int64_t seq) {
  const Plan& p = *e.plan;
  const double tg = T / static_cast<double>(e.a);  // tokens per attention group
  const double h = static_cast<double>(s.hidden);
  const Lay attn_need = norm_lay(p, Slot::kAttnNorm);
  OpTimer t{e};
  double &total = t.total, &comm = t.comm, &comp = t.comp;
  const auto flush = [&](const char* name, int slot, int group) { t.flush(name, slot, group); };
  const auto act = [&](int group, double bytes) { t.act(group, bytes); };

  // the attention half, or the time of the earlier class of this evaluation that shares it
  const int cls = e.cls;
  const bool reuse = cls >= 0 && !e.bd && !e.group_time && !e.tbo && static_cast<std::size_t>(cls) < e.ctx->graph.attention_twin.size();
  const int twin = reuse ? e.ctx->graph.attention_twin[static_cast<std::size_t>(cls)] : -1;
  if (twin >= 0 && (e.attn_half_valid >> twin & 1u)) {
    total = e.attn_half[twin];
  } else {
    attention_half(e, t, s, T, seq);
    if (reuse) {
      e.attn_half[cls] = total;
      e.attn_half_valid |= 1u << cls;
    }
  }
  const Lay ffn_need = norm_lay(p, Slot::kFfnNorm);

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
      comp = gemm_time(e, e.peak_dense, rows, 2.0 * rows * params, params * e.wb_dense + rows * (in_f + out_f) * e.ab, false, e.ramp_dense);
      act(kGroupMlp, rows * (in_f + out_f) * e.ab);
      flush(s.moe ? "shared_ffn1" : "ffn1", static_cast<int>(Slot::kFfn1), kGroupMlp);
    }
    // the activation: reads ffn1's up x f outputs, writes f (measured, on every path);
    // a row-parallel ffn1 applies it after the reduction, on every feature
    if (e.ctx->elementwise.present) {
      // on the features each rank holds: ffn1's split output, or after a reduce-scatter of
      // partial sums into ffn2's split input
      const bool split = f1.out == Lay::kSf || (f1.out == Lay::kP && f2.in == Lay::kSf);
      const double fl = f / (split ? g : 1.0);
      comp = elementwise_time(e, e.ctx->elementwise.act, rows * (up + 1.0) * fl * e.ab);
      flush(s.moe ? "shared_act" : "act", -1, kGroupMlp);
    }
    // row-parallel ffn1 (P) is reduced before the activation: a gated MLP reduces gate and up
    // (up x f features); from Sf or R the activation is applied locally first (f features)
    comm = convert(e, f1.out, f2.in, mlp_local ? e.g_tp : e.g_w, rows * (f1.out == Lay::kP ? up * f : f) * e.ab,
                   mlp_local ? "tp" : "mlp");
    {
      const double params = s.ffn2_params / f2.split;
      const double in_f = f2.in == Lay::kSf ? f / g : f;
      const double out_f = f2.out == Lay::kSf ? h / g : h;
      comp = gemm_time(e, e.peak_dense, rows, 2.0 * rows * params, params * e.wb_dense + rows * (in_f + out_f) * e.ab, false, e.ramp_dense);
      flush(s.moe ? "shared_ffn2" : "ffn2", static_cast<int>(Slot::kFfn2), kGroupMlp);
    }
    mlp_out = f2.out;
    if (s.moe) {  // the shared branch joins the routed one
      // beside a replicated MoE input the routed output is partial sums over W (moe.cpp): the
      // shared branch joins them free in any layout (each rank adds its own share: its
      // partial sums, its slice, or 1/W of a replicated tensor), and the two are reduced once,
      // as the engines reduce them; else the routed output is split on tokens over W
      const bool replicated = replicated_moe_input(e, ffn_need);
      comm = mlp_local || replicated ? 0.0 : convert(e, mlp_out, Lay::kSt, e.g_w, T * h * e.ab, "mlp");
      if (comm > 0) flush("shared_join", -1, kGroupMlp);
    }
  }
  if (s.moe) mlp_out = moe_block(e, t, s, T, ffn_need);
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
    if (e.tbo) e.tbo->add("layer_out", 0, comm + res);
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

}  // namespace shardwise::detail
