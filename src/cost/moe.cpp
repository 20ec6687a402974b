// The MoE block of one layer: router, dispatch (all-to-all), the expert FFNs inside each
// expert group, combine (docs/cost-model.md, "Mixture of experts"): the busiest expert
// group sets the time (routing skew, sampling, EPLB with redundant experts), the expert
// GEMMs read only the experts their tokens touch, and tokens travel in the experts' format.
#include <cmath>

#include "cost/env.hpp"
#include "cost/silicon.hpp"

namespace shardwise {

double extreme_z(double n) { return n > 1.0 ? std::sqrt(2.0 * std::log(n)) : 0.0; }

double dedup_share(double n, double k) {
  if (n <= 1.0) return 1.0;
  const double plain = k * (1.0 - 1.0 / n);                            // copies per token leaving its domain
  const double once = (n - 1.0) * (1.0 - std::pow(1.0 - 1.0 / n, k));  // distinct remote domains a token reaches
  return std::min(1.0, once / plain);
}

double log_untouched(double k, double experts) { return std::log1p(-std::min(k / experts, 1.0 - 1e-12)); }

MoeTerms moe_terms(double k, double experts, double redundant, double ep, double skew) {
  return moe_terms(extreme_z(experts), log_untouched(k, experts), experts, redundant, ep, skew);
}

MoeTerms moe_terms(double z_experts, double log_untouched, double experts, double redundant, double ep, double skew) {
  MoeTerms m;
  m.slots = (experts + redundant) / ep;
  m.z_ep = extreme_z(ep);
  // routing skew: the share of one group, the sum of experts / ep independent experts whose
  // shares vary with coefficient of variation `skew`, varies with skew x sqrt(ep / experts)
  const double x_static = m.z_ep * skew * std::sqrt(ep / experts);
  // EPLB: the hottest experts copied into the redundant slots and all packed by load; what is
  // left is the packing's granularity, one hottest piece ((1 + z(E) skew) / E of the load,
  // shared by its copies) against a group's 1 / ep
  const double x_eplb = ep * (1.0 + z_experts * skew) / (experts + redundant);
  m.excess = redundant > 0 ? std::min(x_static, x_eplb) : x_static;
  m.log_untouched = log_untouched;
  return m;
}

ExpertLoad expert_load(const MoeTerms& m, double tokens, double k, double ep) {
  ExpertLoad l;
  l.mean = tokens * k / ep;
  l.excess = m.excess;
  // sampling: a group's count is binomial over the copies, variance mean x (1 - 1 / ep)
  l.busiest = l.mean * (1.0 + m.excess) + m.z_ep * std::sqrt(l.mean * (1.0 - 1.0 / ep));
  l.busiest = std::min(l.busiest, tokens * std::min(k, m.slots));  // at most one copy per token and expert
  // an expert no token picks is not read: P(none of the tokens picks it) = (1 - k / E)^tokens
  l.touched = m.slots * (1.0 - std::exp(tokens * m.log_untouched));
  l.touched = std::clamp(l.touched, std::min(1.0, m.slots), m.slots);
  return l;
}

ExpertLoad expert_load(double tokens, double k, double experts, double redundant, double ep, double skew) {
  return expert_load(moe_terms(k, experts, redundant, ep, skew), tokens, k, ep);
}

namespace detail {

Basis trtllm_moe_table_basis(const std::string& gpu) {
  return gpu == "b200" ? Basis::kMeasured : architecture_sibling(gpu) == "b200" ? Basis::kTransferred : Basis::kExtrapolated;
}

double network_dedup(const Env& e, double k) {
  if (e.phase != Phase::kPrefill) return 1.0;  // decode: low-latency kernels send each copy straight to its expert
  const auto& lv = e.ctx->cluster.levels;
  if (lv.size() < 2 || e.w <= lv[lv.size() - 2].size) return 1.0;
  return dedup_share(static_cast<double>(e.w) / static_cast<double>(lv[lv.size() - 2].size), k);
}

Lay moe_block(Env& e, OpTimer& t, const LayerShape& s, double T, Lay ffn_need) {
  const Plan& p = *e.plan;
  const double tg = T / static_cast<double>(e.a);  // tokens per attention group
  const double h = static_cast<double>(s.hidden);
  const double tp = static_cast<double>(e.tp), w = static_cast<double>(e.w);
  double &comm = t.comm, &comp = t.comp;
  const auto flush = [&](const char* name, int slot, int group) { t.flush(name, slot, group); };
  const auto act = [&](int group, double bytes) { t.act(group, bytes); };
  const double k = static_cast<double>(s.top_k);
  const double etp = static_cast<double>(e.etp);
  const ExpertLoad load = expert_load(e.moe, T, k, static_cast<double>(e.ep));
  const double tok_group = load.busiest;  // routed token copies on the busiest expert group (its GEMMs set the time)
  // collectives move the mean group's bytes (what the executor counts); the busiest group's
  // volume over the mean scales their time, with the network dedup of prefill kernels
  const double skew = load.busiest / std::max(load.mean, 1e-9);
  const double imbalance = skew * e.moe.dedup;
  // Replicated tokens (no attention data parallel, the MoE input whole on every rank, as
  // after an all-reduce): each rank picks its expert group's copies itself, and the block
  // ends with the weighted partial sums over W, reduced once at layer_out into the next
  // layer's layout (an all-reduce, as vLLM's, SGLang's and TensorRT-LLM's tensor-parallel MoE
  // layers end); otherwise the copies travel by all-to-all.
  const bool replicated = replicated_moe_input(e, ffn_need);
  // the engine's fused MoE kernel where it is measured (vLLM's and SGLang's Triton kernel
  // on replicated tokens, or on one GPU, where every token and expert is local and the same
  // kernel runs): its rows price the expert GEMMs (docs/silicon.md)
  const bool routed = (replicated || (e.w == 1 && e.a == 1)) && e.ctx->moe_routed.curve.n > 0;
  // router: none (replicated in the tp group) | tokens
  const Lay rl = norm_lay(p, Slot::kRouter);
  comm = convert(e, ffn_need, rl, e.g_tp, tg * h * e.ab, "tp");
  {
    const double rows = rl == Lay::kSt ? tg / tp : tg;
    comp = gemm_time(e, e.peak, rows, 2.0 * rows * s.router_params, s.router_params * e.wb + rows * (h + static_cast<double>(s.experts)) * e.ab, false, e.ramp);
    // replicated, a router split over the tokens gathers its logits so that every rank routes every token
    if (replicated && rl == Lay::kSt) comm += coll(e, CollKind::kAllGather, e.g_tp, T * static_cast<double>(s.experts) * e.ab, "tp");
    flush("router", static_cast<int>(Slot::kRouter), kGroupRouter);
  }
  // dispatch: each rank sends its T/W tokens' top-k copies to the experts' ranks (all-to-all
  // over W) in the experts' input format; the busiest group receives `imbalance` x the mean
  if (!replicated) comm = moe_all_to_all(e, /*combine=*/false, T * k * h * e.disp_b, imbalance);
  flush("dispatch", -1, kGroupConst);
  // expert FFNs inside each expert group of etp ranks: ffn (split each expert) | tokens (split the tokens)
  const int c1 = ch(p, Slot::kExpertFfn1), c2 = ch(p, Slot::kExpertFfn2);
  const Lay e1_in = c1 == 0 ? Lay::kR : Lay::kSt, e1_out = c1 == 0 ? Lay::kSf : Lay::kSt;
  const Lay e2_in = c2 == 0 ? Lay::kSf : Lay::kSt, e2_out = c2 == 0 ? Lay::kP : Lay::kSt;
  const double f = static_cast<double>(s.expert_ffn), up = static_cast<double>(s.mlp_mats - 1);
  comm = convert(e, replicated ? Lay::kR : Lay::kSt, e1_in, e.g_etp, load.mean * h * e.ab, "etp", skew);
  // a grouped GEMM over the touched experts: each reads its weights once and runs its
  // rows / touched tokens at the efficiency of that many rows
  {
    const double rows = c1 == 0 ? tok_group : tok_group / etp;
    const double per_expert = s.expert_ffn1_params / (c1 == 0 ? etp : 1.0);
    const double out_f = up * f / (c1 == 0 ? etp : 1.0);
    const double rows_per_expert = std::max(rows / load.touched, 1.0);
    const double flops = 2.0 * rows * per_expert, bytes = load.touched * per_expert * e.wb_exp + rows * (h + out_f) * e.ab;
    comp = routed ? routed_gemm_time(e, rows_per_expert, /*up=*/true, out_f, h, flops, bytes)
                  : gemm_time(e, e.peak_exp, rows_per_expert, flops, bytes, /*grouped=*/true, e.ramp_exp);
    act(kGroupExperts, rows * (h + out_f) * e.ab);
    flush("expert_ffn1", static_cast<int>(Slot::kExpertFfn1), kGroupExperts);
    // the experts' activation over the busiest group's copies (with the kernel tables: measured)
    if (e.ctx->elementwise.present) {
      comp = elementwise_time(e, e.ctx->elementwise.act, rows * (up + 1.0) * f / (c1 == 0 ? etp : 1.0) * e.ab);
      flush("expert_act", -1, kGroupExperts);
    }
  }
  comm = convert(e, e1_out, e2_in, e.g_etp, load.mean * f * e.ab, "etp", skew);
  {
    const double rows = c2 == 0 ? tok_group : tok_group / etp;
    const double per_expert = s.expert_ffn2_params / (c2 == 0 ? etp : 1.0);
    const double in_f = c2 == 0 ? f / etp : f;
    const double rows_per_expert = std::max(rows / load.touched, 1.0);
    const double flops = 2.0 * rows * per_expert, bytes = load.touched * per_expert * e.wb_exp + rows * (in_f + h) * e.ab;
    comp = routed ? routed_gemm_time(e, rows_per_expert, /*up=*/false, h, in_f, flops, bytes)
                  : gemm_time(e, e.peak_exp, rows_per_expert, flops, bytes, /*grouped=*/true, e.ramp_exp);
    flush("expert_ffn2", static_cast<int>(Slot::kExpertFfn2), kGroupExperts);
  }
  if (replicated) {
    // combine: each rank sums its copies' (partial) outputs by their gates into the T tokens:
    // partial sums over W, reduced at layer_out (layer.cpp)
    comp = stream_time(e, (tok_group + T) * h * e.ab);
  } else {
    // combine: partial sums reduced inside the expert group, copies sent back in bf16 (all-to-all over W), weighted sum
    comm = convert(e, e2_out, Lay::kSt, e.g_etp, load.mean * h * e.ab, "etp", skew);
    comm += moe_all_to_all(e, /*combine=*/true, T * k * h * e.ab, imbalance);
    comp = stream_time(e, (T / w) * (k + 1.0) * h * e.ab);
  }
  // the engine's MoE module beyond these ops (engine.moe_module_floor_us: TensorRT-LLM's CUTLASS
  // backend's permutation, grouped-GEMM setup and finalize kernels), measured on the B200 (its
  // architecture's other chips, as the attention rows carry: transferred; elsewhere
  // extrapolated); --explain names it as the op's basis
  if (const double floor_s = e.ctx->engine.moe_module_floor_us * 1e-6; floor_s > 0) {
    comp += floor_s;
    if (e.bd) {
      static const std::string source =
          "data/silicon/published/trtllm_moe_b200.csv: TensorRT-LLM's CUTLASS MoE module on the b200, its fixed time per layer "
          "beyond the model's ops (moe_module_floor_us)";
      e.op_ceiling_basis = trtllm_moe_table_basis(e.ctx->cluster.gpu.name);
      e.op_ceiling_source = &source;
      if (floor_s >= comp - floor_s) e.op_bound = "latency";
    }
  }
  flush("combine", -1, kGroupExperts);
  return replicated ? Lay::kP : Lay::kSt;
}

}  // namespace detail
}  // namespace shardwise
