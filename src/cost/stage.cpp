// A pipeline stage (its layers, embedding or LM head, send/recv), one step with its
// micro-batching, and the per-group tables of the exact search (docs/cost-model.md,
// "Pipeline and serving metrics"; docs/search.md, "The exact optimum").
#include <algorithm>
#include <cmath>
#include <cstring>

#include "cost/env.hpp"

namespace shardwise {

void TboParts::add(const char* op, double comp, double comm) {
  const auto is = [&](const char* name) { return std::strcmp(op, name) == 0; };
  if (is("dispatch")) {
    dispatch += comm;
    attn += comp;
  } else if (is("combine")) {
    combine += comm;
    experts += comp;
  } else if (is("expert_ffn1") || is("expert_act") || is("expert_ffn2")) {
    experts += comp + comm;
  } else if (is("shared_ffn1") || is("shared_act") || is("shared_ffn2")) {
    shared += comp + comm;
  } else {
    attn += comp + comm;  // norms, projections, attention, router, dense MLP, layout changes
  }
}

// vLLM's DBO schedule (docs/design/dbo.md), micro-batches 0 and 1 alternating on the compute
// stream while the other's all-to-all runs:
//   compute |A0|X1|S1 X0|S0 A1|    comm |D1|D0|C1|C0|
// each phase as long as the longer of the two; with equal micro-batches the four phases are
// max(A, D), max(X, D), max(S + X, C), max(S + A, C).
double tbo_layer_time(const TboParts& t) {
  const double a = t.attn, s = t.shared, x = t.experts, d = t.dispatch, c = t.combine;
  return std::max(a, d) + std::max(x, d) + std::max(s + x, c) + std::max(s + a, c);
}

namespace detail {

HeadCost lm_head_cost(Env& e, double rows) {
  const ModelGraph& g = e.ctx->graph;
  const double h = static_cast<double>(g.hidden), v = static_cast<double>(g.vocab), tp = static_cast<double>(e.tp);
  const bool head_vocab = ch(*e.plan, Slot::kLmHead) == 0;
  const double params = v * h / (head_vocab ? tp : 1.0);
  HeadCost c;
  c.gemm = gemm_time(e, e.peak, rows, 2.0 * rows * params, params * e.wb + rows * (h + v / (head_vocab ? tp : 1.0)) * e.ab, false, e.ramp);
  c.gather = head_vocab ? coll(e, CollKind::kAllGather, e.g_tp, rows * v * 4.0, "tp") : 0.0;
  c.logits = rows * v / (head_vocab ? tp : 1.0) * 4.0;
  return c;
}

StageResult stage(Env& e, double T, std::int64_t seq, std::int64_t kv_ctx, std::int64_t seqs_per_group, GroupTables* gt) {
  const ModelGraph& g = e.ctx->graph;
  const Plan& p = *e.plan;
  const std::size_t ncls = g.classes.size();
  SW_CHECK(ncls <= kMaxLayerClasses, "the loader bounds the layer classes");
  double t_cls[kMaxLayerClasses], w_cls[kMaxLayerClasses], kv_cls[kMaxLayerClasses];
  // time and weights by group, when decomposing (zeroed only then: the search's evaluations skip them)
  double gt_cls[kMaxLayerClasses][kNumSlotGroups];
  double gw_cls[kMaxLayerClasses][kNumSlotGroups];
  if (gt) {
    std::fill(&gt_cls[0][0], &gt_cls[0][0] + kMaxLayerClasses * kNumSlotGroups, 0.0);
    std::fill(&gw_cls[0][0], &gw_cls[0][0] + kMaxLayerClasses * kNumSlotGroups, 0.0);
  }
  // the layers of each stage, split as the engines split them (uneven when pp does not divide)
  const std::int64_t num_layers = static_cast<std::int64_t>(g.layer_class.size());
  const auto range = [&](std::int64_t st) { return stage_layers(num_layers, e.pp, st); };
  // the layers of each class on stage st
  const auto& prefix = e.ctx->class_prefix;
  const bool have_prefix = prefix.size() == g.layer_class.size() + 1;
  const auto class_counts = [&](std::int64_t st, std::int64_t* n) {
    const LayerRange r = range(st);
    if (have_prefix) {
      const auto& hi = prefix[static_cast<std::size_t>(r.last)];
      const auto& lo = prefix[static_cast<std::size_t>(r.first)];
      for (std::size_t c = 0; c < ncls; ++c) n[c] = hi[c] - lo[c];
    } else {
      std::fill(n, n + ncls, 0);
      for (std::int64_t i = r.first; i < r.last; ++i) ++n[g.layer_class[static_cast<std::size_t>(i)]];
    }
  };
  // layers of each class on the fullest stage, for the breakdown
  std::int64_t most[kMaxLayerClasses] = {0};
  if (e.bd) {
    for (std::int64_t st = 0; st < e.pp; ++st) {
      std::int64_t n[kMaxLayerClasses];
      class_counts(st, n);
      for (std::size_t c = 0; c < ncls; ++c) most[c] = std::max(most[c], n[c]);
    }
  }
  e.attn_half_valid = 0;  // every class below at this T and seq
  for (std::size_t c = 0; c < ncls; ++c) {
    e.cls = static_cast<int>(c);
    e.cls_layers = most[c];
    if (gt) {
      e.group_time = gt_cls[c];
      e.group_act = gt->act;
      layer_weight_bytes_grouped(e, g.classes[c], gw_cls[c]);
    }
    if (e.tbo_on) {
      TboParts parts;
      e.tbo = &parts;
      layer_time(e, g.classes[c], T, seq);
      e.tbo = nullptr;
      t_cls[c] = tbo_layer_time(parts);
    } else {
      t_cls[c] = layer_time(e, g.classes[c], T, seq);
    }
    e.group_time = nullptr;
    w_cls[c] = layer_weight_bytes(e, g.classes[c]);
    kv_cls[c] = layer_kv_bytes_per_seq(e, g.classes[c], kv_ctx);
  }
  e.cls = -1;
  e.cls_layers = 1;
  const double tg = T / static_cast<double>(e.a);
  const double h = static_cast<double>(g.hidden), tp = static_cast<double>(e.tp);
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
    const HeadCost hc = lm_head_cost(e, rows);
    const double gemm = hc.gemm, gather = hc.gather;
    record(e, "lm_head", static_cast<int>(Slot::kLmHead), gemm, t_head + gather);
    t_head += gemm + gather;
    e.max_act = std::max(e.max_act, hc.logits);
    if (gt) gt->act[kGroupLmHead] = std::max(gt->act[kGroupLmHead], hc.logits);
  }
  // pipeline send/recv of the residual stream to the next stage (each rank its 1/tp slice; R is re-gathered)
  double t_p2p = 0;
  if (e.pp > 1) {
    t_p2p = coll(e, CollKind::kSendRecv, e.g_pp, tg * h * e.ab / tp, "pp");
    if (attn_need == Lay::kR) t_p2p += coll(e, CollKind::kAllGather, e.g_tp, tg * h * e.ab, "tp");
    record(e, "pp_send_recv", -1, 0, t_p2p);
  }
  if (e.tbo_on) {  // each micro-batch runs them in turn
    t_emb *= 2.0;
    t_head *= 2.0;
    t_p2p *= 2.0;
  }
  const double emb_w = embedding_weight_bytes(e);
  const double head_params = lm_head_params(e);
  const double head_w = lm_head_weight_bytes(e);
  StageResult r;
  // one stage's time and bytes; the slowest and the fullest (weights + KV of its sequences,
  // the first of equals) set the result
  const auto visit = [&](const auto& n_cls, bool first, bool last) {
    double t = 0, wgt = 0, kv = 0;
    for (std::size_t c = 0; c < ncls; ++c) {
      const double n = static_cast<double>(n_cls[c]);
      t += n * t_cls[c];
      wgt += n * w_cls[c];
      kv += n * kv_cls[c];
    }
    if (first) {
      t += t_emb;
      wgt += emb_w;
    }
    if (last) {
      t += t_head;
      wgt += head_w;
    } else {
      t += t_p2p;
    }
    r.time = std::max(r.time, t);
    const double n = static_cast<double>(seqs_per_group);
    if (wgt + kv * n > r.weights + r.kv_per_seq * n) {
      r.weights = wgt;
      r.kv_per_seq = kv;
    }
  };
  const auto& kinds = e.ctx->stage_kinds;
  if (static_cast<std::size_t>(e.pp) < kinds.size() && have_prefix) {
    // each distinct stage once, in the order of its first stage (the same first of equals)
    for (const SimContext::StageKind& k : kinds[static_cast<std::size_t>(e.pp)]) visit(k.counts, k.first, k.last);
  } else {
    for (std::int64_t st = 0; st < e.pp; ++st) {
      std::int64_t n_cls[kMaxLayerClasses];
      class_counts(st, n_cls);
      visit(n_cls, st == 0, st == e.pp - 1);
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
      class_counts(st, k.counts);
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

Draft draft_pass(const SimContext& ctx, const Plan& plan, double seqs, std::int64_t seq, std::int64_t kv_ctx) {
  Draft out;
  if (ctx.workload.spec_tokens <= 0) return out;
  // speculative drafts: spec_tokens sequential passes of one MTP module (a decoder layer of
  // the model's last kind and the LM head) over one token per sequence
  Env d = make_env(ctx, plan, Phase::kDecode, nullptr);
  d.q_per_seq = 1.0;
  const ModelGraph& g = ctx.graph;
  const LayerShape& last = g.classes[g.layer_class.back()];
  const HeadCost head = lm_head_cost(d, seqs / static_cast<double>(d.a));
  const double pass = layer_time(d, last, seqs, seq) + head.gemm + head.gather;
  out.time = static_cast<double>(ctx.workload.spec_tokens) * pass;
  // the MTP module's own layer: its weights (embedding and head shared), its KV cache per
  // sequence and its activations (counted whole on the fullest stage: with pp > 1 an
  // over-count of the stages other than the last)
  out.weights = layer_weight_bytes(d, last);
  out.kv_per_seq = layer_kv_bytes_per_seq(d, last, kv_ctx);
  out.max_act = d.max_act;
  return out;
}
// One decode step of b sequences (or one prefill batch of b prompts) with the
// automatic or planned micro-batching; memory counted for kv_ctx tokens per sequence.
StepResult step(const SimContext& ctx, const Plan& plan, Phase phase, std::int64_t b, std::int64_t seq, std::int64_t kv_ctx,
                Breakdown* bd) {
  Env e = make_env(ctx, plan, phase, bd);
  const std::int64_t bg = ceil_div(b, e.a);  // sequences per attention group
  e.attn_dp_skew = attn_dp_imbalance(ctx.workload, phase, e.a, bg);
  std::int32_t m = plan.micro_batches > 0 ? plan.micro_batches : static_cast<std::int32_t>(std::min<std::int64_t>(e.pp, bg));
  m = static_cast<std::int32_t>(std::clamp<std::int64_t>(m, 1, bg));
  const double seqs_micro = static_cast<double>(ceil_div(bg, m)) * static_cast<double>(e.a);
  const double T = phase == Phase::kDecode ? seqs_micro * e.q_per_seq : seqs_micro * static_cast<double>(seq);
  // two-batch overlap: the layers costed for one of two micro-batches of T / 2 tokens
  e.tbo_on = two_batch_overlap_applies(plan, T / static_cast<double>(e.a));
  const StageResult r = stage(e, e.tbo_on ? T / 2.0 : T, seq, kv_ctx, bg);
  if (e.tbo_on) e.max_act *= 2.0;  // both micro-batches' activations are live
  StepResult out;
  const Draft draft = phase == Phase::kDecode ? draft_pass(ctx, plan, seqs_micro, seq, kv_ctx) : Draft{};
  out.stage_s = r.time + e.p->step_overhead_us * 1e-6 + draft.time;
  const double draft_weights = draft.weights;
  e.max_act = std::max(e.max_act, draft.max_act);
  out.m = m;
  if (bd) bd->two_batch_overlap = e.tbo_on;
  out.mem.capacity = ctx.cluster.gpu.hbm_capacity;
  out.mem.weights = Bytes(r.weights + draft_weights);
  out.mem.kv_cache = Bytes((r.kv_per_seq + draft.kv_per_seq) * static_cast<double>(bg));
  out.mem.activations = Bytes(2.0 * e.max_act);
  out.mem.reserve = Bytes(reserve_bytes(ctx.cluster.gpu));
  return out;
}

}  // namespace detail

using namespace detail;

double attn_dp_imbalance(const Workload& w, Phase phase, std::int64_t a, std::int64_t bg) {
  if (!is_stream(w.mode) || phase != Phase::kDecode || a <= 1 || bg < 1) return 1.0;
  const double mean = static_cast<double>(w.isl) + static_cast<double>(w.osl) / 2.0;
  const double sd = static_cast<double>(w.osl) / std::sqrt(12.0);
  return 1.0 + extreme_z(static_cast<double>(a)) * sd / (mean * std::sqrt(static_cast<double>(bg)));
}

bool evaluate_grouped(const SimContext& ctx, const Plan& plan, Phase phase, std::int64_t b, std::int64_t seq, std::int64_t kv_ctx,
                      GroupTables* out) {
  *out = GroupTables{};
  // speculative drafts: the draft pass runs a whole decoder layer at the plan's sharding, on
  // top of the slowest stage, coupling every slot group: not decomposable (the exact search
  // then scores each sharding with the simulator itself)
  if (phase == Phase::kDecode && ctx.workload.spec_tokens > 0) {
    out->stage_types = -1;
    return false;
  }
  // two-batch overlap: each layer is a max over its parts, coupling the slot groups likewise
  if (plan.two_batch_overlap) {
    out->stage_types = -1;
    return false;
  }
  Env e = make_env(ctx, plan, phase, nullptr);
  const std::int64_t bg = ceil_div(b, e.a);
  e.attn_dp_skew = attn_dp_imbalance(ctx.workload, phase, e.a, bg);
  std::int32_t m = plan.micro_batches > 0 ? plan.micro_batches : static_cast<std::int32_t>(std::min<std::int64_t>(e.pp, bg));
  m = static_cast<std::int32_t>(std::clamp<std::int64_t>(m, 1, bg));
  const double seqs_micro = static_cast<double>(ceil_div(bg, m)) * static_cast<double>(e.a);
  const double T = phase == Phase::kDecode ? seqs_micro * e.q_per_seq : seqs_micro * static_cast<double>(seq);
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

}  // namespace shardwise
